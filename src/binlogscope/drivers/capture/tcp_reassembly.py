"""TCP reassembly for one direction of one connection (pure: no files, no scapy).

A :class:`StreamReassembler` takes the TCP segments of one direction in capture order and hands
back the byte stream in sequence-number order, as :class:`Chunk` objects (bytes plus the capture
frame and timestamp they came from) and :class:`Gap` markers:

- in order: delivered at once;
- out of order (a later segment arrives first): held until the missing bytes arrive;
- retransmissions and overlaps: bytes already delivered are dropped (the first copy wins, as in
  most stacks and in Wireshark's default);
- loss: when more than ``max_pending`` bytes (or segments) wait behind a hole, or the direction
  ends (FIN/RST/end of capture) with a hole, a :class:`Gap` says how many bytes are missing and
  delivery continues after it. What the bytes after a gap mean is the caller's problem (the pcap
  driver resynchronises on the next plausible MySQL packet header).

Sequence numbers are compared modulo 2**32, so a stream that wraps is handled. A direction whose
SYN is not in the capture starts at the first data segment seen (``mid_stream`` is then True).
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MOD = 1 << 32
_HALF = 1 << 31


def seq_diff(a: int, b: int) -> int:
    """``a - b`` in 32-bit sequence space (-2**31 .. 2**31-1)."""
    d = (a - b) % _MOD
    return d - _MOD if d >= _HALF else d


@dataclass(slots=True)
class Chunk:
    """In-order stream bytes and where they came from."""

    offset: int  # stream offset of data[0] (0 = first byte after the SYN, or the first seen)
    data: bytes
    frame: int  # capture frame number (1-based)
    timestamp: float


@dataclass(slots=True)
class Gap:
    """``length`` stream bytes are missing at ``offset`` (lost in the capture)."""

    offset: int
    length: int
    frame: int  # the frame after which the loss was noticed
    timestamp: float
    reason: str


@dataclass(slots=True)
class ReassemblyStats:
    segments: int = 0
    bytes: int = 0
    retransmitted_segments: int = 0
    overlap_bytes: int = 0
    out_of_order_segments: int = 0
    gaps: int = 0
    lost_bytes: int = 0


@dataclass(slots=True)
class _Pending:
    seq: int
    data: bytes
    frame: int
    timestamp: float


Delivered = Chunk | Gap


@dataclass
class StreamReassembler:
    """One direction of one TCP connection."""

    max_pending: int = 4 << 20  # bytes held behind a hole before declaring it lost
    max_pending_segments: int = 2048
    #: next expected sequence number (None until the SYN or the first data segment)
    next_seq: int | None = None
    #: stream offset of next_seq
    offset: int = 0
    syn_seen: bool = False
    fin_seen: bool = False
    mid_stream: bool = False
    stats: ReassemblyStats = field(default_factory=ReassemblyStats)
    _pending: dict[int, _Pending] = field(default_factory=dict)
    _pending_bytes: int = 0

    def syn(self, seq: int) -> None:
        """A SYN (or SYN+ACK) with initial sequence number ``seq``."""
        if self.next_seq is None:
            self.next_seq = (seq + 1) % _MOD
            self.syn_seen = True

    def segment(self, seq: int, data: bytes, frame: int, timestamp: float) -> list[Delivered]:
        """One data segment; returns what can be delivered now (in stream order)."""
        if not data:
            return []
        st = self.stats
        st.segments += 1
        if self.next_seq is None:
            self.next_seq = seq
            self.mid_stream = True
        d = seq_diff(seq, self.next_seq)
        if d > 0:  # a hole before this segment
            st.out_of_order_segments += 1
            old = self._pending.get(seq)
            if old is None or len(old.data) < len(data):
                if old is not None:
                    self._pending_bytes -= len(old.data)
                self._pending[seq] = _Pending(seq, data, frame, timestamp)
                self._pending_bytes += len(data)
            if (self._pending_bytes > self.max_pending
                    or len(self._pending) > self.max_pending_segments):
                return self._skip_hole(frame, timestamp, "too much data waiting behind a hole")
            return []
        if d < 0:  # starts before what we have: a retransmission or an overlap
            if -d >= len(data):
                st.retransmitted_segments += 1
                st.overlap_bytes += len(data)
                return []
            st.overlap_bytes += -d
            data = data[-d:]
        out: list[Delivered] = [self._deliver(data, frame, timestamp)]
        self._drain(out)
        return out

    def in_order(self, seq: int, data: bytes) -> int:
        """:meth:`segment` for the common case, without the :class:`Chunk`.

        When ``data`` (not empty) is exactly the next bytes and nothing is held behind a hole,
        take it and return the stream offset of its first byte (the Chunk's offset); otherwise
        change nothing and return -1 (call :meth:`segment`).
        """
        if seq != self.next_seq or self._pending:
            return -1
        n = len(data)
        st = self.stats
        st.segments += 1
        st.bytes += n
        offset = self.offset
        self.offset = offset + n
        self.next_seq = (seq + n) % _MOD
        return offset

    def acked(self, ack: int, frame: int, timestamp: float) -> list[Delivered]:
        """The peer acknowledged up to ``ack``: bytes it has but the capture lacks are lost.

        A receiver only acknowledges contiguous data, so an ACK beyond a hole proves the hole's
        segments were delivered but not captured - no need to wait for them.
        """
        out: list[Delivered] = []
        while (self._pending and self.next_seq is not None
               and seq_diff(ack, self.next_seq) > 0):
            out.extend(self._skip_hole(frame, timestamp, "the peer acknowledged data the "
                                       "capture does not have"))
        return out

    @property
    def holding(self) -> int:
        """Bytes held behind a hole."""
        return self._pending_bytes

    def finish(self, frame: int, timestamp: float, reason: str = "end of capture"
               ) -> list[Delivered]:
        """The direction ended (FIN/RST or the end of the capture): flush what is held."""
        out: list[Delivered] = []
        while self._pending:
            out.extend(self._skip_hole(frame, timestamp, reason))
        return out

    # ------------------------------------------------------------------ internals
    def _deliver(self, data: bytes, frame: int, timestamp: float) -> Chunk:
        assert self.next_seq is not None
        c = Chunk(self.offset, data, frame, timestamp)
        self.offset += len(data)
        self.next_seq = (self.next_seq + len(data)) % _MOD
        self.stats.bytes += len(data)
        return c

    def _drain(self, out: list[Delivered]) -> None:
        """Deliver held segments that have become contiguous."""
        while self._pending:
            assert self.next_seq is not None
            p = self._pending.pop(self.next_seq, None)
            if p is None:
                # a held segment may overlap next_seq without starting exactly there
                best: _Pending | None = None
                for q in self._pending.values():
                    d = seq_diff(q.seq, self.next_seq)
                    if d <= 0 and (best is None or d < seq_diff(best.seq, self.next_seq)):
                        best = q
                if best is None:
                    return
                del self._pending[best.seq]
                self._pending_bytes -= len(best.data)
                d = -seq_diff(best.seq, self.next_seq)
                if d >= len(best.data):
                    self.stats.retransmitted_segments += 1
                    self.stats.overlap_bytes += len(best.data)
                    continue
                self.stats.overlap_bytes += d
                out.append(self._deliver(best.data[d:], best.frame, best.timestamp))
                continue
            self._pending_bytes -= len(p.data)
            out.append(self._deliver(p.data, p.frame, p.timestamp))

    def _skip_hole(self, frame: int, timestamp: float, reason: str) -> list[Delivered]:
        """Declare the bytes before the earliest held segment lost and go on from there."""
        assert self.next_seq is not None
        first = min(self._pending.values(), key=lambda q: seq_diff(q.seq, self.next_seq or 0))
        missing = seq_diff(first.seq, self.next_seq)
        out: list[Delivered] = []
        if missing > 0:
            self.stats.gaps += 1
            self.stats.lost_bytes += missing
            out.append(Gap(self.offset, missing, frame, timestamp, reason))
            self.offset += missing
            self.next_seq = first.seq
        self._drain(out)
        return out


__all__ = ["Chunk", "Delivered", "Gap", "ReassemblyStats", "StreamReassembler", "seq_diff"]
