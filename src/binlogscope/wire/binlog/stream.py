"""Sans-IO decoder for a binlog *file* byte stream (magic + events), fed in chunks.

``receive_data(chunk)`` buffers bytes (``b""`` means end of file); ``events()`` yields one
:class:`DecodedEvent` per complete event and stops when it needs more bytes. Memory stays flat:
only the event being decoded is buffered.

Damage handling (:mod:`.resync`): an event is trusted when its CRC32 verifies or, without
checksums, when it decodes and its ``log_pos`` continues the chain. One that is not: if the
next plausible event starts right at its end, only its body was damaged and it is yielded with
its error; otherwise the decoder scans forward once, byte by byte, for the next plausible
header (known type, size, ``log_pos`` chain, CRC32) and yields the bytes before it as one
``damaged`` error event. Inserted or deleted bytes and a corrupted ``event_size`` lose only the
events they touch, in time linear in the input. A truncated last event yields an error event
with what could be decoded.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, overload

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event, decode_plain
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN, peek_header
from binlogscope.wire.binlog.resync import (
    MAX_EVENT_SIZE,
    NO,
    YES,
    candidate,
    chain_ok,
    known_types,
)
from binlogscope.wire.binlog.types import UNKNOWN_TYPE_ERROR, ChecksumAlg, EventType
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

#: a damaged stretch longer than this is reported in pieces (its bytes are not all kept)
DAMAGE_PIECE = 1 << 20
#: an event at least this big is given a buffer of its own bytes only (see ``_fill``)
EXACT_CUT = 1 << 20
_CRC32 = int(ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32)
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_START_ENCRYPTION = int(EventType.START_ENCRYPTION_EVENT)
_SIZE = struct.Struct("<I")
#: what a line writer the hot loop may hand an event to returns: the event's type code,
#: log_pos, GTID, flags2 and statement (see :meth:`BinlogStreamDecoder.events`), or None
LineTaken = tuple[int, int, "str | None", "int | None", "str | None"]
LineWriterFn = Callable[[bytes, int, int], "LineTaken | None"]


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
        encrypted_file: bool = True,
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
        #: log_pos of the last trusted event (0: none yet), the chain damage is checked against
        self._lp = 0
        #: where the forward scan for the next plausible header goes on (None: not scanning)
        self._scan: int | None = None
        self._known_for: str | None = None
        self._known_set: frozenset[int] = frozenset()
        #: a START_ENCRYPTION means the rest of a *file* is encrypted (MariaDB
        #: encrypt_binlog=ON): nothing after it can be decoded without the key, so decoding
        #: stops there with ``fatal`` saying so. False for a stream a server sent (it sends
        #: the events after START_ENCRYPTION decrypted)
        self._encrypted_file = encrypted_file

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

    @overload
    def events(self) -> Iterator[DecodedEvent]: ...

    @overload
    def events(self, line: LineWriterFn, runs: bool = False
               ) -> Iterator[DecodedEvent | LineTaken | list[LineTaken]]: ...

    def events(self, line: LineWriterFn | None = None, runs: bool = False) -> Iterator[Any]:
        """The complete events (stops when more bytes are needed).

        ``line``: a writer of the events' output lines (the native kernel's ``EventLines``,
        ``render/line_layout.py``) offered every event of the hot loop first, as
        ``line(buffer, position, base)``: what it takes (an event whose checksum it verified,
        whose body it read without error) is consumed and its tuple yielded instead of a
        :class:`DecodedEvent`; what it declines (None) is decoded here as always. ``runs``:
        the tuples of consecutive events it takes come as one list (a run, in order, never
        empty) instead of one by one - the export's reader (``export/records.py``) handles a
        run in one step rather than resuming every generator between here and the mapper
        for every event."""
        ctx = self.ctx
        record = self.record
        size_at = _SIZE.unpack_from
        reader = self._reader
        encrypted = self._encrypted_file  # (only a file's START_ENCRYPTION stops the hot loop)
        run: list[Any] | None = [] if runs and line is not None else None
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
            # ----- the hot loop: complete events in the buffer that can be trusted (CRC32
            # verified, or decoded with a log_pos that continues the chain)
            if self._scan is None:
                while pos + HEADER_LEN <= n:
                    size = size_at(buf, pos + 9)[0]
                    if size > n - pos or size < HEADER_LEN + 4:
                        break
                    if line is not None:
                        took = line(buf, pos, base)
                        if took is not None:  # (a verified CRC32: trusted)
                            pos += size
                            if took[1]:
                                self._lp = took[1]
                            if run is not None:
                                run.append(took)
                                continue
                            self._pos = pos
                            yield took
                            continue
                        if run:
                            self._pos = pos
                            yield run
                            run = []
                    ev = (decode_event(buf, ctx, start=pos, base=base, record=True) if record
                          else decode_plain(buf, ctx, pos, base, reader))
                    lp = size_at(buf, pos + 13)[0]
                    err = ev.error
                    if ev.checksum_ok is not True and (
                            (err is not None and not err.startswith(UNKNOWN_TYPE_ERROR))
                            or not self._trusted(buf, pos, size, lp)):
                        break  # the slow path decides: damaged body, or lost alignment
                    pos += size
                    self._pos = pos
                    if lp:
                        self._lp = lp
                    yield ev
                    h = ev.header
                    if (encrypted and h is not None and h.type_code == _START_ENCRYPTION
                            and self._stops_at(ev)):
                        return
                self._pos = pos
                if run:
                    yield run
                    run = []
            # ----- everything else: damage, short buffer, tiny events, end of file
            avail = n - pos
            if avail < HEADER_LEN and self._scan is None:
                if self._fill(HEADER_LEN) >= HEADER_LEN:
                    continue
                if self._eof and self._avail():
                    yield self._emit(self._avail())
                return
            step = self._slow_step()
            if step is None:
                return  # more bytes needed
            for ev in step:
                yield ev
                if self._stops_at(ev):
                    return

    def _stops_at(self, ev: DecodedEvent) -> bool:
        """After a file's START_ENCRYPTION: set ``fatal`` (the rest is encrypted)."""
        if (not self._encrypted_file or ev.header is None or ev.error is not None
                or ev.header.type_code != _START_ENCRYPTION):
            return False
        end = ev.offset + ev.header.event_size
        key = getattr(ev.body, "key_version", None)
        self.fatal = (f"at offset {end}: the rest of the file is encrypted (START_ENCRYPTION at "
                      f"offset {ev.offset}, key version {key}: MariaDB encrypt_binlog=ON) and "
                      "binlogscope has no key; a MariaDB server sends these events decrypted "
                      "to a replica (read them with `binlogscope live`)")
        return True

    def _trusted(self, buf: bytes, pos: int, size: int, lp: int) -> bool:
        """An event decoded without error and without a verified CRC: a type the flavour
        writes, and its log_pos continues the chain (or starts one: a FORMAT_DESCRIPTION,
        as a relay log's copy of its source's, or the first event of a chain from 0); a type
        it does not write only when its log_pos continues the chain exactly."""
        code = buf[pos + 4]
        if self.ctx.type_map:
            code = self.ctx.type_map.get(code, code)
        end = self._base + pos + size
        if code not in self._known():  # a type this decoder does not know: the exact chain
            return lp != 0 and (lp == end or (self._lp != 0 and lp - size == self._lp))
        return chain_ok(lp, size, end, self._lp) or code == _FDE or lp == size

    def _next_fits(self, e: int, log_pos: int) -> bool:
        """Is there, at ``e``, the end of the data or a header of a known type and size whose
        log_pos continues ``log_pos`` or starts a chain of its own?"""
        buf = self._buf
        if e == len(buf):
            return self._eof and not self._chunks
        if e + HEADER_LEN > len(buf):
            return False
        h = peek_header(buf, e)
        code = self.ctx.type_map.get(h.type_code, h.type_code)
        lp, size = h.log_pos, h.event_size
        return (code in self._known() and HEADER_LEN <= size <= MAX_EVENT_SIZE
                and (lp - size == log_pos or lp == 0 or lp == size or code == _FDE))

    def _known(self) -> frozenset[int]:
        v = self.ctx.server_version
        if v != self._known_for:
            self._known_for = v
            self._known_set = known_types(self.ctx)
        return self._known_set

    def _candidate(self, q: int, chain_from: int) -> int:
        ctx = self.ctx
        crc = ctx.checksum_alg == _CRC32 and ctx.verify_checksums
        return candidate(self._buf, q, eof=self._eof and not self._chunks, ctx=ctx,
                         known=self._known(), crc=crc, chain_from=chain_from,
                         base=self._base)

    def _wait(self, upto: int) -> bool:
        """Make the buffer reach index ``upto`` if the bytes are there; True: look again (it
        does, or it changed), False: wait for more bytes."""
        need = upto - self._pos
        before = self._avail()
        if before >= need:
            return True
        return self._fill(need) > before

    def _slow_step(self) -> list[DecodedEvent] | None:
        """One decision at the read position the hot loop did not take: the events it gives
        (an empty list: look again), or None when more bytes are needed."""
        buf, pos = self._buf, self._pos
        if self._scan is None:
            h = peek_header(buf, pos)
            size = h.event_size
            e = pos + size
            eof = self._eof and not self._chunks
            code = self.ctx.type_map.get(h.type_code, h.type_code)
            known = code in self._known()
            fits = HEADER_LEN <= size <= MAX_EVENT_SIZE
            chained = h.log_pos != 0 and chain_ok(h.log_pos, size, self._base + e, self._lp)
            if fits and e > len(buf) and not eof and (known or chained):
                # judged once it is all there (a big event: the buffer becomes exactly its
                # bytes, decoded in place by the hot loop)
                return [] if self._wait(e) else None
            if fits and e <= len(buf):
                ev = decode_event(buf, self.ctx, start=pos, base=self._base,
                                  record=self.record)
                # a verified CRC vouches even for an unknown type; without one, an event
                # that decodes, followed by a header that continues its chain or starts
                # one (relay logs restart their log_pos chains mid-transaction)
                # (an unknown type's own error - no replica may skip it - is not damage)
                err = ev.error
                if ev.checksum_ok is True or (
                        (err is None or err.startswith(UNKNOWN_TYPE_ERROR)) and not known
                        and self._trusted(buf, pos, size, h.log_pos)):
                    return [self._took(ev, pos, size)]
                if ev.error is None and known:
                    if e + HEADER_LEN > len(buf) and not eof:
                        return [] if self._wait(e + HEADER_LEN) else None
                    if self._next_fits(e, h.log_pos):
                        return [self._took(ev, pos, size)]
            v = self._candidate(pos, self._lp)
            if v >= 0:
                return [] if self._wait(v) else None
            if v == YES:
                return [self._take(pos, size)]
            if known and fits and chained:
                # is only this event damaged? its size must fit its log_pos chain and its
                # end must be where the next plausible event starts
                if e > len(buf):
                    return [self._emit(self._avail())]  # a truncated last event
                elif e == len(buf) and eof:
                    return [self._take(pos, size)]
                else:
                    w = self._candidate(e, h.log_pos)
                    if w == YES:
                        return [self._take(pos, size)]
                    if w >= 0:
                        return [] if self._wait(w) else None
            self._scan = self._base + pos + 1
        return self._scan_forward()

    def _take(self, pos: int, size: int) -> DecodedEvent:
        """Decode the event at ``pos`` as a real one (its error, if any, is its own)."""
        ev = decode_event(self._buf, self.ctx, start=pos, base=self._base, record=self.record)
        return self._took(ev, pos, size)

    def _took(self, ev: DecodedEvent, pos: int, size: int) -> DecodedEvent:
        self._pos = pos + size
        lp = _SIZE.unpack_from(self._buf, pos + 13)[0]
        if lp:
            self._lp = lp
        return ev

    def _scan_forward(self) -> list[DecodedEvent] | None:
        """The one forward pass from ``_scan`` (an absolute offset) for the next plausible
        header; the damaged bytes before it become one error event (in pieces of
        :data:`DAMAGE_PIECE` when long, so memory stays bounded)."""
        assert self._scan is not None
        q = self._scan - self._base
        buf = self._buf
        n = len(buf)
        eof = self._eof and not self._chunks
        out: list[DecodedEvent] = []
        chain = self._lp
        cand = self._candidate
        while True:
            if q - self._pos >= DAMAGE_PIECE:
                out.append(self._damage(q, "the damage goes on"))
            if q + HEADER_LEN > n and not eof:
                v = q + HEADER_LEN
            elif q >= n:  # end of file: everything left is damage
                self._scan = None
                if q > self._pos:
                    out.append(self._damage(q, "no event header after it"))
                return out
            else:
                v = cand(q, chain)
                if v == YES:
                    self._scan = None
                    out.append(self._damage(q, "the next plausible event header is at "
                                               f"offset {self._base + q}"))
                    return out
                if v == NO:
                    q += 1
                    continue
            # more bytes needed to tell
            self._scan = self._base + q
            if self._wait(v) or out:
                return out
            return None

    def _damage(self, q: int, why: str) -> DecodedEvent:
        """The bytes from the read position to ``q`` as one error event (consumed)."""
        pos = self._pos
        raw = self._buf[pos:q]
        off = self._base + pos
        msg = (f"at offset {off}: damaged data: {q - pos} bytes that are no plausible event "
               f"(unknown type, size, log_pos chain or checksum) skipped; {why}")
        node = Node("damaged", off, q - pos, None, "", f"{q - pos} bytes skipped",
                    "bytes between two events that do not form a plausible event", (), msg) \
            if self.record else None
        self._pos = q
        return DecodedEvent(off, None, None, node, None, error=msg, size=q - pos, raw=raw)

    def _emit(self, avail: int) -> DecodedEvent:
        """Decode a truncated tail at EOF (yields the error) and consume it."""
        ev = decode_event(self._buf, self.ctx, start=self._pos, base=self._base,
                          record=self.record)
        if ev.error is None:
            ev.error = f"at offset {self.offset}: truncated event at end of file"
        self._pos += avail
        return ev
