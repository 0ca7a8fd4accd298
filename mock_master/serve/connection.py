"""One mock-master client connection: handshake, authentication, commands, queries.

Each connection is a loop around binlogscope's sans-IO :class:`~binlogscope.session.Session`
(role SOURCE): the client's bytes go in, its packets come out decoded (handshake response,
queries, COM_REGISTER_SLAVE, COM_BINLOG_DUMP(_GTID), semi-sync ACKs), and the answers are
encoded by ``Session.send``. A dump is served by :class:`mock_master.dump.sender.Dump`; the bytes
below the protocol (socket, TLS, compression, max_allowed_packet) by
:class:`mock_master.serve.netio.ClientIO`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import ssl
import time
from typing import Any

from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Peer, Phase, Role, SequenceMismatch
from binlogscope.wire import auth
from binlogscope.wire.commands import (
    ComBinlogDump,
    ComBinlogDumpGtid,
    ComQuery,
    ComRegisterSlave,
    SimpleCommand,
)
from binlogscope.wire.compressed import ZSTD, negotiated
from binlogscope.wire.constants import (
    CapabilityFlag,
    Command,
    StatusFlag,
    command_name,
)
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    AuthMoreData,
    AuthSwitchRequest,
    AuthSwitchResponse,
    EofPacket,
    ErrPacket,
    HandshakeResponse41,
    OkPacket,
    SslRequest,
)
from binlogscope.wire.replication import SemiSyncAck
from binlogscope.wire.responses import encode_err
from mock_master.answers.base import Answer, QueryContext
from mock_master.dump.sender import Dump
from mock_master.runlog import MAX_ITEMS, ClientLog, Closed, clip
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import User
from mock_master.serve.compression import ZSTD_SINCE, Compression
from mock_master.serve.greeting import greeting_version, handshake_v10
from mock_master.serve.host import ConnectionServer
from mock_master.serve.netio import ClientIO
from mock_master.serve.prepared import STMT_COMMANDS, PreparedStatements

CAP = CapabilityFlag
ER_ACCESS_DENIED = 1045
ER_NOT_SUPPORTED_AUTH_MODE = 1251
ER_SECURE_TRANSPORT_REQUIRED = 3159


class Connection(ClientIO):
    """One client connection: its IO (TLS too), handshake and authentication, commands and
    queries, and the semi-sync ACKs read while a dump streams."""

    def __init__(self, master: ConnectionServer, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, clog: ClientLog, host: str) -> None:
        self.m = master
        self.reader = reader
        self.writer = writer
        self.log = clog
        self.host = host
        self.session = Session(Role.SOURCE, record=False)
        self.buf = bytearray()
        self.tls: ssl.SSLObject | None = None
        self._tls_in: ssl.MemoryBIO | None = None
        self._tls_out: ssl.MemoryBIO | None = None
        self.nonce = os.urandom(20).replace(b"\0", b"\x01")
        self.ctx = QueryContext(host=host)
        self.registered = False
        self.closed = False
        self.queue: asyncio.Queue[PacketDecoded | None] = asyncio.Queue()
        self._reader_task: asyncio.Task[None] | None = None
        #: one reader of the client at a time, by construction: every packet is read under it
        #: (the dump's stream reader and the command loop never wait on the socket together)
        self._read_lock = asyncio.Lock()
        self.actions: list[Action] = []
        self.pending_acks: dict[tuple[str, int], float] = {}
        self.ack_event = asyncio.Event()
        self.semi_fallback = False
        self.ack_timeout = master.scenario.ack_timeout
        self.prepared = PreparedStatements(self)
        #: the client's capability flags (CLIENT_INTERACTIVE picks interactive_timeout)
        self.client_caps = 0
        #: the zstd level the handshake response named (CLIENT_ZSTD_COMPRESSION_ALGORITHM)
        self.zstd_level: int | None = None
        #: the running dump and its server_id (for the same-server_id kill), else None
        self.current_dump: Dump | None = None
        self.dump_server_id: int | None = None
        self.streaming = False
        self._draining = False
        #: the compressed protocol, after a login with CLIENT_COMPRESS
        self.zip: Compression | None = None

    def finish(self) -> None:
        now = time.monotonic()
        for (name, pos), t in list(self.pending_acks.items()):
            if now - t > 1.0:
                self.log.violations.append(f"missing ACK: the client never acknowledged "
                                           f"{name}:{pos}")
        self.pending_acks.clear()
        if self._reader_task is not None:
            self._reader_task.cancel()

    async def next_packet(self) -> PacketDecoded:
        """Feed the next client packet to the session; its PacketDecoded. Only one coroutine
        reads at a time (``_read_lock``): a second one waits for the first's packet to be
        whole, never on the socket beside it."""
        async with self._read_lock:
            return await self._next_packet()

    async def _next_packet(self) -> PacketDecoded:
        while True:
            frames = await self._read_frames()
            self.session.receive_data(frames, Peer.CLIENT)
            got: PacketDecoded | None = None
            for ev in self.session.events():
                if isinstance(ev, SequenceMismatch) and ev.direction == Peer.CLIENT:
                    self.log.violations.append(
                        f"bad sequence id at client offset {ev.offset}: got {ev.got}, "
                        f"expected {ev.expected}")
                elif isinstance(ev, PacketDecoded) and ev.direction == Peer.CLIENT:
                    got = ev
            if got is not None:
                return got

    def send(self, value: Any) -> None:
        self.write(self.session.send(value))

    def send_raw(self, payload: bytes) -> None:
        """A payload the session does not encode (prepared-statement replies), framed."""
        self.write(self.session.send_raw(payload))

    # ---------------------------------------------------------------- connection phase
    async def run(self) -> None:
        m = self.m
        version = greeting_version(m.flavor, m.version)
        default_plugin = "mysql_native_password" if m.flavor == "mariadb" \
            else "caching_sha2_password"
        configured = m.variables.get("default_authentication_plugin")
        if configured is not None and m.flavor == "mysql":  # the server's setting (8.0)
            default_plugin = str(configured.resolved())
        # connect_timeout: the whole login (greeting, TLS, authentication) within this time
        limit = m.limit("connect_timeout")
        try:
            async with asyncio.timeout(limit if limit > 0 else None):
                greeting = bytearray(self.session.send(handshake_v10(
                    m.flavor, version, self.log.id, self.nonce,
                    tls=m.ssl_context is not None, auth_plugin=default_plugin)))
                # CLIENT_COMPRESS is offered as the server does; the session is not told (it
                # would stop decoding): this connection inflates and deflates below it
                low = 4 + 1 + len(version.encode()) + 1 + 4 + 8 + 1
                greeting[low] |= int(CAP.CLIENT_COMPRESS)
                if m.flavor == "mysql" and m.version_tuple >= ZSTD_SINCE:
                    # CLIENT_ZSTD_COMPRESSION_ALGORITHM (bit 26): the upper capability bytes,
                    # after the lower two, the character set and the status flags
                    greeting[low + 5 + 1] |= 1 << (26 - 24)
                self.write(greeting)
                await self.drain()
                await self._authenticate(default_plugin)
        except TimeoutError:
            self.close(f"server (connect_timeout: not logged in within {limit:g} s)")
            return
        await self._command_loop()

    async def _authenticate(self, default_plugin: str) -> None:
        p = await self.next_packet()
        v = p.value
        if isinstance(v, SslRequest) or (p.kind == "ssl_request"):
            if self.m.ssl_context is None:
                raise Closed("SSLRequest but TLS is not offered")
            async with self._read_lock:  # (its handshake reads the socket too)
                await self._start_tls()
            p = await self.next_packet()
            v = p.value
        if not isinstance(v, HandshakeResponse41):
            self.log.violations.append(f"expected a HandshakeResponse41, got {p.kind}")
            self._deny(None, bool(getattr(v, "auth_response", b"")))
            raise Closed("bad handshake response")
        self.log.user = v.username
        self.client_caps = v.capability_flags
        self.zstd_level = v.zstd_compression_level
        self.ctx.user = v.username
        self.ctx.database = v.database
        self.ctx.charset = v.character_set if v.character_set in (8, 33, 45, 46, 63, 83, 224,
                                                                   255) else 45
        user = self.m.users.get(v.username)
        plugin = v.client_plugin_name or default_plugin
        if not v.capability_flags & int(CAP.CLIENT_PLUGIN_AUTH) and self.m.flavor == "mysql":
            self._old_client(user.plugin if user is not None else default_plugin)
            plugin = "mysql_native_password"
        response = v.auth_response
        nonce = self.nonce
        if user is not None and plugin != user.plugin:
            nonce = os.urandom(20).replace(b"\0", b"\x01")
            self.send(AuthSwitchRequest(user.plugin, nonce + b"\0"))
            await self.drain()
            p = await self.next_packet()
            if not isinstance(p.value, AuthSwitchResponse):
                raise Closed("expected an auth switch response")
            response = p.value.data
            plugin = user.plugin
        self.log.auth_plugin = plugin
        if user is None:
            self._deny(v.username, bool(response))
            raise Closed("unknown user")
        if plugin == "mysql_native_password":
            ok = response == auth.scramble_native(user.password.encode(), nonce)
        else:
            ok = await self._sha2(user, response, nonce)
        if not ok:
            self._deny(v.username, bool(response))
            raise Closed("wrong password")
        if self.m.scenario.tls_required and self.tls is None:
            self._insecure(v.username, bool(response))
            raise Closed("insecure transport (require_secure_transport)")
        self.log.authenticated = True
        self.send(OkPacket())
        await self.drain()
        offered = int(CAP.CLIENT_COMPRESS)
        if self.m.flavor == "mysql" and self.m.version_tuple >= ZSTD_SINCE:
            offered |= int(CAP.CLIENT_ZSTD_COMPRESSION_ALGORITHM)
        algorithm = negotiated(self.client_caps & offered)  # zlib wins, as the server's
        if algorithm is not None:  # from the next packet on
            self.zip = Compression(int(self.m.limit("max_allowed_packet")), algorithm,
                                   self.zstd_level if algorithm == ZSTD else None)
            self.log.compressed = True
            self.log.compression = algorithm

    async def _sha2(self, user: User, response: bytes, nonce: bytes) -> bool:
        pw = user.password.encode()
        if not pw:
            return response in (b"", b"\0")
        fast = response == auth.scramble_caching_sha2(pw, nonce)
        if user.name in self.m.sha2_cache:
            if not fast:
                return False
            self.send(AuthMoreData(b"\x03"))
            return True
        self.send(AuthMoreData(b"\x04"))  # perform full authentication
        await self.drain()
        p = await self.next_packet()
        data = p.value.data if isinstance(p.value, AuthSwitchResponse) else b""
        if self.tls is not None:
            clear = data.rstrip(b"\0")
        else:
            if data == b"\x02":
                from cryptography.hazmat.primitives import serialization

                pem = self.m.rsa_key().public_key().public_bytes(
                    serialization.Encoding.PEM,
                    serialization.PublicFormat.SubjectPublicKeyInfo)
                self.send(AuthMoreData(pem))
                await self.drain()
                p = await self.next_packet()
                data = p.value.data if isinstance(p.value, AuthSwitchResponse) else b""
            clear = self._rsa_decrypt(data, nonce)
        if clear != pw:
            return False
        self.m.sha2_cache.add(user.name)
        return True

    def _rsa_decrypt(self, data: bytes, nonce: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            plain = self.m.rsa_key().decrypt(data, padding.OAEP(
                mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
        except ValueError:
            return b"\xff"
        n = nonce[:20]
        pw = bytes(c ^ n[i % len(n)] for i, c in enumerate(plain))
        return pw.rstrip(b"\0")

    def _old_client(self, account_plugin: str) -> None:
        """A client without CLIENT_PLUGIN_AUTH speaks mysql_native_password only; MySQL refuses
        it an account of another plugin with ERR 1251 (08004) before reading its password
        (sql/auth/sql_authentication.cc: parse_client_handshake_packet, "An old client is
        connecting", and find_mpvio_user, "user account requires non-default plugin and the
        client is too old"; an unknown user's decoy account has the default plugin)."""
        if account_plugin == "mysql_native_password":
            return
        msg = ("Client does not support authentication protocol requested by server; "
               "consider upgrading MySQL client")
        self.log.errors.append(f"ERR {ER_NOT_SUPPORTED_AUTH_MODE}: {msg}")
        with contextlib.suppress(Exception):
            self.send(ErrPacket(ER_NOT_SUPPORTED_AUTH_MODE, msg, "08004"))
        raise Closed("client without CLIENT_PLUGIN_AUTH for a "
                     f"{account_plugin} account (ERR {ER_NOT_SUPPORTED_AUTH_MODE})")

    def _insecure(self, user: str | None, with_password: bool) -> None:
        """require_secure_transport=ON and a login over plain TCP. MariaDB 10.11 answers it as
        a failed login (measured: ERR 1045 28000 'Access denied ... (using password: YES)',
        sequence 2, then it closes); MySQL with ER_SECURE_TRANSPORT_REQUIRED (3159 HY000),
        raised in acl_authenticate after the password and account-lock checks
        (sql/auth/sql_authentication.cc: a wrong password is still ERR 1045 first)."""
        if self.m.flavor == "mariadb":
            self._deny(user, with_password)
            return
        msg = ("Connections using insecure transport are prohibited while "
               "--require_secure_transport=ON.")
        self.log.errors.append(f"ERR {ER_SECURE_TRANSPORT_REQUIRED}: {msg}")
        with contextlib.suppress(Exception):
            self.send(ErrPacket(ER_SECURE_TRANSPORT_REQUIRED, msg, "HY000"))

    def _deny(self, user: str | None, with_password: bool) -> None:
        msg = (f"Access denied for user '{user or ''}'@'{self.host}' (using password: "
               f"{'YES' if with_password else 'NO'})")
        self.log.errors.append(f"ERR {ER_ACCESS_DENIED}: {msg}")
        with contextlib.suppress(Exception):
            self.send(ErrPacket(ER_ACCESS_DENIED, msg, "28000"))

    # ---------------------------------------------------------------- commands
    async def _next_command(self) -> PacketDecoded | None:
        """The next command, or None when the client stayed silent longer than wait_timeout
        (interactive_timeout for a CLIENT_INTERACTIVE client): the server then closes the
        connection without a word, as MariaDB does."""
        name = "interactive_timeout" if self.client_caps & int(CAP.CLIENT_INTERACTIVE) \
            else "wait_timeout"
        limit = self.m.limit(name)
        try:
            async with asyncio.timeout(limit if limit > 0 else None):
                return await self.next_packet()
        except TimeoutError:
            self.close(f"server ({name}: no command for {limit:g} s)")
            return None

    async def _command_loop(self) -> None:
        while True:
            got = await self._next_command()
            if got is None:
                return
            p = got
            v = p.value
            if isinstance(v, ComQuery):
                self._query(v.query)
            elif isinstance(v, ComRegisterSlave):
                self.registered = True
                self.log.register = {"server_id": v.server_id, "hostname": v.hostname,
                                     "user": v.user, "port": v.port,
                                     "master_id": v.master_id}
                self.m.note(f"client {self.log.id} registered as a replica: server_id "
                            f"{v.server_id}, report host {v.hostname or '-'}:{v.port}")
                self.send(OkPacket())
            elif isinstance(v, ComBinlogDumpGtid) and self.m.flavor == "mariadb":
                self._unknown_command(int(Command.COM_BINLOG_DUMP_GTID))  # MySQL's command
            elif isinstance(v, ComBinlogDump | ComBinlogDumpGtid):
                await self._dump(v)
                if self.closed or self.session.phase != Phase.COMMAND:
                    return  # (the server ends the connection after a dump, as a real one)
                continue
            elif isinstance(v, SimpleCommand) and v.command == 0xEF \
                    and len(v.arguments) >= 8:
                # a semi-sync ACK that arrived after the dump ended: no reply, as in the stream
                self.on_ack(SemiSyncAck(int.from_bytes(v.arguments[:8], "little"),
                                        v.arguments[8:].decode("utf-8", "replace")))
                continue
            elif p.payload and p.payload[0] in STMT_COMMANDS:  # (decoded as COM_STMT_*)
                self.prepared.handle(p.payload[0], bytes(p.payload[1:]))
            elif isinstance(v, SimpleCommand) and v.command == Command.COM_FIELD_LIST \
                    and self.m.flavor == "mysql":
                self._field_list(v.arguments)
            elif isinstance(v, SimpleCommand):
                if v.command == Command.COM_QUIT:
                    self.close("client (COM_QUIT)")
                    return
                if v.command in (Command.COM_PING, Command.COM_INIT_DB,
                                 Command.COM_RESET_CONNECTION):
                    if v.command == Command.COM_INIT_DB:
                        self.ctx.database = v.arguments.decode("utf-8", "replace")
                    self.send(OkPacket(status_flags=self.status_flags()))
                else:
                    self._unknown_command(v.command)
            else:
                self.log.violations.append(f"unexpected client packet {p.kind} in the command "
                                           "phase")
                self._unknown_command(p.payload[0] if p.payload else -1)
            await self.drain()

    def _field_list(self, args: bytes) -> None:
        """COM_FIELD_LIST (MySQL flavour): the table's column definitions, each with its
        default (mock_master.answers.mysql_fields), then EOF; the server's errors otherwise."""
        from mock_master.answers.mysql_fields import field_definitions

        name, _, wild = args.partition(b"\0")
        table = name.decode("utf-8", "replace")
        db = self.ctx.database
        if not db:
            self.send(ErrPacket(1046, "No database selected", "3D000"))
            return
        t = self.m.knowledge().find(db, table)
        if t is None:
            self.send(ErrPacket(1146, f"Table '{db}.{table}' doesn't exist", "42S02"))
            return
        for payload in field_definitions(t, self.ctx.charset, wild.decode("utf-8", "replace")):
            self.send_raw(payload)
        self.send(EofPacket(0, self.status_flags()))

    def _unknown_command(self, code: int) -> None:
        """ERR 1047 as the server, and the command logged (its byte and name)."""
        what = f"0x{code:02x} {command_name(code)}" if code >= 0 else "(empty packet)"
        self.log.unknown_commands.append(what)
        self.m.log.notes.append(f"client {self.log.id}: unknown command {what}")
        self.send(ErrPacket(1047, "Unknown command", "08S01"))

    def status_flags(self, extra: int = 0) -> int:
        """The status flags of an OK/EOF/result set now (autocommit, and ``extra``)."""
        return (int(StatusFlag.SERVER_STATUS_AUTOCOMMIT) if self.ctx.autocommit else 0) | extra

    def _kill(self, q: str) -> Answer | None:
        m = re.fullmatch(r"\s*KILL\s+(?:CONNECTION\s+|QUERY\s+)?(\d+)\s*;?\s*", q,
                         re.IGNORECASE)
        if m is None:
            return None
        target = int(m.group(1))
        if self.m.close_client(target, f"KILL from client {self.log.id}"):
            return Answer(ok=OkPacket())
        return Answer(err=ErrPacket(1094, f"Unknown thread id: {target}", "HY000"))

    def answer_query(self, q: str, *, log: bool = True) -> Answer | None:
        """The answer to a query text (None: nothing knows it); its note logged."""
        if log:
            self.log.queries.append(q)
        ans: Answer | None = self._kill(q) or self.m.answerer.answer(q, self.ctx)
        if ans is not None and ans.note:
            self.log.unknown_queries.append(q)
            self.m.log.notes.append(f"client {self.log.id}: {ans.note}")
        return ans

    def _query(self, q: str) -> None:
        ans = self.answer_query(q)
        if ans is None:
            self.log.unknown_queries.append(q)
            self.m.log.notes.append(f"client {self.log.id}: unknown query {q!r}")
            self.send(ErrPacket(1105, f"mock master: no answer for this query: {q[:200]!r}; "
                                "add one to the scenario's [[answers]]", "HY000"))
            return
        if ans.err is not None:
            self.send(ans.err)
        elif ans.ok is not None:
            ok = ans.ok
            self.send(OkPacket(ok.affected_rows, ok.last_insert_id, self.status_flags(),
                               ok.warnings, ok.info))
        else:
            self.write(self.session.send_result_set(ans.columns, ans.rows,
                                                    status_flags=self.status_flags(
                                                        ans.extra_status)))
        self.log.user_vars = {k: (clip(v.decode("utf-8", "replace")) if isinstance(v, bytes)
                                  else clip(v) if isinstance(v, str) else v)
                              for k, v in itertools.islice(self.ctx.user_vars.items(),
                                                           MAX_ITEMS)}

    # ---------------------------------------------------------------- the dump
    async def _dump(self, cmd: ComBinlogDump | ComBinlogDumpGtid) -> None:
        gtid = isinstance(cmd, ComBinlogDumpGtid)
        name = cmd.binlog_filename.rstrip("\0")
        self.m.note(f"client {self.log.id} ({self.log.user}) started "
                    f"{'COM_BINLOG_DUMP_GTID' if gtid else 'COM_BINLOG_DUMP'}: server_id "
                    f"{cmd.server_id}, from {name or '(first file)'}:{cmd.binlog_pos}"
                    + (f", GTID state {self.ctx.user_vars.get('slave_connect_state')!r}"
                       if not gtid and self.ctx.user_vars.get("slave_connect_state") else ""))
        d = Dump(self, self.m, cmd)
        self.current_dump = d
        self.dump_server_id = cmd.server_id
        self.streaming = True
        self.m.claim_server_id(self, cmd.server_id)
        try:
            await d.run()
        finally:
            self.current_dump = None
            self.dump_server_id = None
            self.streaming = False
            await self._stop_stream_reader()
            if self.closed and self.log.closed_by is None:
                self.log.closed_by = "client (closed the connection during the dump)"

    def kill_dump(self, code: int, by: int) -> None:
        """Another connection started a dump with this dump's server_id: end this one as the
        server's killed dump thread does, with ERR ``code`` ("A slave with the same
        server_uuid/server_id is already connected; ...") after the last whole packet, then
        close. A dump caught inside a write (a slow or dead client) is closed without it."""
        d = self.current_dump
        reason = f"server (a dump with the same server_id started on client {by})"
        if d is not None and not self._draining and not d.drip:
            msg = self._same_id_message(d)
            self.log.errors.append(f"ERR {code}: {msg}")
            with contextlib.suppress(Exception):
                if d.out:
                    self.write(bytes(d.out))
                    d.out = bytearray()
                self.write(encode_packet(encode_err(ErrPacket(code, msg, "HY000")), d.seq))
        self.close(reason)

    def _same_id_message(self, d: Any) -> str:
        files = self.m.stream.files
        last = files[-1] if files else None
        cmd = d.cmd
        start = cmd.binlog_pos if isinstance(cmd, ComBinlogDump) else 4
        last_ev = last.offsets[-1] if last is not None and last.count else 4
        head = ("A slave with the same server_uuid/server_id is already connected"
                if self.m.flavor == "mariadb" else
                "A replica with the same server_uuid/server_id as this replica has connected "
                "to the source")
        fn = cmd.binlog_filename.split("\0", 1)[0] or "."  # as asked ('.' for none)
        ln = last.name if last is not None else ""
        return (f"{head}; the first event '{fn}' at {start}, the last event read from '{ln}' at "
                f"{last_ev}, the last byte read from '{ln}' at "
                f"{last.size if last is not None else 4}.")

    def start_stream_reader(self) -> None:
        """Read the client while a dump streams (:meth:`read_during_stream`)."""
        self._reader_task = asyncio.create_task(self.read_during_stream())

    async def _stop_stream_reader(self) -> None:
        """The dump ended: its stream reader is cancelled and waited for, so no read of it is
        pending when anything reads the connection again."""
        task, self._reader_task = self._reader_task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait({task})  # (its CancelledError stays in it; ours is not swallowed)

    async def read_during_stream(self) -> None:
        """Reader task while streaming: ACKs, COM_QUIT, anything else is a violation."""
        try:
            while True:
                p = await self.next_packet()
                v = p.value
                if isinstance(v, SemiSyncAck):
                    self.on_ack(v)
                elif p.kind == "semi_sync_ack":
                    self.log.violations.append(f"malformed semi-sync ACK: {p.error}")
                elif isinstance(v, SimpleCommand) and v.command == Command.COM_QUIT:
                    self.close("client (COM_QUIT)")
                    return
                else:
                    self.log.violations.append(f"client sent {p.kind} during the binlog "
                                               "stream")
        except (Closed, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            if self.log.closed_by is None:
                self.log.closed_by = (f"client ({exc}) during the dump" if str(exc)
                                      else "client (closed the connection during the dump)")
            self.closed = True
            with contextlib.suppress(Exception):
                self.writer.close()

    def on_ack(self, ack: SemiSyncAck) -> None:
        key = (ack.binlog_filename, ack.binlog_pos)
        self.log.acks.append([ack.binlog_filename, ack.binlog_pos])
        if not self.session.semi_sync:
            self.log.violations.append(f"ACK {key[0]}:{key[1]} although semi-sync was not "
                                       "negotiated")
        elif key in self.pending_acks:
            # an ACK also covers every earlier pending position of the same file
            for k in list(self.pending_acks):
                if k[0] == key[0] and k[1] <= key[1]:
                    del self.pending_acks[k]
        elif [key[0], key[1]] not in self.log.acks_requested:
            self.log.violations.append(
                f"ACK {key[0]}:{key[1]} does not match any event the source asked to be "
                f"acknowledged (pending: {sorted(self.pending_acks) or 'none'})")
        if self.current_dump is not None:
            self.current_dump.ack_read()
        self.ack_event.set()

