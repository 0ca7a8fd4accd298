"""The capture reader's resync after a TCP gap judges each byte it holds about once (session
/resync.py ``PacketScan``), not the whole held buffer again on every new segment: a capture
of a gap then many small segments in which no packet header is plausible (every position reads
as the header of a 16 MiB fragment whose end has not arrived) took quadratic time."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.capture import conns, flows
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.resync import PacketScan
from tests.drivers.capture.test_pcap import _greeting, _ip_tcp, _pcap


def _gap_capture(junk: int, frame: int) -> bytes:
    frames = [_ip_tcp(1, 40000, 2, 3306, 999, 0x02, b""),
              _ip_tcp(2, 3306, 1, 40000, 4999, 0x12, b"")]
    g = _greeting()
    frames.append(_ip_tcp(2, 3306, 1, 40000, 5000, 0x18, g))
    seq = 5000 + len(g) + 1000  # 1000 bytes lost
    for _ in range(junk // frame):
        frames.append(_ip_tcp(2, 3306, 1, 40000, seq, 0x18, b"\xff" * frame))
        seq += frame
    return _pcap(frames)


def test_resync_after_a_gap_judges_each_byte_about_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[PacketScan] = []

    class Counted(PacketScan):
        def __init__(self, *, binlog: bool, ack: bool = False) -> None:
            super().__init__(binlog=binlog, ack=ack)
            scans.append(self)

    monkeypatch.setattr(flows, "PacketScan", Counted)
    junk, frame = 1 << 20, 1024
    cap = tmp_path / "gap.pcap"
    cap.write_bytes(_gap_capture(junk, frame))
    items = list(read_capture(str(cap)))
    errors = [i.text or "" for i in items if i.kind == "error"]
    assert len(errors) == 1 and "1000 bytes lost" in errors[0]
    assert "no packet header found after it" in errors[0]
    assert items[0].flow.skipped_bytes > 0
    judged = sum(s.judged for s in scans)
    # the binlog and the generic scan each judge the ~1 MiB once (plus a few again); judging
    # the held buffer again per 1 KiB segment, as before, was ~ (junk / frame) / 2 = 512 times
    assert junk <= judged <= 3 * junk


def test_mid_stream_start_judges_each_byte_about_once(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture that starts mid-connection also looks for compressed frames in the first
    64 KiB held, on every segment: 64 K judgements a segment before, each byte about once
    now (FrameScan)."""
    from binlogscope.session.resync import FrameScan

    scans: list[PacketScan] = []

    class Counted(FrameScan):
        def __init__(self, limit: int = 1 << 16) -> None:
            super().__init__(limit)
            scans.append(self)

    monkeypatch.setattr(conns, "FrameScan", Counted)  # (the compressed resume's scan)
    frames, seq = [], 5000
    for _ in range(256):  # 256 KiB in 1 KiB segments, no SYN: joined mid-connection
        frames.append(_ip_tcp(2, 3306, 1, 40000, seq, 0x18, b"\xff" * 1024))
        seq += 1024
    cap = tmp_path / "mid.pcap"
    cap.write_bytes(_pcap(frames))
    items = list(read_capture(str(cap)))
    assert items[0].flow.mid_stream and not [i for i in items if i.event is not None]
    judged = sum(s.judged for s in scans)
    assert 0 < judged <= 2 * (1 << 16)  # (before: ~64 K a segment after the first 64)
