"""The session's state machine: :class:`Session` (bytes in, events out, bytes to send).

State: the phase (CONNECT -> AUTH -> COMMAND -> BINLOG_STREAM), both sides' capabilities, the
sequence-id counter, the reply the server owes (:mod:`.replies`), whether semi-sync was
negotiated (``SET @rpl_semi_sync_slave = 1`` answered OK), and the binlog
:class:`DecodeContext` (checksum algorithm, table maps) of the stream. Only the session moves
its phase; a driver tells it what it knows (:meth:`Session.resync`,
:meth:`Session.join_stream`, :meth:`Session.end_dump`, :meth:`Session.tls_established`).

Bytes are processed in arrival order across both directions, by one loop (:meth:`_split`)
that cuts each direction's bytes into packets. Every packet becomes one
:class:`PacketDecoded` (with an ``error`` and a :class:`DecodeError` when its payload is
damaged); decoding always resumes at the next packet boundary. Without trees
(``record=False``) the binlog stream's event packets are decoded by
:meth:`.packets.PacketDecoder.stream_run` (a read's event packets in one call: the event
decoder, no per-packet layers); everything else by :meth:`.packets.PacketDecoder.packet`
(sequence ids, then the reader of the phase: the functions of :mod:`.readers` over the
connection's :class:`~.state.ConnState`, held in ``state``). Packets the session itself sends are
decoded too (``direction`` tells them apart), so a live driver's log shows both sides.

Coordinates: every binlog event of the stream gets its ``binlog_file``, file offset and
transaction GTID from the session's :class:`~binlogscope.wire.binlog.coords.CoordTracker`
(``coords``); every packet gets ``wire_time``, the time its bytes were fed (a live endpoint:
the wall clock; an OBSERVER's driver sets the capture time itself).

For captures joined mid-connection pass ``start_phase`` (and, if known, ``capabilities``,
``semi_sync``; ``semi_sync=None`` in BINLOG_STREAM detects the header packet by packet).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from binlogscope.session.events import (
    CompressedFrame,
    ConnectionClosed,
    DecodeError,
    Peer,
    Phase,
    Role,
    SessionEvent,
)
from binlogscope.session.outgoing import (
    CLIENT_TYPES,
    COMMAND_TYPES,
    ProtocolViolation,
    encode_value,
)
from binlogscope.session.oversize import DEFAULT_MAX_PACKET, Oversize, pending_need
from binlogscope.session.packets import PacketDecoder
from binlogscope.session.readers import SEMI_SYNC_QUERY
from binlogscope.session.replies import Reply, ReplyReader
from binlogscope.session.state import ConnState, JoinStream, Resync, TlsPlaintext
from binlogscope.wire import handshake, replication, results
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.compressed import FrameError, FrameReader, encode_frames, frame_node
from binlogscope.wire.constants import (
    CapabilityFlag,
    Command,
    StatusFlag,
)
from binlogscope.wire.framing import (
    HEADER_LEN,
    MAX_PAYLOAD,
    Fragment,
    Packet,
    PacketBuffer,
    encode_packet,
    gather_fragments,
)
from binlogscope.wire.node import Node

CAP = CapabilityFlag

#: phases in which send() refuses
_NO_SEND_PHASES = (Phase.ENCRYPTED, Phase.COMPRESSED, Phase.CLOSED)
#: phases in which the bytes are not decoded (only counted)
_OPAQUE = (Phase.ENCRYPTED, Phase.COMPRESSED)


class Session:
    """One MySQL connection seen from one side (or from the wire)."""

    def __init__(
        self,
        role: Role = Role.OBSERVER,
        *,
        start_phase: Phase = Phase.CONNECT,
        capabilities: int | None = None,
        semi_sync: bool | None = False,
        ctx: DecodeContext | None = None,
        record: bool = True,
        client_offset: int = 0,
        server_offset: int = 0,
        max_result_rows: int = 10_000,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.role = role
        #: stamps ``wire_time`` on packets (default: the wall clock for a REPLICA or SOURCE,
        #: none for an OBSERVER, whose driver knows the capture time)
        self._clock = clock if clock is not None or role is Role.OBSERVER else time.time
        #: the coordinates of the stream's binlog events (file, offset, transaction GTID)
        self.coords = CoordTracker.for_stream()
        #: the connection's protocol state (phase, capabilities, greeting, the reply owed,
        #: semi-sync, the binlog decode context), read and moved by :mod:`.readers`
        self.state = st = ConnState(
            start_phase, ctx if ctx is not None else DecodeContext(),
            ReplyReader(max_result_rows), record, semi_sync,
            response_seen=start_phase != Phase.CONNECT and start_phase != Phase.AUTH,
            client_capabilities=capabilities,
            default_caps=handshake.DEFAULT_CAPABILITIES if capabilities is None else capabilities)
        #: bytes seen per direction after the connection became undecodable (TLS, compression)
        self.opaque_bytes: dict[Peer, int] = {Peer.CLIENT: 0, Peer.SERVER: 0}
        self._buffers = {Peer.CLIENT: PacketBuffer(client_offset),
                         Peer.SERVER: PacketBuffer(server_offset)}
        #: bytes the packet at the head of each buffer needs before it is worth trying again
        self._need = {Peer.CLIENT: 0, Peer.SERVER: 0}
        #: the largest packet payload buffered; a longer one is skipped with an error
        #: (:mod:`.oversize`; a driver sets it: ``--max-packet-size``)
        self.max_packet = DEFAULT_MAX_PACKET
        self._oversize: dict[Peer, Oversize | None] = {Peer.CLIENT: None, Peer.SERVER: None}
        self._closed: set[Peer] = set()
        self._first_closer: Peer | None = None
        self._chunks: deque[tuple[Peer, bytes | Resync | JoinStream | TlsPlaintext]] = \
            deque()
        self._out: deque[SessionEvent] = st.out
        #: what each whole packet becomes, with the sequence-id counter (None = not known yet:
        #: joined mid-way)
        self.packets = PacketDecoder(st, self.coords, st.out,
                                     0 if start_phase == Phase.CONNECT else None)
        #: the compressed protocol's frame reader of each direction (None: plain packets)
        self._frames: dict[Peer, FrameReader | None] = {Peer.CLIENT: None, Peer.SERVER: None}
        self._cseq = 0  # the next compressed sequence id
        #: plain bytes still to skip at the start of the next frames (a resync: Resync)
        self._plain_skip = {Peer.CLIENT: 0, Peer.SERVER: 0}
        #: REPLICA/SOURCE: the zstd level of the frames this side sends (None: the default)
        self.compression_level: int | None = None

    # ------------------------------------------------------------------ public API
    @property
    def phase(self) -> Phase:
        """Where the connection is (read-only: the session moves it; see :meth:`join_stream`
        and :meth:`end_dump` for what a driver may tell it)."""
        return self.state.phase

    @property
    def semi_sync(self) -> bool | None:
        """Semi-sync negotiated (None: unknown, the header is detected packet by packet)."""
        return self.state.semi_sync

    @property
    def last_command(self) -> int | None:
        """The code of the client's last command (None: none seen)."""
        return self.state.replies.last_command

    @property
    def expected_reply(self) -> Reply:
        """What the server's next packet is expected to be (in COMMAND)."""
        return self.state.replies.expect

    @property
    def capabilities(self) -> int:
        """The capability flags in force (see :attr:`ConnState.capabilities`)."""
        return self.state.capabilities

    @property
    def deprecate_eof(self) -> bool:
        return self.state.deprecate_eof

    @property
    def record(self) -> bool:
        """Build the annotated tree of every packet (a driver may turn it off at any time)."""
        return self.state.record

    @record.setter
    def record(self, value: bool) -> None:
        self.state.record = value

    @property
    def ctx(self) -> DecodeContext:
        """The binlog decode context of the stream (checksum algorithm, table maps)."""
        return self.state.ctx

    @property
    def handshake(self) -> handshake.HandshakeV10 | None:
        """The server's greeting (None: not seen)."""
        return self.state.handshake

    @property
    def server_mariadb_capabilities(self) -> int:
        """MariaDB's own capabilities of the server's greeting (0 from MySQL)."""
        return self.state.server_mariadb_capabilities

    @property
    def tls_terminated(self) -> bool:
        """OBSERVER: the driver terminates the TLS the client asks for (a proxy) and will
        feed the decrypted bytes (:meth:`tls_established` with ``plaintext=True``); the
        SSLRequest's TLS event says so instead of "nothing more is decoded"."""
        return self.state.tls_terminated

    @tls_terminated.setter
    def tls_terminated(self, value: bool) -> None:
        self.state.tls_terminated = value

    def incomplete_packet_size(self, sender: Peer = Peer.SERVER) -> int:
        """Bytes (fragment headers included) the packet still being received from ``sender``
        is known to need so far (0: none in progress). Known after :meth:`events` ran over the
        bytes fed; it grows fragment by fragment for a multi-fragment packet. A client bounds
        its buffering with it (``--max-packet-size``)."""
        if not self._buffers[sender].pending:
            return 0
        return self._need[sender]

    def receive_data(
        self, data: bytes | bytearray | memoryview, sender: Peer = Peer.SERVER
    ) -> None:
        """Feed bytes from ``sender`` (``b""``: that side closed the connection)."""
        self._chunks.append((sender, bytes(data)))

    def resync(self, sender: Peer, skip: int, reason: str, plain_skip: int = 0) -> None:
        """Capture driver hook: ``skip`` bytes of ``sender``'s stream are missing here.

        Queued in order with :meth:`receive_data`. The unfinished packet of that direction (if
        any) is dropped with a :class:`DecodeError` (its bytes in a ``discarded`` node), the
        direction's offset jumps over the missing bytes and the next byte fed must be the first
        byte of a packet header (the driver finds one: :mod:`.resync`) - with the compressed
        protocol, the first byte of a frame, whose first ``plain_skip`` plain bytes (the rest
        of a packet that began before) are skipped to the packet header in it. The sequence
        id is learnt again.
        """
        self._chunks.append((sender, Resync(skip, reason, plain_skip)))

    def join_stream(self, reason: str = "joined mid-connection: the server's packets are a "
                    "binlog stream") -> None:
        """OBSERVER joined mid-connection: the resync point found on the server's side is a
        binlog stream packet, so the connection is in BINLOG_STREAM (semi-sync headers detected
        packet by packet). Queued in order with :meth:`receive_data`; only from COMMAND."""
        self._chunks.append((Peer.SERVER, JoinStream(reason)))

    def end_dump(self, reason: str = "the source ended the dump") -> None:
        """SOURCE: the driver ended the binlog stream with packets it framed itself (an EOF of
        a non-blocking dump, an ERR): the connection is back in COMMAND."""
        self._catch_up()
        if self.state.phase == Phase.BINLOG_STREAM:
            self.state.set_phase(Phase.COMMAND, reason)

    def events(self) -> Iterator[SessionEvent]:
        """Yield events for everything received so far; stops when more bytes are needed."""
        while True:
            while self._out:
                yield self._out.popleft()
            if not self._chunks:
                return
            peer, data = self._chunks.popleft()
            self._feed(peer, data)

    def send(self, value: Any, *, sequence_id: int | None = None) -> bytes:
        """Encode ``value`` as our next packet, update the state, return the bytes to write.

        REPLICA sends client packets (HandshakeResponse41, ComQuery, ComBinlogDump,
        SemiSyncAck...), SOURCE sends server packets (HandshakeV10, OkPacket, ErrPacket,
        EofPacket, ColumnCount, ColumnDefinition41, TextRow, BinlogEventData...).
        """
        if (type(value) is replication.SemiSyncAck and not sequence_id
                and self.role is Role.REPLICA and self.state.phase not in _NO_SEND_PHASES):
            # the ACK is on the commit path of the source: its bytes go out first (before the
            # general checks below, which a replica's ACK passes); the session decodes them
            # (for the log) at the next events() call, still in stream order (after everything
            # received before, before anything received after). An ACK changes no state a
            # later send depends on (sequence id 0, no reply expected).
            data = encode_packet(replication.encode_semi_sync_ack(value), 0)
            if self.state.compression is not None:  # (a new exchange: frame id 0)
                data = encode_frames(data, 0, self.state.compression,
                                     level=self.compression_level)[0]
            self._chunks.append((Peer.CLIENT, data))
            return data
        me = self._me()
        if isinstance(value, CLIENT_TYPES) != (me == Peer.CLIENT):
            raise ProtocolViolation(f"a {self.role.value} cannot send {type(value).__name__}")
        st = self.state
        if st.phase in _NO_SEND_PHASES:
            raise ProtocolViolation(f"cannot send in phase {st.phase.value}")
        payload = encode_value(value, st.capabilities, st.phase, st.semi_sync)
        if sequence_id is None:
            if isinstance(value, COMMAND_TYPES):
                sequence_id = 0
            else:
                seq = self.packets.seq
                sequence_id = seq if seq is not None else 0
        return self.send_raw(payload, sequence_id=sequence_id)

    def send_raw(self, payload: bytes, *, sequence_id: int | None = None) -> bytes:
        """Frame any payload (fault injection: wrong sequence ids, broken packets...)."""
        me = self._me()
        seq = self.packets.seq if sequence_id is None else sequence_id
        data = encode_packet(payload, seq or 0)
        self._catch_up()  # the state up to date with what was received, then with what we send
        algorithm = self.state.compression
        if algorithm is not None:  # (a client command starts a new exchange: frame id 0)
            cseq = 0 if me is Peer.CLIENT and not seq else self._cseq
            data, self._cseq = encode_frames(data, cseq, algorithm, level=self.compression_level)
        self._feed(me, data)
        return data

    def send_result_set(
        self, columns: list[results.ColumnDefinition41], rows: list[results.TextRow],
        *, status_flags: int = int(StatusFlag.SERVER_STATUS_AUTOCOMMIT),
    ) -> bytes:
        """SOURCE: a whole text result set, with or without EOF packets as negotiated."""
        out = [self.send(results.ColumnCount(len(columns)))]
        out.extend(self.send(c) for c in columns)
        if not self.deprecate_eof:
            out.append(self.send(handshake.EofPacket(0, status_flags)))
        out.extend(self.send(r) for r in rows)
        out.append(self.send(handshake.EofPacket(0, status_flags)))
        return b"".join(out)

    def tls_established(self, *, plaintext: bool = False) -> None:
        """The driver completed the TLS handshake after the SSLRequest.

        REPLICA/SOURCE: the driver now feeds the *decrypted* bytes, which continue the
        connection phase (the HandshakeResponse follows with the next sequence id), so
        decoding resumes in AUTH.

        OBSERVER: a capture never sees plaintext and stays in ENCRYPTED, unless its driver says
        it does with ``plaintext=True`` - a proxy that terminates TLS on both legs and feeds
        the decrypted bytes of both directions from here on. Queued in order with
        :meth:`receive_data` (the bytes fed before are the ciphertext's side: the SSLRequest).
        """
        if self.role == Role.OBSERVER:
            if plaintext:
                self._chunks.append((Peer.CLIENT, TlsPlaintext()))
            return
        self._to_plaintext()

    def _to_plaintext(self) -> None:
        st = self.state
        if st.phase != Phase.ENCRYPTED:
            return
        st.response_seen = False
        st.set_phase(Phase.AUTH, "TLS established: decoding the decrypted bytes")

    def use_clock(self, clock: Callable[[], float] | None) -> None:
        """What stamps ``wire_time`` from now on (a live driver: the time the bytes it feeds
        arrived from the socket, or were written to it)."""
        self._clock = clock

    # ------------------------------------------------------------------ state
    def _me(self) -> Peer:
        if self.role == Role.OBSERVER:
            raise ProtocolViolation("an OBSERVER session cannot send")
        return Peer.CLIENT if self.role == Role.REPLICA else Peer.SERVER

    def _catch_up(self) -> None:
        while self._chunks:
            self._feed(*self._chunks.popleft())

    # ------------------------------------------------------------------ bytes -> packets
    def _feed(self, peer: Peer, data: bytes | Resync | JoinStream | TlsPlaintext) -> None:
        if isinstance(data, Resync):
            self._resync(peer, data)
            return
        if isinstance(data, TlsPlaintext):
            self._to_plaintext()
            return
        if isinstance(data, JoinStream):
            if self.state.phase == Phase.COMMAND:
                self.state.semi_sync = None
                self.state.set_phase(Phase.BINLOG_STREAM, data.reason)
            return
        if not data:
            self._close(peer)
            return
        clock = self._clock
        if clock is not None:
            self.packets.now = clock()
        if self.state.phase in _OPAQUE:
            self.opaque_bytes[peer] += len(data)
            return
        frames = self._frames[peer]
        if frames is None and self.state.compression is not None \
                and not self._buffers[peer].pending:
            off = self._buffers[peer].offset  # (the plain stream goes on from here)
            frames = self._frames[peer] = FrameReader(self.state.compression, off, off)
        if frames is not None:
            self._feed_frames(peer, frames, data)
        else:
            self._feed_plain(peer, data)

    def _feed_frames(self, peer: Peer, frames: FrameReader, data: bytes) -> None:
        """Compressed protocol: every whole frame of ``peer``'s bytes (a
        :class:`CompressedFrame` event), its plain bytes into the packet path."""
        frames.feed(data)
        st = self.state
        while True:
            at = frames.offset
            try:
                frame = frames.next_frame()
            except FrameError as exc:
                buf = self._buffers[peer]
                _, rest = buf.drain()  # (the packet in progress cannot be completed)
                self._need[peer] = 0
                self.packets.seq = None
                lost = f"; the {len(rest)} bytes of the packet in progress are dropped" \
                    if rest else ""
                self._out.append(DecodeError(
                    peer, at, f"at offset {at}: compressed frame: {exc}{lost}"))
                continue
            if frame is None:
                return
            self._cseq = (frame.sequence_id + 1) & 0xFF
            plain = frame.plain
            if (self.packets.seq is not None and len(plain) >= 4 and plain[3] == frame.sequence_id
                    and not self._buffers[peer].pending):
                # a frame that starts a packet may restart the packets' ids at its own: the
                # net layer sets its packet counter from the frame counter when it reads a
                # frame (the other side's turn) and when it flushes (MariaDB's net_flush:
                # pkt_nr= compress_pkt_nr); a frame written because the buffer was full
                # carries on (the readers do not check these ids in compressed mode)
                self.packets.seq = frame.sequence_id
            self._out.append(CompressedFrame(peer, frame.offset, frame,
                                             frame_node(frame) if st.record else None,
                                             self.packets.now))
            if self._plain_skip[peer] and plain:
                cut = min(self._plain_skip[peer], len(plain))  # (inside a packet: a resync)
                self._plain_skip[peer] -= cut
                self._buffers[peer].skip(cut)
                plain = plain[cut:]
            if plain:
                self._feed_plain(peer, plain)

    def _feed_plain(self, peer: Peer, data: bytes) -> None:
        """Plain packet bytes of ``peer`` (on the wire, or inflated from frames)."""
        buf = self._buffers[peer]
        over = self._oversize[peer]
        if over is not None:  # (a packet over the size limit, being skipped)
            used, done = over.eat(data)
            buf.skip(used)
            if not done:
                return
            self._oversize[peer] = None
            self.packets.seq = None
            self._out.append(DecodeError(peer, over.start, over.message()))
            data = data[used:]
            if not data:
                return
        if buf.pending:
            buf.receive_data(data)  # a long packet in many reads: joined once, when whole
            if buf.pending < self._need[peer] or not self._whole(peer):
                return
            _, data = buf.take_pending()
        used = self._split(peer, buf.offset, data)
        buf.skip(used)  # the buffer is empty: its offset moves on by what was consumed
        if used < len(data):
            if self.state.phase in _OPAQUE:  # anything after the switch is opaque
                self.opaque_bytes[peer] += len(data) - used
                buf.skip(len(data) - used)
            elif self.state.compression is not None and self._frames[peer] is None:
                self._feed(peer, data[used:])  # (frames from here on)
            else:
                buf.receive_data(data[used:])
                self._whole(peer)

    def _whole(self, peer: Peer) -> bool:
        """Is the packet pending in ``peer``'s buffer whole? Sets what it needs (its whole
        fragment chain), or starts skipping it when it is over ``max_packet``
        (:mod:`.oversize`)."""
        buf = self._buffers[peer]
        need, over, rest = pending_need(buf, self.max_packet)
        self._need[peer] = need
        if over is None:
            return buf.pending >= need
        self._oversize[peer] = over
        if over.ended:  # (it ended inside what was buffered)
            self._oversize[peer] = None
            self.packets.seq = None
            self._out.append(DecodeError(peer, over.start, over.message()))
            if rest:
                self._feed(peer, rest)
        return False

    def _split(self, peer: Peer, offset: int, data: bytes) -> int:
        """The one packet loop: every complete packet at the start of ``data`` (whose first
        byte is at ``offset``) in order; returns how many bytes they took. Stops at an
        incomplete packet (``_need`` says how many bytes it needs) or when the connection
        turns opaque."""
        i = 0
        end = len(data)
        st = self.state
        lean = peer is Peer.SERVER and not st.record  # event packets: stream_event
        limit = self.max_packet
        packets = self.packets
        switch = st.compression is None and self._frames[peer] is None
        while i + HEADER_LEN <= end and st.phase not in _OPAQUE:
            if switch and st.compression is not None:
                break  # the login's OK: compressed frames follow
            if lean and st.phase is Phase.BINLOG_STREAM and (
                    k := packets.stream_run(data, i, end, offset, limit)) != i:
                i = k  # (event packets in one call; the one it stopped at: below)
                continue
            n = data[i] | data[i + 1] << 8 | data[i + 2] << 16
            j = i + HEADER_LEN + n
            if j > end or n > limit:  # (over the limit: _whole skips it)
                self._need[peer] = j - i
                break
            pkt: Packet | None = None
            if n < MAX_PAYLOAD:
                payload = data[i + HEADER_LEN : j]
            else:  # continued: gather the fragments (joined once, without copying each)
                pkt, k = gather_fragments(data, i, offset, limit)
                if pkt is None:
                    self._need[peer] = k - i  # (over the limit: _whole skips it)
                    break
                j = k
                payload = pkt.payload
            if not (lean and st.phase is Phase.BINLOG_STREAM and n and payload[0] == 0
                    and packets.stream_event(offset + i, data[i + 3], payload, pkt)):
                if pkt is None:
                    pkt = Packet(payload, (Fragment(offset + i, n, data[i + 3]),))
                packets.packet(peer, pkt)
            i = j
        else:
            self._need[peer] = HEADER_LEN
        return i

    def _resync(self, peer: Peer, gap: Resync) -> None:
        buf = self._buffers[peer]
        off, rest = buf.drain()
        frames = self._frames[peer]
        cut = b""
        if frames is not None:
            # a gap inside an established compressed session: the frame in progress is cut
            # (its bytes cannot be inflated) and the next byte fed is a frame header - a new
            # reader from there, as for a capture joined mid-way (the wire offset jumps over
            # the missing bytes; the plain offset too, as nothing says how many are lost)
            wire_off, cut = frames.drain()
            buf.skip(gap.skip)
            self._frames[peer] = FrameReader(frames.algorithm, wire_off + len(cut) + gap.skip,
                                             buf.offset)
        else:
            buf.skip(gap.skip)
        self._plain_skip[peer] = gap.plain_skip
        self._need[peer] = 0
        self.packets.seq = None
        if peer is Peer.SERVER:
            self.coords.lost()
        if self.state.phase in (Phase.ENCRYPTED, Phase.COMPRESSED, Phase.CLOSED):
            return
        dropped = f"; the {len(rest)} bytes of the packet in progress are dropped" if rest else ""
        if cut:
            dropped += (f"; the {len(cut)} bytes of the compressed frame in progress (wire "
                        f"offset {wire_off}) are dropped")
        msg = (f"at offset {off + len(rest)}: {gap.reason}{dropped}; "
               f"decoding resumes at offset {buf.offset}")
        node = Node("discarded", off, len(rest), rest, "", "",
                    "bytes of a packet cut by missing data", (), msg) if self.state.record else None
        self._out.append(DecodeError(peer, off, msg, node))

    def _close(self, peer: Peer) -> None:
        buf = self._buffers[peer]
        buf.receive_data(b"")
        if peer in self._closed:
            return
        self._closed.add(peer)
        over = self._oversize[peer]
        if over is not None:
            self._oversize[peer] = None
            self._out.append(DecodeError(peer, over.start, over.message(ended=False)))
        frames = self._frames[peer]
        if frames is not None and frames.pending:
            off, rest = frames.drain()
            self._out.append(DecodeError(
                peer, off, f"at offset {off}: connection closed in the middle of a compressed "
                f"frame ({len(rest)} bytes left over)"))
        if buf.pending and self.state.phase not in _OPAQUE:
            off, rest = buf.drain()
            msg = (f"at offset {off}: connection closed in the middle of a packet "
                   f"({len(rest)} bytes left over)")
            if peer is Peer.CLIENT and self.state.dump_malformed and rest[:1] == b"\0":
                msg += (" - the first is most likely the NUL the malformed COM_BINLOG_DUMP "
                        "left over (its length header counted fewer bytes than the client "
                        "wrote), which shifted every later client packet")
            node = Node("truncated_packet", off, len(rest), rest, "", "",
                        "bytes of a packet that never completed", (), msg) \
                if self.state.record else None
            self._out.append(DecodeError(peer, off, msg, node))
        self._out.append(ConnectionClosed(peer, buf.offset))
        if self._first_closer is None:
            self._first_closer = peer
        if len(self._closed) == 2 or self.last_command == Command.COM_QUIT:
            # named: the side that closed first (the other one only answered)
            self.state.set_phase(Phase.CLOSED,
                                 f"{self._first_closer.value} closed the connection")


__all__ = ["SEMI_SYNC_QUERY", "Session"]
