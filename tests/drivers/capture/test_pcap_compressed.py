"""Real compressed-protocol captures (MySQL 5.7.25, colinnewell/pcap2mysql-log in the shared
fixtures, see MANIFEST.md): the packets inside the frames decode, and a compressed session
decodes to the same packets as the same workload captured uncompressed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.render.shapes import session_event_json
from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    PacketDecoded,
    SequenceMismatch,
)

FIXTURES = Path(__file__).resolve().parents[4] / "shared" / "fixtures"
DIR = FIXTURES / "colinnewell__pcap2mysql-log" / "test" / "captures"

pytestmark = pytest.mark.skipif(not DIR.is_dir(), reason="shared fixtures not present")


def _packets(name: str) -> tuple[list[dict[str, Any]], list[CompressedFrame], list[object]]:
    packets: list[dict[str, Any]] = []
    frames: list[CompressedFrame] = []
    bad: list[object] = []
    for item in read_capture(str(DIR / name), record=True):
        ev = item.event
        if isinstance(ev, CompressedFrame):
            frames.append(ev)
        elif isinstance(ev, PacketDecoded):
            out = session_event_json(ev)
            assert out is not None
            packets.append({k: v for k, v in out.items() if k not in ("packet_offset",)})
            if ev.error:
                bad.append(ev)
        elif isinstance(ev, DecodeError | SequenceMismatch):
            bad.append(ev)
    return packets, frames, bad


def test_compressed_session_decodes_as_the_uncompressed_one() -> None:
    comp, frames, bad = _packets("compressed-data-missing.pcap")
    plain, none, bad2 = _packets("uncompressed-data-present.pcap")
    assert not bad and not bad2 and not none
    # the same INSERT (a 198550-byte COM_QUERY in two zlib frames) and SELECT, same results
    assert [f.frame.sequence_id for f in frames if f.direction.value == "client"][:2] == [0, 1]
    assert any(f.frame.uncompressed_length > 190_000 for f in frames)

    def strip(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # the login's OK differs (the compressed one has no SET-schema state); sequence ids
        # inside frames follow the frames' ids (compared below on their own)
        return [{k: v for k, v in p.items() if k not in ("seq", "wire_time")} for p in ps
                if p["kind"] not in ("handshake_v10", "handshake_response41", "ok")]

    a, b = strip(comp), strip(plain)
    # (the two runs inserted different values: the statements differ, the shapes do not)
    assert [(p["kind"], p["direction"]) for p in a] == [(p["kind"], p["direction"]) for p in b]
    cols = [p for p in a if p["kind"] == "column_definition41"]
    assert len(cols) == 101
    assert cols == [p for p in b if p["kind"] == "column_definition41"]
    queries = [p["fields"]["query"] for p in comp if p["kind"] == "com_query"]
    assert queries[1] == "SELECT * FROM demo.lots" and len(queries[0]) > 190_000
    rows = [p for p in comp if p["kind"] == "text_row"]
    assert len(rows) == 1 and len(rows[0]["fields"]["values"]) == 101


def test_small_compressed_session() -> None:
    packets, frames, bad = _packets("compressed.pcap")
    assert not bad
    kinds = [p["kind"] for p in packets]
    assert kinds == ["handshake_v10", "handshake_response41", "ok", "com_query", "column_count",
                     "column_definition41", "column_definition41", "column_definition41",
                     "eof", "eof", "command"]
    # the result set came in one zlib frame with compressed id 1 (the query's was 0)
    server = [f.frame for f in frames if f.direction.value == "server"]
    assert [(f.sequence_id, f.algorithm, f.uncompressed_length) for f in server] == \
        [(1, "zlib", 161)]
    assert [c.name for c in frames[0].node.children] == ["compressed_header",  # type: ignore[union-attr]
                                                         "compressed_payload"]


def test_compressed_replication_capture_equals_the_binlog_file() -> None:
    """captures/pcap-compressed-zlib.pcap (a real MariaDB 10.11 dump over the zlib-compressed
    protocol, see captures/README.md): the events inside the frames are the file's, byte for
    byte, with the same coordinates."""
    from tests.drivers.capture.test_pcap_captures import CAPTURES, _file_events, _stream_events

    path = CAPTURES / "pcap-compressed-zlib.pcap"
    file_events = _file_events(path.with_suffix(".binlog"))
    seen = _stream_events(path)
    assert len(seen) >= 30
    for offset, raw, summary in seen:
        f_raw, f_summary = file_events[offset]
        assert raw == f_raw and summary == f_summary
    # every event of the file but its closing ROTATE (which names the next file: the helper
    # stops there)
    missing = set(file_events) - {o for o, _, _ in seen}
    assert {file_events[o][1]["event_type"] for o in missing} == {"ROTATE_EVENT"}
    frames = [i.event for i in read_capture(str(path)) if isinstance(i.event, CompressedFrame)]
    assert any(f.frame.uncompressed_length > f.frame.compressed_length for f in frames)
    assert not [i for i in read_capture(str(path))
                if isinstance(i.event, DecodeError | SequenceMismatch) or i.kind == "error"]


def test_compressed_frames_match_tshark() -> None:
    """Wireshark's MySQL dissector reads the compressed headers of the same capture
    (mysql.compressed_packet_length/_number/_length_uncompressed): the same frames, in order,
    per direction."""
    import shutil
    import subprocess

    from tests.ci_support import unavailable
    from tests.drivers.capture.test_pcap_captures import CAPTURES

    exe = shutil.which("tshark")
    if exe is None:
        unavailable("tshark is not installed")
    path = CAPTURES / "pcap-compressed-zlib.pcap"
    out = subprocess.run(
        [exe, "-r", str(path), "-d", "tcp.port==45003,mysql", "-Y", "mysql", "-T", "fields",
         "-e", "tcp.srcport", "-e", "mysql.compressed_packet_length", "-e",
         "mysql.compressed_packet_number", "-e", "mysql.compressed_packet_length_uncompressed"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    theirs: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}
    for line in out.splitlines():
        port, n, seq, size = line.split("\t")
        if n:
            for a, b, c in zip(n.split(","), seq.split(","), size.split(","), strict=True):
                theirs[port == "45003"].append((int(a), int(b), int(c)))
    ours: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}
    for item in read_capture(str(path)):
        ev = item.event
        if isinstance(ev, CompressedFrame):
            f = ev.frame
            ours[ev.direction.value == "server"].append(
                (f.compressed_length, f.sequence_id, f.uncompressed_length))
    assert len(theirs[True]) >= 10 and len(theirs[False]) >= 10
    assert ours == theirs


def test_summary_counts_the_bytes_on_the_wire() -> None:
    """``pcap --summary`` of a compressed flow: its bytes are the frames' (what TCP carried:
    699 and 2442 bytes by tshark's tcp.len), not the inflated packets'."""
    import json
    import subprocess
    import sys

    from tests.drivers.capture.test_pcap_captures import CAPTURES

    p = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--summary", "--json",
                        str(CAPTURES / "pcap-compressed-zlib.pcap")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    flow = json.loads(p.stdout.splitlines()[0])
    assert flow["compressed"] is True
    assert flow["bytes"] == {"client": 699, "server": 2442}
