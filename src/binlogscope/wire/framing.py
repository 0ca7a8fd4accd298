"""Packet framing: 3-byte little-endian payload length + 1-byte sequence id + payload.

A payload of exactly ``0xFFFFFF`` bytes means "continued": the next packet carries more, and a
logical payload whose size is a multiple of ``0xFFFFFF`` ends with an *empty* packet. Each
fragment has its own sequence id. :class:`PacketBuffer` (one per direction, sans-IO, in the style
of wsproto's ``Buffer``) joins the fragments and keeps every fragment header's absolute offset,
so the Node tree of a 16 MiB+ packet still maps every byte, headers included, to its place on
the wire (see :func:`packet_node`).

Sequence ids count packets within one command exchange: the client's command has 0, every
following packet in either direction adds 1 (mod 256); a new command restarts at 0. In a binlog
stream the source's packets simply keep increasing and wrap from 255 to 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

HEADER_LEN = 4
#: payload length that means "the payload continues in the next packet"
MAX_PAYLOAD = 0xFFFFFF


@dataclass(frozen=True, slots=True)
class Fragment:
    """One physical packet: where its 4-byte header is, its payload length and sequence id."""

    offset: int
    payload_length: int
    sequence_id: int

    @property
    def end(self) -> int:
        return self.offset + HEADER_LEN + self.payload_length


@dataclass(frozen=True, slots=True)
class Packet:
    """One logical packet: the joined payload and the fragments it came in."""

    payload: bytes
    fragments: tuple[Fragment, ...]

    @property
    def offset(self) -> int:
        """Absolute offset of the first header byte."""
        return self.fragments[0].offset

    @property
    def payload_offset(self) -> int:
        """Absolute offset of the first payload byte."""
        return self.fragments[0].offset + HEADER_LEN

    @property
    def sequence_id(self) -> int:
        return self.fragments[0].sequence_id

    @property
    def last_sequence_id(self) -> int:
        return self.fragments[-1].sequence_id

    @property
    def wire_length(self) -> int:
        return len(self.payload) + HEADER_LEN * len(self.fragments)

    @property
    def end(self) -> int:
        return self.fragments[-1].end


def decode_packet_header(r: ByteReader, *, continuation: bool = False) -> Fragment:
    """Read one 4-byte packet header (a ``packet_header`` group)."""
    start = r.offset
    r.begin("packet_header",
            doc="continuation header: the payload before it was exactly 0xFFFFFF bytes"
            if continuation else "4-byte packet header: payload length and sequence id")
    n = r.u24("payload_length",
              doc="length of the payload that follows (0xFFFFFF: continued in the next packet)")
    seq = r.u8("sequence_id",
               doc="packet counter: 0 for a command, +1 per packet in either direction, "
               "wraps at 255")
    r.end_group()
    return Fragment(start, n, seq)


def header_node(frag: Fragment, *, continuation: bool = False) -> Node:
    """The ``packet_header`` Node of a fragment (built without a reader)."""
    r = ByteReader(frag.payload_length.to_bytes(3, "little") + bytes((frag.sequence_id,)),
                   base=frag.offset)
    decode_packet_header(r, continuation=continuation)
    return r.children()[0]


def encode_packet(payload: bytes, sequence_id: int) -> bytes:
    """Frame ``payload``: split at 0xFFFFFF, add the empty trailer for exact multiples."""
    out = bytearray()
    seq = sequence_id & 0xFF
    pos = 0
    while True:
        chunk = payload[pos : pos + MAX_PAYLOAD]
        out += len(chunk).to_bytes(3, "little") + bytes((seq,)) + chunk
        seq = (seq + 1) & 0xFF
        pos += len(chunk)
        if len(chunk) < MAX_PAYLOAD:
            break
    return bytes(out)


def fragment_count(payload_length: int) -> int:
    """How many physical packets a payload of this length needs (incl. an empty trailer)."""
    return payload_length // MAX_PAYLOAD + 1


class PacketBuffer:
    """Buffer of one direction's bytes; yields complete logical packets.

    ``consume_exactly(n)`` returns None to mean "wait for more"; ``commit()`` makes the
    consumption final and ``rollback()`` undoes everything since the last commit. ``offset`` is
    the absolute position (in this direction) of the next unread byte.
    """

    def __init__(self, start_offset: int = 0) -> None:
        self._buf = bytearray()
        self._base = start_offset  # absolute offset of _buf[0]
        self._pos = 0  # committed read position in _buf
        self._cur = 0  # tentative read position in _buf
        self.eof = False

    @property
    def offset(self) -> int:
        return self._base + self._pos

    @property
    def pending(self) -> int:
        """Bytes received but not yet committed."""
        return len(self._buf) - self._pos

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            self.eof = True
            return
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._base += self._pos
            self._cur -= self._pos
            self._pos = 0
        self._buf += data

    def consume_exactly(self, n: int) -> bytes | None:
        if len(self._buf) - self._cur < n:
            return None
        out = bytes(self._buf[self._cur : self._cur + n])
        self._cur += n
        return out

    def commit(self) -> None:
        self._pos = self._cur

    def rollback(self) -> None:
        self._cur = self._pos

    def drain(self) -> tuple[int, bytes]:
        """Take every buffered byte (encrypted traffic, a truncated packet at EOF)."""
        off = self.offset
        data = bytes(self._buf[self._pos :])
        self._pos = self._cur = len(self._buf)
        return off, data

    def peek(self, n: int) -> bytes:
        """The first ``n`` uncommitted bytes (fewer when fewer are there), not consumed."""
        return bytes(self._buf[self._pos : self._pos + n])

    def peek_at(self, i: int, n: int) -> bytes:
        """``n`` uncommitted bytes from the ``i``-th on (fewer when fewer are there)."""
        start = self._pos + i
        return bytes(self._buf[start : start + n])

    def take_pending(self) -> tuple[int, bytes]:
        """Remove every uncommitted byte and return it with the offset of its first byte; the
        buffer is then empty at that offset, as if those bytes had not been received yet."""
        off = self.offset
        data = bytes(memoryview(self._buf)[self._pos :])  # (one copy, not two)
        self._base = off
        self._buf = bytearray()
        self._pos = self._cur = 0
        return off, data

    def skip(self, n: int) -> None:
        """Jump ``n`` bytes ahead in the stream without data (bytes lost in a capture).

        Call after :meth:`drain`: the next byte received is at ``offset + n``.
        """
        self._base += len(self._buf) + n
        self._buf = bytearray()
        self._pos = self._cur = 0

    def next_packet(self) -> Packet | None:
        """The next complete logical packet, or None when more bytes are needed."""
        frags: list[Fragment] = []
        parts: list[bytes] = []
        while True:
            at = self._base + self._cur
            hdr = self.consume_exactly(HEADER_LEN)
            if hdr is None:
                self.rollback()
                return None
            n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
            body = self.consume_exactly(n)
            if body is None:
                self.rollback()
                return None
            frags.append(Fragment(at, n, hdr[3]))
            parts.append(body)
            if n < MAX_PAYLOAD:
                break
        self.commit()
        payload = parts[0] if len(parts) == 1 else b"".join(parts)
        return Packet(payload, tuple(frags))


# ---------------------------------------------------------------------------- nodes
class _WireMap:
    """Maps logical payload offsets to wire offsets for a multi-fragment packet."""

    def __init__(self, packet: Packet) -> None:
        self.base = packet.payload_offset
        self.total = len(packet.payload)
        self.frags = packet.fragments

    def start(self, i: int) -> int:
        """Wire offset of logical payload byte ``i`` (0 <= i < total)."""
        return self.base + i + HEADER_LEN * (i // MAX_PAYLOAD)

    def end(self, e: int) -> int:
        """Wire offset just after logical byte ``e - 1``."""
        if e <= 0:
            return self.base
        return self.start(e - 1) + 1

    def node(self, n: Node) -> Node:
        s = n.offset - self.base
        e = n.end - self.base
        if n.length == 0:
            w = self.end(s)
            return Node(n.name, w, 0, n.value, n.wire, n.display, n.doc,
                        tuple(self.node(c) for c in n.children), n.error)
        ws, we = self.start(s), self.end(e)
        if n.children and n.children[0].wire != "bit":
            kids = [self.node(c) for c in n.children]
            tiled: list[Node] = []
            cursor = ws
            for c in kids:
                tiled.extend(self._headers_between(cursor, c.offset))
                tiled.append(c)
                cursor = c.end
            tiled.extend(self._headers_between(cursor, we))
            return Node(n.name, ws, we - ws, n.value, n.wire, n.display, n.doc, tuple(tiled),
                        n.error)
        if we - ws == n.length:
            kids2 = tuple(self._shift_bits(c, ws - n.offset) for c in n.children)
            return Node(n.name, ws, n.length, n.value, n.wire, n.display, n.doc, kids2, n.error)
        # a leaf split by one or more continuation headers
        parts: list[Node] = []
        i = s
        k = 0
        while i < e:
            stop = min(e, (i // MAX_PAYLOAD + 1) * MAX_PAYLOAD)
            if parts:
                parts.extend(self._headers_between(parts[-1].end, self.start(i)))
            parts.append(Node(f"{n.name}[{k}]", self.start(i), stop - i, None, n.wire,
                              f"part {k + 1} of {n.name}, cut by a packet boundary", n.doc))
            i = stop
            k += 1
        return Node(n.name, ws, we - ws, n.value, n.wire, n.display, n.doc, tuple(parts), n.error)

    def _shift_bits(self, c: Node, delta: int) -> Node:
        return Node(c.name, c.offset + delta, c.length, c.value, c.wire, c.display, c.doc,
                    c.children, c.error)

    def _headers_between(self, lo: int, hi: int) -> list[Node]:
        return [header_node(f, continuation=True) for f in self.frags[1:]
                if lo <= f.offset and f.offset + HEADER_LEN <= hi]


def packet_node(
    packet: Packet,
    payload: Node,
    *,
    name: str = "packet",
    value: object = None,
    display: str = "",
    doc: str = "",
    error: str | None = None,
) -> Node:
    """The root Node of a packet: its header(s) and the decoded payload Node.

    ``payload`` was decoded from the joined payload with ``base=packet.payload_offset``; for a
    multi-fragment packet its spans are mapped onto the wire and the continuation headers are
    inserted where they sit (a field cut by a boundary gets ``name[0]``, ``name[1]`` parts).
    """
    first = header_node(packet.fragments[0])
    if len(packet.fragments) == 1:
        kids: tuple[Node, ...] = (first, payload)
    else:
        mapped = _WireMap(packet).node(payload)
        rest = [header_node(f, continuation=True) for f in packet.fragments[1:]
                if f.offset >= mapped.end]
        kids = (first, mapped, *rest)
    return Node(name, packet.offset, packet.wire_length, value, "", display, doc, kids, error)


def gather_fragments(data: bytes, i: int, offset: int, limit: int) -> tuple[Packet | None, int]:
    """The packet continued over several fragments whose first header is at ``data[i]``
    (``data[0]`` at stream ``offset``), its payload joined once (no copy per fragment), and
    where it ends. ``(None, k)``: incomplete - ``k - i`` bytes are needed so far (more than the
    data when the packet is over ``limit`` bytes)."""
    end = len(data)
    frags: list[Fragment] = []
    parts: list[memoryview] = []
    view = memoryview(data)
    k = i
    m = MAX_PAYLOAD
    size = 0
    while m >= MAX_PAYLOAD:
        if k + HEADER_LEN > end:
            return None, k + HEADER_LEN  # (the next header is still missing)
        m = data[k] | data[k + 1] << 8 | data[k + 2] << 16
        size += m
        if size > limit:
            return None, end + HEADER_LEN
        if k + HEADER_LEN + m > end:
            return None, k + HEADER_LEN + m
        frags.append(Fragment(offset + k, m, data[k + 3]))
        parts.append(view[k + HEADER_LEN : k + HEADER_LEN + m])
        k += HEADER_LEN + m
    return Packet(b"".join(parts), tuple(frags)), k
