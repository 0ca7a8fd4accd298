"""The same session in ``pcap``: a real capture (MariaDB replica, the shipped pcapng) with
one binlog event packet's sequence id edited shows one ``sequence_mismatch`` item and exits
1; the untouched capture exits 0 with none (client libraries stop at such a packet: MariaDB's
net_serv.cc "Packets out of order", ER_NET_PACKETS_OUT_OF_ORDER 1156)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from binlogscope.cli.main import main
from binlogscope.wire.binlog.header import HEADER

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "pcap-mariadb-replica.pcapng"
BINLOG = REPO / "captures" / "pcap-mariadb-replica.binlog"


def _edited(tmp: Path, delta: int) -> tuple[Path, int]:
    """The capture with the sequence id of one event packet in the middle moved by
    ``delta`` (found by the event's bytes from the binlog the stream was read from)."""
    cap = bytearray(CAPTURE.read_bytes())
    bl = BINLOG.read_bytes()
    pos, events = 4, []
    while pos < len(bl):
        size = HEADER.unpack_from(bl, pos)[3]
        events.append(pos)
        pos += size
    for p in events[len(events) // 2:]:
        key = bytes(bl[p:p + 19])
        at = cap.find(key)
        if at > 5 and cap.count(key) == 1 and cap[at - 1] == 0:  # (the OK byte)
            old = cap[at - 2]
            cap[at - 2] = (old + delta) & 0xFF
            out = tmp / "edited.pcapng"
            out.write_bytes(bytes(cap))
            return out, old
    raise AssertionError("no event packet found in the capture")


def _run(path: Path) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["pcap", "--json", str(path)], out=out, err=err)
    return rc, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_pcap_flags_an_edited_sequence_id(tmp_path: Path) -> None:
    rc0, items0, err0 = _run(CAPTURE)
    assert rc0 == 0, err0
    assert not any(i.get("kind") == "sequence_mismatch" for i in items0)
    path, old = _edited(tmp_path, 5)
    rc, items, err = _run(path)
    bad = [i for i in items if i.get("kind") == "sequence_mismatch"]
    assert [(b["direction"], b["expected"], b["got"]) for b in bad] == [
        ("server", old, (old + 5) & 0xFF)]
    assert rc == 1, err
    assert "Traceback" not in err
