"""Binlog network packets (0x00 + [semi-sync header] + event), EOF/ERR, semi-sync ACK."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from binlogscope.session import Session
from binlogscope.session.events import DecodeError, PacketDecoded, Peer, Phase
from binlogscope.wire import replication as rp
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import RotateEvent
from binlogscope.wire.binlog.header import HEADER
from binlogscope.wire.binlog.types import ChecksumAlg
from binlogscope.wire.constants import SEMI_SYNC_ACK_REQ
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet
from binlogscope.wire.node import check_tiling
from binlogscope.wire.packet import run_decoder
from tests.helpers import body_of

FIXTURE = Path("/work/shared/fixtures/Percona-Lab__percona-binlog-server/mtr/binlog_streaming/"
               "std_data/data_80045_gtid/binlog.000001")  # MySQL 8.0.45, CRC32


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def fixture_events() -> list[bytes]:
    data = FIXTURE.read_bytes()
    assert data[:4] == b"\xfebin"
    out, pos = [], 4
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append(data[pos : pos + size])
        pos += size
    return out


def artificial_rotate(name: str, position: int = 4, checksum: bool = True) -> bytes:
    """The fake ROTATE a source sends first (timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F)."""
    body = struct.pack("<Q", position) + name.encode()
    size = 19 + len(body) + (4 if checksum else 0)
    ev = HEADER.pack(0, 4, 1, size, 0, 0x20) + body
    return ev + struct.pack("<I", zlib.crc32(ev)) if checksum else ev


def decode_packet(payload: bytes, ctx: DecodeContext, semi: bool | None) -> rp.BinlogPacket:
    d = run_decoder("binlog_event",
                    lambda r, c: rp.decode_binlog_packet(r, c, ctx, semi_sync=semi),
                    payload, caps=0, base=4)
    assert d.error is None, d.error
    assert d.node is not None and check_tiling(d.node) == []
    assert (d.node.offset, d.node.length) == (4, len(payload))
    assert isinstance(d.value, rp.BinlogPacket)
    return d.value


def test_binlog_packet_plain() -> None:
    fde = fixture_events()[0]
    payload = rp.encode_binlog_packet(fde)
    assert payload[:1] == hexbytes("00  # status: an event follows")
    ctx = DecodeContext()
    d = run_decoder("binlog_event", lambda r, c: rp.decode_binlog_packet(r, c, ctx), payload,
                    caps=0, base=4)
    v = d.value
    assert v.semi_sync is None and v.error is None
    assert v.event.type_name == "FORMAT_DESCRIPTION_EVENT"
    assert v.event.checksum_ok is True
    assert ctx.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32
    node = d.node
    assert node is not None and check_tiling(node) == []
    assert (node.find("status").offset, node.find("status").length) == (4, 1)
    ev = node.find("event")
    assert (ev.offset, ev.length) == (5, len(fde))
    assert node.find("event.header.event_type").offset == 5 + 4


def test_binlog_packet_semi_sync_header() -> None:
    events = fixture_events()
    ctx = DecodeContext()
    decode_packet(rp.encode_binlog_packet(events[0]), ctx, False)
    payload = rp.encode_binlog_packet(events[1], SEMI_SYNC_ACK_REQ)
    assert payload[:3] == hexbytes("""
        00      # status
        ef      # semi_sync_indicator
        01      # semi_sync_flag: ACK requested
    """)
    v = decode_packet(payload, ctx, True)
    assert v.semi_sync == rp.SemiSyncHeader(1) and v.semi_sync.ack_requested
    assert v.event.type_name == "PREVIOUS_GTIDS_LOG_EVENT" and v.event.checksum_ok


def test_semi_sync_detection_for_mid_stream_captures() -> None:
    ev = fixture_events()[0]
    assert rp.looks_semi_sync(rp.encode_binlog_packet(ev, 0))
    assert not rp.looks_semi_sync(rp.encode_binlog_packet(ev))
    v = decode_packet(rp.encode_binlog_packet(ev, 0), DecodeContext(), None)
    assert v.semi_sync == rp.SemiSyncHeader(0) and not v.semi_sync.ack_requested


def test_missing_semi_sync_magic_is_reported_and_the_event_still_decoded() -> None:
    ev = fixture_events()[0]
    d = run_decoder("binlog_event",
                    lambda r, c: rp.decode_binlog_packet(r, c, DecodeContext(), semi_sync=True),
                    rp.encode_binlog_packet(ev), caps=0)
    assert d.value.error is not None and rp.MISSING_MAGIC in d.value.error
    assert d.value.event.type_name == "FORMAT_DESCRIPTION_EVENT"
    assert d.node is not None and check_tiling(d.node) == []


def test_artificial_rotate_checksum_is_detected_before_the_fde() -> None:
    ctx = DecodeContext()
    v = decode_packet(rp.encode_binlog_packet(artificial_rotate("binlog.000001")), ctx, False)
    assert body_of(v.event, RotateEvent).next_log_name == "binlog.000001"
    assert v.event.checksum_ok is True
    ctx2 = DecodeContext()
    v2 = decode_packet(rp.encode_binlog_packet(artificial_rotate("binlog.000001", checksum=False)),
                       ctx2, False)
    assert body_of(v2.event, RotateEvent).next_log_name == "binlog.000001"
    assert ctx2.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF


SEMI_SYNC_ACK = hexbytes("""
    ef                          # semi_sync_indicator
    9a 02 00 00 00 00 00 00     # binlog_pos 666
    62 69 6e 6c 6f 67 2e 30 30 30 30 30 31   # binlog_filename "binlog.000001"
""")


def test_semi_sync_ack() -> None:
    d = run_decoder("semi_sync_ack", rp.decode_semi_sync_ack, SEMI_SYNC_ACK, caps=0, base=4)
    assert d.value == rp.SemiSyncAck(666, "binlog.000001")
    assert d.node is not None and check_tiling(d.node) == []
    pos = d.node.find("binlog_pos")
    assert (pos.offset, pos.length) == (5, 8)
    assert rp.encode_semi_sync_ack(d.value) == SEMI_SYNC_ACK
    assert rp.is_semi_sync_ack(SEMI_SYNC_ACK)


def stream_session(semi: bool) -> Session:
    return Session(start_phase=Phase.BINLOG_STREAM, semi_sync=semi)


def packets(s: Session) -> list[PacketDecoded]:
    return [e for e in s.events() if isinstance(e, PacketDecoded)]


def test_err_1236_in_the_stream_has_a_hint() -> None:
    s = stream_session(False)
    s.receive_data(encode_packet(b"\xff\xd4\x04#HY000Could not find first log file name in "
                                 b"binary log index file", 1), Peer.SERVER)
    (p,) = packets(s)
    assert p.kind == "err" and p.value.error_code == 1236
    assert "SHOW BINARY LOGS" in p.value.hint
    assert s.phase == Phase.COMMAND


def test_eof_ends_a_non_blocking_dump() -> None:
    s = stream_session(False)
    s.receive_data(encode_packet(hexbytes("fe 00 00 02 00  # EOF"), 5), Peer.SERVER)
    (p,) = packets(s)
    assert p.kind == "eof" and s.phase == Phase.COMMAND


def big_rotate(total_event_size: int) -> bytes:
    name_len = total_event_size - 19 - 8 - 4
    return artificial_rotate("b" * name_len)


@pytest.mark.parametrize(("semi", "tail"), [(False, 0), (True, 2)])
def test_16mib_event(semi: bool, tail: int) -> None:
    """0x00 + event of 16,777,214 bytes = 0xFFFFFF: an empty trailer (semi-sync: 2-byte tail)."""
    event = big_rotate(MAX_PAYLOAD - 1)
    payload = rp.encode_binlog_packet(event, 0 if semi else None)
    wire = encode_packet(payload, 9)
    assert len(payload) == MAX_PAYLOAD + tail
    assert wire[MAX_PAYLOAD + 4 : MAX_PAYLOAD + 8] == bytes((tail, 0, 0, 10))
    s = stream_session(semi)
    s.receive_data(wire, Peer.SERVER)
    evs = list(s.events())
    assert not [e for e in evs if isinstance(e, DecodeError)]
    (p,) = [e for e in evs if isinstance(e, PacketDecoded)]
    assert p.binlog_event is not None and p.binlog_event.checksum_ok is True
    assert body_of(p.binlog_event, RotateEvent).next_log_name == "b" * (MAX_PAYLOAD - 1 - 31)
    assert p.payload_length == MAX_PAYLOAD + tail and p.wire_length == len(wire)
    node = p.node
    assert node is not None and check_tiling(node) == []
    assert (node.offset, node.length) == (0, len(wire))
    headers = [n for _, n in node.walk() if n.name == "packet_header"]
    assert [(h.offset, h.find("sequence_id").value) for h in headers] == [
        (0, 9), (MAX_PAYLOAD + 4, 10)]
    if semi:  # the continuation header cuts the CRC32: 2 bytes before, 2 after it
        crc = node.find("binlog_event.event.checksum")
        assert [c.name for c in crc.children] == ["checksum[0]", "packet_header", "checksum[1]"]
        assert [(c.offset, c.length) for c in crc.children] == [
            (MAX_PAYLOAD + 2, 2), (MAX_PAYLOAD + 4, 4), (MAX_PAYLOAD + 8, 2)]
    else:  # the trailer follows the payload
        assert node.children[-1].name == "packet_header"
        assert node.children[-1].find("payload_length").value == 0
