"""The readers of :class:`~binlogscope.session.machine.Session` for one packet of each phase and
direction: the connection phase (greeting, TLS switch, handshake response, auth exchange), the
client's commands, the binlog stream's packets (general path: trees, EOF/ERR, semi-sync
detection) and the command replies (through :class:`~.replies.ReplyReader`).

A mixin: the state it reads and moves is the session's (declared below).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from binlogscope.session.events import Peer, Phase, SessionEvent, TlsStarted
from binlogscope.session.replies import COMMAND_KIND, Answer, Reply, ReplyReader
from binlogscope.wire import commands, handshake, replication
from binlogscope.wire.constants import CapabilityFlag, Command, command_name
from binlogscope.wire.framing import Packet
from binlogscope.wire.node import Node
from binlogscope.wire.packet import DecodedPayload

CAP = CapabilityFlag

#: a query that turns semi-sync on for this connection (MySQL < 8.0.26 / MariaDB, and newer)
SEMI_SYNC_QUERY = re.compile(
    r"@rpl_semi_sync_(?:slave|replica)\s*=\s*(?:1|'1'|\"1\"|on|'on'|true)\b", re.IGNORECASE)


class PacketReaders:
    """What each packet means, by phase and direction (mixed into Session)."""

    # the session's state these readers use (Session.__init__ sets it)
    _phase: Phase
    _response_seen: bool
    _replies: ReplyReader
    _semi_sync: bool | None
    _semi_sync_pending: bool
    _auth_data_next: bool
    handshake: handshake.HandshakeV10 | None
    server_capabilities: int | None
    client_capabilities: int | None
    server_mariadb_capabilities: int
    client_mariadb_capabilities: int
    ctx: Any
    tls_terminated: bool

    if TYPE_CHECKING:
        @property
        def capabilities(self) -> int: ...

        @property
        def deprecate_eof(self) -> bool: ...

        def _decode(self, pkt: Packet, kind: str, fn: Any = None) -> DecodedPayload: ...

        def _set_phase(self, new: Phase, reason: str) -> None: ...

        def _emit(self, ev: SessionEvent) -> None: ...

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
                    self.client_mariadb_capabilities = d.value.mariadb_capabilities
                self._start_tls(pkt)
                return d
            flags = int.from_bytes(payload[:4].ljust(4, b"\0"), "little")
            kind = ("handshake_response41" if flags & CAP.CLIENT_PROTOCOL_41
                    else "handshake_response320")
            d = self._decode(pkt, kind)
            if isinstance(d.value, handshake.HandshakeResponse41 | handshake.HandshakeResponse320):
                self.client_capabilities = d.value.capability_flags
                self.client_mariadb_capabilities = getattr(d.value, "mariadb_capabilities", 0)
            return d
        return self._decode(pkt, "auth_switch_response")

    def _start_tls(self, pkt: Packet) -> None:
        terminated = self.tls_terminated
        node = Node("encrypted", pkt.end, 0, None, "", "TLS",
                    "everything after the SSLRequest is TLS-encrypted: "
                    + ("the proxy terminates it on both legs, so the decrypted bytes are decoded"
                       if terminated else "binlogscope stops decoding this connection"))
        self._set_phase(Phase.ENCRYPTED, "SSLRequest: the connection switches to TLS")
        self._emit(TlsStarted(Peer.CLIENT, pkt.end, node, terminated))

    def _client_command(self, pkt: Packet) -> DecodedPayload:
        payload = pkt.payload
        code = payload[0] if payload else -1
        self._replies.command(code)
        self._semi_sync_pending = False
        if self._phase == Phase.BINLOG_STREAM:
            self._set_phase(Phase.COMMAND, f"{command_name(code)} during the binlog stream")
        d = self._decode(pkt, COMMAND_KIND.get(code, "command"))
        if code == Command.COM_QUERY:
            if isinstance(d.value, commands.ComQuery) and SEMI_SYNC_QUERY.search(d.value.query):
                self._semi_sync_pending = True
        elif code in (Command.COM_BINLOG_DUMP, Command.COM_BINLOG_DUMP_GTID):
            self._set_phase(Phase.BINLOG_STREAM, f"{command_name(code)}: the source streams "
                            "binlog events")
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
                self.server_mariadb_capabilities = d.value.mariadb_capabilities
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
            self._replies.expect = Reply.NONE
            if not in_command:
                caps = self.capabilities
                self._set_phase(Phase.COMMAND, "authentication succeeded")
                if caps & CAP.CLIENT_COMPRESS and self.client_capabilities is not None:
                    self._set_phase(Phase.COMPRESSED, "compressed protocol negotiated: "
                                    "binlogscope does not decode it")
            return d
        if first == 0xFF:
            d = self._decode(pkt, "err")
            self._replies.expect = Reply.NONE
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
            semi = self._semi_sync
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

    def _command_reply(self, pkt: Packet, first: int) -> DecodedPayload:
        if self._replies.expect is Reply.AUTH:  # COM_CHANGE_USER: the auth exchange again
            d = self._auth_reply(pkt, first, in_command=True)
            if d.kind in ("auth_switch_request", "auth_more_data"):
                self._replies.expect = Reply.AUTH
                # the client answers with auth data, not a new command
                self._auth_data_next = not (isinstance(d.value, handshake.AuthMoreData)
                                            and d.value.fast_auth_success)
            return d
        got = self._replies.read(pkt, self._decode, self.capabilities, self.deprecate_eof)
        if got.result is not None:
            self._emit(got.result)
        if got.answer is Answer.ERR:
            self._semi_sync_pending = False
        elif got.answer is Answer.OK and self._semi_sync_pending:
            self._semi_sync = True
            self._semi_sync_pending = False
        return got.payload


__all__ = ["SEMI_SYNC_QUERY", "PacketReaders"]
