"""Flows: one OBSERVER :class:`~binlogscope.session.Session` per MySQL TCP connection.

The third layer of the pcap driver (:mod:`binlogscope.drivers.capture.pcap`). :class:`CaptureReader`
takes frames (:mod:`~binlogscope.drivers.capture.files`), finds their TCP segments
(:mod:`~binlogscope.drivers.capture.layers`) and keeps a table of connections:

- a TCP connection is MySQL when one of its ports is in ``ports`` (default 3306) or when a server
  greeting (HandshakeV10) is seen on it; a port where a greeting was seen counts for later
  connections too. Segments of not-yet-classified connections are held (a little) so a
  connection classified by its greeting is decoded from its first byte;
- each direction is reassembled (:mod:`binlogscope.drivers.capture.tcp_reassembly`); a lost segment
  becomes an error at the gap, then decoding resumes at the next plausible packet header
  (:mod:`~binlogscope.session.resync`). A connection whose start is not in the capture is
  joined the same way (and the binlog stream's checksum setting is inferred from the events);
- an OBSERVER session per flow decodes both directions; each packet gets the capture frame where
  its first byte arrived;
- after an SSLRequest the client's next bytes are looked at once: a TLS record and the
  connection stays opaque; a MySQL packet with sequence id 2 means the capture holds the
  decrypted connection
  (a ``binlogscope proxy --record`` of a session whose TLS the proxy terminated) and the
  session is told so (:meth:`~binlogscope.session.Session.tls_established` with
  ``plaintext=True``; a note says it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from binlogscope.drivers.capture.conns import Connection as _Conn
from binlogscope.drivers.capture.conns import Direction as _Dir
from binlogscope.drivers.capture.conns import FastKey as _FastKey
from binlogscope.drivers.capture.conns import Key as _Key
from binlogscope.drivers.capture.conns import compressed_resume
from binlogscope.drivers.capture.drain import drain
from binlogscope.drivers.capture.files import Frame
from binlogscope.drivers.capture.layers import (
    LINKTYPE_ETHERNET,
    SYN_FIN_RST,
    TCP_ACK,
    TCP_FIN,
    TCP_HEADER,
    TCP_RST,
    TCP_SYN,
    TcpSegment,
    format_addr,
    ipv4_offset,
    parse_frame,
)
from binlogscope.drivers.capture.lines import CaptureLines, PacketLines
from binlogscope.drivers.capture.tcp_reassembly import (
    Chunk,
    Gap,
)
from binlogscope.drivers.items import Flow, SourceItem
from binlogscope.session import Session
from binlogscope.session.events import (
    Peer,
    Phase,
    Role,
)
from binlogscope.session.oversize import DEFAULT_MAX_PACKET
from binlogscope.session.resync import (
    PacketScan,
    find_packet_start,
    looks_like_greeting,
)
from binlogscope.wire.compressed import FRAME_HEADER_LEN, inflate

DEFAULT_PORTS = frozenset({3306})

_U16 = struct.Struct("!H")
_ETH_IPV4_BYTES = b"\x08\x00"




class CaptureReader:
    """Turns frames into :class:`SourceItem` objects (see :func:`read_capture`)."""

    def __init__(self, ports: Iterable[int] | None = None, *, record: bool = False,
                 max_pending: int = 4 << 20, hold_segments: int = 64,
                 max_packet: int = DEFAULT_MAX_PACKET, lines: PacketLines | None = None
                 ) -> None:
        self.ports = set(DEFAULT_PORTS if ports is None else ports)
        #: the --json lines of the flows' server event packets by the native kernel (the
        #: command's writer per flow: :mod:`.lines`); None: every packet is an item
        self.lines = lines
        #: the largest packet payload a flow's session buffers (``--max-packet-size``)
        self.max_packet = max_packet
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
        #: the NSS key log the TLS connections were decrypted with (``pcap --tls-keylog``):
        #: named in the note where the plaintext starts
        self.tls_keylog: str | None = None
        self.frames = 0
        self.tcp_segments = 0
        self.non_tcp_frames = 0
        self._last_frame = 0
        self._last_ts = 0.0

    # ------------------------------------------------------------------ entry points
    def frame(self, fr: Frame) -> list[SourceItem]:
        return self.record_frame(fr.number, fr.timestamp, fr.linktype, fr.data)

    def record_frame(self, number: int, timestamp: float, linktype: int, data: bytes
                     ) -> list[SourceItem]:
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
                off = ipv4_offset(linktype, data)
            if off >= 0 and data[off] >> 4 == 4 and data[off + 9] == 6:
                ihl = (data[off] & 0x0F) * 4
                if ihl >= 20 and not _U16.unpack_from(data, off + 6)[0] & 0x3FFF:
                    t = off + ihl
                    sport, dport, seq, _ack, doff, flags = TCP_HEADER.unpack_from(data, t)
                    hit = self._fast.get((data[off + 12 : off + 20], sport << 16 | dport))
                    if hit is not None and not flags & SYN_FIN_RST:
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
                  payload: bytes) -> list[SourceItem] | None:
        """:meth:`_segment` for the common case, or None when the general path is needed."""
        if c2s:
            d, other = conn.client, conn.server
        else:
            d, other = conn.server, conn.client
        if other.tcp.holding or (d.fin_pending and not d.tcp.fin_seen) or (
                other.fin_pending and not other.tcp.fin_seen):
            return None  # a FIN/RST to act on
        out: list[SourceItem] = []
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
        elif s is None or conn.tls_probe:
            self._feed(conn, d, payload, out)
        else:  # _feed
            s.receive_data(payload, sender=d.peer)
            d.fed_end += len(payload)
            drain(conn, d, out)
        return out

    def segment(self, fr: Frame, seg: TcpSegment) -> list[SourceItem]:
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

    def finish(self) -> list[SourceItem]:
        """End of the capture: flush every flow (holes become gaps, unfinished packets noted)."""
        out: list[SourceItem] = []
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
                 ) -> list[SourceItem]:
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
        out = [SourceItem("flow", flow=flow, frame=fr0.number, time=fr0.timestamp, text=what)]
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
    def _segment(self, conn: _Conn, c2s: bool, fr: Frame, seg: TcpSegment) -> list[SourceItem]:
        if len(seg.src) == 4 and len(conn.fast_keys) < 2:  # (IPv4) let record_frame find it
            fk = (seg.src + seg.dst, seg.sport << 16 | seg.dport)
            if fk not in conn.fast_keys:
                conn.fast_keys.add(fk)
                self._fast[fk] = (conn, c2s)
        d = conn.client if c2s else conn.server
        out: list[SourceItem] = []
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
        if seg.flags & (TCP_RST | TCP_FIN):
            flow = conn.flow
            rst = seg.flags & TCP_RST
            if flow.closed_by is None:
                flow.closed_by = d.peer.value
                flow.close_flag = "RST" if rst else "FIN"
                flow.close_frame = fr.number
                out.append(SourceItem("note", flow=flow, frame=fr.number, time=fr.timestamp,
                                      text=f"{d.peer.value} closed the connection "
                                      f"({flow.close_flag})"))
            if rst:
                conn.client.fin_pending = conn.server.fin_pending = True
            else:
                d.fin_pending = True
        # the side that closed first is closed first (the session names it)
        for dd in ((conn.client, conn.server) if c2s else (conn.server, conn.client)):
            if dd.fin_pending and not dd.tcp.fin_seen and (
                    not dd.tcp.holding or seg.flags & TCP_RST):
                self._close_dir(conn, dd, fr, out)
        if conn.client.tcp.fin_seen and conn.server.tcp.fin_seen:
            out.extend(self._end(conn, "connection closed"))
        return out

    def _close_dir(self, conn: _Conn, d: _Dir, fr: Frame, out: list[SourceItem]) -> None:
        d.tcp.fin_seen = True
        for piece in d.tcp.finish(fr.number, fr.timestamp, "connection closed"):
            self._deliver(conn, d, piece, out)
        if self._unsynced(conn, d, fr.timestamp, out):  # (bytes lost, no packet after them)
            d.syncing = False
            d.sync_buf.clear()
            d.scans.clear()
        if conn.session is not None and not d.syncing:
            conn.session.receive_data(b"", sender=d.peer)
            drain(conn, d, out, (fr.number, fr.timestamp))

    def _end(self, conn: _Conn, reason: str) -> list[SourceItem]:
        out: list[SourceItem] = []
        for d in (conn.client, conn.server):
            if d.tcp.fin_seen:
                continue
            for piece in d.tcp.finish(self._last_frame, self._last_ts, reason):
                self._deliver(conn, d, piece, out)
            left = d.fed_end - d.last_packet_end
            s = conn.session
            if d.syncing:
                conn.flow.skipped_bytes += len(d.sync_buf)
            if self._unsynced(conn, d, self._last_ts, out):
                left = 0
            if left > 0 and s is not None and s.phase not in (Phase.ENCRYPTED,
                                                              Phase.COMPRESSED):
                out.append(SourceItem("note", flow=conn.flow, frame=self._last_frame,
                                      time=self._last_ts,
                                      text=f"{d.peer.value}: the capture ends inside a packet "
                                      f"({left} bytes of it captured)"))
        if conn.session is not None:
            conn.flow.opaque_bytes = sum(conn.session.opaque_bytes.values())
        self._drop(conn)
        return out

    @staticmethod
    def _unsynced(conn: _Conn, d: _Dir, ts: float, out: list[SourceItem]) -> bool:
        """A direction that ends while looking for a packet after lost bytes: an error item."""
        if d.syncing and d.reason and not d.reason.startswith("the capture starts"):
            out.append(SourceItem("error", flow=conn.flow, frame=d.gap_frame, time=ts,
                                  text=f"{d.peer.value}: at offset {d.gap_offset}: "
                                  f"{d.reason}; no packet header found after it "
                                  f"({len(d.sync_buf)} bytes)"))
            return True
        return False

    def _deliver(self, conn: _Conn, d: _Dir, piece: Chunk | Gap, out: list[SourceItem]) -> None:
        if isinstance(piece, Gap):
            if conn.session is not None and conn.session.phase in (Phase.ENCRYPTED,
                                                                   Phase.COMPRESSED):
                d.fed_end = piece.offset + piece.length
                d.last_packet_end = d.fed_end
                return
            if d.syncing:
                conn.flow.skipped_bytes += len(d.sync_buf)
                lost = d.skip + len(d.sync_buf) + piece.length
            else:
                lost = piece.length
                d.syncing = True
                d.gap_offset = piece.offset
                d.gap_frame = piece.frame
            d.skip = lost
            d.sync_buf.clear()
            d.scans.clear()
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

    def _try_sync(self, conn: _Conn, d: _Dir, out: list[SourceItem]) -> None:
        s = conn.session
        server = d.peer == Peer.SERVER
        buf = d.sync_buf
        # a capture that starts inside a compressed session: frames, not packets - found by a
        # frame whose payload inflates to exactly its announced length (wire.compressed)
        compressed = s.state.compression if s is not None else None
        in_stream = s is not None and s.phase == Phase.BINLOG_STREAM
        # the source's side: a binlog stream packet (with or without the 0xEF semi-sync
        # header); the replica's: a semi-sync ACK (0xEF, sequence id 0), which only a binlog
        # stream has - looked for even before the stream is known, so a capture that starts
        # mid-stream is not read as commands and OK packets
        modes = [(True, False)] if server else [(False, True)]
        if not (server and in_stream):  # (a replica also sends commands: COM_QUIT...)
            modes.append((False, False))
        if compressed is not None or d.tcp.mid_stream or conn.flow.mid_stream:
            got = compressed_resume(d, conn.flow, compressed, modes)
            if isinstance(got, tuple):
                self._sync_compressed(conn, d, got[0], got[1], out, plain_skip=got[2],
                                      stream=got[3])
                return
            if got:
                return
            if compressed is not None:  # (the other side is compressed: so is this one)
                if len(buf) > (1 << 22):
                    d.drop(len(buf) - 3, conn.flow)
                return
        found: list[tuple[int, bool]] = []
        waits: list[int] = []
        for is_binlog, is_ack in modes:
            packets = d.scans.get((is_binlog, is_ack))
            if not isinstance(packets, PacketScan):
                packets = d.scans[is_binlog, is_ack] = PacketScan(binlog=is_binlog, ack=is_ack)
            at, wait = packets.find(buf, d.sync_base)
            if at is not None:
                found.append((at, is_binlog or is_ack))
            elif wait is not None:
                waits.append(wait)
        if not found:
            keep_from = min(waits) if waits else len(buf)
            if len(buf) - keep_from > (1 << 22):  # 4 MiB and still undecided: give up on it
                keep_from = len(buf) - 3
            if keep_from > 0:
                d.drop(keep_from, conn.flow)
            return
        # a stream match wins ties
        pos, stream = min(found, key=lambda f: (f[0], not f[1]))
        skip = d.skip + pos
        conn.flow.skipped_bytes += pos
        data = bytes(d.sync_buf[pos:])
        d.syncing = False
        d.sync_buf.clear()
        d.scans.clear()
        if s is None:
            phase = Phase.BINLOG_STREAM if stream else Phase.COMMAND
            s = conn.session = Session(Role.OBSERVER, start_phase=phase, semi_sync=None,
                                       record=self.record)
            s.max_packet = self.max_packet
            conn.flow.mid_stream = True
        elif (stream and s.phase == Phase.COMMAND and conn.server_packets == 0
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

    def _sync_compressed(self, conn: _Conn, d: _Dir, pos: int, algorithm: str,
                         out: list[SourceItem], *, plain_skip: int = 0,
                         stream: bool | None = None) -> None:
        """Resume a direction joined mid-way at the compressed frame at ``pos`` of its sync
        buffer, its first ``plain_skip`` plain bytes (the end of a packet that began before)
        skipped: the session (made here when none is, in BINLOG_STREAM when the packets are a
        binlog stream's: ``stream``, else judged from the frame) reads ``algorithm`` frames
        from there."""
        s = conn.session
        data = bytes(d.sync_buf[pos:])
        skip = d.skip + pos
        conn.flow.skipped_bytes += pos
        d.syncing = False
        d.sync_buf.clear()
        d.scans.clear()
        if s is None:
            if stream is None:
                n = data[0] | data[1] << 8 | data[2] << 16
                size = data[4] | data[5] << 8 | data[6] << 16
                plain = inflate(algorithm, data[FRAME_HEADER_LEN:FRAME_HEADER_LEN + n], size)
                stream = find_packet_start(plain, binlog=True)[0] == 0
            stream = stream and d.peer == Peer.SERVER
            s = conn.session = Session(Role.OBSERVER, start_phase=Phase.BINLOG_STREAM
                                       if stream else Phase.COMMAND, semi_sync=None,
                                       record=self.record)
            s.max_packet = self.max_packet
            conn.flow.mid_stream = True
        s.state.compression = algorithm
        conn.flow.compressed = True
        reason = d.reason
        inside = (f" and the first {plain_skip} bytes of its plain data (the end of a packet "
                  "that began before it)") if plain_skip else ""
        if d.reason.startswith("the capture starts"):
            reason = (f"{d.reason}: {skip} bytes before the first {algorithm}-compressed frame"
                      f"{inside} skipped (compressed protocol: decoding resumes at the first "
                      "packet header in the frames' plain bytes)")
        elif inside:
            reason = f"{d.reason}; from the next {algorithm}-compressed frame{inside} skipped"
        s.resync(d.peer, skip, reason, plain_skip)
        d.fed_end = d.sync_base + pos
        d.last_packet_end = d.fed_end
        self._feed(conn, d, data, out)

    def _feed(self, conn: _Conn, d: _Dir, data: bytes, out: list[SourceItem]) -> None:
        s = conn.session
        if s is None:
            s = conn.session = Session(Role.OBSERVER, record=self.record)
            s.max_packet = self.max_packet
        if self.lines is not None and conn.lines_tried is not s:
            conn.lines_tried = s
            got = self.lines(conn.flow)
            if got is not None:  # (a third item: the command's own kind of CaptureLines)
                kind = got[2] if len(got) > 2 else CaptureLines
                s.packets.lines = kind(got[0], got[1], conn.server)
        if conn.tls_probe and d.peer is Peer.CLIENT and data:
            conn.tls_probe = False
            # a TLS record (handshake, change_cipher_spec, alert, data), or TLS bytes right
            # after the SSLRequest in its segment: TLS; a packet with sequence id 2 (the
            # HandshakeResponse) instead: the decrypted connection
            tls = (data[0] in (0x14, 0x15, 0x16, 0x17) and data[1:2] in (b"", b"\x03")) or \
                s.opaque_bytes[Peer.CLIENT] > 0
            if not tls and data[3:4] in (b"", b"\x02"):
                s.tls_established(plaintext=True)
                conn.flow.encrypted = False
                frame, ts = (d.frames[-1][1], d.frames[-1][2]) if d.frames else (0, 0.0)
                text = ("the bytes after the SSLRequest are not TLS: the capture holds the "
                        "decrypted connection (a binlogscope proxy recording); decoding goes on")
                if self.tls_keylog is not None:
                    text = (f"TLS decrypted with the key log {self.tls_keylog} (by tshark): "
                            "decoding the session's plaintext")
                out.append(SourceItem("note", flow=conn.flow, frame=frame, time=ts, text=text))
        s.receive_data(data, sender=d.peer)
        d.fed_end += len(data)
        drain(conn, d, out)


__all__ = ["DEFAULT_PORTS", "CaptureReader"]
