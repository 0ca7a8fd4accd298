"""The sans-IO protocol state machine (h11 style): bytes in, events out, bytes to send.

::

    s = Session(role=Role.OBSERVER)               # REPLICA (MockSlave) | SOURCE (MockMaster)
    s.receive_data(data, sender=Peer.SERVER)      # b"" means EOF of that direction
    for ev in s.events(): ...                     # ends when more bytes are needed
    out = s.send(ComBinlogDump(...))              # REPLICA/SOURCE only

State: the phase (CONNECT -> AUTH -> COMMAND -> BINLOG_STREAM), both sides' capabilities, the
sequence-id counter, the last command (how to read the reply: result set, OK, stream), whether
semi-sync was negotiated (``SET @rpl_semi_sync_slave = 1`` answered OK), and the binlog
:class:`DecodeContext` (checksum algorithm, table maps) of the stream.

Bytes are processed in arrival order across both directions. Every packet becomes one
:class:`PacketDecoded` (with an ``error`` and a :class:`DecodeError` when its payload is
damaged); decoding always resumes at the next packet boundary. Packets the session itself sends
are decoded too (``direction`` tells them apart), so a live driver's log shows both sides.

For captures joined mid-connection pass ``start_phase`` (and, if known, ``capabilities``,
``semi_sync``; ``semi_sync=None`` in BINLOG_STREAM detects the header packet by packet).
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from binlogscope.events import (
    ConnectionClosed,
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    PhaseChanged,
    ResultSetComplete,
    Role,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.session.resync import greeting_plausible
from binlogscope.wire import commands, handshake, replication, results
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.constants import (
    SEMI_SYNC_ACK_REQ,
    SEMI_SYNC_INDICATOR,
    CapabilityFlag,
    Command,
    StatusFlag,
    command_name,
)
from binlogscope.wire.framing import (
    HEADER_LEN,
    MAX_PAYLOAD,
    Packet,
    PacketBuffer,
    encode_packet,
    packet_node,
)
from binlogscope.wire.node import Node
from binlogscope.wire.packet import KINDS, DecodedPayload, run_decoder

CAP = CapabilityFlag
_T = TypeVar("_T")

#: a query that turns semi-sync on for this connection (MySQL < 8.0.26 / MariaDB, and newer)
SEMI_SYNC_QUERY = re.compile(
    r"@rpl_semi_sync_(?:slave|replica)\s*=\s*(?:1|'1'|\"1\"|on|'on'|true)\b", re.IGNORECASE)


def _positional_maker(cls: type[_T]) -> Callable[..., _T]:
    """A constructor taking every field of the frozen slots dataclass ``cls`` positionally.

    It builds the same object as ``cls(...)`` at about half the cost: a frozen ``__init__``
    sets each field through ``object.__setattr__``, this calls the slot descriptors directly
    (the stream fast path builds one :class:`PacketDecoded` per event)."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    env.update({f"_s{i}": getattr(cls, n).__set__ for i, n in enumerate(names)})
    args = ", ".join(f"a{i}" for i in range(len(names)))
    body = "".join(f"    _s{i}(o, a{i})\n" for i in range(len(names)))
    exec(f"def make({args}):\n    o = _new(_cls)\n{body}    return o\n", env)
    maker: Callable[..., _T] = env["make"]
    return maker


_packet_decoded: Callable[..., PacketDecoded] = _positional_maker(PacketDecoded)
#: the two usual semi-sync headers (immutable, shared by every event that carries them)
_SEMI_HEADERS = (replication.SemiSyncHeader(0), replication.SemiSyncHeader(1))
#: phases in which send() refuses
_NO_SEND_PHASES = (Phase.ENCRYPTED, Phase.COMPRESSED, Phase.CLOSED)


class ProtocolViolation(Exception):  # noqa: N818  (the name h11 and the design use)
    """Raised by :meth:`Session.send` when we, acting as a peer, would break the protocol."""


# what the server's next packet is, in the COMMAND phase
_R_NONE = "none"  # nothing expected (server-initiated packet)
_R_OK = "ok"  # OK / ERR
_R_QUERY = "query"  # OK / ERR / LOCAL INFILE / column count
_R_COLUMNS = "columns"  # column definitions
_R_COLUMNS_EOF = "columns_eof"
_R_ROWS = "rows"
_R_FIELD_LIST = "field_list"  # column definitions until EOF
_R_AUTH = "auth"  # COM_CHANGE_USER: the auth exchange again
_R_RAW = "raw"  # replies binlogscope does not decode (prepared statements...)

_SIMPLE_OK = {Command.COM_PING, Command.COM_INIT_DB, Command.COM_REGISTER_SLAVE,
              Command.COM_REFRESH, Command.COM_PROCESS_KILL, Command.COM_RESET_CONNECTION,
              Command.COM_CREATE_DB, Command.COM_DROP_DB, Command.COM_SHUTDOWN,
              Command.COM_SET_OPTION, Command.COM_DEBUG, Command.COM_STMT_RESET}

_CLIENT_TYPES = (handshake.HandshakeResponse41, handshake.HandshakeResponse320,
                 handshake.SslRequest, handshake.AuthSwitchResponse, commands.ComQuery,
                 commands.SimpleCommand, commands.ComRegisterSlave, commands.ComBinlogDump,
                 commands.ComBinlogDumpGtid, replication.SemiSyncAck)
_COMMAND_TYPES = (commands.ComQuery, commands.SimpleCommand, commands.ComRegisterSlave,
                  commands.ComBinlogDump, commands.ComBinlogDumpGtid)


@dataclass(slots=True)
class _Resync:
    """Queued with the received bytes: :meth:`Session.resync` (bytes missing here)."""

    skip: int
    reason: str


@dataclass(slots=True)
class _JoinStream:
    """Queued with the received bytes: :meth:`Session.join_stream`."""

    reason: str


class BinlogEventData:
    """What a SOURCE sends for one stream event: the raw event bytes (+ ACK wish)."""

    __slots__ = ("ack_requested", "event")

    def __init__(self, event: bytes, ack_requested: bool = False) -> None:
        self.event = event
        self.ack_requested = ack_requested


def _completes(buf: PacketBuffer, pending: int, more: int) -> bool:
    """Do ``more`` new bytes complete the packet whose first ``pending`` bytes are buffered?
    (Only then are the buffered bytes worth joining to the new ones: a big packet arriving in
    many reads stays in the buffer instead of being copied again at every read.)"""
    if pending < HEADER_LEN:
        return True
    head = buf.peek(HEADER_LEN)
    return HEADER_LEN + (head[0] | head[1] << 8 | head[2] << 16) <= pending + more


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
    ) -> None:
        self.role = role
        self._phase = start_phase
        self.record = record
        self.ctx = ctx if ctx is not None else DecodeContext()
        self.handshake: handshake.HandshakeV10 | None = None
        self.server_capabilities: int | None = None
        self.client_capabilities: int | None = capabilities
        self._default_caps = (handshake.DEFAULT_CAPABILITIES if capabilities is None
                              else capabilities)
        #: semi-sync negotiated (None: unknown, detect per packet in the stream)
        self.semi_sync: bool | None = semi_sync
        self.last_command: int | None = None
        self.max_result_rows = max_result_rows
        #: bytes seen per direction after the connection became undecodable (TLS, compression)
        self.opaque_bytes: dict[Peer, int] = {Peer.CLIENT: 0, Peer.SERVER: 0}
        self._buffers = {Peer.CLIENT: PacketBuffer(client_offset),
                         Peer.SERVER: PacketBuffer(server_offset)}
        self._closed: set[Peer] = set()
        self._chunks: deque[tuple[Peer, bytes | _Resync | _JoinStream]] = deque()
        self._out: deque[SessionEvent] = deque()
        # sequence ids: None = not known yet (joined mid-way)
        self._seq: int | None = 0 if start_phase == Phase.CONNECT else None
        self._response_seen = start_phase != Phase.CONNECT and start_phase != Phase.AUTH
        self._reply = _R_NONE
        self._semi_sync_pending = False
        self._auth_data_next = False
        self._after_ack = False  # the last packet was a semi-sync ACK
        self._columns: list[results.ColumnDefinition41] = []
        self._cols_left = 0
        self._rows: list[results.TextRow] = []
        self._rows_truncated = False
        self._result_offset = 0

    # ------------------------------------------------------------------ public API
    @property
    def phase(self) -> Phase:
        """Where the connection is (read-only: the session moves it; see :meth:`join_stream`
        and :meth:`end_dump` for what a driver may tell it)."""
        return self._phase

    @property
    def capabilities(self) -> int:
        """The capability flags in force (client's request limited to what the server has)."""
        if self.client_capabilities is not None:
            if self.server_capabilities is not None:
                return self.client_capabilities & self.server_capabilities
            return self.client_capabilities
        if self.server_capabilities is not None:
            return self.server_capabilities
        return self._default_caps

    @property
    def deprecate_eof(self) -> bool:
        return bool(self.capabilities & CAP.CLIENT_DEPRECATE_EOF)

    def receive_data(
        self, data: bytes | bytearray | memoryview, sender: Peer = Peer.SERVER
    ) -> None:
        """Feed bytes from ``sender`` (``b""``: that side closed the connection)."""
        self._chunks.append((sender, bytes(data)))

    def resync(self, sender: Peer, skip: int, reason: str) -> None:
        """Capture driver hook: ``skip`` bytes of ``sender``'s stream are missing here.

        Queued in order with :meth:`receive_data`. The unfinished packet of that direction (if
        any) is dropped with a :class:`DecodeError` (its bytes in a ``discarded`` node), the
        direction's offset jumps over the missing bytes and the next byte fed must be the first
        byte of a packet header (the driver finds one). The sequence id is learnt again.
        """
        self._chunks.append((sender, _Resync(skip, reason)))

    def join_stream(self, reason: str = "joined mid-connection: the server's packets are a "
                    "binlog stream") -> None:
        """OBSERVER joined mid-connection: the resync point found on the server's side is a
        binlog stream packet, so the connection is in BINLOG_STREAM (semi-sync headers detected
        packet by packet). Queued in order with :meth:`receive_data`; only from COMMAND."""
        self._chunks.append((Peer.SERVER, _JoinStream(reason)))

    def end_dump(self, reason: str = "the source ended the dump") -> None:
        """SOURCE: the driver ended the binlog stream with packets it framed itself (an EOF of
        a non-blocking dump, an ERR): the connection is back in COMMAND."""
        while self._chunks:
            self._feed(*self._chunks.popleft())
        if self._phase == Phase.BINLOG_STREAM:
            self._set_phase(Phase.COMMAND, reason)

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
                and self.role is Role.REPLICA and self._phase not in _NO_SEND_PHASES):
            # the ACK is on the commit path of the source: its bytes go out first (before the
            # general checks below, which a replica's ACK passes); the session decodes them
            # (for the log) at the next events() call, still in stream order (after everything
            # received before, before anything received after). An ACK changes no state a
            # later send depends on (sequence id 0, no reply expected).
            data = encode_packet(replication.encode_semi_sync_ack(value), 0)
            self._chunks.append((Peer.CLIENT, data))
            return data
        if self.role == Role.OBSERVER:
            raise ProtocolViolation("an OBSERVER session cannot send")
        me = Peer.CLIENT if self.role == Role.REPLICA else Peer.SERVER
        is_client_value = isinstance(value, _CLIENT_TYPES)
        if is_client_value != (me == Peer.CLIENT):
            raise ProtocolViolation(f"a {self.role.value} cannot send {type(value).__name__}")
        if self._phase in _NO_SEND_PHASES:
            raise ProtocolViolation(f"cannot send in phase {self._phase.value}")
        payload = self._encode(value)
        if sequence_id is None:
            if isinstance(value, _COMMAND_TYPES):
                sequence_id = 0
            else:
                sequence_id = self._seq if self._seq is not None else 0
        return self.send_raw(payload, sequence_id=sequence_id)

    def tls_established(self) -> None:
        """REPLICA/SOURCE: the driver completed the TLS handshake after the SSLRequest.

        The driver now feeds the *decrypted* bytes, which continue the connection phase (the
        HandshakeResponse follows with the next sequence id), so decoding resumes in AUTH. An
        OBSERVER never sees plaintext and stays in ENCRYPTED.
        """
        if self.role == Role.OBSERVER or self._phase != Phase.ENCRYPTED:
            return
        self._response_seen = False
        self._set_phase(Phase.AUTH, "TLS established: decoding the decrypted bytes")

    def send_raw(self, payload: bytes, *, sequence_id: int | None = None) -> bytes:
        """Frame any payload (fault injection: wrong sequence ids, broken packets...)."""
        if self.role == Role.OBSERVER:
            raise ProtocolViolation("an OBSERVER session cannot send")
        me = Peer.CLIENT if self.role == Role.REPLICA else Peer.SERVER
        seq = self._seq if sequence_id is None else sequence_id
        data = encode_packet(payload, seq or 0)
        # bring the state up to date with what was received, then with what we send
        while self._chunks:
            self._feed(*self._chunks.popleft())
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

    # ------------------------------------------------------------------ encoding
    def _encode(self, v: Any) -> bytes:
        caps = self.capabilities
        if isinstance(v, handshake.EofPacket):
            if caps & CAP.CLIENT_DEPRECATE_EOF and self._phase != Phase.AUTH:
                return handshake.encode_ok(
                    handshake.OkPacket(status_flags=v.status_flags, warnings=v.warnings,
                                       header=0xFE), caps)
            return handshake.encode_eof(v, caps)
        if isinstance(v, BinlogEventData):
            if self._phase != Phase.BINLOG_STREAM:
                raise ProtocolViolation("binlog events are sent only after COM_BINLOG_DUMP")
            flag = (SEMI_SYNC_ACK_REQ if v.ack_requested else 0) \
                if self.semi_sync else None
            if v.ack_requested and not self.semi_sync:
                raise ProtocolViolation("ACK requested but semi-sync was not negotiated")
            return replication.encode_binlog_packet(v.event, flag)
        for cls in type(v).__mro__:
            encoder = _ENCODERS.get(cls)
            if encoder is not None:
                return encoder(v, caps)
        raise ProtocolViolation(f"don't know how to send {type(v).__name__}")

    # ------------------------------------------------------------------ decoding
    def _emit(self, ev: SessionEvent) -> None:
        self._out.append(ev)

    def _set_phase(self, new: Phase, reason: str) -> None:
        if new != self._phase:
            old = self._phase
            self._phase = new
            self._emit(PhaseChanged(old, new, reason))

    def _feed(self, peer: Peer, data: bytes | _Resync | _JoinStream) -> None:
        buf = self._buffers[peer]
        if isinstance(data, _Resync | _JoinStream):
            if isinstance(data, _Resync):
                self._resync(peer, data)
            elif isinstance(data, _JoinStream) and self._phase == Phase.COMMAND:
                self.semi_sync = None
                self._set_phase(Phase.BINLOG_STREAM, data.reason)
            return
        if not data:
            self._close(peer)
            return
        if self._phase in (Phase.ENCRYPTED, Phase.COMPRESSED):
            self.opaque_bytes[peer] += len(data)
            return
        if self._phase is Phase.BINLOG_STREAM and not self.record:
            pending = buf.pending
            if pending and _completes(buf, pending, len(data)):
                # the start of a packet is buffered and this read completes it: the direct
                # loop takes both (a socket read rarely ends on a packet boundary)
                _, head = buf.take_pending()
                data = head + data
                pending = 0
            used = 0
            if not pending:
                direct = self._stream_direct if peer is Peer.SERVER else self._ack_direct
                used = direct(buf.offset, data)
            if used:
                buf.drain()  # empty: moves nothing, makes skip() below exact
                buf.skip(used)  # those bytes were consumed straight from ``data``
                data = data[used:]
                if not data:
                    return
        buf.receive_data(data)
        while self._phase not in (Phase.ENCRYPTED, Phase.COMPRESSED):
            if peer is Peer.SERVER and self._phase is Phase.BINLOG_STREAM and not self.record:
                self._stream_run(buf)
            pkt = buf.next_packet()
            if pkt is None:
                return
            self._packet(peer, pkt)
        # anything after the switch is opaque
        _, rest = buf.drain()
        self.opaque_bytes[peer] += len(rest)

    def _resync(self, peer: Peer, gap: _Resync) -> None:
        buf = self._buffers[peer]
        off, rest = buf.drain()
        buf.skip(gap.skip)
        self._seq = None
        if self._phase in (Phase.ENCRYPTED, Phase.COMPRESSED, Phase.CLOSED):
            return
        dropped = f"; the {len(rest)} bytes of the packet in progress are dropped" if rest else ""
        msg = (f"at offset {off + len(rest)}: {gap.reason}{dropped}; "
               f"decoding resumes at offset {buf.offset}")
        node = Node("discarded", off, len(rest), rest, "", "",
                    "bytes of a packet cut by missing data", (), msg) if self.record else None
        self._emit(DecodeError(peer, off, msg, node))

    def _close(self, peer: Peer) -> None:
        buf = self._buffers[peer]
        buf.receive_data(b"")
        if peer in self._closed:
            return
        self._closed.add(peer)
        if buf.pending and self._phase not in (Phase.ENCRYPTED, Phase.COMPRESSED):
            off, rest = buf.drain()
            msg = (f"at offset {off}: connection closed in the middle of a packet "
                   f"({len(rest)} bytes left over)")
            node = Node("truncated_packet", off, len(rest), rest, "", "",
                        "bytes of a packet that never completed", (), msg) \
                if self.record else None
            self._emit(DecodeError(peer, off, msg, node))
        self._emit(ConnectionClosed(peer, buf.offset))
        if len(self._closed) == 2 or self.last_command == Command.COM_QUIT:
            self._set_phase(Phase.CLOSED, f"{peer.value} closed the connection")

    def _check_seq(self, peer: Peer, pkt: Packet, expected: int | None) -> None:
        if expected is not None:
            for i, frag in enumerate(pkt.fragments):
                want = (expected + i) & 0xFF
                if frag.sequence_id != want:
                    self._emit(SequenceMismatch(peer, frag.offset, want, frag.sequence_id))
                    break

    def _packet(self, peer: Peer, pkt: Packet) -> None:
        payload = pkt.payload
        phase = self._phase
        if (peer is Peer.SERVER and phase is Phase.BINLOG_STREAM and not self.record
                and payload[:1] == b"\x00" and self._stream_fast(pkt)):
            return
        ack = (peer == Peer.CLIENT and phase == Phase.BINLOG_STREAM
               and replication.is_semi_sync_ack(payload))
        if phase == Phase.CONNECT and not greeting_plausible(peer, payload):
            self._set_phase(Phase.COMMAND, "no server greeting: joined mid-connection?")
            self._seq = None
            self._response_seen = True
            phase = self._phase
        is_command = (peer == Peer.CLIENT and not ack and not self._auth_data_next
                      and phase in (Phase.COMMAND, Phase.BINLOG_STREAM, Phase.CLOSED))
        if peer == Peer.CLIENT:
            self._auth_data_next = False
        if ack or (is_command and (self._seq is not None or pkt.sequence_id == 0)):
            expected: int | None = 0
        else:
            expected = self._seq  # None right after joining mid-way: learn it
            if (peer == Peer.SERVER and self._after_ack and phase == Phase.BINLOG_STREAM
                    and pkt.sequence_id == 1):
                # MariaDB reads the ACK on the dump thread's own NET, which resets its packet
                # counter: the next event goes out with sequence id 1 (MySQL carries on)
                expected = 1
        if peer == Peer.SERVER or ack:
            self._after_ack = ack
        self._check_seq(peer, pkt, expected)
        if not ack:
            self._seq = (pkt.last_sequence_id + 1) & 0xFF
        if peer == Peer.CLIENT:
            if ack:
                d = self._decode(pkt, "semi_sync_ack")
            elif is_command:
                d = self._client_command(pkt)
            elif phase != Phase.AUTH:  # auth data during COM_CHANGE_USER
                d = self._decode(pkt, "auth_switch_response")
            else:
                d = self._client_connection_phase(pkt)
        else:
            d = self._server_packet(pkt)
        self._finish(peer, pkt, d, phase)

    def _stream_run(self, buf: PacketBuffer) -> None:
        """The no-tree stream loop: every complete single-fragment event packet at the head of
        the server's buffer goes straight to :meth:`_stream_event`, with no :class:`Packet`
        built. Stops (the bytes stay in the buffer) at anything else: an incomplete or
        multi-fragment packet, EOF/ERR, or a packet the fast path declines; the general path
        takes that one."""
        consume = buf.consume_exactly
        while True:
            at = buf.offset
            hdr = consume(HEADER_LEN)
            if hdr is None:
                break
            n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
            if n >= MAX_PAYLOAD:
                break
            payload = consume(n)
            if payload is None or not payload or payload[0] != 0 \
                    or not self._stream_event(at, hdr[3], payload, None):
                break
            buf.commit()
        buf.rollback()

    def _stream_direct(self, offset: int, data: bytes) -> int:
        """:meth:`_stream_run` over a read that starts on a packet boundary with nothing
        buffered (the usual case: a server writes whole packets), without copying it into the
        buffer first. Returns how many bytes it consumed; the rest goes the buffered way."""
        i = 0
        end = len(data)
        while i + HEADER_LEN <= end:
            n = data[i] | data[i + 1] << 8 | data[i + 2] << 16
            j = i + HEADER_LEN + n
            if n >= MAX_PAYLOAD or j > end or not n or data[i + HEADER_LEN] != 0:
                break
            if not self._stream_event(offset + i, data[i + 3], data[i + HEADER_LEN:j], None):
                break
            i = j
        return i

    def _ack_direct(self, offset: int, data: bytes) -> int:
        """The replica's side of the stream: complete single-fragment semi-sync ACKs at the
        start of ``data`` (nothing buffered), decoded as :meth:`_packet` does for an ACK,
        without building the :class:`Packet`. Returns how many bytes it consumed; anything
        else (and the rest) goes the buffered way."""
        i = 0
        end = len(data)
        out = self._out
        client = Peer.CLIENT
        decoder = KINDS["semi_sync_ack"][0]
        while i + HEADER_LEN <= end:
            n = data[i] | data[i + 1] << 8 | data[i + 2] << 16
            j = i + HEADER_LEN + n
            if n >= MAX_PAYLOAD or j > end or n < 9 \
                    or data[i + HEADER_LEN] != SEMI_SYNC_INDICATOR:  # is_semi_sync_ack
                break
            payload = data[i + HEADER_LEN : j]
            at = offset + i
            seq = data[i + 3]
            self._auth_data_next = False
            self._after_ack = True
            if seq != 0:
                out.append(SequenceMismatch(client, at, 0, seq))
            d = run_decoder("semi_sync_ack", decoder, payload, caps=self.capabilities,
                            base=at + HEADER_LEN, record=False)
            error = d.error
            out.append(_packet_decoded(client, at, seq, n, d.kind, d.value, None,
                                       Phase.BINLOG_STREAM, None, None, error, n + HEADER_LEN,
                                       payload))
            if error is not None:
                out.append(DecodeError(client, d.error_offset if d.error_offset is not None
                                       else at, error, None))
            i = j
        return i

    def _stream_fast(self, pkt: Packet) -> bool:
        """No-tree path for a well-formed event packet: the same decoders as the general path
        (``decode_event``), without its per-packet layers. False: take the general path."""
        return self._stream_event(pkt.offset, pkt.sequence_id, pkt.payload, pkt)

    def _stream_event(self, offset: int, seq: int, payload: bytes, pkt: Packet | None) -> bool:
        """Decode one event packet (header at ``offset``, sequence id ``seq``; ``pkt`` for a
        multi-fragment one) without a tree. False, with no state changed: not for this path."""
        semi = self.semi_sync
        off = 1
        header: replication.SemiSyncHeader | None = None
        if semi is None:
            return False  # detection mode (captures): the general path decides
        if semi:
            if len(payload) < 3 or payload[1] != SEMI_SYNC_INDICATOR:
                return False  # the general path reports the missing magic
            flag = payload[2]
            header = _SEMI_HEADERS[flag] if flag < 2 else replication.SemiSyncHeader(flag)
            off = 3
        ctx = self.ctx
        if not ctx.fde_seen:
            return False
        expected = self._seq
        if self._after_ack and seq == 1:
            expected = 1
        self._after_ack = False
        if pkt is None:
            if expected is not None and seq != expected:
                self._out.append(SequenceMismatch(Peer.SERVER, offset, expected, seq))
            self._seq = (seq + 1) & 0xFF
            wire_length = len(payload) + HEADER_LEN
        else:
            self._check_seq(Peer.SERVER, pkt, expected)
            self._seq = (pkt.last_sequence_id + 1) & 0xFF
            wire_length = pkt.wire_length
        ev = decode_event(payload, ctx, start=off, base=offset + HEADER_LEN, record=False)
        error = ev.error
        self._out.append(_packet_decoded(
            Peer.SERVER, offset, seq, len(payload), "binlog_event",
            replication.BinlogPacket(ev, header, None), None, Phase.BINLOG_STREAM, header, ev,
            error, wire_length, payload))
        if error is not None:
            self._emit(DecodeError(Peer.SERVER, offset, error, None))
        return True

    def _decode(self, pkt: Packet, kind: str, fn: Any = None) -> DecodedPayload:
        decoder = fn if fn is not None else KINDS[kind][0]
        return run_decoder(kind, decoder, pkt.payload, caps=self.capabilities,
                           base=pkt.payload_offset, record=self.record)

    def _finish(self, peer: Peer, pkt: Packet, d: DecodedPayload, phase: Phase) -> None:
        node: Node | None = None
        semi: replication.SemiSyncHeader | None = None
        bev = None
        error = d.error
        if isinstance(d.value, replication.BinlogPacket):
            semi = d.value.semi_sync
            bev = d.value.event
            error = error or d.value.error or bev.error
        if self.record and d.node is not None:
            display = self._display(d, pkt)
            node = packet_node(pkt, d.node, name="packet", value=d.kind, display=display,
                               doc=d.node.doc, error=error)
        self._emit(PacketDecoded(peer, pkt.offset, pkt.sequence_id, len(pkt.payload), d.kind,
                                 d.value, node, phase, semi, bev, error, pkt.wire_length,
                                 pkt.payload))
        if error is not None:
            at = d.error_offset if d.error_offset is not None else pkt.offset
            self._emit(DecodeError(peer, at, error, node))

    def _display(self, d: DecodedPayload, pkt: Packet) -> str:
        v = d.value
        what = d.kind
        if isinstance(v, replication.BinlogPacket):
            what = f"binlog_event {v.event.type_name}"
        elif isinstance(v, commands.SimpleCommand):
            what = v.name
        elif isinstance(v, handshake.ErrPacket):
            what = f"err {v.error_code}"
        return f"{what} (seq {pkt.sequence_id}, {len(pkt.payload)} bytes)"

    # ------------------------------------------------------------------ client side
    def _client_connection_phase(self, pkt: Packet) -> DecodedPayload:
        payload = pkt.payload
        if self._phase == Phase.CONNECT:
            d = self._decode(pkt, "raw")
            d.error = d.error or (f"at offset {pkt.offset}: client packet before the server's "
                                  "greeting")
            return d
        if not self._response_seen:
            self._response_seen = True
            if handshake.is_ssl_request(payload):
                d = self._decode(pkt, "ssl_request")
                if isinstance(d.value, handshake.SslRequest):
                    self.client_capabilities = d.value.capability_flags
                self._start_tls(pkt)
                return d
            flags = int.from_bytes(payload[:4].ljust(4, b"\0"), "little")
            kind = ("handshake_response41" if flags & CAP.CLIENT_PROTOCOL_41
                    else "handshake_response320")
            d = self._decode(pkt, kind)
            if isinstance(d.value, handshake.HandshakeResponse41 | handshake.HandshakeResponse320):
                self.client_capabilities = d.value.capability_flags
            return d
        return self._decode(pkt, "auth_switch_response")

    def _start_tls(self, pkt: Packet) -> None:
        node = Node("encrypted", pkt.end, 0, None, "", "TLS",
                    "everything after the SSLRequest is TLS-encrypted: binlogscope stops "
                    "decoding this connection")
        self._set_phase(Phase.ENCRYPTED, "SSLRequest: the connection switches to TLS")
        self._emit(TlsStarted(Peer.CLIENT, pkt.end, node))

    def _client_command(self, pkt: Packet) -> DecodedPayload:
        payload = pkt.payload
        code = payload[0] if payload else -1
        self.last_command = code
        self._semi_sync_pending = False
        self._reset_result()
        if self._phase == Phase.BINLOG_STREAM:
            self._set_phase(Phase.COMMAND, f"{command_name(code)} during the binlog stream")
        if code == Command.COM_QUERY:
            d = self._decode(pkt, "com_query")
            self._reply = _R_QUERY
            if isinstance(d.value, commands.ComQuery) and SEMI_SYNC_QUERY.search(d.value.query):
                self._semi_sync_pending = True
            return d
        if code == Command.COM_REGISTER_SLAVE:
            self._reply = _R_OK
            return self._decode(pkt, "com_register_slave")
        if code in (Command.COM_BINLOG_DUMP, Command.COM_BINLOG_DUMP_GTID):
            kind = "com_binlog_dump" if code == Command.COM_BINLOG_DUMP else "com_binlog_dump_gtid"
            d = self._decode(pkt, kind)
            self._reply = _R_NONE
            self._set_phase(Phase.BINLOG_STREAM, f"{command_name(code)}: the source streams "
                            "binlog events")
            return d
        d = self._decode(pkt, "command")
        if code == Command.COM_QUIT:
            self._reply = _R_NONE
        elif code in _SIMPLE_OK:
            self._reply = _R_OK
        elif code == Command.COM_FIELD_LIST:
            self._reply = _R_FIELD_LIST
        elif code == Command.COM_CHANGE_USER:
            self._reply = _R_AUTH
        else:
            self._reply = _R_RAW
        return d

    # ------------------------------------------------------------------ server side
    def _server_packet(self, pkt: Packet) -> DecodedPayload:
        payload = pkt.payload
        first = payload[0] if payload else -1
        if self._phase == Phase.CONNECT:
            if first == 0xFF:
                d = self._decode(pkt, "err")
                self._set_phase(Phase.CLOSED, "the server refused the connection")
                return d
            d = self._decode(pkt, "handshake_v10")
            if isinstance(d.value, handshake.HandshakeV10):
                self.handshake = d.value
                self.server_capabilities = d.value.capability_flags
            self._set_phase(Phase.AUTH, "server greeting received")
            return d
        if self._phase == Phase.AUTH:
            return self._auth_reply(pkt, first, in_command=False)
        if self._phase == Phase.BINLOG_STREAM:
            return self._stream_packet(pkt, first)
        return self._command_reply(pkt, first)

    def _auth_reply(self, pkt: Packet, first: int, *, in_command: bool) -> DecodedPayload:
        if first == 0x00:
            d = self._decode(pkt, "ok")
            self._reply = _R_NONE
            if not in_command:
                caps = self.capabilities
                self._set_phase(Phase.COMMAND, "authentication succeeded")
                if caps & CAP.CLIENT_COMPRESS and self.client_capabilities is not None:
                    self._set_phase(Phase.COMPRESSED, "compressed protocol negotiated: "
                                    "binlogscope does not decode it")
            return d
        if first == 0xFF:
            d = self._decode(pkt, "err")
            self._reply = _R_NONE
            if not in_command:
                self._set_phase(Phase.CLOSED, "authentication failed")
            return d
        if first == 0xFE:
            return self._decode(pkt, "auth_switch_request")
        if first == 0x01:
            return self._decode(pkt, "auth_more_data")
        d = self._decode(pkt, "raw")
        d.error = d.error or f"at offset {pkt.payload_offset}: unexpected packet during auth"
        return d

    def _stream_packet(self, pkt: Packet, first: int) -> DecodedPayload:
        if first == 0x00:
            semi = self.semi_sync
            ctx = self.ctx

            def fn(r: Any, caps: int) -> replication.BinlogPacket:
                return replication.decode_binlog_packet(r, caps, ctx, semi_sync=semi)

            return self._decode(pkt, "binlog_event", fn)
        if first == 0xFE and handshake.is_eof_packet(pkt.payload, self.capabilities):
            d = self._decode(pkt, "ok" if self.deprecate_eof else "eof")
            self._set_phase(Phase.COMMAND, "end of the binlog (non-blocking dump)")
            return d
        if first == 0xFF:
            d = self._decode(pkt, "err")
            self._set_phase(Phase.COMMAND, "the source ended the dump with an error")
            return d
        d = self._decode(pkt, "raw")
        d.error = d.error or (f"at offset {pkt.payload_offset}: stream packet starts with "
                              f"0x{first & 0xFF:02x}, expected 0x00 (event), 0xFE or 0xFF")
        return d

    def _reset_result(self) -> None:
        self._columns = []
        self._cols_left = 0
        self._rows = []
        self._rows_truncated = False

    def _end_result(self, pkt: Packet, status: int) -> None:
        self._emit(ResultSetComplete(self._result_offset, tuple(self._columns),
                                     tuple(self._rows), status, self._rows_truncated))
        self._reset_result()
        self._reply = _R_QUERY if status & StatusFlag.SERVER_MORE_RESULTS_EXISTS else _R_NONE

    def _command_reply(self, pkt: Packet, first: int) -> DecodedPayload:
        mode = self._reply
        caps = self.capabilities
        if mode == _R_AUTH:
            d = self._auth_reply(pkt, first, in_command=True)
            if d.kind in ("auth_switch_request", "auth_more_data"):
                self._reply = _R_AUTH
                # the client answers with auth data, not a new command
                self._auth_data_next = not (isinstance(d.value, handshake.AuthMoreData)
                                            and d.value.fast_auth_success)
            return d
        if mode in (_R_COLUMNS, _R_FIELD_LIST) and first != 0xFF and not (
                mode == _R_FIELD_LIST and handshake.is_eof_packet(pkt.payload, caps)):
            d = self._decode(pkt, "column_definition41")
            if isinstance(d.value, results.ColumnDefinition41):
                self._columns.append(d.value)
            if mode == _R_COLUMNS:
                self._cols_left -= 1
                if self._cols_left <= 0:
                    self._reply = _R_ROWS if self.deprecate_eof else _R_COLUMNS_EOF
            return d
        if mode == _R_COLUMNS_EOF and first == 0xFE:
            d = self._decode(pkt, "eof")
            self._reply = _R_ROWS
            return d
        if mode in (_R_ROWS, _R_FIELD_LIST) and handshake.is_eof_packet(pkt.payload, caps):
            d = self._decode(pkt, "ok" if self.deprecate_eof else "eof")
            status = getattr(d.value, "status_flags", 0)
            self._end_result(pkt, status)
            return d
        if mode == _R_ROWS and first != 0xFF:
            names = tuple(c.name for c in self._columns)

            def fn(r: Any, c: int) -> results.TextRow:
                return results.decode_text_row(r, c, names if names else None)

            d = self._decode(pkt, "text_row", fn)
            if isinstance(d.value, results.TextRow):
                if len(self._rows) < self.max_result_rows:
                    self._rows.append(d.value)
                else:
                    self._rows_truncated = True
            return d
        # a fresh reply: OK / ERR / result set header
        if first == 0xFF:
            d = self._decode(pkt, "err")
            self._semi_sync_pending = False
            self._reset_result()
            self._reply = _R_NONE
            return d
        if mode == _R_RAW:
            return self._decode(pkt, "raw")
        if first == 0x00 and mode in (_R_OK, _R_QUERY, _R_NONE):
            d = self._decode(pkt, "ok")
            if isinstance(d.value, handshake.OkPacket):
                if self._semi_sync_pending:
                    self.semi_sync = True
                    self._semi_sync_pending = False
                more = d.value.status_flags & StatusFlag.SERVER_MORE_RESULTS_EXISTS
                self._reply = _R_QUERY if more else _R_NONE
            return d
        if mode == _R_QUERY:
            if first == 0xFB:
                self._reply = _R_NONE
                return self._decode(pkt, "local_infile_request")
            d = self._decode(pkt, "column_count")
            if isinstance(d.value, results.ColumnCount):
                self._reset_result()
                self._result_offset = pkt.offset
                self._cols_left = d.value.column_count
                self._reply = _R_COLUMNS if d.value.column_count else _R_ROWS
            return d
        if mode == _R_FIELD_LIST:
            d = self._decode(pkt, "eof")
            self._reply = _R_NONE
            return d
        d = self._decode(pkt, "raw")
        if mode == _R_NONE:
            last = "none" if self.last_command is None else command_name(self.last_command)
            d.error = d.error or (f"at offset {pkt.offset}: server packet while no reply "
                                  f"was expected (last command {last})")
        return d


#: what ``Session.send`` encodes each value with: type -> encoder(value, capabilities)
_ENCODERS: dict[type, Callable[[Any, int], bytes]] = {
    handshake.HandshakeV10: lambda v, c: handshake.encode_handshake_v10(v),
    handshake.SslRequest: lambda v, c: handshake.encode_ssl_request(v),
    handshake.HandshakeResponse41: lambda v, c: handshake.encode_handshake_response41(v),
    handshake.HandshakeResponse320: lambda v, c: handshake.encode_handshake_response320(v),
    handshake.AuthSwitchRequest: lambda v, c: handshake.encode_auth_switch_request(v),
    handshake.AuthMoreData: lambda v, c: handshake.encode_auth_more_data(v),
    handshake.AuthSwitchResponse: lambda v, c: handshake.encode_auth_switch_response(v),
    handshake.OkPacket: handshake.encode_ok,
    handshake.ErrPacket: handshake.encode_err,
    commands.ComQuery: commands.encode_com_query,
    commands.SimpleCommand: lambda v, c: commands.encode_simple_command(v),
    commands.ComRegisterSlave: lambda v, c: commands.encode_com_register_slave(v),
    commands.ComBinlogDump: lambda v, c: commands.encode_com_binlog_dump(v),
    commands.ComBinlogDumpGtid: lambda v, c: commands.encode_com_binlog_dump_gtid(v),
    results.ColumnCount: results.encode_column_count,
    results.ColumnDefinition41: results.encode_column_definition41,
    results.TextRow: results.encode_text_row,
    replication.SemiSyncAck: lambda v, c: replication.encode_semi_sync_ack(v),
}


__all__ = [
    "SEMI_SYNC_QUERY",
    "BinlogEventData",
    "Peer",
    "Phase",
    "ProtocolViolation",
    "Role",
    "Session",
]
