"""A big event read in many chunks: the stream decoder joins them in one copy and decodes the
event from that copy (``DecodedEvent.raw`` is the decoder's buffer), so memory stays at about
twice the event (the chunks it came in, and the one copy) at the peak."""

from __future__ import annotations

import tracemalloc
from typing import Any

from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER, HEADER_LEN
from binlogscope.wire.binlog.stream import EXACT_CUT, BinlogStreamDecoder

_SIZE = 8 << 20
_CHUNK = 64 << 10


def _event(type_code: int, body: bytes, pos: int) -> bytes:
    size = HEADER_LEN + len(body)
    # flagged LOG_EVENT_IGNORABLE_F: a type no server defines that a replica may skip
    return HEADER.pack(1_700_000_000, type_code, 1, size, pos + size, 0x80) + body


def _file() -> tuple[bytes, int]:
    big = _event(0xC8, bytes(range(256)) * (_SIZE // 256), 4)  # a type with no decoder
    small = _event(0xC8, b"tail", 4 + len(big))
    return BINLOG_MAGIC + big + small, len(big)


def test_big_event_costs_one_copy() -> None:
    data, big = _file()
    assert big >= EXACT_CUT
    dec = BinlogStreamDecoder(record=False)
    got = []
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(data), _CHUNK):
            dec.receive_data(data[i : i + _CHUNK])  # (slices of ``data``: counted, freed)
            for ev in dec.events():
                if ev.size == big:
                    assert ev.raw is dec._buf  # decoded from the joined copy itself
                got.append((ev.offset, ev.size, ev.error))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    dec.receive_data(b"")
    got.extend((ev.offset, ev.size, ev.error) for ev in dec.events())
    assert got == [(4, big, None), (4 + big, HEADER_LEN + 4, None)]
    # the chunks (one event's worth) and the joined copy: about 2x (it was 3x: the unread
    # rest and the chunks were joined in two steps, and the event copied out of the buffer)
    assert peak < 2.5 * big, peak / big


def test_cut_event_and_the_rest_of_its_chunk() -> None:
    """The bytes after a big event in its last chunk wait as the next chunk: every event of
    the file comes out, whatever the chunk size."""
    data, big = _file()
    for chunk in (1 << 20, 3 << 20, 1_000_003, len(data)):
        dec = BinlogStreamDecoder(record=False)
        out: list[Any] = []
        for i in range(0, len(data), chunk):
            dec.receive_data(data[i : i + chunk])
            out.extend((ev.offset, ev.size, ev.error, ev.raw) for ev in dec.events())
        dec.receive_data(b"")
        out.extend((ev.offset, ev.size, ev.error, ev.raw) for ev in dec.events())
        assert out == [(4, big, None, data[4 : 4 + big]),
                       (4 + big, HEADER_LEN + 4, None, data[4 + big :])], chunk
