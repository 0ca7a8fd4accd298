"""pcap/pcapng captures -> MySQL sessions: frames, TCP reassembly, one :class:`Session` per flow.

::

    for item in read_capture("replica.pcapng", ports={3306}):
        item.flow, item.frame, item.timestamp, item.event   # a SessionEvent or a note

Layers, each as thin as possible (the whole point is to stay fast on big captures):

1. **File format**: scapy's ``RawPcapReader``/``RawPcapNgReader`` (pcap in both byte orders,
   micro- and nanosecond; pcapng with several interfaces, comments). Only the raw frame bytes are
   used; scapy never dissects a packet (its full dissection costs tens of microseconds a frame).
   Damage (a truncated record, a bad block) ends the iteration with :class:`CaptureError` after
   every good frame before it has been handled.
2. **Link + IP + TCP**: :func:`parse_frame` reads just the headers it needs with ``struct``:
   Ethernet (+ 802.1Q/802.1ad VLAN tags), Linux cooked SLL and SLL2, BSD loopback/null, raw IP;
   IPv4 (options, padding trimmed, fragments skipped) and IPv6 (extension headers).
3. **Flows**: a TCP connection is MySQL when one of its ports is in ``ports`` (default 3306) or
   when a server greeting (HandshakeV10) is seen on it; a port where a greeting was seen counts
   for later connections too. Segments of not-yet-classified connections are held (a little) so
   a connection classified by its greeting is decoded from its first byte.
4. **Reassembly** per direction (:mod:`binlogscope.drivers.tcp_reassembly`); a lost segment
   becomes an error at the gap, then decoding resumes at the next plausible packet header
   (:func:`find_packet_start`). A connection whose start is not in the capture is joined the same
   way (and the binlog stream's checksum setting is inferred from the events).
5. **Session**: an OBSERVER :class:`Session` per flow decodes both directions; each packet gets
   the capture frame where its first byte arrived.
"""

from __future__ import annotations

import gzip
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.tcp_reassembly import Chunk, Gap, ReassemblyStats, StreamReassembler
from binlogscope.events import (
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    Role,
    SessionEvent,
    TlsStarted,
)
from binlogscope.session import Session
from binlogscope.session.resync import find_packet_start, looks_like_greeting

DEFAULT_PORTS = frozenset({3306})

# link types (pcap LINKTYPE_*)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_TYPES = {LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6}

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_ETH_VLAN = {0x8100, 0x88A8, 0x9100}

_U16 = struct.Struct("!H")
_TCP = struct.Struct("!HHIIBB")
_U32LE = struct.Struct("<I")  # packet lengths: 4 bytes read, masked to 3

TCP_FIN = 0x01
TCP_SYN = 0x02
TCP_RST = 0x04
TCP_ACK = 0x10


class CaptureError(Exception):
    """The capture file is missing, not a capture, truncated or corrupt (one clear line)."""


# ---------------------------------------------------------------------------- frames
@dataclass(frozen=True, slots=True)
class Frame:
    number: int  # 1-based, as Wireshark counts
    timestamp: float
    linktype: int
    data: bytes


def _silence_scapy() -> None:
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    logging.getLogger("scapy").setLevel(logging.ERROR)


def iter_frames(path: str) -> Iterator[Frame]:
    """Every frame of a pcap/pcapng file (gzip-compressed too).

    Raises :class:`CaptureError` on a file that is not a capture, and - after yielding every
    good frame - on a truncated or corrupt one.
    """
    for number, ts, lt, data in iter_records(path):
        yield Frame(number, ts, lt, data)


#: pcap (not pcapng) file magics: (byte order, nanosecond timestamps)
_PCAP_MAGIC = {b"\xa1\xb2\xc3\xd4": (">", False), b"\xd4\xc3\xb2\xa1": ("<", False),
               b"\xa1\xb2\x3c\x4d": (">", True), b"\x4d\x3c\xb2\xa1": ("<", True)}
#: scapy's RawPcapReader reads at most this much of one record (4 * its MTU)
_MAX_RECORD_READ = 4 * 65535
_READ_BLOCK = 1 << 20


def iter_records(path: str) -> Iterator[tuple[int, float, int, bytes]]:
    """:func:`iter_frames` as plain ``(number, timestamp, linktype, data)`` tuples.

    An uncompressed classic pcap file is read here directly, a block at a time (the records are
    cut out with ``struct``: the same values and the same errors as scapy's reader, about ten
    times faster); pcapng and gzip-compressed files go through scapy.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    fmt = _PCAP_MAGIC.get(head[:4])
    if fmt is None or len(head) < 24:
        return _iter_records_scapy(path)
    linktype = int(struct.unpack_from(fmt[0] + "I", head, 20)[0])
    return _iter_records_pcap(path, fmt[0], fmt[1], linktype)


def _iter_records_pcap(path: str, endian: str, nano: bool, linktype: int
                       ) -> Iterator[tuple[int, float, int, bytes]]:
    rec = struct.Struct(endian + "IIII").unpack_from
    div = 1e9 if nano else 1e6
    size = os.path.getsize(path)
    number = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed in the finally below)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        fh.seek(24)
        buf = b""
        base = 24  # file offset of buf[0]
        while True:
            more = fh.read(_READ_BLOCK)
            buf = buf + more if buf else more
            n = len(buf)
            pos = 0
            while pos + 16 <= n:
                sec, usec, caplen, _ = rec(buf, pos)
                if caplen > _MAX_RECORD_READ:  # scapy reads the first 4 x MTU bytes only
                    got = min(_MAX_RECORD_READ, size - (base + pos + 16))
                    raise CaptureError(
                        f"{path}: truncated capture: frame {number + 1} at byte {base + pos} "
                        f"has {got} of its {caplen} bytes")
                end = pos + 16 + caplen
                if end > n:
                    break
                number += 1
                yield number, sec + usec / div, linktype, buf[pos + 16 : end]
                pos = end
            buf = buf[pos:]
            base += pos
            if not more:
                break
        if buf:
            if len(buf) < 16:
                raise CaptureError(
                    f"{path}: damaged capture at byte {base} (after frame {number}): truncated "
                    f"record; the {size - base} bytes after it were not read")
            caplen = rec(buf, 0)[2]
            raise CaptureError(
                f"{path}: truncated capture: frame {number + 1} at byte {base} has "
                f"{min(len(buf) - 16, _MAX_RECORD_READ)} of its {caplen} bytes")
    finally:
        fh.close()


def _iter_records_scapy(path: str) -> Iterator[tuple[int, float, int, bytes]]:
    _silence_scapy()
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapNgReader, RawPcapReader

    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    if not magic:
        raise CaptureError(f"{path} is empty")
    compressed = magic[:2] == b"\x1f\x8b"
    size = None if compressed else os.path.getsize(path)
    try:
        reader: Any = RawPcapReader(path)
    except (Scapy_Exception, OSError, EOFError, struct.error, gzip.BadGzipFile) as exc:
        raise CaptureError(f"{path} is not a pcap or pcapng capture ({exc})") from None
    ng = isinstance(reader, RawPcapNgReader)
    nano = bool(getattr(reader, "nano", False))
    linktype = getattr(reader, "linktype", None)
    big = 1 << 30
    number = 0
    try:
        while True:
            before = reader.f.tell()
            try:
                if ng:  # block by block, so damage is located at its block
                    res = reader._read_block(size=big)
                    if res is None:
                        continue  # not a packet block (interface, statistics, ...)
                    data, meta = res
                else:
                    data, meta = reader._read_packet(size=big)
            except EOFError:
                if size is not None and before < size:
                    raise CaptureError(
                        f"{path}: damaged capture at byte {before} (after frame {number}): "
                        f"{'bad or truncated block' if ng else 'truncated record'}; the "
                        f"{size - before} bytes after it were not read") from None
                return
            except (struct.error, OSError, OverflowError, ValueError, Scapy_Exception) as exc:
                raise CaptureError(f"{path}: damaged capture at byte {before} (after frame "
                                   f"{number}): {exc}") from None
            number += 1
            if ng:
                ts = ((meta.tshigh << 32) | meta.tslow) / (meta.tsresol or 1_000_000)
                lt = meta.linktype
            else:
                if len(data) < meta.caplen:
                    raise CaptureError(
                        f"{path}: truncated capture: frame {number} at byte {before} has "
                        f"{len(data)} of its {meta.caplen} bytes")
                ts = meta.sec + meta.usec / (1e9 if nano else 1e6)
                lt = linktype
            yield number, ts, lt, data
    finally:
        reader.close()


# ---------------------------------------------------------------------------- headers
@dataclass(frozen=True, slots=True)
class TcpSegment:
    src: bytes  # packed IP address (4 or 16 bytes)
    sport: int
    dst: bytes
    dport: int
    seq: int
    flags: int
    payload: bytes
    ack: int = 0


def parse_frame(linktype: int, data: bytes) -> TcpSegment | None:
    """The TCP segment in a frame, or None (not IPv4/IPv6 TCP, an IP fragment, too short)."""
    try:
        if linktype in (LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL):
            off = 14 if linktype == LINKTYPE_ETHERNET else 16  # the protocol type ends there
            etype = _U16.unpack_from(data, off - 2)[0]
            while etype in _ETH_VLAN:
                etype = _U16.unpack_from(data, off + 2)[0]
                off += 4
        elif linktype == LINKTYPE_LINUX_SLL2:
            etype = _U16.unpack_from(data, 0)[0]
            off = 20
        elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
            fam = data[0] | data[3]  # host byte order (NULL) or network order (LOOP)
            etype = _ETH_IPV4 if fam == 2 else _ETH_IPV6 if fam in (10, 24, 28, 30) else 0
            off = 4
        elif linktype in _RAW_TYPES:
            v = data[0] >> 4
            etype = _ETH_IPV4 if v == 4 else _ETH_IPV6 if v == 6 else 0
            off = 0
        else:
            return None
        if etype == _ETH_IPV4:
            vihl = data[off]
            ihl = (vihl & 0x0F) * 4
            if vihl >> 4 != 4 or ihl < 20 or data[off + 9] != 6:
                return None
            frag = _U16.unpack_from(data, off + 6)[0]
            if frag & 0x3FFF:  # more fragments or a fragment offset: not reassembled
                return None
            total = _U16.unpack_from(data, off + 2)[0]
            end = off + total if total else len(data)  # 0: TSO, trust the frame
            src = data[off + 12 : off + 16]
            dst = data[off + 16 : off + 20]
            t = off + ihl
        elif etype == _ETH_IPV6:
            plen = _U16.unpack_from(data, off + 4)[0]
            nxt = data[off + 6]
            src = data[off + 8 : off + 24]
            dst = data[off + 24 : off + 40]
            end = off + 40 + plen if plen else len(data)
            t = off + 40
            while nxt in (0, 43, 60):  # hop-by-hop, routing, destination options
                nxt = data[t]
                t += (data[t + 1] + 1) * 8
            if nxt != 6:
                return None  # not TCP (or a fragment header: not reassembled)
        else:
            return None
        sport, dport, seq, ack, doff, flags = _TCP.unpack_from(data, t)
        start = t + (doff >> 4) * 4
        end = min(end, len(data))
        return TcpSegment(src, sport, dst, dport, seq, flags, data[start:end], ack)
    except (IndexError, struct.error):
        return None


def format_addr(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    import ipaddress

    return f"[{ipaddress.IPv6Address(ip)}]:{port}"


# ---------------------------------------------------------------------------- flows
@dataclass(eq=False)
class Flow:
    """One MySQL TCP connection in the capture."""

    id: int  # 1-based, in order of appearance
    client: str  # "ip:port"
    server: str
    first_frame: int
    first_timestamp: float
    mid_stream: bool = False  # the connection's start (SYN) is not in the capture
    client_stats: ReassemblyStats = field(default_factory=ReassemblyStats)
    server_stats: ReassemblyStats = field(default_factory=ReassemblyStats)
    encrypted: bool = False
    compressed: bool = False
    opaque_bytes: int = 0

    @property
    def name(self) -> str:
        return f"{self.client} -> {self.server}"


@dataclass(frozen=True, slots=True)
class CaptureItem:
    """What :func:`read_capture` yields."""

    flow: Flow
    kind: str  # "event" (a SessionEvent) | "flow" (a new flow) | "note" | "error"
    frame: int
    timestamp: float
    event: SessionEvent | None = None
    text: str = ""

    @property
    def direction(self) -> Peer | None:
        return getattr(self.event, "direction", None)


_new_object = object.__new__
_set_flow, _set_kind, _set_frame, _set_timestamp, _set_event, _set_text = (
    CaptureItem.__dict__[name].__set__
    for name in ("flow", "kind", "frame", "timestamp", "event", "text"))


def _event_item(flow: Flow, frame: int, timestamp: float, event: SessionEvent) -> CaptureItem:
    """``CaptureItem(flow, "event", frame, timestamp, event)`` at half the cost (one per packet):
    a frozen dataclass's ``__init__`` goes through ``object.__setattr__`` for every field, this
    sets the slots directly. Same object, same fields."""
    item: CaptureItem = _new_object(CaptureItem)
    _set_flow(item, flow)
    _set_kind(item, "event")
    _set_frame(item, frame)
    _set_timestamp(item, timestamp)
    _set_event(item, event)
    _set_text(item, "")
    return item


@dataclass(slots=True)
class _Dir:
    """Per direction: reassembly, resync state and the offset -> frame map."""

    peer: Peer
    tcp: StreamReassembler
    frames: deque[tuple[int, int, float]] = field(default_factory=deque)  # offset, frame, ts
    syncing: bool = False
    sync_buf: bytearray = field(default_factory=bytearray)
    sync_base: int = 0  # stream offset of sync_buf[0]
    skip: int = 0  # bytes to report as missing/skipped when sync is found
    reason: str = ""
    fin_pending: bool = False
    gap_offset: int = 0  # where the gap being resynchronised after starts
    gap_frame: int = 0
    fed_end: int = 0  # stream offset after the last byte given to the session
    last_packet_end: int = 0

    def frame_at(self, offset: int) -> tuple[int, float]:
        fr = self.frames
        while len(fr) > 1 and fr[1][0] <= offset:
            fr.popleft()
        if not fr:
            return 0, 0.0
        return fr[0][1], fr[0][2]


class _Conn:
    def __init__(self, flow: Flow, record: bool, max_pending: int) -> None:
        self.flow = flow
        self.record = record
        self.session: Session | None = None
        self.client = _Dir(Peer.CLIENT, StreamReassembler(max_pending=max_pending))
        self.server = _Dir(Peer.SERVER, StreamReassembler(max_pending=max_pending))
        flow.client_stats = self.client.tcp.stats
        flow.server_stats = self.server.tcp.stats
        self.server_packets = 0
        self.keys: tuple[_Key, ...] = ()
        self.fast_keys: set[_FastKey] = set()  # CaptureReader._fast entries of this connection


_Key = tuple[bytes, int, bytes, int]
#: IPv4 only: (source + destination address, source port << 16 | destination port)
_FastKey = tuple[bytes, int]

#: where the IPv4 header starts, per link type, when the frame carries IPv4 (see _ipv4_offset)
_ETH_IPV4_BYTES = b"\x08\x00"
_TCP_HDR = struct.Struct("!HHIIBB")
_SYN_FIN_RST = TCP_SYN | TCP_FIN | TCP_RST


def _ipv4_offset(linktype: int, data: bytes) -> int:
    """Offset of the IPv4 header for the common untagged layouts, -1 for anything else."""
    if linktype == LINKTYPE_ETHERNET:
        return 14 if data[12:14] == _ETH_IPV4_BYTES else -1
    if linktype == LINKTYPE_LINUX_SLL:
        return 16 if data[14:16] == _ETH_IPV4_BYTES else -1
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        return 4 if len(data) > 4 and data[0] | data[3] == 2 else -1
    if linktype == LINKTYPE_LINUX_SLL2:
        return 20 if data[0:2] == _ETH_IPV4_BYTES else -1
    if linktype in _RAW_TYPES:
        return 0 if data and data[0] >> 4 == 4 else -1
    return -1


class CaptureReader:
    """Turns frames into :class:`CaptureItem` objects (see :func:`read_capture`)."""

    def __init__(self, ports: Iterable[int] | None = None, *, record: bool = False,
                 max_pending: int = 4 << 20, hold_segments: int = 64) -> None:
        self.ports = set(DEFAULT_PORTS if ports is None else ports)
        self.greeting_ports: set[int] = set()
        self.record = record
        self.max_pending = max_pending
        self.hold_segments = hold_segments
        self.flows: list[Flow] = []
        self._conns: dict[_Key, tuple[_Conn, bool]] = {}  # key -> (conn, key is client->server)
        self._fast: dict[_FastKey, tuple[_Conn, bool]] = {}  # the same, for record_frame
        self._held: dict[_Key, list[tuple[Frame, TcpSegment]]] = {}  # unclassified, by key
        self._ignored: set[_Key] = set()
        self._closed: set[_Key] = set()  # ended connections (stray segments are dropped)
        self.frames = 0
        self.tcp_segments = 0
        self.non_tcp_frames = 0
        self._last_frame = 0
        self._last_ts = 0.0

    # ------------------------------------------------------------------ entry points
    def frame(self, fr: Frame) -> list[CaptureItem]:
        return self.record_frame(fr.number, fr.timestamp, fr.linktype, fr.data)

    def record_frame(self, number: int, timestamp: float, linktype: int, data: bytes
                     ) -> list[CaptureItem]:
        """:meth:`frame` without the :class:`Frame` (what :func:`iter_records` yields).

        The common case - an IPv4 TCP segment of a known connection that carries the next bytes
        of its direction, no SYN/FIN/RST, nothing held for reassembly - goes straight from the
        frame's bytes to the session; everything else takes the general path (same results).
        """
        self.frames += 1
        self._last_frame = number
        self._last_ts = timestamp
        try:
            if linktype == LINKTYPE_ETHERNET and data[12:14] == _ETH_IPV4_BYTES:
                off = 14
            else:
                off = _ipv4_offset(linktype, data)
            if off >= 0 and data[off] >> 4 == 4 and data[off + 9] == 6:
                ihl = (data[off] & 0x0F) * 4
                if ihl >= 20 and not _U16.unpack_from(data, off + 6)[0] & 0x3FFF:
                    t = off + ihl
                    sport, dport, seq, _ack, doff, flags = _TCP_HDR.unpack_from(data, t)
                    hit = self._fast.get((data[off + 12 : off + 20], sport << 16 | dport))
                    if hit is not None and not flags & _SYN_FIN_RST:
                        total = _U16.unpack_from(data, off + 2)[0]
                        end = off + total if total else len(data)
                        out = self._in_order(hit[0], hit[1], number, timestamp, seq,
                                             data[t + (doff >> 4) * 4 : end])
                        if out is not None:
                            self.tcp_segments += 1
                            return out
        except (IndexError, struct.error):
            pass  # too short: parse_frame says what it is
        seg = parse_frame(linktype, data)
        if seg is None:
            self.non_tcp_frames += 1
            return []
        self.tcp_segments += 1
        return self.segment(Frame(number, timestamp, linktype, data), seg)

    def _in_order(self, conn: _Conn, c2s: bool, number: int, timestamp: float, seq: int,
                  payload: bytes) -> list[CaptureItem] | None:
        """:meth:`_segment` for the common case, or None when the general path is needed."""
        if c2s:
            d, other = conn.client, conn.server
        else:
            d, other = conn.server, conn.client
        if other.tcp.holding or (d.fin_pending and not d.tcp.fin_seen) or (
                other.fin_pending and not other.tcp.fin_seen):
            return None  # a FIN/RST to act on
        out: list[CaptureItem] = []
        if not payload:
            return out  # a pure ACK with nothing held that it could release
        if d.tcp.offset == 0:  # the direction's first bytes: the general path decides
            return None
        offset = d.tcp.in_order(seq, payload)
        if offset < 0:  # not the next bytes: reordering, loss, a retransmission
            return None
        d.frames.append((offset, number, timestamp))
        s = conn.session
        if d.syncing:
            d.sync_buf += payload
            self._try_sync(conn, d, out)
        elif s is None:
            self._feed(conn, d, payload, out)
        else:  # _feed
            s.receive_data(payload, sender=d.peer)
            d.fed_end += len(payload)
            self._drain(conn, d, out)
        return out

    def segment(self, fr: Frame, seg: TcpSegment) -> list[CaptureItem]:
        key = (seg.src, seg.sport, seg.dst, seg.dport)
        hit = self._conns.get(key)
        if hit is not None:
            return self._segment(hit[0], hit[1], fr, seg)
        rkey = (seg.dst, seg.dport, seg.src, seg.sport)
        opening = bool(seg.flags & TCP_SYN and not seg.flags & TCP_ACK)
        if key in self._closed or rkey in self._closed:
            if not opening:
                return []  # a stray ACK/retransmission after the connection ended
            self._closed.discard(key)
            self._closed.discard(rkey)
        if key in self._ignored or rkey in self._ignored:
            if not opening and not self._is_mysql_port(seg):
                return []
            self._ignored.discard(key)
            self._ignored.discard(rkey)
        held_key = key if key in self._held else rkey if rkey in self._held else None
        if held_key is None:
            held_key = key
            self._held[key] = []
        held = self._held[held_key]
        held.append((fr, seg))
        server_port = self._classify(held)
        if server_port is None:
            if len(held) > self.hold_segments:
                del self._held[held_key]
                self._ignored.add(held_key)
            return []
        del self._held[held_key]
        return self._promote(held, server_port)

    def finish(self) -> list[CaptureItem]:
        """End of the capture: flush every flow (holes become gaps, unfinished packets noted)."""
        out: list[CaptureItem] = []
        for held in list(self._held.values()):
            port = self._classify(held)
            if port is not None:
                out.extend(self._promote(held, port))
        self._held.clear()
        seen: set[int] = set()
        for conn, _ in list(self._conns.values()):
            if id(conn) in seen:
                continue
            seen.add(id(conn))
            out.extend(self._end(conn, "end of capture"))
        return out

    # ------------------------------------------------------------------ classification
    def _is_mysql_port(self, seg: TcpSegment) -> bool:
        p = self.ports | self.greeting_ports
        return bool(seg.sport in p or seg.dport in p)

    def _classify(self, held: list[tuple[Frame, TcpSegment]]) -> int | None:
        """The server port of a held connection, or None (not MySQL, or not known yet)."""
        known = self.ports | self.greeting_ports
        first = held[0][1]
        for _fr, seg in held:
            if seg.payload and looks_like_greeting(seg.payload):
                self.greeting_ports.add(seg.sport)
                return seg.sport
            if seg.flags & TCP_SYN and seg.flags & TCP_ACK and seg.sport in known:
                return seg.sport
            if seg.flags & TCP_SYN and not seg.flags & TCP_ACK and seg.dport in known:
                return seg.dport
        if not any(s.payload for _f, s in held):
            return None  # nothing to decode yet (and maybe the greeting comes next)
        if first.dport in known and first.sport in known:
            return min(first.dport, first.sport)
        if first.dport in known or first.sport in known:
            return first.dport if first.dport in known else first.sport
        return None

    def _promote(self, held: list[tuple[Frame, TcpSegment]], server_port: int
                 ) -> list[CaptureItem]:
        fr0, s0 = held[0]
        if s0.sport == server_port and not (s0.dport == server_port and s0.flags & TCP_SYN
                                            and not s0.flags & TCP_ACK):
            server, sport, client, cport = s0.src, s0.sport, s0.dst, s0.dport
        else:
            client, cport, server, sport = s0.src, s0.sport, s0.dst, s0.dport
        syn = any(s.flags & TCP_SYN for _f, s in held)
        flow = Flow(len(self.flows) + 1, format_addr(client, cport), format_addr(server, sport),
                    fr0.number, fr0.timestamp, mid_stream=not syn)
        self.flows.append(flow)
        conn = _Conn(flow, self.record, self.max_pending)
        conn.keys = ((client, cport, server, sport), (server, sport, client, cport))
        self._conns[conn.keys[0]] = (conn, True)
        self._conns[conn.keys[1]] = (conn, False)
        what = ("joined mid-connection (its start is not in the capture)" if not syn
                else "new connection")
        out = [CaptureItem(flow, "flow", fr0.number, fr0.timestamp, text=what)]
        for fr, seg in held:
            out.extend(self._segment(conn, seg.src == client and seg.sport == cport, fr, seg))
        return out

    def _drop(self, conn: _Conn) -> None:
        for k in conn.keys:
            self._conns.pop(k, None)
            self._closed.add(k)
        for fk in conn.fast_keys:
            self._fast.pop(fk, None)
        conn.fast_keys.clear()

    # ------------------------------------------------------------------ per segment
    def _segment(self, conn: _Conn, c2s: bool, fr: Frame, seg: TcpSegment) -> list[CaptureItem]:
        if len(seg.src) == 4 and len(conn.fast_keys) < 2:  # (IPv4) let record_frame find it
            fk = (seg.src + seg.dst, seg.sport << 16 | seg.dport)
            if fk not in conn.fast_keys:
                conn.fast_keys.add(fk)
                self._fast[fk] = (conn, c2s)
        d = conn.client if c2s else conn.server
        out: list[CaptureItem] = []
        if seg.flags & TCP_SYN:
            d.tcp.syn(seg.seq)
            seq = (seg.seq + 1) & 0xFFFFFFFF
        else:
            seq = seg.seq
        if seg.flags & TCP_ACK:  # first: the peer had that data before it sent this segment
            other = conn.server if c2s else conn.client
            if other.tcp.holding:
                for piece in other.tcp.acked(seg.ack, fr.number, fr.timestamp):
                    self._deliver(conn, other, piece, out)
        if seg.payload:
            for piece in d.tcp.segment(seq, seg.payload, fr.number, fr.timestamp):
                self._deliver(conn, d, piece, out)
        if seg.flags & TCP_RST:
            conn.client.fin_pending = conn.server.fin_pending = True
        elif seg.flags & TCP_FIN:
            d.fin_pending = True
        for dd in (conn.client, conn.server):
            if dd.fin_pending and not dd.tcp.fin_seen and (
                    not dd.tcp.holding or seg.flags & TCP_RST):
                self._close_dir(conn, dd, fr, out)
        if conn.client.tcp.fin_seen and conn.server.tcp.fin_seen:
            out.extend(self._end(conn, "connection closed"))
        return out

    def _close_dir(self, conn: _Conn, d: _Dir, fr: Frame, out: list[CaptureItem]) -> None:
        d.tcp.fin_seen = True
        for piece in d.tcp.finish(fr.number, fr.timestamp, "connection closed"):
            self._deliver(conn, d, piece, out)
        if conn.session is not None and not d.syncing:
            conn.session.receive_data(b"", sender=d.peer)
            self._drain(conn, d, out)

    def _end(self, conn: _Conn, reason: str) -> list[CaptureItem]:
        out: list[CaptureItem] = []
        for d in (conn.client, conn.server):
            if d.tcp.fin_seen:
                continue
            for piece in d.tcp.finish(self._last_frame, self._last_ts, reason):
                self._deliver(conn, d, piece, out)
            left = d.fed_end - d.last_packet_end
            s = conn.session
            if d.syncing and d.reason and not d.reason.startswith("the capture starts"):
                out.append(CaptureItem(conn.flow, "error", d.gap_frame, self._last_ts,
                                       text=f"{d.peer.value}: at offset {d.gap_offset}: "
                                       f"{d.reason}; no packet header found after it "
                                       f"({len(d.sync_buf)} bytes)"))
                left = 0
            if left > 0 and s is not None and s.phase not in (Phase.ENCRYPTED,
                                                              Phase.COMPRESSED):
                out.append(CaptureItem(conn.flow, "note", self._last_frame, self._last_ts,
                                       text=f"{d.peer.value}: the capture ends inside a packet "
                                       f"({left} bytes of it captured)"))
        if conn.session is not None:
            conn.flow.opaque_bytes = sum(conn.session.opaque_bytes.values())
        self._drop(conn)
        return out

    def _deliver(self, conn: _Conn, d: _Dir, piece: Chunk | Gap, out: list[CaptureItem]) -> None:
        if isinstance(piece, Gap):
            if conn.session is not None and conn.session.phase in (Phase.ENCRYPTED,
                                                                   Phase.COMPRESSED):
                d.fed_end = piece.offset + piece.length
                d.last_packet_end = d.fed_end
                return
            if d.syncing:
                lost = d.skip + len(d.sync_buf) + piece.length
            else:
                lost = piece.length
                d.syncing = True
                d.gap_offset = piece.offset
                d.gap_frame = piece.frame
            d.skip = lost
            d.sync_buf.clear()
            d.reason = f"{lost} bytes lost in the capture (TCP gap: {piece.reason})"
            d.sync_base = piece.offset + piece.length
            return
        if piece.offset == 0 and d.tcp.mid_stream and not d.syncing and d.fed_end == 0:
            d.syncing = True
            d.skip = 0
            d.sync_base = 0
            d.reason = "the capture starts mid-connection"
        d.frames.append((piece.offset, piece.frame, piece.timestamp))
        if d.syncing:
            d.sync_buf += piece.data
            self._try_sync(conn, d, out)
            return
        self._feed(conn, d, piece.data, out)

    def _try_sync(self, conn: _Conn, d: _Dir, out: list[CaptureItem]) -> None:
        s = conn.session
        server = d.peer == Peer.SERVER
        buf = d.sync_buf
        in_stream = s is not None and s.phase == Phase.BINLOG_STREAM
        found: list[tuple[int, bool]] = []
        waits: list[int] = []
        scans = ([(True, False)] if server else [(False, True)] if in_stream else [])
        if not (server and in_stream):
            scans.append((False, False))
        for is_binlog, is_ack in scans:
            at, wait = find_packet_start(buf, binlog=is_binlog, ack=is_ack)
            if at is not None:
                found.append((at, is_binlog))
            elif wait is not None:
                waits.append(wait)
        if not found:
            keep_from = min(waits) if waits else len(buf)
            if len(buf) - keep_from > (1 << 22):  # 4 MiB and still undecided: give up on it
                keep_from = len(buf) - 3
            if keep_from > 0:
                d.skip += keep_from
                d.sync_base += keep_from
                del buf[:keep_from]
            return
        pos, binlog = min(found, key=lambda f: (f[0], not f[1]))  # a binlog match wins ties
        skip = d.skip + pos
        data = bytes(d.sync_buf[pos:])
        d.syncing = False
        d.sync_buf.clear()
        if s is None:
            phase = Phase.BINLOG_STREAM if (server and binlog) else Phase.COMMAND
            s = conn.session = Session(Role.OBSERVER, start_phase=phase, semi_sync=None,
                                       record=self.record)
            conn.flow.mid_stream = True
        elif (server and binlog and s.phase == Phase.COMMAND and conn.server_packets == 0
              and conn.flow.mid_stream):
            s.join_stream()  # joined mid-way: the stream shows what this is
        if skip or d.sync_base + pos != 0:
            reason = d.reason
            if d.reason.startswith("the capture starts"):
                reason = f"{d.reason}: {skip} bytes before the first packet header skipped"
            elif pos:
                reason = f"{d.reason}; {pos} bytes after it skipped to the next packet header"
            s.resync(d.peer, skip, reason)
        d.fed_end = d.sync_base + pos
        d.last_packet_end = d.fed_end
        self._feed(conn, d, data, out)

    def _feed(self, conn: _Conn, d: _Dir, data: bytes, out: list[CaptureItem]) -> None:
        s = conn.session
        if s is None:
            s = conn.session = Session(Role.OBSERVER, record=self.record)
        s.receive_data(data, sender=d.peer)
        d.fed_end += len(data)
        self._drain(conn, d, out)

    def _drain(self, conn: _Conn, d: _Dir, out: list[CaptureItem]) -> None:
        s = conn.session
        assert s is not None
        flow = conn.flow
        append = out.append
        for ev in s.events():
            if type(ev) is PacketDecoded:  # the common case first (same as below)
                direction = ev.direction
                dd = d if direction is d.peer else (
                    conn.client if direction is Peer.CLIENT else conn.server)
                at = ev.offset
                fr = dd.frames  # dd.frame_at(at)
                while len(fr) > 1 and fr[1][0] <= at:
                    fr.popleft()
                if fr:
                    _, frame, ts = fr[0]
                else:
                    frame, ts = 0, 0.0
                dd.last_packet_end = at + ev.wire_length
                if direction is Peer.SERVER:
                    conn.server_packets += 1
                append(_event_item(flow, frame, ts, ev))
                continue
            other = getattr(ev, "direction", None)
            dd = d if other is None or other == d.peer else (
                conn.client if other == Peer.CLIENT else conn.server)
            if isinstance(ev, PacketDecoded):
                frame, ts = dd.frame_at(ev.offset)
                dd.last_packet_end = ev.offset + ev.wire_length
                if ev.direction == Peer.SERVER:
                    conn.server_packets += 1
            elif isinstance(ev, DecodeError | TlsStarted):
                frame, ts = dd.frame_at(ev.offset)
                if isinstance(ev, TlsStarted):
                    flow.encrypted = True
            else:
                frame, ts = (dd.frames[-1][1], dd.frames[-1][2]) if dd.frames else (0, 0.0)
            out.append(CaptureItem(flow, "event", frame, ts, ev))
        if s.phase == Phase.COMPRESSED:
            flow.compressed = True


def read_capture(path: str, ports: Iterable[int] | None = None, *, record: bool = False
                 ) -> Iterator[CaptureItem]:
    """Decode every MySQL flow of a capture, in capture order.

    ``ports``: server ports known to carry MySQL (default 3306); ports where a server greeting
    is seen are added. ``record``: build the annotated Node trees (slower). Raises
    :class:`CaptureError` (after yielding everything before the damage) on a bad file.
    """
    for items in read_capture_batches(path, ports, record=record):
        yield from items


def read_capture_batches(path: str, ports: Iterable[int] | None = None, *,
                         record: bool = False) -> Iterator[list[CaptureItem]]:
    """:func:`read_capture` a frame's items at a time (never an empty list): for consumers of
    big captures, one generator step per frame instead of one per item."""
    reader = CaptureReader(ports, record=record)
    feed = reader.record_frame
    try:
        for number, ts, linktype, data in iter_records(path):
            items = feed(number, ts, linktype, data)
            if items:
                yield items
    except CaptureError:
        items = reader.finish()  # everything before the damage
        if items:
            yield items
        raise
    items = reader.finish()
    if items:
        yield items


__all__ = [
    "DEFAULT_PORTS",
    "CaptureError",
    "CaptureItem",
    "CaptureReader",
    "Flow",
    "Frame",
    "TcpSegment",
    "find_packet_start",
    "format_addr",
    "iter_frames",
    "iter_records",
    "looks_like_greeting",
    "parse_frame",
    "read_capture",
    "read_capture_batches",
]
