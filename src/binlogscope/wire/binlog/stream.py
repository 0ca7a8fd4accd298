"""Sans-IO decoder for a binlog *file* byte stream (magic + events), fed in chunks.

``receive_data(chunk)`` buffers bytes (``b""`` means end of file); ``events()`` yields one
:class:`DecodedEvent` per complete event and stops when it needs more bytes. Memory stays flat:
only the event being decoded is buffered.

Damage handling: a header whose ``event_size`` cannot be right (smaller than a header, larger
than the limit) yields an error event, then the decoder searches forward for the next plausible
header (valid size whose ``log_pos`` equals its end offset, as every v4 binlog file has) and
continues there. A truncated last event yields an error event with what could be decoded.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN, peek_header
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

#: largest event accepted (max_allowed_packet's ceiling is 1 GiB)
MAX_EVENT_SIZE = 1 << 30
#: an event at least this big is given a buffer of its own bytes only (see ``_fill``)
EXACT_CUT = 1 << 20
_KNOWN = {int(t) for t in EventType}
_SIZE = struct.Struct("<I")


class BinlogStreamDecoder:
    """Decode a binlog file from its first byte (magic) or from ``start_offset``.

    Buffering: the bytes being decoded are one immutable ``bytes`` object (each event is
    copied out of it once, into ``DecodedEvent.raw``, and decoded from there). Chunks given
    to :meth:`receive_data` wait in a list and are joined to the unread rest only when the next
    event needs them, so a large event arriving in many small chunks is copied a bounded number
    of times (no quadratic copying) and memory stays at about one event plus one chunk.
    """

    def __init__(
        self,
        ctx: DecodeContext | None = None,
        *,
        record: bool = True,
        start_offset: int = 0,
        expect_magic: bool = True,
    ) -> None:
        self.ctx = ctx if ctx is not None else DecodeContext()
        self.record = record
        self._buf = b""
        self._pos = 0  # index of the next unread byte in _buf
        self._base = start_offset  # absolute offset of _buf[0]
        self._chunks: list[bytes] = []  # received, not yet joined to _buf
        self._chunks_len = 0
        self._eof = False
        self._need_magic = expect_magic and start_offset == 0
        self._reader = ByteReader(b"", record=False)  # reused for every event without a tree
        self.magic_node: Node | None = None
        #: set when the input is not a binlog at all (bad magic): nothing more is decoded
        self.fatal: str | None = None

    @property
    def offset(self) -> int:
        """Absolute offset of the next byte to decode."""
        return self._base + self._pos

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            self._eof = True
            return
        self._chunks.append(bytes(data))
        self._chunks_len += len(data)

    def _avail(self) -> int:
        return len(self._buf) - self._pos

    def _fill(self, need: int, *, force: bool = False) -> int:
        """Join waiting chunks when they complete ``need`` bytes (or at EOF, or ``force``);
        returns the bytes available.

        One copy: the unread rest (a view) and the chunks are joined at once. For a big
        ``need`` (an event of :data:`EXACT_CUT` bytes or more) the buffer becomes exactly those
        bytes and the rest of the last chunk waits as the next chunk: the event is then decoded
        from the buffer itself (``DecodedEvent.raw`` is the buffer, not a second copy), so a
        35 MB event costs about one copy of it beside the chunks it came in.
        """
        avail = len(self._buf) - self._pos
        if avail < need and self._chunks and (
                force or self._eof or avail + self._chunks_len >= need):
            chunks = self._chunks
            parts: list[bytes | memoryview] = [memoryview(self._buf)[self._pos :]] if avail \
                else []
            left: list[bytes] = []
            if need >= EXACT_CUT and not force and avail + self._chunks_len > need:
                k = need - avail  # bytes wanted from the chunks
                i = 0
                while k > len(chunks[i]):
                    k -= len(chunks[i])
                    i += 1
                parts += chunks[:i]
                last = chunks[i]
                parts.append(memoryview(last)[:k])
                if k < len(last):
                    left.append(last[k:])
                left += chunks[i + 1 :]
            else:
                parts += chunks
            self._buf = b"".join(parts)
            del parts, chunks
            self._base += self._pos
            self._pos = 0
            self._chunks = left
            self._chunks_len = sum(map(len, left))
            avail = len(self._buf)
        return avail

    def events(self) -> Iterator[DecodedEvent]:
        ctx = self.ctx
        record = self.record
        size_at = _SIZE.unpack_from
        reader = self._reader
        while self.fatal is None:
            if self._need_magic:
                if self._fill(4) < 4:
                    if self._eof:
                        self.fatal = (f"at offset {self.offset}: not a binlog file: "
                                      f"{self._avail()} bytes, too short for the magic number")
                    return
                magic = self._buf[self._pos : self._pos + 4]
                self.magic_node = Node(
                    "magic", self.offset, 4, magic, "string<4>", "fe 62 69 6e (\\xfebin)",
                    "every binlog and relay log file starts with these 4 bytes")
                if magic != BINLOG_MAGIC:
                    self.fatal = (f"at offset {self.offset}: not a binlog file: magic is "
                                  f"{magic.hex(' ')}, expected fe 62 69 6e")
                    return
                self._pos += 4
                self._need_magic = False
            buf = self._buf
            base = self._base
            pos = self._pos
            n = len(buf)
            # ----- the hot loop: complete events in the buffer
            while pos + HEADER_LEN <= n:
                size = size_at(buf, pos + 9)[0]
                if size > n - pos or size < HEADER_LEN + 4:
                    break
                ev = decode_event(buf, ctx, start=pos, base=base, record=record, reader=reader)
                pos += size
                self._pos = pos
                yield ev
            self._pos = pos
            # ----- everything else: short buffer, damage, tiny events, end of file
            avail = n - pos
            if avail < HEADER_LEN:
                if self._fill(HEADER_LEN) >= HEADER_LEN:
                    continue
                if self._eof and self._avail():
                    yield self._emit(self._avail())
                return
            h = peek_header(buf, pos)
            if h.event_size < HEADER_LEN or h.event_size > MAX_EVENT_SIZE:
                self._fill(MAX_EVENT_SIZE + 1, force=True)  # join all received: find a header
                buf = self._buf
                avail = self._avail()
                skip = self._resync_distance()
                if skip is None and not self._eof:
                    return  # wait for more bytes to find the next header
                skip = avail if skip is None else skip
                damaged = buf[self._pos : self._pos + skip]
                ev = decode_event(damaged, ctx, base=self.offset, record=record)
                ev.size = skip
                note = (f"implausible event_size {h.event_size}; skipped {skip} bytes to the "
                        "next plausible event header")
                ev.error = f"at offset {self.offset + 9}: {note}"
                self._pos += skip
                yield ev
                continue
            if h.event_size > avail:
                if self._fill(h.event_size) >= h.event_size:
                    continue
                if self._eof:
                    yield self._emit(self._avail())
                return
            # a complete event too small for a checksum: the general decoder
            ev = decode_event(buf, ctx, start=pos, base=self._base, record=record)
            self._pos += h.event_size
            yield ev

    def _emit(self, avail: int) -> DecodedEvent:
        """Decode a truncated tail at EOF (yields the error) and consume it."""
        ev = decode_event(self._buf, self.ctx, start=self._pos, base=self._base,
                          record=self.record)
        if ev.error is None:
            ev.error = f"at offset {self.offset}: truncated event at end of file"
        self._pos += avail
        return ev

    def _resync_distance(self) -> int | None:
        """Bytes to skip to the next plausible event header, None if none in the buffer."""
        buf = self._buf
        start = self._pos + 1
        last = len(buf) - HEADER_LEN
        for p in range(start, last + 1):
            h = peek_header(buf, p)
            if (
                HEADER_LEN <= h.event_size <= MAX_EVENT_SIZE
                and h.type_code in _KNOWN
                and h.log_pos == self._base + p + h.event_size
            ):
                return p - self._pos
        return None
