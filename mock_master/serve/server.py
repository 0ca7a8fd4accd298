"""The mock master: an asyncio server speaking the source side of the replication protocol.

This module holds the server (listening, lifecycle, restarts, the scenario's facts and
answers) and its thread wrapper. One client connection is :mod:`mock_master.serve.connection`
(handshake, authentication, commands), one binlog dump :mod:`mock_master.dump.sender` (start
position,
events, semi-sync, heartbeats, faults); the served history is :mod:`mock_master.history.sources`.
Every event and packet is read by binlogscope's wire decoders and written by its encoders.

Use it from asyncio (``await MockMaster(scenario).start()``), from a thread
(:class:`ThreadedMockMaster`, what the pytest fixture and ``binlogscope demo`` use), or from the
command line (``python -m mock_master``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from binlogscope.drivers.scenario_files import Action, ActionPlan
from mock_master.answers.base import Variable
from mock_master.answers.queries import Answerer, default_variables
from mock_master.dump.gtid_sets import executed, purged
from mock_master.dump.gtid_sets import to_text as gtid_text
from mock_master.dump.mysql_gtid import server_uuid_of
from mock_master.dump.next_file import open_rotated_file
from mock_master.dump.replica_vars import replica_var, semi_sync_plugin
from mock_master.history.gtid_pos import binlog_gtid_pos
from mock_master.history.sources import EventStream, dummy_event
from mock_master.runlog import MAX_CLOSED, ClientLog, Closed, RunLog
from mock_master.scenario.faults import STREAM_ACTIONS, apply_stream_actions, validate_action
from mock_master.scenario.scenarios import DEFAULT_UUID, Scenario
from mock_master.schema.sources import SchemaKnowledge, build_knowledge
from mock_master.serve.connection import Connection

__all__ = ["ClientLog", "MockMaster", "RunLog", "ThreadedMockMaster", "dummy_event", "serve"]

#: the servers' defaults of the limits a scenario can set in ``variables``: the largest client
#: packet (a bigger one gets ERR 1153 and the connection closes, before and after login), the
#: seconds a client has to log in (``connect_timeout``), and the seconds a logged-in client may
#: stay silent between commands (``wait_timeout``, ``interactive_timeout`` for clients that say
#: CLIENT_INTERACTIVE; a running dump is not silence)
LIMIT_DEFAULTS: dict[str, dict[str, int]] = {
    "mariadb": {"max_allowed_packet": 16 << 20, "connect_timeout": 10, "wait_timeout": 28800,
                "interactive_timeout": 28800},
    "mysql": {"max_allowed_packet": 64 << 20, "connect_timeout": 10, "wait_timeout": 28800,
              "interactive_timeout": 28800},
}
ER_SLAVE_SAME_ID = 4052  # MariaDB; MySQL sends 1236 (ER_SOURCE_FATAL_ERROR_READING_BINLOG)


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
        # a last ROTATE names the server's current file: it exists, as the server opened it
        # (MariaDB flavour, scenario current_file = true; see dump/next_file.py)
        if scenario.flavor == "mariadb" and scenario.current_file:
            open_rotated_file(self.stream)
        self.flavor = scenario.flavor
        self.log = RunLog(max_closed=scenario.max_closed_clients
                          if scenario.max_closed_clients is not None else MAX_CLOSED)
        #: where the one-line client notes go (connect, register, dump, close); the command
        #: line prints them on stderr unless --quiet, the Python API keeps them off
        self.announce: Callable[[str], None] | None = None
        self.server_id = scenario.server_id or self.stream.server_id or 1
        ver = scenario.server_version or self.stream.server_version or (
            "10.11.19-MariaDB-log" if self.flavor == "mariadb" else "8.0.45")
        self.version = ver
        nums = [int(x) for x in re.findall(r"\d+", ver)[:3]] + [0, 0, 0]
        #: (major, minor, patch) of the served version
        self.version_tuple = (nums[0], nums[1], nums[2])
        self._server_uuid: str | None = scenario.server_uuid
        self.users = {u.name: u for u in scenario.users}
        self.sha2_cache: set[str] = set()
        self._rsa_key: Any = None
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[Connection] = set()
        self._next_id = 0
        self._plan: ActionPlan | None = None  # the connection actions, made at the first dump
        self._refusing_until = 0.0
        self.new_events: asyncio.Condition | None = None
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
            server_uuid=self.server_uuid, port=port,
            basename=self.stream.files[0].name.rsplit(".", 1)[0] if self.stream.files
            else "mysql-bin", mysql_gtids=self._mysql_gtids,
            gtid_purged=self._gtid_purged,
            semi_sync_plugin=semi_sync_plugin(self.flavor, self.version_tuple))
        for k, lim in LIMIT_DEFAULTS[self.flavor].items():
            variables[k] = Variable(lim, "int")
        for k, v in scenario.variables.items():
            kind = "int" if isinstance(v, int) and not isinstance(v, bool) else (
                "bool" if isinstance(v, bool) else "str")
            variables[k.lower()] = Variable(v, kind)
        self.variables = variables
        custom = [(re.compile(p, re.IGNORECASE | re.DOTALL), spec)
                  for p, spec in scenario.answers]
        self._knowledge: SchemaKnowledge | None = None
        self._knowledge_events = 0
        self.answerer = Answerer(self.flavor, variables, self._binlogs, self.knowledge, custom,
                                 lambda name, pos: binlog_gtid_pos(self.stream, name, pos),
                                 replicas=self._replicas)

    # ---------------------------------------------------------------- facts for answers
    def _replicas(self) -> list[tuple[int, str, int, int, str]]:
        """SHOW REPLICAS / SHOW SLAVE HOSTS: the open connections that sent COM_REGISTER_SLAVE
        (the server's slave list: added by register_replica, removed when the connection or
        its dump ends), as (server_id, report host, port, master id or the server's id,
        replica UUID or '')."""
        out = []
        for c in sorted(self._conns, key=lambda c: c.log.id):
            reg = c.log.register
            if c.closed or not c.registered or reg is None:
                continue
            uuid = (self._replica_uuid(c) or "") if self.flavor == "mysql" else ""
            out.append((int(reg["server_id"]), str(reg["hostname"]), int(reg["port"]),
                        int(reg.get("master_id") or 0) or self.server_id, uuid))
        return out

    def server_uuid(self) -> str:
        """@@server_uuid: the scenario's; a MySQL source defaults to the UUID of the newest
        GTID in its files (the server that wrote them: the dump's GTID checks use it)."""
        if self._server_uuid is None:
            self._server_uuid = (server_uuid_of(self.stream) if self.flavor == "mysql"
                                 else None) or DEFAULT_UUID
        return self._server_uuid

    def _mysql_gtids(self) -> bool:
        return any(":" in g.gtid for g in self.stream.gtids)

    def _gtid_pos(self) -> str:
        """@@gtid_executed (MySQL: the oldest file's PREVIOUS_GTIDS and the files' GTIDs, as
        Gtid_set::to_string writes it) or @@gtid_binlog_pos (MariaDB)."""
        if any(":" in g.gtid for g in self.stream.gtids):
            return gtid_text(executed(self.stream))
        return self.stream.gtid_state()

    def _gtid_purged(self) -> str:
        return gtid_text(purged(self.stream))

    def _binlogs(self) -> list[tuple[str, int]]:
        return [(f.name, f.size) for f in self.stream.files]

    def knowledge(self) -> SchemaKnowledge:
        """What the answers know of the tables (built when a client first asks; see
        mock_master.schema.sources); its notes go to the run log once."""
        events = self.stream.event_count  # events appended since: their DDL counts too
        if self._knowledge is None or self._knowledge_events != events:
            sc = self.scenario
            self._knowledge = build_knowledge(
                self.stream, ddl=sc.schema_ddl_text(), schema_from=sc.schema_from,
                columns_rows=sc.schema,
                server_collation=str(self.variables["collation_server"].resolved()),
                flavor=self.flavor, version=self.version)
            self._knowledge_events = events
            self.log.notes.extend(n for n in self._knowledge.notes if n not in self.log.notes)
            self._knowledge.notes = self.log.notes
        return self._knowledge

    def undescribed_tables(self) -> list[str]:
        """``db.table`` of every table the served TABLE_MAPs name without column names
        (binlog_row_metadata not FULL) that no DDL - the stream's or the scenario's -
        describes: the answers treat them as missing tables (ERR 1146 for SHOW/DESCRIBE, no
        information_schema rows). Builds the schema knowledge (what the first client asking
        would build)."""
        return [f"{db}.{t}" for db, t in sorted(self.knowledge().unnamed)]

    def limit(self, name: str) -> float:
        """A limit from the server variables (:data:`LIMIT_DEFAULTS`); 0 or less: none."""
        try:
            return float(self.variables[name].value)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            return float(LIMIT_DEFAULTS[self.flavor].get(name, 0))

    def note(self, text: str) -> None:
        """One line about a client for the operator (see ``announce``); never a credential."""
        if self.announce is not None:
            with contextlib.suppress(Exception):
                self.announce(text)

    def claim_server_id(self, conn: Connection, server_id: int) -> None:
        """A dump with ``server_id`` starts on ``conn``: as MariaDB's kill_zombie_dump_threads,
        the older dump connection with the same (non-zero) server_id is killed; it gets the
        server's error when it can (see :meth:`Connection.kill_dump`). COM_REGISTER_SLAVE
        alone kills nothing (as in the server)."""
        uuid = self._replica_uuid(conn) if self.flavor == "mysql" else None
        if not server_id and uuid is None:
            return
        for other in list(self._conns):
            if other is conn or other.closed or other.dump_server_id is None:
                continue
            # MySQL matches a replica by its @replica_uuid when it gives one
            same = (self._replica_uuid(other) == uuid) if uuid is not None \
                else other.dump_server_id == server_id
            if same:
                self.log.notes.append(f"client {other.log.id}: dump killed, client "
                                      f"{conn.log.id} started a dump with the same server_id "
                                      f"{server_id}")
                other.kill_dump(ER_SLAVE_SAME_ID if self.flavor == "mariadb" else 1236,
                                conn.log.id)

    def _replica_uuid(self, conn: Connection) -> str | None:
        # get_replica_uuid: replica_uuid, then slave_uuid from 8.0.26 (replica_vars)
        v = replica_var(conn.ctx.user_vars, "uuid", self.flavor, self.version_tuple)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        return str(v) if v else None

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> int:
        self._loop = asyncio.get_running_loop()
        self.new_events = asyncio.Condition()
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
        assert self.new_events is not None
        async with self.new_events:
            self.new_events.notify_all()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task that :meth:`stop` cancels."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close_client(self, client_id: int, why: str) -> bool:
        """Close connection ``client_id`` (KILL); False: no such connection."""
        for other in list(self._conns):
            if other.log.id == client_id:
                other.close(why)
                return True
        return False

    def rsa_key(self) -> Any:
        if self._rsa_key is None:
            from cryptography.hazmat.primitives.asymmetric import rsa

            self._rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return self._rsa_key

    def actions_for(self, conn_id: int) -> list[Action]:
        """The connection-level actions that fire on this connection (counts ``times``)."""
        if self._plan is None:
            self._plan = ActionPlan(validate_action(a) for a in self.scenario.actions
                                    if a.kind not in STREAM_ACTIONS)
        return self._plan.for_connection(conn_id)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_id += 1
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else "localhost"
        clog = ClientLog(self._next_id, f"{host}:{peer[1]}" if isinstance(peer, tuple)
                         else str(peer))
        self.log.clients.append(clog)
        self.note(f"client {clog.id} connected from {clog.peer}")
        conn = Connection(self, reader, writer, clog, host)
        self._conns.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        except (Closed, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            if clog.closed_by is None:
                clog.closed_by = ("client" if not str(exc) else f"client ({exc})"
                                  if isinstance(exc, Closed)
                                  else f"client ({type(exc).__name__}: {exc})")
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
            self.log.closed(clog)
            self.note(f"client {clog.id} closed by {clog.closed_by or 'client'}: "
                      f"{clog.events_sent} events, {clog.bytes_sent} bytes sent")


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
