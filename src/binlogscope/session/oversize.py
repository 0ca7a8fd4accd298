"""The packet size limit of a session, and a long packet's fragments joined once.

A logical packet longer than 16 MiB - 1 comes as a chain of 0xFFFFFF-byte fragments ended by a
shorter one (MySQL client/server protocol, "Sending more than 16 MiB"). The session waits until
the whole chain is buffered and joins it once (:func:`pending_need` walks the buffered
fragment headers - a few per chain - instead of splitting everything again at each fragment,
which copied the pending packet once per fragment: 27.5 s for 512 MiB). A packet whose payload
is over the session's ``max_packet`` (default :data:`DEFAULT_MAX_PACKET`, ``live``'s
``--max-packet-size``; an option on ``pcap``, ``sniff`` and ``proxy`` too) is not buffered:
what was buffered of it is dropped and the rest is skipped fragment by fragment as it comes
(:class:`Oversize`), then one :class:`~binlogscope.session.events.DecodeError` gives its size,
and decoding goes on with the next packet - a hostile or broken peer cannot make an observer
hold gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.wire.framing import HEADER_LEN, MAX_PAYLOAD, PacketBuffer

#: the largest payload a session buffers: 1 GiB, MariaDB's and MySQL's max_allowed_packet ceiling
DEFAULT_MAX_PACKET = 1 << 30


@dataclass
class Oversize:
    """A packet over the limit, being skipped: where it started and how much was seen."""

    start: int  # the stream offset of its first header byte
    limit: int
    payload: int = 0  # payload bytes seen (skipped) so far
    fragments: int = 0
    left: int = 0  # bytes of the current fragment still to skip
    more: bool = True  # another fragment follows the current one
    hdr: bytes = b""  # a fragment header cut between reads
    ended: bool = False  # its last fragment was skipped

    def eat(self, data: bytes) -> tuple[int, bool]:
        """Skip what belongs to the packet at the start of ``data``: (bytes taken, the packet
        ended)."""
        used, self.ended = self._eat(data)
        return used, self.ended

    def _eat(self, data: bytes) -> tuple[int, bool]:
        if not self.left and not self.more:  # (its last byte was the last one buffered)
            return 0, True
        i, n = 0, len(data)
        while i < n:
            if self.left:
                take = min(self.left, n - i)
                i += take
                self.left -= take
                self.payload += take
                if not self.left and not self.more:
                    return i, True
                continue
            if not self.more:
                return i, True
            got = data[i:i + HEADER_LEN - len(self.hdr)]
            i += len(got)
            self.hdr += got
            if len(self.hdr) < HEADER_LEN:
                break
            m = self.hdr[0] | self.hdr[1] << 8 | self.hdr[2] << 16
            self.hdr = b""
            self.fragments += 1
            self.left = m
            self.more = m == MAX_PAYLOAD
            if not m and not self.more:
                return i, True
        return i, False

    def message(self, *, ended: bool = True) -> str:
        size = f"{self.payload} bytes in {self.fragments} fragments" if ended else \
            f"at least {self.payload} bytes (the connection ended inside it)"
        return (f"at offset {self.start}: a packet of {size}, over the packet size limit of "
                f"{self.limit} bytes (--max-packet-size): skipped, not decoded")


def pending_need(buf: PacketBuffer, limit: int) -> tuple[int, Oversize | None, bytes]:
    """The packet at the head of ``buf`` (its uncommitted bytes start at a header): how many
    buffered bytes it needs before it can be decoded whole (the end of its last fragment once
    that fragment's header is in, else the next header's end). Over ``limit``: the
    :class:`Oversize` that skips the rest of it (what was buffered is dropped, the buffer moved
    past it) and the bytes buffered after its end (the next packet's, to feed again)."""
    have = buf.pending
    k = payload = frags = m = 0
    while True:
        if k + HEADER_LEN > have:
            return k + HEADER_LEN, None, b""
        h = buf.peek_at(k, 3)
        m = h[0] | h[1] << 8 | h[2] << 16
        frags += 1
        payload += m
        k += HEADER_LEN + m
        if payload > limit:
            break
        if m < MAX_PAYLOAD or k > have:  # (its end, or the end of the fragment still coming)
            return k, None, b""
    off, rest = buf.take_pending()  # (the buffer is empty at the packet's start)
    over = Oversize(off, limit, payload, frags, 0, m == MAX_PAYLOAD)
    if k > len(rest):  # (the rest of that fragment is still to come)
        over.left = k - len(rest)
        over.payload -= over.left
        buf.skip(len(rest))
        return k, over, b""
    used, done = over.eat(rest[k:])
    tail = rest[k + used:] if done else b""
    buf.skip(len(rest) - len(tail))
    return k, over, tail


__all__ = ["DEFAULT_MAX_PACKET", "Oversize", "pending_need"]
