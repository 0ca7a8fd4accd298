"""Captures that start mid-stream: every real capture, cut at many frame offsets, still yields
every binlog event whose packet starts after the cut (the reader resynchronises on the next
plausible packet header, semi-sync ``00 ef`` framing included), with the same type, size and
end position as in the whole capture. The server's port is given, as a user gives ``--port``
for a capture without the connection's start (the tail of a capture may hold no packet that
names MySQL by itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import PacketDecoded

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
#: the real captures whose events span frames (pcap-pymysqlrepl and pcap-mariadb-binlog get
#: their whole dump in one frame: no cut at a frame boundary falls inside it; no capture of
#: ../shared/fixtures has binlog events in five frames or more)
REAL = ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng"]
CUTS = 12  # cut points per capture, spread over its frames


def _events(path: Path, ports: set[int] | None = None) -> list[tuple[int, int, int, int]]:
    """(frame, log_pos, type, size) of every binlog event the server sent."""
    out = []
    for item in read_capture(str(path), ports):
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            h = ev.binlog_event.header
            if h is not None and ev.binlog_event.error is None:
                out.append((item.frame or 0, h.log_pos, h.type_code, h.event_size))
    return out


@pytest.mark.parametrize("name", REAL)
def test_every_later_event_is_found_after_a_cut(name: str, tmp_path: Path) -> None:
    from scapy.utils import PcapWriter, rdpcap

    src = CAPTURES / name
    frames = rdpcap(str(src))
    whole = _events(src)
    assert whole
    # the server's port, as a user gives it (--port) to a capture without the greeting
    ports = {int(it.flow.name.split(" -> ")[1].rsplit(":", 1)[1]) for it in read_capture(
        str(src)) if isinstance(it.event, PacketDecoded) and it.event.binlog_event is not None}
    first = min(f for f, *_ in whole)
    last = max(f for f, *_ in whole)
    checked = 0
    failures = []
    for k in sorted({first + (last - first) * i // CUTS for i in range(CUTS)}):
        # k: the 1-based number of the first kept frame
        if k <= 1:
            continue
        cut = tmp_path / f"cut{k}.pcap"
        w = PcapWriter(str(cut), sync=True)
        for p in frames[k - 1:]:
            w.write(p)
        w.close()
        got = {(lp, t, s) for _, lp, t, s in _events(cut, ports)}
        # frames are numbered from 1 in the cut: an event whose packet starts after the first
        # kept frame is complete in it
        want = {(lp, t, s) for f, lp, t, s in whole if f > k}
        missing = want - got
        if missing:
            failures.append((k, len(missing), len(want), sorted(missing)[:3]))
        checked += len(want)
    assert checked
    assert not failures, (name, failures)
