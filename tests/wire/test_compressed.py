"""The compressed protocol's framing layer (wire/compressed.py): frames as MySQL's net layer
writes them (net_serv.cc ``compress_packet``: 3-byte compressed length, 1-byte compressed
sequence id, 3-byte uncompressed length, 0 = stored), zlib and zstd, and a frame that lies."""

from __future__ import annotations

import zlib

import pytest
import zstandard

from binlogscope.wire.compressed import (
    FRAME_HEADER_LEN,
    ZLIB,
    ZSTD,
    FrameError,
    FrameReader,
    encode_frames,
    frame_node,
    negotiated,
)
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.framing import encode_packet


@pytest.mark.parametrize("algorithm", [ZLIB, ZSTD])
def test_frames_round_trip_in_pieces(algorithm: str) -> None:
    plain = encode_packet(b"\x03" + b"SELECT 1 " * 200, 0) + encode_packet(b"\x01", 0)
    short = encode_packet(b"\x0e", 0)
    wire, seq = encode_frames(plain, 0, algorithm)
    wire2, seq2 = encode_frames(short, seq, algorithm)
    assert seq == 1 and seq2 == 2
    assert wire2[4:7] == b"\0\0\0" and wire2[7:] == short  # under 50 bytes: stored
    r = FrameReader(algorithm, 100, 100)
    frames = []
    for b in wire + wire2:  # a byte at a time
        r.feed(bytes((b,)))
        f = r.next_frame()
        if f is not None:
            frames.append(f)
    assert [f.sequence_id for f in frames] == [0, 1]
    assert frames[0].plain == plain and frames[1].plain == short
    assert frames[0].uncompressed_length == len(plain) > frames[0].compressed_length
    assert (frames[1].offset, frames[1].plain_offset) == (100 + len(wire), 100 + len(plain))
    if algorithm == ZLIB:
        assert zlib.decompress(wire[FRAME_HEADER_LEN:]) == plain
    else:
        assert zstandard.ZstdDecompressor().decompress(wire[FRAME_HEADER_LEN:]) == plain


def test_frame_node_spans_the_wire() -> None:
    wire, _ = encode_frames(b"x" * 300, 7, ZLIB)
    r = FrameReader(ZLIB, 40, 0)
    r.feed(wire)
    f = r.next_frame()
    assert f is not None
    node = frame_node(f)
    assert (node.offset, node.length) == (40, len(wire))
    header, payload = node.children
    assert [(c.name, c.offset, c.length, c.value) for c in header.children] == [
        ("compressed_length", 40, 3, len(wire) - 7), ("compressed_sequence_id", 43, 1, 7),
        ("uncompressed_length", 44, 3, 300)]
    assert (payload.offset, payload.end) == (47, 40 + len(wire))


def test_a_frame_that_does_not_inflate_to_its_length() -> None:
    body = zlib.compress(b"y" * 100)
    r = FrameReader(ZLIB, 0, 0)
    r.feed(len(body).to_bytes(3, "little") + b"\0" + (99).to_bytes(3, "little") + body)
    with pytest.raises(FrameError):
        r.next_frame()
    r.feed(b"\x05\0\0\x01\x10\0\0" + b"\xff" * 5)  # not zlib at all
    with pytest.raises(FrameError):
        r.next_frame()
    assert r.pending == 0


def test_negotiated_algorithm() -> None:
    c = CapabilityFlag
    assert negotiated(int(c.CLIENT_COMPRESS | c.CLIENT_ZSTD_COMPRESSION_ALGORITHM)) == ZLIB
    assert negotiated(int(c.CLIENT_ZSTD_COMPRESSION_ALGORITHM)) == ZSTD
    assert negotiated(int(c.CLIENT_PROTOCOL_41)) is None
