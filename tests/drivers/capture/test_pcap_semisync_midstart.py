"""A capture that starts in the middle of a packet of a semi-sync binlog stream: both sides
resynchronise on the semi-sync framing (the source's ``00 EF xx`` event packets, the replica's
``EF`` ACKs), so no event is read as an OK packet and no ACK as a command; the events keep
their coordinates (the file learnt from the first ACK)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import DecodeError, PacketDecoded

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
SEMI = CAPTURES / "pcap-semisync.pcap"
PORT = 39041


def _cut(src: Path, dst: Path, first: int, cut: int) -> None:
    """``src`` from frame ``first`` on, that frame's TCP payload without its ``cut`` first
    bytes (so the capture starts inside a packet)."""
    from scapy.layers.inet import IP, TCP
    from scapy.packet import Raw
    from scapy.utils import rdpcap, wrpcap

    frames = rdpcap(str(src))
    p = frames[first - 1]
    t = p[TCP]
    data = bytes(t.payload)
    assert len(data) > cut
    t.remove_payload()
    t.add_payload(Raw(data[cut:]))
    t.seq = (t.seq + cut) & 0xFFFFFFFF
    del p[IP].len, p[IP].chksum, t.chksum
    head = p.__class__(bytes(p))
    head.time = p.time
    wrpcap(str(dst), [head, *frames[first:]])


@pytest.mark.parametrize(("first", "cut"), [(47, 100), (64, 100), (80, 5), (112, 30)])
def test_mid_packet_start_resynchronises_on_the_semi_sync_framing(
        tmp_path: Path, first: int, cut: int) -> None:
    path = tmp_path / "mid.pcap"
    _cut(SEMI, path, first, cut)
    by_offset = {ev.offset: ev for ev in read_binlog_file(CAPTURES / "pcap-semisync.binlog")}
    kinds: dict[str, set[str]] = {"client": set(), "server": set()}
    events = 0
    errors = []
    for item in read_capture(str(path), {PORT}):
        if ":56084 " not in item.flow.name:  # the replica's connection
            continue
        ev = item.event
        if isinstance(ev, DecodeError):
            errors.append(ev.message)
        if not isinstance(ev, PacketDecoded):
            continue
        kinds[ev.direction.value].add(ev.kind)
        bev = ev.binlog_event
        if bev is not None and bev.file_pos is not None:
            events += 1
            f = by_offset[bev.file_pos]
            assert bev.header is not None and f.header is not None
            assert bev.header.log_pos == f.header.log_pos
            assert bev.raw == f.raw
            assert bev.binlog_file in (None, "mysql-bin.000004")
    assert kinds == {"client": {"semi_sync_ack"}, "server": {"binlog_event"}}
    assert events >= 10
    assert len(errors) == 1 and "the capture starts mid-connection" in errors[0]
