"""Mid-stream resync heuristics: where a MySQL packet plausibly starts in bytes that did not
begin on a packet boundary (a capture joined mid-connection, bytes lost in a TCP gap).

The driver buffers the bytes after the gap and asks a :class:`PacketScan` (the incremental
:func:`find_packet_start`: each byte judged once as the buffer grows); once found it
tells the session (:meth:`Session.resync`, and :meth:`Session.join_stream` when the server's
side turns out to be a binlog stream) and feeds from that offset on.
:func:`looks_like_greeting` classifies a connection by its first server segment;
:func:`greeting_plausible` is the session's own check of a first packet in CONNECT.
"""

from __future__ import annotations

import bisect
import heapq
import struct
from array import array

from binlogscope.session.events import Peer
from binlogscope.wire.compressed import FRAME_HEADER_LEN, FrameError, frame_start_verdict, inflate

_U32LE = struct.Struct("<I")  # packet lengths: 4 bytes read, masked to 3
_YES, _NO, _MAYBE = 1, 0, 2


def _binlog_header_ok(buf: bytes | bytearray, p: int, n: int) -> tuple[int, int]:
    """Is there a binlog stream packet (0x00 [+EF xx] + event header) at ``p``? With the
    verdict, for ``_MAYBE``, the buffer length from which it can change (else 0)."""
    e = p + 5
    if len(buf) < p + 4 + 1 + 19:
        return _MAYBE, p + 4 + 1 + 19
    if buf[p + 4] != 0:
        return _NO, 0
    for skip, delta in ((0, 1), (2, 3)):
        if skip and buf[e] != 0xEF:
            continue
        h = e + skip
        if len(buf) < h + 19:
            return _MAYBE, h + 19
        size = _U32LE.unpack_from(buf, h + 9)[0]
        code = buf[h + 4]
        if size == n - delta and 0 < code < 0xA5 and size >= 19:
            return _YES, 0
    return _NO, 0


def _generic_ok(buf: bytes | bytearray, p: int, depth: int = 0) -> tuple[int, int]:
    if len(buf) < p + 4:
        return _MAYBE, p + 4
    n = _U32LE.unpack_from(buf, p)[0] & 0xFFFFFF
    if n == 0 or n > 0x1000000:
        return _NO, 0
    q = p + 4 + n
    if q == len(buf):
        return _YES, 0
    if q > len(buf):
        return _MAYBE, q
    if depth >= 2:
        return _YES, 0
    if len(buf) < q + 4:
        return _MAYBE, q + 4
    seq, nseq = buf[p + 3], buf[q + 3]
    if nseq != (seq + 1) & 0xFF and nseq != 0:
        return _NO, 0
    return _generic_ok(buf, q, depth + 1)


def _judge(buf: bytes | bytearray, p: int, binlog: bool, ack: bool) -> tuple[int, int]:
    """The verdict on a packet starting at ``p`` (``p + 4 <= len(buf)``) and, for ``_MAYBE``,
    the buffer length from which it can change: a verdict only reads bytes it has, and a
    ``_MAYBE`` is one on bytes not arrived yet, so it stays what it is until that length
    (what lets :class:`PacketScan` judge each position again only then)."""
    n = int(_U32LE.unpack_from(buf, p)[0]) & 0xFFFFFF
    if binlog:
        return _binlog_header_ok(buf, p, n) if n >= 20 else (_NO, 0)
    if ack:
        if n < 9 or buf[p + 3] != 0:
            return _NO, 0
        if p + 4 >= len(buf):
            return _MAYBE, p + 5
        if buf[p + 4] != 0xEF:
            return _NO, 0
        return (_YES, 0) if p + 4 + n <= len(buf) else (_MAYBE, p + 4 + n)
    return _generic_ok(buf, p)


def find_packet_start(buf: bytes | bytearray, *, binlog: bool, ack: bool = False
                      ) -> tuple[int | None, int | None]:
    """Where the next plausible MySQL packet header starts in ``buf``.

    ``binlog``: the source's side of a binlog stream (``0x00`` + event header whose event_size
    matches the packet length, optionally behind the 2-byte semi-sync header). ``ack``: the
    replica's side of a semi-sync stream (``0xEF`` ACKs with sequence id 0). Otherwise: a chain
    of packet headers whose lengths end exactly at the end of the data or at a header with the
    next sequence id (or 0).

    Returns ``(offset, None)`` when found; ``(None, wait)`` otherwise, where ``wait`` is the
    first position that might still qualify once more bytes arrive (None: no position can).
    One look at one buffer; a buffer that grows (a driver resynchronising) is scanned with
    :class:`PacketScan`, which gives the same answers without judging every byte again.
    """
    wait: int | None = None
    size = len(buf)
    for p in range(max(size - 3, 0)):
        v = _judge(buf, p, binlog, ack)[0]
        if v == _YES:
            return p, None
        if v == _MAYBE and wait is None:
            wait = p
    if wait is None and size:
        wait = max(size - 3, 0)
    return None, wait


_SHIFT = 10  # undecided positions are kept in buckets of 1 KiB of the length that decides them


class PacketScan:
    """:func:`find_packet_start` over a buffer that grows at its end and is cut at its start
    (a driver's resync buffer), in linear time: each position is judged when it arrives and
    again only once the bytes that can change its ``_MAYBE`` verdict have arrived (a ``_NO``
    is final: it reads only bytes the buffer has). Every :meth:`find` answers what
    :func:`find_packet_start` answers on the whole buffer. ``judged`` counts the positions
    judged (the tests' measure of the work done)."""

    def __init__(self, *, binlog: bool, ack: bool = False) -> None:
        self.binlog = binlog
        self.ack = ack
        self.judged = 0
        self._reset(0)

    def _reset(self, base: int) -> None:
        self._base = base  # stream offset of the buffer's first byte
        self._scanned = base  # positions before it are judged
        self._first = base  # no undecided position before it
        self._maybe = bytearray()  # per position from _base: 1 = undecided (or found)
        self._buckets: dict[int, array[int]] = {}  # (deciding length >> _SHIFT) -> positions
        self._keys: list[int] = []  # heap of the buckets' keys
        self._pending = 0  # positions in buckets
        self._dropped = 0  # bytes cut from the start since the buckets were last pruned

    def _hold(self, p: int, decided_at: int) -> None:
        key = decided_at >> _SHIFT
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = array("q")
            heapq.heappush(self._keys, key)
        bucket.append(p)
        self._pending += 1

    def find(self, buf: bytes | bytearray, base: int = 0) -> tuple[int | None, int | None]:
        """:func:`find_packet_start` on ``buf``, whose first byte is at stream offset
        ``base``: the same buffer as at the last call with bytes added at its end and cut from
        its start (else the scan starts over)."""
        end = base + len(buf)
        if base < self._base or base > self._scanned:
            self._reset(base)
        elif base > self._base:
            del self._maybe[:base - self._base]
            self._dropped += base - self._base
            self._base = base
            self._first = max(self._first, base)
            if self._dropped >= max(self._pending // 2, 1 << 16):
                self._prune()
        judge, maybe = self._judge_at, self._maybe
        found: int | None = None
        # the undecided positions whose deciding bytes may have arrived
        ready: list[array[int]] = []
        limit = end >> _SHIFT
        keys = self._keys
        while keys and keys[0] <= limit:
            ready.append(self._buckets.pop(heapq.heappop(keys)))
        for bucket in ready:
            self._pending -= len(bucket)
            for p in bucket:
                if p < base or not maybe[p - base]:
                    continue
                self.judged += 1
                v, at = judge(buf, p - base)
                if v == _NO:
                    maybe[p - base] = 0
                    continue
                if v == _YES:
                    if found is None or p < found:
                        found = p
                    at = len(buf) + 1  # (judged again when the buffer grows)
                self._hold(p, base + at)
        # the new positions (any of them is after every position judged before)
        if found is None:
            start, stop = self._scanned - base, self._stop(len(buf))
            for i in range(start, stop):
                v, at = judge(buf, i)
                if v == _NO:
                    maybe.append(0)
                    continue
                maybe.append(1)
                if v == _YES:
                    found = base + i
                    self._hold(found, end + 1)
                    break
                self._hold(base + i, base + at)
            self._scanned = base + len(maybe)
            self.judged += len(maybe) - max(start, 0)
        if found is not None:
            return found - base, None
        first = maybe.find(1, self._first - base)
        if first >= 0:
            self._first = base + first
            return None, first
        self._first = self._scanned
        return None, (max(len(buf) - 3, 0) if buf else None)

    def _judge_at(self, buf: bytes | bytearray, p: int) -> tuple[int, int]:
        return _judge(buf, p, self.binlog, self.ack)

    def _stop(self, size: int) -> int:
        """The positions judged: before this one."""
        return size - 3

    def _prune(self) -> None:
        """Forget the positions cut from the buffer's start."""
        base, keep = self._base, 0
        for key, bucket in self._buckets.items():
            kept = array("q", [p for p in bucket if p >= base])
            self._buckets[key] = kept
            keep += len(kept)
        self._pending = keep
        self._dropped = 0


class FrameScan(PacketScan):
    """:func:`~binlogscope.wire.compressed.find_frame_start` incrementally, as
    :class:`PacketScan` does :func:`find_packet_start`: where compressed frames start in a
    resync buffer of a capture joined inside a compressed session; each position judged when
    it arrives and again only when the frame it announces is whole (or its next header is
    there)."""

    def __init__(self, limit: int = 1 << 16) -> None:
        super().__init__(binlog=False)
        self.limit = limit

    def _judge_at(self, buf: bytes | bytearray, p: int) -> tuple[int, int]:
        v, at, _ = frame_start_verdict(buf, p)
        return (_YES, 0) if v is True else (_NO, 0) if v is False else (_MAYBE, at)

    def _stop(self, size: int) -> int:
        return min(size, self.limit)

    def find_frame(self, buf: bytes | bytearray, base: int = 0) -> tuple[int, str] | None:
        """What find_frame_start answers on ``buf`` (whose first byte is at ``base``)."""
        at = self.find(buf, base)[0]
        if at is None:
            return None
        return at, frame_start_verdict(buf, at)[2]


#: the plain bytes a :class:`PlainPacketScan` holds without finding a packet header before it
#: gives up (the driver then skips them and looks again after them): 4 MiB, about 4 s of
#: scanning for the scans of one direction
PLAIN_SCAN_LIMIT = 1 << 22


class PlainPacketScan:
    """Where the first packet starts in the *plain* bytes of compressed frames, from a frame
    start found by :class:`FrameScan` on: the net layer writes a frame when its buffer is full
    (16 KiB, MariaDB's and MySQL's net_buffer_length), so during a binlog dump that catches up
    every frame can start inside a packet and no frame starts on a packet boundary. Each whole
    frame is inflated once, as it arrives, onto one plain stream, and the packet scans of
    :func:`find_packet_start` (``modes``: (binlog, ack) pairs, as the driver scans plain
    bytes) run incrementally over it.

    :meth:`find` answers (the stream offset of the frame holding the packet start, the plain
    bytes of that frame before it, whether a binlog-stream or ACK scan found it) or None;
    :attr:`failed` once a frame does not inflate (the start was not a frame after all),
    :attr:`exhausted` once :attr:`plain_limit` plain bytes hold no packet start."""

    def __init__(self, start: int, algorithm: str, modes: list[tuple[bool, bool]], *,
                 plain_limit: int | None = None) -> None:
        self.start = start
        self.algorithm = algorithm
        self.plain_limit = PLAIN_SCAN_LIMIT if plain_limit is None else plain_limit
        self.failed = False
        self.exhausted = False
        self._next = start  # stream offset of the next frame not inflated yet
        self._plain = bytearray()
        self._frames: list[int] = []  # each inflated frame's plain start
        self._wire: list[int] = []  # and its stream offset
        self._scans = [(binlog or ack, PacketScan(binlog=binlog, ack=ack))
                       for binlog, ack in modes]

    def find(self, buf: bytes | bytearray, base: int = 0) -> tuple[int, int, bool] | None:
        """Inflate the frames of ``buf`` (its first byte at stream offset ``base``; the frame
        chain from :attr:`start`) that are whole now, and look for the first packet start."""
        if self.failed or self.exhausted:
            return None
        plain = self._plain
        while True:
            i = self._next - base
            if i < 0 or len(buf) - i < FRAME_HEADER_LEN:
                break
            n = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16
            size = buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16
            if len(buf) - i < FRAME_HEADER_LEN + n:
                break
            body = bytes(buf[i + FRAME_HEADER_LEN:i + FRAME_HEADER_LEN + n])
            try:
                data = inflate(self.algorithm, body, size) if size else body
            except FrameError:
                self.failed = True
                return None
            self._frames.append(len(plain))
            self._wire.append(self._next)
            plain += data
            self._next += FRAME_HEADER_LEN + n
        found: list[tuple[int, bool]] = []
        for stream, scan in self._scans:
            at = scan.find(plain, 0)[0]
            if at is not None:
                found.append((at, stream))
        if not found:
            if len(plain) > self.plain_limit:
                self.exhausted = True
            return None
        at, stream = min(found, key=lambda f: (f[0], not f[1]))
        k = bisect.bisect_right(self._frames, at) - 1
        return self._wire[k], at - self._frames[k], stream


def looks_like_greeting(payload: bytes) -> bool:
    """A server greeting (HandshakeV10) or a connect-time ERR in one segment."""
    if len(payload) < 5 or payload[3] != 0:
        return False
    n = int(_U32LE.unpack_from(payload, 0)[0]) & 0xFFFFFF
    if n != len(payload) - 4:
        return False
    if payload[4] == 0xFF:
        return n >= 3
    if payload[4] != 0x0A or n < 33:
        return False
    nul = payload.find(b"\0", 5, 5 + 64)
    return nul > 5 and all(32 <= c < 127 for c in payload[5:nul])


def greeting_plausible(peer: Peer, payload: bytes) -> bool:
    """In CONNECT: is this the start of a connection (a server greeting or a refusal)?"""
    if peer == Peer.CLIENT or not payload:
        return False
    return payload[0] in (0x0A, 0xFF)


__all__ = ["FrameScan", "PacketScan", "PlainPacketScan", "find_packet_start", "greeting_plausible",
           "looks_like_greeting"]
