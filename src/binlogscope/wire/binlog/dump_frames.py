"""Binlog file bytes as dump packets: where the events of a file start, and their framing.

A source serving a binlog file sends every event as one packet (``0x00`` + the event) with the
sequence id counting on. These functions do that straight from the file's bytes (nothing
decoded, only each event's ``event_size`` read):

* :func:`index_events` - the start offset of every complete event (the chain of event sizes
  from offset 4) and the end of the last one; a truncated or damaged tail ends the walk.
* :func:`frame_events` - the packets of a run of events (events of 16 MiB or more are split
  into several packets as :func:`binlogscope.wire.framing.encode_packet` does);
  :func:`frame_event_list` the same for events given one by one.
* :func:`event_types`, :func:`max_event_size` - the type byte of every event, the largest size.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable

from binlogscope.wire.binlog.header import HEADER_LEN
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet

_U32 = struct.Struct("<I")


def index_events(data: bytes, start: int = 4) -> tuple[array[int], int]:
    """Start offsets of the complete events of a binlog file's bytes (magic included), and the
    end offset of the last one."""
    out: array[int] = array("q")
    n = len(data)
    unpack = _U32.unpack_from
    add = out.append
    pos = start
    while pos + HEADER_LEN <= n:
        size = unpack(data, pos + 9)[0]
        if size < HEADER_LEN or pos + size > n:
            break
        add(pos)
        pos += size
    return out, pos


def event_types(data: bytes, starts: array[int]) -> bytes:
    """The type byte of each event."""
    return bytes([data[p + 4] for p in starts])


def max_event_size(starts: array[int], end: int) -> int:
    """The size of the largest event."""
    best = 0
    prev = None
    for p in starts:
        if prev is not None and p - prev > best:
            best = p - prev
        prev = p
    if prev is not None and end - prev > best:
        best = end - prev
    return best


def frame_events(data: bytes, starts: array[int], lo: int, hi: int, end: int, seq: int
                 ) -> tuple[bytes, int]:
    """The dump packets of events ``lo..hi-1`` (``end``: where the last event of the file
    ends) and the next sequence id."""
    out = bytearray()
    pack = _U32.pack
    mv = memoryview(data)
    n = len(starts)
    for k in range(lo, hi):
        a = starts[k]
        b = starts[k + 1] if k + 1 < n else end
        size = b - a + 1
        if size >= MAX_PAYLOAD:
            out += encode_packet(b"\x00" + data[a:b], seq)
            seq = (seq + size // MAX_PAYLOAD + 1) & 0xFF
            continue
        out += pack(size | seq << 24)
        out += b"\x00"
        out += mv[a:b]
        seq = (seq + 1) & 0xFF
    return bytes(out), seq


def frame_event_list(events: Iterable[bytes], seq: int) -> tuple[bytes, int, int]:
    """The dump packets of ``events`` (each its bytes), the number of events and the next
    sequence id."""
    out = bytearray()
    pack = _U32.pack
    count = 0
    for ev in events:
        size = len(ev) + 1
        if size >= MAX_PAYLOAD:
            out += encode_packet(b"\x00" + ev, seq)
            seq = (seq + size // MAX_PAYLOAD + 1) & 0xFF
        else:
            out += pack(size | seq << 24)
            out += b"\x00"
            out += ev
            seq = (seq + 1) & 0xFF
        count += 1
    return bytes(out), count, seq


__all__ = ["event_types", "frame_event_list", "frame_events", "index_events", "max_event_size"]
