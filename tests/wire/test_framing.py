"""Packet framing: header fields, continuation packets, PacketBuffer, span mapping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlogscope.wire.framing import (
    MAX_PAYLOAD,
    Packet,
    PacketBuffer,
    decode_packet_header,
    encode_packet,
    fragment_count,
    packet_node,
)
from binlogscope.wire.node import check_tiling
from binlogscope.wire.reader import ByteReader


def hexbytes(text: str) -> bytes:
    """Hex digits with '#' comments and whitespace ignored."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


COM_PING_PACKET = hexbytes("""
    01 00 00    # payload_length = 1
    00          # sequence_id = 0 (a command starts a new exchange)
    0e          # payload: COM_PING
""")


def test_header_fields_and_spans() -> None:
    r = ByteReader(COM_PING_PACKET, base=100)
    frag = decode_packet_header(r)
    assert (frag.offset, frag.payload_length, frag.sequence_id) == (100, 1, 0)
    (hdr,) = r.children()
    assert (hdr.name, hdr.offset, hdr.length) == ("packet_header", 100, 4)
    n = hdr.find("payload_length")
    assert (n.offset, n.length, n.value, n.wire) == (100, 3, 1, "int<3>")
    s = hdr.find("sequence_id")
    assert (s.offset, s.length, s.value) == (103, 1, 0)


def test_encode_small_packet() -> None:
    assert encode_packet(b"\x0e", 0) == COM_PING_PACKET
    assert encode_packet(b"", 7) == hexbytes("000000 07")


def test_encode_exact_multiple_has_empty_trailer() -> None:
    payload = b"\xab" * MAX_PAYLOAD
    wire = encode_packet(payload, 254)
    assert len(wire) == MAX_PAYLOAD + 8
    assert wire[:4] == hexbytes("ffffff fe")  # full fragment, seq 254
    assert wire[-4:] == hexbytes("000000 ff")  # empty trailer, seq 255
    assert fragment_count(MAX_PAYLOAD) == 2
    assert fragment_count(MAX_PAYLOAD - 1) == 1


def test_encode_sequence_wraps() -> None:
    wire = encode_packet(b"\x01" * (MAX_PAYLOAD + 2), 255)
    assert wire[3] == 255
    assert wire[4 + MAX_PAYLOAD + 3] == 0  # wraps from 255 to 0
    assert wire[4 + MAX_PAYLOAD : 4 + MAX_PAYLOAD + 3] == hexbytes("020000")


def test_buffer_byte_by_byte_and_offsets() -> None:
    wire = COM_PING_PACKET + encode_packet(b"\x03SELECT 1", 0)
    buf = PacketBuffer(start_offset=1000)
    got = []
    for i in range(len(wire)):
        buf.receive_data(wire[i : i + 1])
        while (p := buf.next_packet()) is not None:
            got.append(p)
    assert [p.payload for p in got] == [b"\x0e", b"\x03SELECT 1"]
    assert [p.offset for p in got] == [1000, 1005]
    assert got[1].payload_offset == 1009
    assert got[1].wire_length == 13
    assert buf.offset == 1000 + len(wire)
    assert buf.pending == 0


def test_consume_commit_rollback() -> None:
    buf = PacketBuffer()
    buf.receive_data(b"abcdef")
    assert buf.consume_exactly(4) == b"abcd"
    assert buf.consume_exactly(4) is None
    buf.rollback()
    assert buf.consume_exactly(2) == b"ab"
    buf.commit()
    assert buf.offset == 2
    assert buf.drain() == (2, b"cdef")


def test_buffer_waits_for_the_whole_payload() -> None:
    buf = PacketBuffer()
    buf.receive_data(hexbytes("05 00 00 00  03 53 45"))
    assert buf.next_packet() is None
    assert buf.offset == 0  # nothing committed
    buf.receive_data(b"LE")
    p = buf.next_packet()
    assert p is not None and p.payload == b"\x03SELE"


def _decode_all(wire: bytes) -> list[Packet]:
    buf = PacketBuffer()
    buf.receive_data(wire)
    out: list[Packet] = []
    while (p := buf.next_packet()) is not None:
        out.append(p)
    return out


def test_16mib_exact_payload_joined_with_trailer_node() -> None:
    payload = bytes(range(256)) * (MAX_PAYLOAD // 256) + b"\x00" * (MAX_PAYLOAD % 256)
    assert len(payload) == MAX_PAYLOAD
    wire = encode_packet(payload, 3)
    (pkt,) = _decode_all(wire)
    assert pkt.payload == payload
    assert [(f.offset, f.payload_length, f.sequence_id) for f in pkt.fragments] == [
        (0, MAX_PAYLOAD, 3), (4 + MAX_PAYLOAD, 0, 4)]
    r = ByteReader(pkt.payload, base=pkt.payload_offset)
    r.u8("first")
    r.rest("body")
    root = packet_node(pkt, r.finish("payload"))
    assert check_tiling(root) == []
    assert (root.offset, root.length) == (0, len(wire))
    names = [c.name for c in root.children]
    assert names == ["packet_header", "payload", "packet_header"]
    trailer = root.children[2]
    assert trailer.offset == 4 + MAX_PAYLOAD
    assert trailer.find("payload_length").value == 0
    assert trailer.find("sequence_id").value == 4


def test_field_cut_by_a_continuation_header_is_split() -> None:
    payload = b"\x01" + b"\x02" * (MAX_PAYLOAD + 9)  # 0xFFFFFF + 10 bytes
    wire = encode_packet(payload, 0)
    (pkt,) = _decode_all(wire)
    assert len(pkt.fragments) == 2 and pkt.fragments[1].payload_length == 10
    r = ByteReader(pkt.payload, base=pkt.payload_offset)
    r.u8("first")
    r.rest("body")
    root = packet_node(pkt, r.finish("payload"))
    assert check_tiling(root) == []
    body = root.find("payload.body")
    assert (body.offset, body.length) == (5, MAX_PAYLOAD - 1 + 4 + 10)
    assert [c.name for c in body.children] == ["body[0]", "packet_header", "body[1]"]
    part0, hdr, part1 = body.children
    assert (part0.offset, part0.length) == (5, MAX_PAYLOAD - 1)
    assert (hdr.offset, hdr.length) == (4 + MAX_PAYLOAD, 4)
    assert hdr.find("sequence_id").value == 1
    assert (part1.offset, part1.length) == (8 + MAX_PAYLOAD, 10)
    assert part1.end == len(wire)


def test_header_between_two_fields_sits_between_them() -> None:
    payload = b"\x07" * MAX_PAYLOAD + b"\x08\x09"
    (pkt,) = _decode_all(encode_packet(payload, 0))
    r = ByteReader(pkt.payload, base=pkt.payload_offset)
    r.raw("a", MAX_PAYLOAD)
    r.rest("b")
    root = packet_node(pkt, r.finish("payload"))
    assert check_tiling(root) == []
    assert [c.name for c in root.find("payload").children] == ["a", "packet_header", "b"]
    assert root.find("payload.b").offset == 4 + MAX_PAYLOAD + 4


@given(st.binary(max_size=300), st.integers(0, 255))
def test_roundtrip_small(payload: bytes, seq: int) -> None:
    wire = encode_packet(payload, seq)
    (pkt,) = _decode_all(wire)
    assert pkt.payload == payload
    assert pkt.sequence_id == seq
    assert pkt.wire_length == len(wire)


@pytest.mark.parametrize("size", [MAX_PAYLOAD - 1, MAX_PAYLOAD + 1, 2 * MAX_PAYLOAD])
def test_roundtrip_around_the_boundary(size: int) -> None:
    payload = b"\x5a" * size
    wire = encode_packet(payload, 250)
    (pkt,) = _decode_all(wire)
    assert pkt.payload == payload
    assert len(pkt.fragments) == fragment_count(size)
    assert [f.sequence_id for f in pkt.fragments] == [
        (250 + i) & 0xFF for i in range(len(pkt.fragments))]
