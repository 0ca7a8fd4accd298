"""What one packet means in each phase and direction: plain functions over a connection's
:class:`~.state.ConnState` (h11 style), called by :class:`~binlogscope.session.machine.Session`
for the packets of the general path: the connection phase (greeting, TLS switch, handshake
response, auth exchange), the client's commands, the binlog stream's packets (trees, EOF/ERR,
semi-sync detection) and the command replies (through :class:`~.replies.ReplyReader`).

Each returns the packet's :class:`DecodedPayload`; what else happened (a phase change, TLS,
a result set) is emitted into the state's ``out``.
"""

from __future__ import annotations

import re
from typing import Any

from binlogscope.session.events import Peer, Phase, TlsStarted
from binlogscope.session.replies import COMMAND_KIND, Answer, Reply
from binlogscope.session.state import ConnState
from binlogscope.wire import commands, handshake, replication, statements
from binlogscope.wire.compressed import negotiated
from binlogscope.wire.constants import BinlogDumpFlag, CapabilityFlag, Command, command_name
from binlogscope.wire.framing import Packet
from binlogscope.wire.node import Node
from binlogscope.wire.packet import DecodedPayload
from binlogscope.wire.prepared import StmtExecute, StmtPrepareOk

CAP = CapabilityFlag
_NON_BLOCK = int(BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK)

#: a query that turns semi-sync on for this connection (MySQL < 8.0.26 / MariaDB, and newer)
SEMI_SYNC_QUERY = re.compile(
    r"@rpl_semi_sync_(?:slave|replica)\s*=\s*(?:1|'1'|\"1\"|on|'on'|true)\b", re.IGNORECASE)
#: MariaDB's replica sets where a ``START SLAVE UNTIL master_gtid_pos=...`` stops, on the source
#: (its dump thread then ends the dump with an EOF once every domain reached it)
UNTIL_GTID_QUERY = re.compile(r"@slave_until_gtid\s*=\s*'([^']*)'", re.IGNORECASE)


def dump_eof_reason(non_blocking: bool | None, until_gtid: str | None) -> str:
    """What an EOF that ends a binlog dump means: the end of the binlog of a non-blocking dump
    (BINLOG_DUMP_NON_BLOCK), the replica's UNTIL position reached (MariaDB
    ``@slave_until_gtid``), or, for a blocking dump without either, the source ending it
    (``non_blocking`` None: the dump command was not seen)."""
    if non_blocking is None and not until_gtid:
        return "end of the dump (EOF: the end of a non-blocking dump or an UNTIL position)"
    if until_gtid:
        until = f"the replica's UNTIL position (@slave_until_gtid='{until_gtid}')"
        if non_blocking:
            return f"{until} or the end of the binlog (non-blocking dump) reached"
        return f"the source stopped the dump at {until}"
    if non_blocking:
        return "end of the binlog (non-blocking dump)"
    return "the source ended the blocking dump with EOF"


# ---------------------------------------------------------------------- client side
def client_connection_phase(st: ConnState, pkt: Packet) -> DecodedPayload:
    payload = pkt.payload
    if st.phase == Phase.CONNECT:
        d = st.decode(pkt, "raw")
        d.error = d.error or (f"at offset {pkt.offset}: client packet before the server's "
                              "greeting")
        return d
    if not st.response_seen:
        st.response_seen = True
        if handshake.is_ssl_request(payload):
            d = st.decode(pkt, "ssl_request")
            if isinstance(d.value, handshake.SslRequest):
                st.client_capabilities = d.value.capability_flags
                st.client_mariadb_capabilities = d.value.mariadb_capabilities
            start_tls(st, pkt)
            return d
        flags = int.from_bytes(payload[:4].ljust(4, b"\0"), "little")
        kind = ("handshake_response41" if flags & CAP.CLIENT_PROTOCOL_41
                else "handshake_response320")
        d = st.decode(pkt, kind)
        if isinstance(d.value, handshake.HandshakeResponse41 | handshake.HandshakeResponse320):
            st.client_capabilities = d.value.capability_flags
            st.client_mariadb_capabilities = getattr(d.value, "mariadb_capabilities", 0)
        return d
    return st.decode(pkt, "auth_switch_response")


def start_tls(st: ConnState, pkt: Packet) -> None:
    terminated = st.tls_terminated
    node = Node("encrypted", pkt.end, 0, None, "", "TLS",
                "everything after the SSLRequest is TLS-encrypted: "
                + ("the proxy terminates it on both legs, so the decrypted bytes are decoded"
                   if terminated else "binlogscope stops decoding this connection"))
    st.set_phase(Phase.ENCRYPTED, "SSLRequest: the connection switches to TLS")
    st.emit(TlsStarted(Peer.CLIENT, pkt.end, node, terminated))


def client_command(st: ConnState, pkt: Packet) -> DecodedPayload:
    payload = pkt.payload
    code = payload[0] if payload else -1
    st.replies.command(code)
    st.semi_sync_pending = False
    if st.phase == Phase.BINLOG_STREAM:
        st.set_phase(Phase.COMMAND, f"{command_name(code)} during the binlog stream")
    kind = COMMAND_KIND.get(code, "command")
    if code == Command.COM_STMT_EXECUTE and len(payload) >= 5:
        stmt = st.statements.get(int.from_bytes(payload[1:5], "little"))

        def execute(r: Any, caps: int) -> StmtExecute:
            return statements.decode_com_stmt_execute(r, caps, stmt)

        d = st.decode(pkt, kind, execute)
    else:
        d = st.decode(pkt, kind)
    value = d.value
    if type(value) is statements.ComStmtPrepare:
        st.preparing = value.query
    elif type(value) is statements.ComStmtClose and value.command == Command.COM_STMT_CLOSE:
        st.statements.pop(value.statement_id, None)
    if code == Command.COM_QUERY:
        if isinstance(d.value, commands.ComQuery):
            if SEMI_SYNC_QUERY.search(d.value.query):
                st.semi_sync_pending = True
            m = UNTIL_GTID_QUERY.search(d.value.query)
            if m:
                st.until_gtid = m.group(1) or None
    elif code in (Command.COM_BINLOG_DUMP, Command.COM_BINLOG_DUMP_GTID):
        flags = getattr(d.value, "flags", None)
        st.dump_flags = flags if type(flags) is int else 0
        st.dump_malformed = (d.value.malformed if type(d.value) is commands.ComBinlogDump
                             else None)
        st.set_phase(Phase.BINLOG_STREAM, f"{command_name(code)}: the source streams "
                     "binlog events")
    return d


# ---------------------------------------------------------------------- server side
def server_packet(st: ConnState, pkt: Packet) -> DecodedPayload:
    payload = pkt.payload
    first = payload[0] if payload else -1
    if st.phase == Phase.CONNECT:
        if first == 0xFF:
            d = st.decode(pkt, "err")
            st.set_phase(Phase.CLOSED, "the server refused the connection")
            return d
        d = st.decode(pkt, "handshake_v10")
        if isinstance(d.value, handshake.HandshakeV10):
            st.handshake = d.value
            st.server_capabilities = d.value.capability_flags
            st.server_mariadb_capabilities = d.value.mariadb_capabilities
        st.set_phase(Phase.AUTH, "server greeting received")
        return d
    if st.phase == Phase.AUTH:
        return auth_reply(st, pkt, first, in_command=False)
    if st.phase == Phase.BINLOG_STREAM:
        return stream_packet(st, pkt, first)
    return command_reply(st, pkt, first)


def auth_reply(st: ConnState, pkt: Packet, first: int, *, in_command: bool) -> DecodedPayload:
    if first == 0x00:
        d = st.decode(pkt, "ok")
        st.replies.expect = Reply.NONE
        if not in_command:
            caps = st.capabilities
            algorithm = negotiated(caps) if st.client_capabilities is not None else None
            if algorithm is not None:
                st.compression = algorithm  # (the next bytes of both sides are frames)
            st.set_phase(Phase.COMMAND, "authentication succeeded" if algorithm is None else
                         f"authentication succeeded; {algorithm}-compressed protocol from "
                         "here on")
        return d
    if first == 0xFF:
        d = st.decode(pkt, "err")
        st.replies.expect = Reply.NONE
        if not in_command:
            st.set_phase(Phase.CLOSED, "authentication failed")
        return d
    if first == 0xFE:
        return st.decode(pkt, "auth_switch_request")
    if first == 0x01:
        return st.decode(pkt, "auth_more_data")
    d = st.decode(pkt, "raw")
    d.error = d.error or f"at offset {pkt.payload_offset}: unexpected packet during auth"
    return d


def stream_packet(st: ConnState, pkt: Packet, first: int) -> DecodedPayload:
    if first == 0x00:
        semi = st.semi_sync
        ctx = st.ctx

        def fn(r: Any, caps: int) -> replication.BinlogPacket:
            return replication.decode_binlog_packet(r, caps, ctx, semi_sync=semi)

        return st.decode(pkt, "binlog_event", fn)
    if first == 0xFE and handshake.is_eof_packet(pkt.payload, st.capabilities):
        d = st.decode(pkt, "ok" if st.deprecate_eof else "eof")
        flags = st.dump_flags
        st.set_phase(Phase.COMMAND, dump_eof_reason(
            None if flags is None else bool(flags & _NON_BLOCK), st.until_gtid))
        return d
    if first == 0xFF:
        d = st.decode(pkt, "err")
        st.set_phase(Phase.COMMAND, "the source ended the dump with an error")
        return d
    d = st.decode(pkt, "raw")
    d.error = d.error or (f"at offset {pkt.payload_offset}: stream packet starts with "
                          f"0x{first & 0xFF:02x}, expected 0x00 (event), 0xFE or 0xFF")
    return d


def command_reply(st: ConnState, pkt: Packet, first: int) -> DecodedPayload:
    if st.replies.expect is Reply.AUTH:  # COM_CHANGE_USER: the auth exchange again
        d = auth_reply(st, pkt, first, in_command=True)
        if d.kind in ("auth_switch_request", "auth_more_data"):
            st.replies.expect = Reply.AUTH
            # the client answers with auth data, not a new command
            st.auth_data_next = not (isinstance(d.value, handshake.AuthMoreData)
                                  and d.value.fast_auth_success)
        return d
    got = st.replies.read(pkt, st.decode, st.capabilities, st.deprecate_eof)
    if got.result is not None:
        st.emit(got.result)
    ok = got.payload.value
    if type(ok) is StmtPrepareOk:  # the statement the client prepared gets its id
        st.statements[ok.statement_id] = statements.StatementInfo(st.preparing or "",
                                                                  ok.num_params)
        st.preparing = None
    if got.answer is Answer.ERR:
        st.semi_sync_pending = False
    elif got.answer is Answer.OK and st.semi_sync_pending:
        st.semi_sync = True
        st.semi_sync_pending = False
    return got.payload


__all__ = [
    "SEMI_SYNC_QUERY",
    "UNTIL_GTID_QUERY",
    "auth_reply",
    "client_command",
    "client_connection_phase",
    "command_reply",
    "dump_eof_reason",
    "server_packet",
    "start_tls",
    "stream_packet",
]
