"""The mock master: an asyncio server speaking the source side of the replication protocol.

Each connection is a loop around binlogscope's sans-IO :class:`~binlogscope.session.Session`
(role SOURCE): the client's bytes go in, its packets come out decoded (handshake response,
queries, COM_REGISTER_SLAVE, COM_BINLOG_DUMP(_GTID), semi-sync ACKs), and the answers are encoded
by ``Session.send``. The binlog stream itself is framed directly (one ``0x00`` + event per packet,
sequence ids counting on), because it is the hot path: the session would decode every event.

Use it from asyncio (``await MockMaster(scenario).start()``), from a thread
(:class:`ThreadedMockMaster`, what the pytest fixture and ``binlogscope demo`` use), or from the
command line (``python -m mock_master``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.events import PacketDecoded, Peer, Phase, Role, SequenceMismatch
from binlogscope.session import Session
from binlogscope.wire import auth
from binlogscope.wire.binlog.header import HEADER_LEN, crc32
from binlogscope.wire.commands import (
    ComBinlogDump,
    ComBinlogDumpGtid,
    ComQuery,
    ComRegisterSlave,
    SimpleCommand,
)
from binlogscope.wire.constants import CapabilityFlag, Command, MariaDbCapability, StatusFlag
from binlogscope.wire.handshake import (
    AuthMoreData,
    AuthSwitchRequest,
    AuthSwitchResponse,
    ErrPacket,
    HandshakeResponse41,
    HandshakeV10,
    OkPacket,
    SslRequest,
)
from binlogscope.wire.replication import SemiSyncAck
from mock_master.answers import (
    Answer,
    Answerer,
    QueryContext,
    Variable,
    columns_from_types,
    default_variables,
)
from mock_master.faults import STREAM_ACTIONS, Action, apply_stream_actions
from mock_master.framing import CHUNK_EVENTS, frame_events
from mock_master.scenarios import Scenario, User
from mock_master.sources import (
    FDE,
    FLAG_IN_USE,
    EventStream,
    corrupt_checksum,
    strip_checksum,
)

CAP = CapabilityFlag
_U32 = struct.Struct("<I")
_HDR = struct.Struct("<IBIIIH")
MAX_PAYLOAD = 0xFFFFFF
BATCH_BYTES = 1 << 20
#: how much framed wire image the server keeps for fast replays
IMAGE_CACHE_BYTES = 2 << 30

# what a real MariaDB 10.11 greeting advertises (compression left out: not spoken here)
_MARIADB_CAPS = 0x81FFF7FE & ~int(CAP.CLIENT_COMPRESS)
_MYSQL_CAPS = (0xFFFFFFFF & ~int(CAP.CLIENT_COMPRESS) & ~int(CAP.CLIENT_SSL)
               & ~(1 << 26)  # CLIENT_ZSTD_COMPRESSION_ALGORITHM
               & ~(1 << 25)  # CLIENT_OPTIONAL_RESULTSET_METADATA
               & ~(1 << 27)  # CLIENT_QUERY_ATTRIBUTES
               & ~(1 << 28)  # MULTI_FACTOR_AUTHENTICATION
               & ~(1 << 29) & ~(1 << 30) & ~(1 << 31))
_MARIADB_EXT = int(MariaDbCapability.MARIADB_CLIENT_PROGRESS
                   | MariaDbCapability.MARIADB_CLIENT_STMT_BULK_OPERATIONS)

#: actions that act before their event is sent (the others change how it is sent)
_FIRED_BEFORE = frozenset({"delay", "heartbeat", "heartbeat_storm", "send_error", "restart",
                           "stall", "heartbeat_gap", "slow_drip", "semisync_without_negotiation",
                           "ack_timeout", "mariadb_dummy_events"})
DUMMY_TEXT = "# Dummy event replacing event type {} that slave cannot handle."
ER_ACCESS_DENIED = 1045


# ------------------------------------------------------------------------------- run log
@dataclass
class ClientLog:
    """What one client did (the per-run log a test asserts on)."""

    id: int
    peer: str
    user: str | None = None
    auth_plugin: str | None = None
    tls: bool = False
    authenticated: bool = False
    queries: list[str] = field(default_factory=list)
    unknown_queries: list[str] = field(default_factory=list)
    register: dict[str, Any] | None = None
    dump: dict[str, Any] | None = None
    user_vars: dict[str, Any] = field(default_factory=dict)
    events_sent: int = 0
    bytes_sent: int = 0
    heartbeats_sent: int = 0
    acks_requested: list[list[Any]] = field(default_factory=list)
    acks: list[list[Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    closed_by: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None


@dataclass
class RunLog:
    clients: list[ClientLog] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        return [f"client {c.id}: {v}" for c in self.clients for v in c.violations]

    @property
    def unknown_queries(self) -> list[str]:
        return [q for c in self.clients for q in c.unknown_queries]

    def to_dict(self) -> dict[str, Any]:
        return {"clients": [asdict(c) for c in self.clients], "notes": list(self.notes)}

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")


class _Closed(Exception):  # noqa: N818  (control flow, not an error)
    """The client went away (or we closed on purpose)."""


# ------------------------------------------------------------------------------- the server
class MockMaster:
    """A scriptable MySQL/MariaDB primary (see the module docstring)."""

    def __init__(self, scenario: Scenario, host: str = "127.0.0.1", port: int = 0,
                 *, stream: EventStream | None = None) -> None:
        self.scenario = scenario
        self.host = host
        self.requested_port = port
        self.port = port
        self.stream = stream if stream is not None else scenario.load_stream()
        apply_stream_actions(self.stream, [a for a in scenario.actions
                                           if a.kind in STREAM_ACTIONS], scenario.flavor)
        self.flavor = scenario.flavor
        self.log = RunLog()
        self.server_id = scenario.server_id or self.stream.server_id or 1
        ver = scenario.server_version or self.stream.server_version or (
            "10.11.19-MariaDB-log" if self.flavor == "mariadb" else "8.0.45")
        self.version = ver
        self.users = {u.name: u for u in scenario.users}
        self.sha2_cache: set[str] = set()
        self._rsa_key: Any = None
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[_Connection] = set()
        self._next_id = 0
        self._fired: dict[int, int] = {}
        self._refusing_until = 0.0
        self._new_events: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        #: framed wire images of whole files (a list of buffers, events, next sequence id),
        #: shared by clients with the same settings
        self.images: dict[tuple[Any, ...], tuple[list[Any], int, int]] = {}
        self.ssl_context: ssl.SSLContext | None = None
        if scenario.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(scenario.tls_cert, scenario.tls_key)
            self.ssl_context = ctx
        # the GTID facts need the stream's GTID index: built when a client first asks
        variables = default_variables(
            self.flavor, ver, self.server_id, checksum=self.stream.checksum,
            semi_sync=scenario.semi_sync, gtid_pos=self._gtid_pos,
            server_uuid=scenario.server_uuid, port=port,
            basename=self.stream.files[0].name.rsplit(".", 1)[0] if self.stream.files
            else "mysql-bin", mysql_gtids=self._mysql_gtids)
        for k, v in scenario.variables.items():
            kind = "int" if isinstance(v, int) and not isinstance(v, bool) else (
                "bool" if isinstance(v, bool) else "str")
            variables[k.lower()] = Variable(v, kind)
        self.variables = variables
        custom = [(re.compile(p, re.IGNORECASE | re.DOTALL), spec)
                  for p, spec in scenario.answers]
        self.answerer = Answerer(self.flavor, variables, self._binlogs, self._tables, custom)

    # ---------------------------------------------------------------- facts for answers
    def _mysql_gtids(self) -> bool:
        return any(":" in g.gtid for g in self.stream.gtids)

    def _gtid_pos(self) -> str:
        if any(":" in g.gtid for g in self.stream.gtids):
            by_sid: dict[str, list[int]] = {}
            for g in self.stream.gtids:
                sid, _, gno = g.gtid.rpartition(":")
                by_sid.setdefault(sid, []).append(int(gno))
            return ",".join(f"{s}:{min(v)}-{max(v)}" for s, v in sorted(by_sid.items()))
        return self.stream.gtid_state()

    def _binlogs(self) -> list[tuple[str, int]]:
        return [(f.name, f.size) for f in self.stream.files]

    def _tables(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        out = {k: columns_from_types(v) for k, v in self.stream.tables.items()}
        for key, cols in self.scenario.schema.items():
            schema, _, table = key.partition(".")
            out[(schema, table)] = [dict(c) for c in cols]
        return out

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> int:
        self._loop = asyncio.get_running_loop()
        self._new_events = asyncio.Condition()
        self._server = await asyncio.start_server(self._accept, self.host, self.requested_port,
                                                  reuse_address=True, backlog=256)
        self.port = self._server.sockets[0].getsockname()[1]
        self.variables["port"] = Variable(self.port, "int")
        return self.port

    async def serve_forever(self) -> None:
        while True:
            await asyncio.sleep(3600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for c in list(self._conns):
            c.close("server stopped")
        for t in list(self._tasks):
            t.cancel()
        await asyncio.sleep(0)
        if self.scenario.log:
            self.log.write(self.scenario.log)

    async def restart(self, seconds: float) -> None:
        """Close every connection, refuse new ones for ``seconds``, then listen again."""
        self.log.notes.append(f"restart: refusing connections for {seconds}s")
        if self._server is not None:
            self._server.close()
            self._server = None
        for c in list(self._conns):
            c.close("restart")
        await asyncio.sleep(seconds)
        self._server = await asyncio.start_server(self._accept, self.host, self.port,
                                                  reuse_address=True, backlog=256)

    async def append_events(self, events: list[bytes]) -> None:
        """Add events to the last file; blocking dumps send them at once."""
        self.stream.append(events)
        assert self._new_events is not None
        async with self._new_events:
            self._new_events.notify_all()

    def rsa_key(self) -> Any:
        if self._rsa_key is None:
            from cryptography.hazmat.primitives.asymmetric import rsa

            self._rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return self._rsa_key

    def actions_for(self, conn_id: int) -> list[Action]:
        """The connection-level actions that fire on this connection (counts ``times``)."""
        out = []
        for i, a in enumerate(self.scenario.actions):
            if a.kind in STREAM_ACTIONS:
                continue
            if a.client is not None:
                if a.client == conn_id:
                    out.append(a)
                continue
            n = self._fired.get(i, 0)
            if a.times and n >= a.times:
                continue
            self._fired[i] = n + 1
            out.append(a)
        return out

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_id += 1
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else "localhost"
        clog = ClientLog(self._next_id, f"{host}:{peer[1]}" if isinstance(peer, tuple)
                         else str(peer))
        self.log.clients.append(clog)
        conn = _Connection(self, reader, writer, clog, host)
        self._conns.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        except (_Closed, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            if clog.closed_by is None:
                clog.closed_by = f"client ({type(exc).__name__}: {exc})" if str(exc) \
                    else "client"
        except asyncio.CancelledError:
            clog.closed_by = clog.closed_by or "server stopped"
        except Exception as exc:  # a bug in the mock master: log it, keep serving others
            clog.errors.append(f"internal error: {type(exc).__name__}: {exc}")
            clog.closed_by = "internal error"
        finally:
            conn.finish()
            self._conns.discard(conn)
            if task is not None:
                self._tasks.discard(task)
            clog.ended = time.time()
            with contextlib.suppress(Exception):
                writer.close()


# ------------------------------------------------------------------------------- one connection
class _Connection:
    def __init__(self, master: MockMaster, reader: asyncio.StreamReader,
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
        self.actions: list[Action] = []
        self.pending_acks: dict[tuple[str, int], float] = {}
        self.ack_event = asyncio.Event()
        self.semi_fallback = False
        self.ack_timeout = master.scenario.ack_timeout

    # ---------------------------------------------------------------- raw IO
    async def _recv(self) -> bytes:
        if self.tls is None:
            return await self.reader.read(65536)
        assert self._tls_in is not None
        while True:
            try:
                return self.tls.read(65536)
            except ssl.SSLWantReadError:
                self._tls_flush()
                data = await self.reader.read(65536)
                if not data:
                    return b""
                self._tls_in.write(data)
            except ssl.SSLZeroReturnError:
                return b""

    def _tls_flush(self) -> None:
        assert self._tls_out is not None
        out = self._tls_out.read()
        if out:
            self.writer.write(out)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closed:
            raise _Closed("closed")
        if self.tls is not None:
            self.tls.write(data)
            self._tls_flush()
        else:
            self.writer.write(data)
        self.log.bytes_sent += len(data)

    async def drain(self) -> None:
        try:
            await self.writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise _Closed(str(exc)) from None

    def close(self, why: str) -> None:
        if self.log.closed_by is None:
            self.log.closed_by = why
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()

    def finish(self) -> None:
        now = time.monotonic()
        for (name, pos), t in list(self.pending_acks.items()):
            if now - t > 1.0:
                self.log.violations.append(f"missing ACK: the client never acknowledged "
                                           f"{name}:{pos}")
        self.pending_acks.clear()
        if self._reader_task is not None:
            self._reader_task.cancel()

    async def _read_frames(self) -> bytes:
        """The bytes of the next whole logical packet (all its 16 MiB fragments)."""
        pos = 0
        while True:
            while len(self.buf) < pos + 4:
                data = await self._recv()
                if not data:
                    raise _Closed("the client closed the connection")
                self.buf += data
            n = int.from_bytes(self.buf[pos:pos + 3], "little")
            while len(self.buf) < pos + 4 + n:
                data = await self._recv()
                if not data:
                    raise _Closed("the client closed the connection mid-packet")
                self.buf += data
            pos += 4 + n
            if n < MAX_PAYLOAD:
                out = bytes(self.buf[:pos])
                del self.buf[:pos]
                return out

    async def next_packet(self) -> PacketDecoded:
        """Feed the next client packet to the session; its PacketDecoded."""
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

    # ---------------------------------------------------------------- connection phase
    async def run(self) -> None:
        m = self.m
        caps = _MARIADB_CAPS if m.flavor == "mariadb" else _MYSQL_CAPS
        if m.ssl_context is None:
            caps &= ~int(CAP.CLIENT_SSL)
        else:
            caps |= int(CAP.CLIENT_SSL)
        version = m.version
        if m.flavor == "mariadb" and not version.startswith("5.5.5-") \
                and version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 10:
            version = "5.5.5-" + version
        default_plugin = "mysql_native_password" if m.flavor == "mariadb" \
            else "caching_sha2_password"
        self.send(HandshakeV10(version, self.log.id, self.nonce, caps, 45,
                               int(StatusFlag.SERVER_STATUS_AUTOCOMMIT), default_plugin,
                               _MARIADB_EXT if m.flavor == "mariadb" else 0))
        await self.drain()
        await self._authenticate(default_plugin)
        await self._command_loop()

    async def _authenticate(self, default_plugin: str) -> None:
        p = await self.next_packet()
        v = p.value
        if isinstance(v, SslRequest) or (p.kind == "ssl_request"):
            if self.m.ssl_context is None:
                raise _Closed("SSLRequest but TLS is not offered")
            await self._start_tls()
            p = await self.next_packet()
            v = p.value
        if not isinstance(v, HandshakeResponse41):
            self.log.violations.append(f"expected a HandshakeResponse41, got {p.kind}")
            self._deny(None, bool(getattr(v, "auth_response", b"")))
            raise _Closed("bad handshake response")
        self.log.user = v.username
        self.ctx.user = v.username
        self.ctx.database = v.database
        self.ctx.charset = v.character_set if v.character_set in (8, 33, 45, 46, 63, 83, 224,
                                                                   255) else 45
        user = self.m.users.get(v.username)
        plugin = v.client_plugin_name or default_plugin
        response = v.auth_response
        nonce = self.nonce
        if user is not None and plugin != user.plugin:
            nonce = os.urandom(20).replace(b"\0", b"\x01")
            self.send(AuthSwitchRequest(user.plugin, nonce + b"\0"))
            await self.drain()
            p = await self.next_packet()
            if not isinstance(p.value, AuthSwitchResponse):
                raise _Closed("expected an auth switch response")
            response = p.value.data
            plugin = user.plugin
        self.log.auth_plugin = plugin
        if user is None:
            self._deny(v.username, bool(response))
            raise _Closed("unknown user")
        if plugin == "mysql_native_password":
            ok = response == auth.scramble_native(user.password.encode(), nonce)
        else:
            ok = await self._sha2(user, response, nonce)
        if not ok:
            self._deny(v.username, bool(response))
            raise _Closed("wrong password")
        self.log.authenticated = True
        self.send(OkPacket())
        await self.drain()

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

    def _deny(self, user: str | None, with_password: bool) -> None:
        msg = (f"Access denied for user '{user or ''}'@'{self.host}' (using password: "
               f"{'YES' if with_password else 'NO'})")
        self.log.errors.append(f"ERR {ER_ACCESS_DENIED}: {msg}")
        with contextlib.suppress(Exception):
            self.send(ErrPacket(ER_ACCESS_DENIED, msg, "28000"))

    async def _start_tls(self) -> None:
        assert self.m.ssl_context is not None
        self._tls_in, self._tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = self.m.ssl_context.wrap_bio(self._tls_in, self._tls_out, server_side=True)
        if self.buf:  # TLS bytes that arrived with the SSLRequest
            self._tls_in.write(bytes(self.buf))
            self.buf.clear()
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                out = self._tls_out.read()
                if out:
                    self.writer.write(out)
                    await self.drain()
                data = await self.reader.read(65536)
                if not data:
                    raise _Closed("the client closed the connection during TLS") from None
                self._tls_in.write(data)
        out = self._tls_out.read()
        if out:
            self.writer.write(out)
        self.tls = tls
        self.log.tls = True
        self.session.tls_established()

    # ---------------------------------------------------------------- commands
    async def _command_loop(self) -> None:
        while True:
            p = await self.next_packet()
            v = p.value
            if isinstance(v, ComQuery):
                self._query(v.query)
            elif isinstance(v, ComRegisterSlave):
                self.registered = True
                self.log.register = {"server_id": v.server_id, "hostname": v.hostname,
                                     "user": v.user, "port": v.port}
                self.send(OkPacket())
            elif isinstance(v, ComBinlogDump | ComBinlogDumpGtid):
                await self._dump(v)
                if self.session.phase != Phase.COMMAND:
                    return
                continue
            elif isinstance(v, SimpleCommand) and v.command == 0xEF \
                    and len(v.arguments) >= 8:
                # a semi-sync ACK that arrived after the dump ended: no reply, as in the stream
                self.on_ack(SemiSyncAck(int.from_bytes(v.arguments[:8], "little"),
                                        v.arguments[8:].decode("utf-8", "replace")))
                continue
            elif isinstance(v, SimpleCommand):
                if v.command == Command.COM_QUIT:
                    self.close("client (COM_QUIT)")
                    return
                if v.command in (Command.COM_PING, Command.COM_INIT_DB,
                                 Command.COM_RESET_CONNECTION):
                    if v.command == Command.COM_INIT_DB:
                        self.ctx.database = v.arguments.decode("utf-8", "replace")
                    self.send(OkPacket(status_flags=self._status()))
                else:
                    self.send(ErrPacket(1047, "Unknown command", "08S01"))
            else:
                self.log.violations.append(f"unexpected client packet {p.kind} in the command "
                                           "phase")
                self.send(ErrPacket(1047, "Unknown command", "08S01"))
            await self.drain()

    def _status(self, extra: int = 0) -> int:
        return (int(StatusFlag.SERVER_STATUS_AUTOCOMMIT) if self.ctx.autocommit else 0) | extra

    def _kill(self, q: str) -> Answer | None:
        m = re.fullmatch(r"\s*KILL\s+(?:CONNECTION\s+|QUERY\s+)?(\d+)\s*;?\s*", q,
                         re.IGNORECASE)
        if m is None:
            return None
        target = int(m.group(1))
        for other in list(self.m._conns):
            if other.log.id == target:
                other.close(f"KILL from client {self.log.id}")
                return Answer(ok=OkPacket())
        return Answer(err=ErrPacket(1094, f"Unknown thread id: {target}", "HY000"))

    def _query(self, q: str) -> None:
        self.log.queries.append(q)
        ans: Answer | None = self._kill(q) or self.m.answerer.answer(q, self.ctx)
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
            self.send(OkPacket(ok.affected_rows, ok.last_insert_id, self._status(),
                               ok.warnings, ok.info))
        else:
            self.write(self.session.send_result_set(ans.columns, ans.rows,
                                                    status_flags=self._status(
                                                        ans.extra_status)))
        self.log.user_vars = {k: (v.decode() if isinstance(v, bytes) else v)
                              for k, v in self.ctx.user_vars.items()}

    # ---------------------------------------------------------------- the dump
    async def _dump(self, cmd: ComBinlogDump | ComBinlogDumpGtid) -> None:
        d = _Dump(self, cmd)
        try:
            await d.run()
        finally:
            if self._reader_task is not None:
                self._reader_task.cancel()
                self._reader_task = None

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
        except (_Closed, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
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
        self.ack_event.set()


class _Dump:
    """One COM_BINLOG_DUMP(_GTID): where to start, then the event loop with faults."""

    def __init__(self, conn: _Connection, cmd: ComBinlogDump | ComBinlogDumpGtid) -> None:
        self.c = conn
        self.m = conn.m
        self.cmd = cmd
        self.seq = 1
        self.sent = 0  # events sent on this connection (for 'at')
        self.out = bytearray()
        self.file_index = 0
        self.event_index = 0
        self.pos = 4
        self.started = time.monotonic()
        uv = conn.ctx.user_vars
        ck = uv.get("master_binlog_checksum", uv.get("source_binlog_checksum"))
        self.checksum_announced = ck is not None
        self.client_crc = str(ck).upper() == "CRC32" if ck is not None else False
        self.strip = (self.m.stream.checksum and self.checksum_announced and not self.client_crc
                      and self.m.scenario.strip_for_none)
        try:
            self.capability = int(uv.get("mariadb_slave_capability") or 0)
        except (TypeError, ValueError):
            self.capability = 0
        hb = uv.get("master_heartbeat_period", uv.get("source_heartbeat_period"))
        try:
            self.heartbeat = float(hb) / 1e9 if hb is not None else 0.0
        except (TypeError, ValueError):
            self.heartbeat = 0.0
        self.flags = cmd.flags
        self.annotate = bool(self.flags & 0x02)
        self.non_block = bool(self.flags & 0x01) or (
            isinstance(cmd, ComBinlogDump) and cmd.server_id == 0)
        self.semi = bool(conn.session.semi_sync) and self.m.scenario.semi_sync
        self.actions = self.m.actions_for(conn.log.id)
        self.dummy_types: set[int] = set()
        self.drip: float | None = None
        self.stall_until: float | None = None
        self.no_heartbeat_until = 0.0
        self.force_semi = False
        self.bad_magic_at: set[int] = set()
        for a in self.actions:
            if a.at is None and a.after_seconds is None:
                conn.log.faults.append(f"{a.kind} {a.args or ''}".strip()
                                       + " (whole connection)")
            if a.kind == "mariadb_dummy_events":
                self.dummy_types |= {int(t) for t in a.arg("types")}
            elif a.kind == "ack_timeout":
                conn.ack_timeout = float(a.arg("seconds"))
            elif a.kind == "heartbeat_gap" and a.at is None and a.after_seconds is None:
                self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
            elif a.kind == "semisync_without_negotiation" and a.at is None:
                self.force_semi = True
            elif a.kind == "slow_drip" and a.at is None and a.after_seconds is None:
                self.drip = float(a.arg("bytes_per_second"))
        self.fast = not self.actions and not self.semi
        self.skip_gtids: list[tuple[str, int, int]] | None = None
        self._held: tuple[bytes, int, int, bool] | None = None

    # ---------------------------------------------------------------- framing
    def packet(self, payload: bytes | bytearray | memoryview) -> None:
        n = len(payload)
        out = self.out
        if n < MAX_PAYLOAD:
            out += _U32.pack(n | (self.seq << 24))
            out += payload
            self.seq = (self.seq + 1) & 0xFF
            return
        mv = memoryview(payload)
        i = 0
        while True:
            chunk = mv[i:i + MAX_PAYLOAD]
            out += _U32.pack(len(chunk) | (self.seq << 24))
            out += chunk
            self.seq = (self.seq + 1) & 0xFF
            i += MAX_PAYLOAD
            if len(chunk) < MAX_PAYLOAD:
                break

    async def flush(self) -> None:
        if self.out:
            data = self.out
            self.out = bytearray()
            if self.drip:
                await self._drip(bytes(data))
            else:
                self.c.write(data)
                await self.c.drain()

    async def _drip(self, data: bytes) -> None:
        assert self.drip is not None
        step = max(1, int(self.drip / 10))
        for i in range(0, len(data), step):
            self.c.write(data[i:i + step])
            await self.c.drain()
            await asyncio.sleep(step / self.drip)

    def send_event(self, ev: bytes, *, ack: bool = False, magic: int = 0xEF) -> None:
        semi = (self.semi and not self.c.semi_fallback) or self.force_semi
        if semi:
            flag = 1 if ack else 0
            self.packet(b"\x00" + bytes((magic, flag)) + ev)
        else:
            self.packet(b"\x00" + ev)
        self.c.log.events_sent += 1

    # ---------------------------------------------------------------- start position
    def _error(self, code: int, msg: str) -> None:
        self.c.log.errors.append(f"ERR {code}: {msg}")
        self.packet(b"\xff" + struct.pack("<H", code) + b"#HY000" + msg.encode())
        self.c.session.end_dump()

    def _find_start(self) -> bool:
        stream = self.m.stream
        cmd = self.cmd
        uv = self.c.ctx.user_vars
        if isinstance(cmd, ComBinlogDumpGtid):
            self.c.log.dump = {"command": "COM_BINLOG_DUMP_GTID", "server_id": cmd.server_id,
                               "file": cmd.binlog_filename, "pos": cmd.binlog_pos,
                               "flags": cmd.flags, "gtid_set": _gtid_set_text(cmd)}
            self.skip_gtids = _gtid_set_contains(cmd)
            name = cmd.binlog_filename
            if name:
                fi = stream.file_index(name)
                if fi is None:
                    self._error(1236, "Could not find first log file name in binary log "
                                "index file")
                    return False
                self.file_index = fi
            self.event_index = 0
            return True
        self.skip_gtids = None
        state = uv.get("slave_connect_state")
        self.c.log.dump = {"command": "COM_BINLOG_DUMP", "server_id": cmd.server_id,
                           "file": cmd.binlog_filename, "pos": cmd.binlog_pos,
                           "flags": cmd.flags,
                           "gtid_state": None if state is None else str(state)}
        name = cmd.binlog_filename.split("\0", 1)[0]  # a C string on the server side
        if self.m.flavor == "mariadb" and state is not None:
            # a GTID dump: MariaDB ignores the file name and position then
            return self._mariadb_gtid_start(str(state))
        if not name:
            self.file_index, self.event_index = 0, 0
            return True
        fi = stream.file_index(name)
        if fi is None:
            self._error(1236, "Could not find first log file name in binary log index file")
            return False
        idx = stream.files[fi].index_at(cmd.binlog_pos) if cmd.binlog_pos > 4 else 0
        if idx is None:
            self._error(1236, f"Client requested master to start replication from impossible "
                        f"position; the first event '{name}' at {cmd.binlog_pos}, the last "
                        f"event read from '{name}' at 4, the last byte read from '{name}' at 4.")
            return False
        self.file_index, self.event_index = fi, idx
        return True

    def _mariadb_gtid_start(self, state: str) -> bool:
        stream = self.m.stream
        wanted: dict[int, tuple[int, int]] = {}
        for part in state.replace(" ", "").split(","):
            if not part:
                continue
            try:
                d, s, n = (int(x) for x in part.split("-"))
            except ValueError:
                self._error(1236, f"Could not parse GTID list: {state!r}")
                return False
            wanted[d] = (s, n)
        if not wanted:
            self.file_index, self.event_index = 0, 0
            return True
        start: tuple[int, int] | None = None
        for d, (s, n) in wanted.items():
            idx = next((i for i, g in enumerate(stream.gtids)
                        if g.domain == d and g.server_id == s and g.seq == n), None)
            if idx is None:
                self._error(1236, f"Error: connecting slave requested to start from GTID "
                            f"{d}-{s}-{n}, which is not in the master's binlog")
                return False
            nxt = stream.gtids[idx + 1] if idx + 1 < len(stream.gtids) else None
            here = (nxt.file_index, nxt.event_index) if nxt is not None else (
                len(stream.files) - 1, stream.files[-1].count)
            if start is None or here < start:
                start = here
        assert start is not None
        self.file_index, self.event_index = start
        return True

    # ---------------------------------------------------------------- the loop
    async def run(self) -> None:
        c = self.c
        stream = self.m.stream
        if self.m.scenario.require_register and not c.registered:
            c.log.violations.append("dump without COM_REGISTER_SLAVE")
        if stream.checksum and not self.checksum_announced:
            c.log.violations.append("checksum setting not announced: the source's binlog has "
                                    "CRC32 checksums but the client never set "
                                    "@master_binlog_checksum")
            if self.m.flavor == "mysql":
                self._error(1236, "Slave can not handle replication events with the checksum "
                            "that master is configured to log; the first event 'x' at 4")
                await self.flush()
                c.session.end_dump()
                return
        if not self._find_start():
            await self.flush()
            return
        c._reader_task = asyncio.create_task(c.read_during_stream())
        fi, ei = self.file_index, self.event_index
        first = True
        try:
            while True:
                f = stream.files[fi]
                start_pos = f.offsets[ei] if ei < f.count else f.size
                await self._file_start(fi, start_pos if not first else
                                       (start_pos if ei else 4), first, ei)
                first = False
                done = await self._serve_file(fi, ei)
                if done == "next":
                    fi += 1
                    ei = 0
                    continue
                return
        except _Closed:
            return

    async def _file_start(self, fi: int, pos: int, first: bool, ei: int) -> None:
        """The fake ROTATE and the FORMAT_DESCRIPTION that open each file of the dump."""
        f = self.m.stream.files[fi]
        crc = f.checksum and (self.client_crc or not first) and not self.strip
        body = struct.pack("<Q", pos) + f.name.encode()
        size = HEADER_LEN + len(body) + (4 if crc else 0)
        rot = _HDR.pack(0, 4, self.m.server_id, size, 0, 0x20) + body
        if crc:
            rot += _U32.pack(crc32(rot))
        await self._emit(rot, fi, -1)
        fde = f.fde
        if fde is None:
            return
        flags = struct.unpack_from("<H", fde, 17)[0]
        b = bytearray(fde)
        changed = False
        if self.m.scenario.clear_in_use_flag and flags & FLAG_IN_USE:
            struct.pack_into("<H", b, 17, flags & ~FLAG_IN_USE)
            changed = True
        if ei > 0:  # not from the file start: the FDE must not move the replica's position
            _U32.pack_into(b, 13, 0)
            changed = True
            if f.checksum:
                _U32.pack_into(b, len(b) - 4, crc32(b[:-4]))
        elif changed and f.checksum and crc32(b[:-4]) != _U32.unpack_from(b, len(b) - 4)[0]:
            _U32.pack_into(b, len(b) - 4, crc32(b[:-4]))
        if ei > 0:
            await self._emit(bytes(b), fi, -1)
        # from the start, the FDE is event 0 of the file and goes through the normal loop;
        # its flag fix is applied there
        self._fde_fixed = bytes(b)

    def _transform(self, ev: bytes, fi: int) -> bytes | None:
        """Per-client changes to one stored event (None: skip it)."""
        t = ev[4]
        if t == FDE:
            ev = self._fde_fixed
        elif self.m.flavor == "mariadb" and t >= 160:
            if t == 160 and not self.annotate:
                if self.capability >= 2:
                    return None
                ev = dummy_event(ev, self.m.stream.files[fi].checksum)
            elif t in self.dummy_types or (t in (162, 163) and self.capability < 4) \
                    or (t == 161 and self.capability < 3) or (t == 160 and self.capability < 1):
                ev = dummy_event(ev, self.m.stream.files[fi].checksum)
        elif t in self.dummy_types:
            ev = dummy_event(ev, self.m.stream.files[fi].checksum)
        if self.strip:
            ev = strip_checksum(ev)
        return ev

    def _skip_gtid_txn(self, ev: bytes) -> bool:
        """COM_BINLOG_DUMP_GTID: is this GTID event's transaction in the client's set?"""
        if self.skip_gtids is None or ev[4] != 33:
            return False
        import uuid

        sid = str(uuid.UUID(bytes=ev[HEADER_LEN + 1:HEADER_LEN + 17]))
        gno = int(struct.unpack_from("<Q", ev, HEADER_LEN + 17)[0])
        return any(s == sid and a <= gno < b for s, a, b in self.skip_gtids)

    def _build_image(self, fi: int, ei: int, n: int) -> tuple[bytes, int, int]:
        """The framed packets of events ei..n of file fi for this client's settings."""
        events = self.m.stream.files[fi].events
        out = bytearray()
        seq = self.seq
        count = 0
        pack = _U32.pack
        plain = not self.strip and not self.dummy_types
        for k in range(ei, n):
            ev = events[k]
            if not plain or ev[4] == FDE or ev[4] >= 160:
                tr = self._transform(ev, fi)
                if tr is None:
                    continue
                ev = tr
            size = len(ev) + 1
            if size >= MAX_PAYLOAD:
                saved, self.out, self.seq = self.out, bytearray(), seq
                self.packet(b"\x00" + ev)
                out += self.out
                seq = self.seq
                self.out = saved
            else:
                out += pack(size | (seq << 24))
                out += b"\x00"
                out += ev
                seq = (seq + 1) & 0xFF
            count += 1
        return bytes(out), count, seq

    def _raw_ok(self, f: Any, ei: int) -> bool:
        """Can events ei.. of f be framed straight from the file's bytes for this client (no
        event of theirs changes, none needs several packets)?"""
        if f.data is None or self.strip or self.dummy_types:
            return False
        if f.max_event_size() + 1 >= MAX_PAYLOAD:
            return False
        changed = {FDE}  # only event 0 may be the FDE (sent as _fde_fixed, below)
        if self.m.flavor == "mariadb":
            if not self.annotate or self.capability < 1:
                changed.add(160)
            if self.capability < 3:
                changed.add(161)
            if self.capability < 4:
                changed |= {162, 163}
        types = f.types()
        return not any(types.find(t, max(ei, 1)) >= 0 for t in changed)

    async def _serve_image(self, fi: int, ei: int) -> int:
        """Fast path: send events ei.. of file fi from the master's cached wire image (shared by
        every client with the same settings), framing it on first use; returns the index to
        continue from."""
        f = self.m.stream.files[fi]
        n = f.count
        key = (fi, ei, n, self.seq, self.annotate, min(self.capability, 4), self.strip,
               self._fde_fixed if ei == 0 else b"")
        img = self.m.images.get(key)
        await self.flush()
        if img is None:
            if self._raw_ok(f, ei):
                img = await self._frame_and_send(f, ei)
            else:
                data, count, seq = self._build_image(fi, ei, n)
                img = ([data], count, seq)
                await self._send_buffers(img[0])
            self.m.images[key] = img
            # keep at most IMAGE_CACHE_BYTES of images (the oldest go first)
            while sum(sum(len(b) for b in v[0]) for v in self.m.images.values()) \
                    > IMAGE_CACHE_BYTES and len(self.m.images) > 1:
                self.m.images.pop(next(iter(self.m.images)))
        else:
            await self._send_buffers(img[0])
        _, count, seq = img
        self.seq = seq
        self.sent += count
        self.c.log.events_sent += count
        return n

    async def _send_buffers(self, buffers: list[Any]) -> None:
        step = 4 << 20
        for data in buffers:
            view = memoryview(data)
            for k in range(0, len(view), step):
                self.c.write(view[k:k + step])
                await self.c.drain()

    async def _frame_and_send(self, f: Any, ei: int) -> tuple[list[Any], int, int]:
        """Frame events ei.. of a file read from disk straight from its bytes (one 5-byte
        packet header each, nothing decoded) and send them as they are framed; the buffers
        become the file's wire image for later clients."""
        parts: list[Any] = []
        seq = self.seq
        n = f.count
        i = ei
        if i == 0 and n and f.event(0)[4] == FDE:
            saved, self.out, self.seq = self.out, bytearray(), seq
            self.packet(b"\x00" + self._fde_fixed)
            parts.append(bytes(self.out))
            seq = self.seq
            self.out = saved
            self.c.write(parts[-1])
            i = 1
        pending: Any = None
        while i < n:
            j = min(i + CHUNK_EVENTS, n)
            buf, seq = frame_events(f.data, f.starts, i, j, f.end, seq)
            # the next chunk is framed while the client reads this one
            if pending is not None:
                await self.c.drain()
            parts.append(buf)
            self.c.write(buf)
            pending = buf
            i = j
        await self.c.drain()
        return parts, n - ei, seq

    async def _serve_file(self, fi: int, ei: int) -> str:
        stream = self.m.stream
        f = stream.files[fi]
        skipping = False
        i = ei
        if self.fast and not self.dummy_types and self.skip_gtids is None and not self.drip:
            i = await self._serve_image(fi, ei)
            if i == f.count and f.count and f.event(-1)[4] == 4 and fi + 1 < len(stream.files):
                return "next"
        while True:
            n = f.count
            events = f.events if i < n else []
            while i < n:
                ev = events[i]
                t = ev[4]
                if self.skip_gtids is not None:
                    if t in (33, 34):
                        skipping = self._skip_gtid_txn(ev)
                    if skipping:
                        if (fi, i) in stream.txn_ends:
                            skipping = False
                        i += 1
                        continue
                if self.fast and not self.strip and t not in (FDE, 160, 161, 162, 163) \
                        and not self.dummy_types:
                    self.packet(b"\x00" + ev)
                    self.sent += 1
                    self.c.log.events_sent += 1
                    if len(self.out) >= BATCH_BYTES:
                        await self.flush()
                    i += 1
                    continue
                out = self._transform(ev, fi)
                if out is not None:
                    ack = self.semi and (fi, i) in stream.txn_ends and not self.c.semi_fallback
                    await self._emit(out, fi, i, ack=ack)
                i += 1
                if t == 4 and i == n and fi + 1 < len(stream.files):
                    await self.flush()
                    return "next"
            await self.flush()
            if fi + 1 < len(stream.files):
                return "next"
            if self.non_block:
                await self._wait_pending_acks()
                self.packet(b"\xfe\x00\x00" + struct.pack("<H", 0x02))
                await self.flush()
                self.c.session.end_dump()
                self.c.log.closed_by = self.c.log.closed_by or None
                return "eof"
            await self._idle(f)
            if self.c.closed:
                raise _Closed("closed")

    async def _idle(self, f: Any) -> None:
        """Blocking dump at the end of the binlog: wait for events, send heartbeats."""
        cond = self.m._new_events
        assert cond is not None
        n = f.count
        while f.count == n and not self.c.closed:
            await self._check_acks()
            await self._timed_actions()
            period = self.heartbeat if self.heartbeat > 0 else None
            wait = min(period, 0.5) if period else 0.5
            async with cond:
                try:
                    await asyncio.wait_for(cond.wait(), timeout=wait)
                except TimeoutError:
                    pass
            now = time.monotonic()
            if period and f.count == n and now - self._last_send >= period \
                    and now >= self.no_heartbeat_until and self.stall_until is None:
                self._heartbeat(f)
                await self.flush()
            if self.stall_until is not None and now >= self.stall_until:
                self.stall_until = None

    _last_send = 0.0
    _fde_fixed = b""

    def _heartbeat(self, f: Any) -> None:
        body = f.name.encode()
        crc = f.checksum and self.client_crc and not self.strip
        size = HEADER_LEN + len(body) + (4 if crc else 0)
        last_pos = f.size
        hb = _HDR.pack(0, 27, self.m.server_id, size, last_pos, 0) + body
        if crc:
            hb += _U32.pack(crc32(hb))
        self.send_event(hb)
        self.c.log.heartbeats_sent += 1
        self._last_send = time.monotonic()

    async def _check_acks(self) -> None:
        c = self.c
        now = time.monotonic()
        for key, t in list(c.pending_acks.items()):
            if now - t > c.ack_timeout:
                del c.pending_acks[key]
                c.log.violations.append(f"missing ACK: no ACK for {key[0]}:{key[1]} within "
                                        f"{c.ack_timeout:g}s")
                if any(a.kind == "ack_timeout" for a in self.actions) and not c.semi_fallback:
                    c.semi_fallback = True
                    c.log.faults.append(f"ack_timeout: semi-sync switched off after "
                                        f"{c.ack_timeout:g}s without an ACK (async from now)")

    async def _timed_actions(self) -> None:
        el = time.monotonic() - self.started
        for a in list(self.actions):
            if a.after_seconds is not None and el >= a.after_seconds and a.at is None:
                self.actions.remove(a)
                if await self._fire(a, None, -1, -1) == "stop":
                    raise _Closed("fault ended the dump")

    async def _emit(self, ev: bytes, fi: int, i: int, *, ack: bool = False) -> None:
        """Send one event with whatever actions fire on it."""
        self.sent += 1
        n = self.sent
        c = self.c
        if c.closed:
            raise _Closed("closed")
        fire = [a for a in self.actions if a.at == n]
        if self.actions:
            await self._timed_actions()
        for a in fire:
            if a.kind in _FIRED_BEFORE and await self._fire(a, ev, fi, i) == "stop":
                raise _Closed("fault ended the dump")
        magic = 0xBE if any(a.kind == "bad_semisync_magic" for a in fire) else 0xEF
        if any(a.kind == "bad_semisync_magic" for a in fire):
            c.log.faults.append(f"bad_semisync_magic at event {n}")
            if not (self.semi or self.force_semi):
                self.force_semi = True
        if any(a.kind == "corrupt_checksum_at" for a in fire):
            ev = corrupt_checksum(ev)
            c.log.faults.append(f"corrupt_checksum_at event {n}")
        if any(a.kind == "truncate_event" for a in fire):
            a = next(a for a in fire if a.kind == "truncate_event")
            keep = int(a.arg("keep") or len(ev) // 2)
            c.log.faults.append(f"truncate_event: event {n} cut to {keep} of {len(ev)} bytes")
            self.send_event(ev[:keep], magic=magic)
            await self.flush()
            c.close("fault: truncate_event")
            raise _Closed("truncated")
        if any(a.kind == "reorder" for a in fire):
            c.log.faults.append(f"reorder: event {n} held back, sent after the next one")
            self._held = (ev, fi, i, ack)
            return
        if ack:
            name = self.m.stream.files[fi].name
            end = _U32.unpack_from(ev, 13)[0]
            c.pending_acks[(name, end)] = time.monotonic()
            c.log.acks_requested.append([name, end])
        self.send_event(ev, ack=ack, magic=magic)
        self._last_send = time.monotonic()
        held = self._held
        if held is not None and held[0] is not ev:
            self._held = None
            self.send_event(held[0], ack=False)
        if any(a.kind == "duplicate_event" for a in fire):
            c.log.faults.append(f"duplicate_event: event {n} sent twice")
            self.send_event(ev, ack=False)
        if any(a.kind == "pause_until_ack" for a in fire) or (
                ack and any(a.kind == "pause_until_ack" and a.at is None for a in self.actions)):
            await self.flush()
            if ack:
                await self._wait_ack(self.m.stream.files[fi].name, _U32.unpack_from(ev, 13)[0])
            else:
                c.log.faults.append(f"pause_until_ack at event {n}: no ACK was requested for "
                                    "it (semi-sync off, or not a transaction end)")
        if any(a.kind == "disconnect_after_event" for a in fire):
            await self.flush()
            c.log.faults.append(f"disconnect_after_event {n}")
            c.close("fault: disconnect_after_event")
            raise _Closed("disconnect")
        if len(self.out) >= BATCH_BYTES or self.drip or fire:
            await self.flush()
        if self.semi and c.pending_acks:
            await self._check_acks()

    async def _wait_pending_acks(self) -> None:
        """Before a non-blocking dump ends: give the requested ACKs time to arrive."""
        c = self.c
        deadline = time.monotonic() + c.ack_timeout
        while c.pending_acks and not c.closed and time.monotonic() < deadline:
            c.ack_event.clear()
            try:
                await asyncio.wait_for(c.ack_event.wait(), timeout=0.1)
            except TimeoutError:
                pass
        await self._check_acks()

    async def _wait_ack(self, name: str, pos: int) -> None:
        c = self.c
        c.log.faults.append(f"pause_until_ack {name}:{pos}")
        deadline = time.monotonic() + c.ack_timeout
        while (name, pos) in c.pending_acks and not c.closed:
            c.ack_event.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                await self._check_acks()
                return
            try:
                await asyncio.wait_for(c.ack_event.wait(), timeout=left)
            except TimeoutError:
                pass

    async def _fire(self, a: Action, ev: bytes | None, fi: int, i: int) -> str | None:
        c = self.c
        k = a.kind
        c.log.faults.append(f"{k} {a.args or ''}".strip() + (f" at event {a.at}" if a.at
                                                              else ""))
        if k == "delay":
            await self.flush()
            await asyncio.sleep(float(a.arg("seconds")))
        elif k in ("heartbeat", "heartbeat_storm"):
            f = self.m.stream.files[max(fi, 0)]
            for _ in range(int(a.arg("count"))):
                self._heartbeat(f)
            await self.flush()
        elif k == "send_error":
            await self.flush()
            self._error(int(a.arg("code")), str(a.arg("message")))
            await self.flush()
            c.close("fault: send_error")
            return "stop"
        elif k == "restart":
            await self.flush()
            task = asyncio.create_task(self.m.restart(float(a.arg("seconds"))))
            self.m._tasks.add(task)
            task.add_done_callback(self.m._tasks.discard)
            return "stop"
        elif k == "stall":
            await self.flush()
            secs = a.arg("seconds")
            if secs is None:
                while not c.closed:
                    await asyncio.sleep(0.1)
                return "stop"
            await asyncio.sleep(float(secs))
        elif k == "heartbeat_gap":
            self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
        elif k == "slow_drip":
            self.drip = float(a.arg("bytes_per_second"))
        elif k == "semisync_without_negotiation":
            self.force_semi = True
        elif k == "ack_timeout":
            c.ack_timeout = float(a.arg("seconds"))
        elif k == "mariadb_dummy_events":
            self.dummy_types |= {int(t) for t in a.arg("types")}
        elif k == "disconnect_after_event":
            await self.flush()
            c.close("fault: disconnect_after_event")
            return "stop"
        return None


def dummy_event(ev: bytes, checksum: bool) -> bytes:
    """What MariaDB sends instead of an event the replica cannot handle: a QUERY event with a
    comment (or, when too small for that, a USER_VAR event setting a NULL variable), of exactly
    the same size so every position stays valid."""
    size = len(ev)
    tail = 4 if checksum else 0
    body_len = size - HEADER_LEN - tail
    text = DUMMY_TEXT.format(ev[4]).encode()
    hdr = bytearray(ev[:HEADER_LEN])
    if body_len >= 13 + 1 + len(text):
        qlen = body_len - 14
        q = text.ljust(qlen, b" ")
        body = struct.pack("<IIBHH", 0, 0, 0, 0, 0) + b"\0" + q
        hdr[4] = 2
    else:
        name_len = body_len - 4 - 1
        if name_len < 1:
            return ev
        name = b"!dummyvar".ljust(name_len, b"_")[:name_len]
        body = _U32.pack(name_len) + name + b"\x01"
        hdr[4] = 14
    out = bytes(hdr) + body
    if checksum:
        out += _U32.pack(crc32(out))
    return out


def _gtid_set_text(cmd: ComBinlogDumpGtid) -> str | None:
    from binlogscope.wire.commands import gtid_set_text

    return gtid_set_text(cmd.gtid_set) if cmd.gtid_set else None


def _gtid_set_contains(cmd: ComBinlogDumpGtid) -> list[tuple[str, int, int]]:
    out = []
    for s in cmd.gtid_set or ():
        for iv in s.intervals:
            out.append((str(s.sid), iv.start, iv.end))
    return out


# ------------------------------------------------------------------------------- in a thread
class ThreadedMockMaster:
    """Run a :class:`MockMaster` on its own event loop in a background thread."""

    def __init__(self, scenario: Scenario, host: str = "127.0.0.1", port: int = 0) -> None:
        self.master = MockMaster(scenario, host, port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="mock-master", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def host(self) -> str:
        return self.master.host

    @property
    def port(self) -> int:
        return self.master.port

    @property
    def log(self) -> RunLog:
        return self.master.log

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.master.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def start(self) -> ThreadedMockMaster:
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def call(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def append_events(self, events: list[bytes]) -> None:
        self.call(self.master.append_events(events))

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.call(self.master.stop(), timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> ThreadedMockMaster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve(scenario: Scenario, host: str = "127.0.0.1", port: int = 0
          ) -> Iterator[ThreadedMockMaster]:
    """``with serve(scenario) as mm: connect to mm.host, mm.port``."""
    mm = ThreadedMockMaster(scenario, host, port).start()
    try:
        yield mm
    finally:
        mm.stop()
