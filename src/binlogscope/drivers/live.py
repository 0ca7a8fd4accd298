"""``binlogscope live``: connect to a server as a replica (Canal's "MockSlave" way).

The driver is a loop around the sans-IO :class:`~binlogscope.session.Session` (role REPLICA):
read bytes -> ``receive_data`` -> ``events()`` -> act -> ``send`` -> write. It blocks (sockets),
so the TUI runs it in a worker thread. Every packet in both directions goes through the shared
decoder and reaches the consumer as a :class:`LiveItem`.

Pipeline (Canal's, kept visible): fetcher (this thread) -> decoder (Session) -> filter
(:class:`TableFilter`) -> bounded :class:`EventStore` (put/get/ack; a slow consumer holds the
fetcher back) -> consumer (printer, TUI, recorder) which acks; the acked position is what the
``--state`` file keeps, so a restart neither loses nor repeats an event.

Semi-sync: the 0xEF header is expected only once ``SET @rpl_semi_sync_slave = 1`` was answered
OK (the Session tracks that); an event whose flag asks for an ACK is acknowledged (position + file
name, sequence id 0, no reply expected) right after it is safely in the store.
"""

from __future__ import annotations

import random
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.live_setup import QUERY_WHY, SetupStep, setup_steps
from binlogscope.drivers.options import ConnectionOptions
from binlogscope.drivers.recorder import SessionRecorder
from binlogscope.events import (
    ConnectionClosed,
    PacketDecoded,
    Peer,
    Phase,
    ResultSetComplete,
    Role,
    SessionEvent,
)
from binlogscope.gc_tuning import fewer_gc_passes
from binlogscope.pipeline.filter import TableFilter, event_table
from binlogscope.pipeline.position import PositionTracker, RestartPoint
from binlogscope.pipeline.state import ReplicaState
from binlogscope.pipeline.store import EventStore, StoreClosed
from binlogscope.session import Session
from binlogscope.wire import auth
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid, ComQuery, ComRegisterSlave
from binlogscope.wire.constants import BinlogDumpFlag, CapabilityFlag
from binlogscope.wire.handshake import (
    DEFAULT_CAPABILITIES,
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

CAP = CapabilityFlag
_HEARTBEATS = (27, 41)  # HEARTBEAT_LOG_EVENT, HEARTBEAT_LOG_EVENT_V2

ERR_HINTS = {
    1236: "the requested binlog file/position does not exist on the server (purged or "
          "mistyped): check SHOW BINARY LOGS and start from a file it lists",
    1045: "wrong user or password",
    1227: "the user lacks a privilege: a replica needs REPLICATION SLAVE (and REPLICATION "
          "CLIENT / BINLOG MONITOR for the status queries)",
    1129: "the host is blocked after too many connection errors: FLUSH HOSTS on the server",
}


class LiveError(Exception):
    """A failure the user must act on; the message is one clear line."""


@dataclass(slots=True)
class LiveItem:
    """What the consumer gets: a session event, a setup step, or a note from the driver.

    Read-only by convention (not frozen: one is built per stream event on the semi-sync
    commit path, and a frozen dataclass costs about four times as much to build)."""

    kind: str  # "packet" | "step" | "note" | "error"
    event: SessionEvent | None = None
    step: SetupStep | None = None
    text: str = ""
    restart: RestartPoint | None = None  # for packets: the resume point once this is acked
    deliver: bool = True  # False: a replay of an already delivered event (skipped on resume)


@dataclass
class LiveSettings:
    conn: ConnectionOptions
    server_id: int | None = None
    start: str | None = None  # FILE:POS
    gtid: str | None = None
    semi_sync: bool = False
    heartbeat: float | None = None
    non_blocking: bool = False
    state_path: str | None = None
    table_filter: TableFilter = field(default_factory=TableFilter)
    connect_timeout: float = 10.0
    net_read_timeout: int = 60
    reconnect: bool = True
    max_reconnects: int = 8
    store_size: int = 4096
    #: seconds between --state writes (0: after every acked event); the last acked position
    #: is always written when the session ends or is stopped
    state_interval: float = 0.25
    record_path: str | None = None
    record_raw: bool = False
    #: build the annotated tree for stream packets (the TUI and --plain need it; --json and
    #: exporters do not: every value is still decoded, only the Nodes are skipped)
    stream_tree: bool = True


@dataclass
class ServerInfo:
    version: str = ""
    server_id: int | None = None
    checksum: str | None = None
    position: tuple[str, int] | None = None
    mariadb: bool = False


def _parse_start(start: str) -> tuple[str, int]:
    name, sep, pos = start.rpartition(":")
    if not sep or not name or not pos.isdigit():
        raise LiveError(f"--start {start!r}: expected FILE:POS, e.g. mysql-bin.000003:4")
    return name, int(pos)


class LiveReplica:
    """One replica connection (with reconnects) feeding a bounded store."""

    def __init__(self, settings: LiveSettings) -> None:
        self.s = settings
        self.store: EventStore[LiveItem] = EventStore(settings.store_size)
        self.info = ServerInfo()
        self.state = (ReplicaState.load(settings.state_path) if settings.state_path
                      else ReplicaState())
        self.fetch_pos = PositionTracker()  # what was put in the store (reconnect point)
        self.acked_pos: RestartPoint | None = None
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.reconnects = 0
        self.acks_sent = 0
        #: seconds from the read that brought an ACK-requesting event to the ACK written to
        #: the socket (the replica's share of the source's commit latency), recent ones
        self.ack_delays: deque[float] = deque(maxlen=10_000)
        self.heartbeats = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.recorder: SessionRecorder | None = None
        #: real events after the dump start that were delivered before (skipped on resume)
        self.resume_skip = 0
        self._acked_cursor = -1
        self._released = -1
        #: release acked slots to the store at least this often (always below its size, so a
        #: consumer holding unreleased items can never starve the fetcher)
        self._release_every = max(1, min(128, settings.store_size // 2))
        self._state_dirty = False
        self._state_saved = 0.0
        self._batch: list[LiveItem] = []
        if self.state.log_file and not settings.start and not settings.gtid:
            self.resume: RestartPoint | None = RestartPoint(
                self.state.log_file, self.state.log_pos, self.state.skip, self.state.gtid_set)
        else:
            self.resume = None
        self.fetch_pos.seed_gtid(self.state.gtid_set)

    # ------------------------------------------------------------------ consumer side
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="binlogscope-fetcher", daemon=True)
        self._thread.start()

    def items(self, timeout: float = 0.2) -> Iterator[tuple[int, LiveItem]]:
        """(cursor, item) in order until the fetcher ends; ack each with :meth:`ack`.

        Items are taken from the store in batches; what was acked is released to the store
        (making room for the fetcher) before the next batch is taken.
        """
        for batch in self.batches(timeout):
            yield from batch

    def batches(self, timeout: float = 0.2) -> Iterator[list[tuple[int, LiveItem]]]:
        """:meth:`items` a store batch at a time (up to 512 items; never an empty list), for
        consumers that ack a whole batch at once (:meth:`ack_upto`)."""
        while True:
            self._release()
            batch = self.store.get_many(512, timeout)
            if not batch:
                if self._thread is not None and not self._thread.is_alive():
                    batch = self.store.get_many(512, 0)
                    if not batch:
                        self._release()
                        self.save_state()
                        return
                else:
                    continue
            yield batch

    def ack(self, cursor: int, item: LiveItem) -> None:
        """The consumer is done with ``item``: its position becomes the restart point."""
        self.ack_upto(cursor, item.restart)

    def ack_upto(self, cursor: int, restart: RestartPoint | None) -> None:
        """:meth:`ack` of every item up to ``cursor`` at once; ``restart``: the restart point
        of the last of them that has one (None: none has)."""
        self._acked_cursor = cursor
        if cursor - self._released >= self._release_every or (
                self._thread is not None and not self._thread.is_alive()):
            self._release()
        if restart is not None:
            self.acked_pos = restart
            self._state_dirty = True
            if self.s.state_path and (self.s.state_interval <= 0 or time.monotonic()
                                      - self._state_saved >= self.s.state_interval):
                self.save_state()

    def _release(self) -> None:
        c = self._acked_cursor
        if c > self._released:
            self.store.ack(c)
            self._released = c

    def save_state(self) -> None:
        """Write the last acked position to the --state file (atomically), if it changed."""
        rp = self.acked_pos
        if not self.s.state_path or rp is None or not self._state_dirty:
            return
        st = self.state
        st.log_file, st.log_pos = rp.log_file, rp.log_pos
        st.skip, st.gtid_set = rp.skip, rp.gtid_set
        st.server_id = self.server_id
        st.save(self.s.state_path)
        self._state_dirty = False
        self._state_saved = time.monotonic()

    def stop(self) -> None:
        self._release()
        self.stop_event.set()
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.store.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    # ------------------------------------------------------------------ fetcher
    def _put(self, item: LiveItem) -> None:
        self._batch.append(item)
        if len(self._batch) >= 256:
            self._flush()

    def _flush(self, wake: bool = True) -> None:
        """Hand the fetched items to the store (blocks while the store is full); ``wake=False``:
        do not wake the consumer yet (see :meth:`EventStore.put_many`)."""
        batch = self._batch
        while batch:
            if self.stop_event.is_set():
                raise StoreClosed("stopping")
            n = self.store.put_many(batch, timeout=0.2, wake=wake)
            del batch[:n]

    def _note(self, text: str) -> None:
        self._put(LiveItem("note", text=text))

    def _run(self) -> None:
        try:
            delay = 0.5
            while not self.stop_event.is_set():
                try:
                    self._session_once()
                    return  # non-blocking dump ended, or count reached
                except LiveError as exc:
                    self.error = str(exc)
                    self._put(LiveItem("error", text=str(exc)))
                    return
                except (OSError, TimeoutError, ConnectionError) as exc:
                    if self.stop_event.is_set():
                        return
                    if not self.s.reconnect or self.reconnects >= self.s.max_reconnects \
                            or self.fetch_pos.log_file is None:
                        msg = self._connect_error(exc)
                        self.error = msg
                        self._put(LiveItem("error", text=msg))
                        return
                    self.reconnects += 1
                    rp = self.fetch_pos.restart_point()
                    self._note(f"connection lost ({exc}); reconnect {self.reconnects}/"
                               f"{self.s.max_reconnects} in {delay:.1f}s, resuming at "
                               f"{rp.log_file}:{rp.log_pos} (+{rp.skip} delivered)")
                    self.resume = rp
                    if self.stop_event.wait(delay):
                        return
                    delay = min(delay * 2, 10.0)
            return
        except StoreClosed:
            return
        finally:
            try:
                self._flush()
            except StoreClosed:
                pass
            self.store.close()

    def _connect_error(self, exc: BaseException) -> str:
        where = self.s.conn.describe()
        if isinstance(exc, ConnectionRefusedError):
            return f"cannot connect to {where}: connection refused (is the server running?)"
        if isinstance(exc, socket.timeout | TimeoutError):
            return f"{where}: no answer within the timeout"
        if isinstance(exc, socket.gaierror):
            return f"cannot resolve host {self.s.conn.host!r}: {exc.strerror}"
        return f"{where}: {exc}"

    def _connect(self) -> socket.socket:
        c = self.s.conn
        if c.socket:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.s.connect_timeout)
            sock.connect(c.socket)
        else:
            sock = socket.create_connection((c.host, c.port), timeout=self.s.connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _session_once(self) -> None:
        sess = Session(Role.REPLICA)
        if self.s.record_path and self.recorder is None:
            self.recorder = SessionRecorder(self.s.record_path, server_port=self.s.conn.port,
                                            raw=self.s.record_raw)
        self._put(LiveItem("step", step=SetupStep(
            "connect", f"TCP connect to {self.s.conn.describe()}",
            "a replica is an ordinary client connection that later turns into a binlog stream")))
        sock = self._connect()
        self._sock = sock
        reader = _Reader(self, sock, sess)
        try:
            self._handshake(reader)
            self._setup(reader)
            self._register_and_dump(reader)
            self._stream(reader)
        finally:
            try:
                reader.sock.close()
            except OSError:
                pass
            self._sock = None

    # ------------------------------------------------------------------ handshake and auth
    def _handshake(self, rd: _Reader) -> None:
        greeting = rd.next_packet()
        if isinstance(greeting.value, ErrPacket):
            raise LiveError(self._err_text(greeting.value, "the server refused the connection"))
        hs = greeting.value
        if not isinstance(hs, HandshakeV10):
            raise LiveError(f"{self.s.conn.describe()}: not a MySQL/MariaDB server greeting")
        self.info.version = hs.server_version
        self.info.mariadb = "mariadb" in hs.server_version.lower()
        c = self.s.conn
        caps = (DEFAULT_CAPABILITIES | CAP.CLIENT_CONNECT_ATTRS) & hs.capability_flags
        caps |= CAP.CLIENT_PROTOCOL_41
        mode = c.ssl_mode
        use_tls = mode != "DISABLED" and bool(hs.capability_flags & CAP.CLIENT_SSL) \
            and not c.socket
        if mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY") and not use_tls:
            raise LiveError(f"{c.describe()}: TLS is required (--ssl-mode {mode}) but the server "
                            "does not offer it")
        if use_tls:
            caps |= CAP.CLIENT_SSL
            rd.send(SslRequest(caps))
            rd.start_tls(self._ssl_context(), server_hostname=c.host)
        plugin = hs.auth_plugin_name or "mysql_native_password"
        nonce = hs.auth_plugin_data.rstrip(b"\0")
        password = (c.password or "").encode()
        resp = self._scramble(plugin, password, nonce, tls=use_tls)
        rd.send(HandshakeResponse41(
            caps, c.user, resp, client_plugin_name=plugin,
            connect_attrs=(("_client_name", "binlogscope"), ("program_name", "binlogscope")),
        ))
        self._put(LiveItem("step", step=SetupStep(
            "auth", f"log in as {c.user} ({plugin})",
            "the password never crosses the wire: the client proves it knows it by scrambling "
            "the server's one-time nonce")))
        while True:
            p = rd.next_packet()
            v = p.value
            if isinstance(v, OkPacket):
                return
            if isinstance(v, ErrPacket):
                raise LiveError(self._err_text(v, "authentication failed"))
            if isinstance(v, AuthSwitchRequest):
                plugin = v.plugin_name or "mysql_old_password"
                if plugin == "mysql_old_password":
                    nonce = (v.plugin_provided_data or nonce)[:8]
                    data = auth.scramble_323(password, nonce) + b"\0"
                else:
                    nonce = v.plugin_provided_data.rstrip(b"\0")
                    data = self._scramble(plugin, password, nonce, tls=use_tls)
                rd.send(AuthSwitchResponse(data))
                continue
            if isinstance(v, AuthMoreData):
                data = v.data
                if plugin == "caching_sha2_password" and data[:1] == b"\x03":
                    continue  # fast auth OK; the OK packet follows
                if plugin in ("caching_sha2_password", "sha256_password"):
                    if data[:1] == b"\x04" or (plugin == "sha256_password" and not data):
                        if use_tls:
                            rd.send(AuthSwitchResponse(password + b"\0"))
                        else:
                            rd.send(AuthSwitchResponse(
                                b"\x02" if plugin == "caching_sha2_password" else b"\x01"))
                        continue
                    if data.startswith(b"-----BEGIN"):
                        rd.send(AuthSwitchResponse(
                            auth.rsa_encrypt_password(password, nonce, data)))
                        continue
                raise LiveError(f"authentication: unexpected AuthMoreData for {plugin}")
            raise LiveError(f"authentication: unexpected {p.kind} packet")

    def _scramble(self, plugin: str, password: bytes, nonce: bytes, *, tls: bool) -> bytes:
        if plugin == "sha256_password":
            return password + b"\0" if tls else (b"\x01" if password else b"")
        if plugin == "unix_socket":
            return b""  # the server checks the socket peer's OS user; nothing to send
        if plugin == "mysql_clear_password":
            if not tls:
                raise LiveError("the server asks for the password in clear text without TLS: "
                                "refusing (use --ssl-mode REQUIRED)")
            return password + b"\0"
        fn = auth.SCRAMBLERS.get(plugin)
        if fn is None:
            raise LiveError(f"authentication plugin {plugin!r} is not supported")
        return fn(password, nonce)

    def _ssl_context(self) -> ssl.SSLContext:
        c = self.s.conn
        ctx = ssl.create_default_context(cafile=c.ssl_ca) if c.ssl_ca \
            else ssl.create_default_context()
        if c.ssl_mode not in ("VERIFY_CA", "VERIFY_IDENTITY"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif c.ssl_mode == "VERIFY_CA":
            ctx.check_hostname = False
        if c.ssl_cert:
            ctx.load_cert_chain(c.ssl_cert, c.ssl_key)
        return ctx

    # ------------------------------------------------------------------ setup
    def _query(self, rd: _Reader, sql: str) -> ResultSetComplete | OkPacket | ErrPacket:
        rd.send(ComQuery(sql))
        while True:
            ev = rd.next_event()
            if isinstance(ev, ResultSetComplete):
                rd.flush_packets()  # the result set's terminating EOF/OK packet
                return ev
            if (isinstance(ev, PacketDecoded) and ev.direction == Peer.SERVER
                    and isinstance(ev.value, OkPacket | ErrPacket) and ev.kind in ("ok", "err")):
                return ev.value

    def _value(self, rd: _Reader, sql: str, why: str) -> str | None:
        self._put(LiveItem("step", step=SetupStep("setup", sql, why, sql)))
        res = self._query(rd, sql)
        if isinstance(res, ResultSetComplete) and res.rows:
            v = res.rows[0].values[0]
            return None if v is None else v.decode("utf-8", "replace")
        return None

    def _setup(self, rd: _Reader) -> None:
        steps = setup_steps(
            slave_uuid=self.state.slave_uuid, heartbeat=self.s.heartbeat,
            semi_sync=self.s.semi_sync, mariadb=self.info.mariadb,
            gtid=self._gtid_start(), net_read_timeout=self.s.net_read_timeout)
        for step in steps:
            self._put(LiveItem("step", step=step))
            assert step.sql is not None
            res = self._query(rd, step.sql)
            if isinstance(res, ErrPacket):
                if step.optional:
                    self._note(f"{step.what}: server said {res.error_code} {res.error_message}")
                else:
                    raise LiveError(self._err_text(res, f"setup step '{step.what}' failed"))
        self.info.checksum = self._value(rd, "SELECT @@global.binlog_checksum",
                                         QUERY_WHY["checksum"])
        sid = self._value(rd, "SELECT @@server_id", QUERY_WHY["server_id"])
        self.info.server_id = int(sid) if sid and sid.isdigit() else None
        self._value(rd, "SELECT @@version", QUERY_WHY["version"])
        major = self.info.version.split(".")[0]
        modern_mysql = not self.info.mariadb and (
            major.isdigit() and (int(major) > 8 or self.info.version.startswith("8.4")))
        sql = "SHOW BINARY LOG STATUS" if modern_mysql else "SHOW MASTER STATUS"
        self._put(LiveItem("step", step=SetupStep("setup", sql, QUERY_WHY["position"], sql)))
        res = self._query(rd, sql)
        if isinstance(res, ResultSetComplete) and res.rows:
            f, p = res.rows[0].values[0], res.rows[0].values[1]
            if f is not None and p is not None:
                self.info.position = (f.decode(), int(p))

    def _gtid_start(self) -> str | None:
        if self.resume is not None and self.resume.gtid_set and self.s.gtid is not None:
            return self.resume.gtid_set
        return self.s.gtid

    @property
    def server_id(self) -> int:
        if self.s.server_id is not None:
            return self.s.server_id
        if self.state.server_id and self.state.server_id != self.info.server_id:
            return self.state.server_id
        while True:
            sid = random.randint(100_000, 2**31 - 1)
            if sid != self.info.server_id:
                self.s.server_id = sid
                return sid

    # ------------------------------------------------------------------ register and dump
    def _register_and_dump(self, rd: _Reader) -> None:
        sid = self.server_id
        if sid == self.info.server_id:
            raise LiveError(f"--server-id {sid} is the server's own id: a replica must differ")
        self._put(LiveItem("step", step=SetupStep(
            "register", f"COM_REGISTER_SLAVE server_id={sid}",
            "lists this replica in the source's SHOW SLAVE HOSTS; server_id identifies it (0 "
            "would mean 'not a replica': a dump that ends at the end of the logs)")))
        rd.send(ComRegisterSlave(sid, socket.gethostname()[:60], "", "", 0, 0, 0))
        while True:
            p = rd.next_packet()
            if isinstance(p.value, OkPacket):
                break
            if isinstance(p.value, ErrPacket):
                raise LiveError(self._err_text(p.value, "COM_REGISTER_SLAVE refused"))
        flags = BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK if self.s.non_blocking else 0
        if self.info.mariadb:
            flags |= BinlogDumpFlag.BINLOG_SEND_ANNOTATE_ROWS_EVENT
        gtid = self._gtid_start()
        rp = self.resume
        if gtid is not None and (rp is None or rp.log_file is None or self.info.mariadb):
            if self.info.mariadb:
                name, pos = "", 4
                what = f"COM_BINLOG_DUMP from GTID state {gtid!r}"
                why = ("MariaDB: an empty file name plus @slave_connect_state asks for a GTID "
                       "dump: the source finds the position of each domain's next GTID")
                self._put(LiveItem("step", step=SetupStep("dump", what, why)))
                rd.send(ComBinlogDump(pos, sid, name, int(flags)))
            else:
                self._put(LiveItem("step", step=SetupStep(
                    "dump", f"COM_BINLOG_DUMP_GTID excluding {gtid!r}",
                    "MySQL: the source sends every transaction whose GTID is not in the set")))
                rd.send(ComBinlogDumpGtid(sid, "", 4, int(flags) | 0x04,
                                          _mysql_gtid_set(gtid)))
            self.resume_skip = rp.skip if rp is not None else 0
            return
        if rp is not None and rp.log_file is not None and rp.log_pos is not None:
            name, pos = rp.log_file, rp.log_pos
            self.resume_skip = rp.skip
        elif self.s.start:
            name, pos = _parse_start(self.s.start)
            self.resume_skip = 0
        elif self.info.position:
            name, pos = self.info.position
            self.resume_skip = 0
        else:
            raise LiveError("the server reports no binlog position (is log_bin on?); "
                            "give --start FILE:POS")
        self._put(LiveItem("step", step=SetupStep(
            "dump", f"COM_BINLOG_DUMP from {name}:{pos}"
            + (" (non-blocking)" if self.s.non_blocking else ""),
            "from here on the connection is one-way: the source sends a fake ROTATE, its "
            "FORMAT_DESCRIPTION, then every event, each in its own packet")))
        rd.send(ComBinlogDump(pos, sid, name, int(flags)))

    # ------------------------------------------------------------------ the stream
    def _stream(self, rd: _Reader) -> None:
        """The dump: every event in order into the store, ACKs as soon as they are due.

        Each read's events are handled in one pass (a semi-sync transaction arrives in one
        read: GTID .. XID, the ACK request on the last). An event whose semi-sync header asks
        for an ACK is put in the store (decoded, positioned, visible to the consumer) and the
        ACK goes out at once: before the events after it in the same read, before the session
        decodes the ACK packet itself for the log, and without waiting for the consumer.
        """
        skip = self.resume_skip
        tracker = self.fetch_pos
        update, restart_point = tracker.update, tracker.restart_point
        if not self.s.stream_tree and self.recorder is None:
            rd.session.record = False
        filt = self.s.table_filter
        batch = self._batch
        timeout = max(self.s.net_read_timeout, (self.s.heartbeat or 0) * 3 + 1)
        rd.sock.settimeout(timeout)
        while not self.stop_event.is_set():
            evs = rd.take(allow_close=True)
            if evs is None:
                self._closed(rd)
                return
            for ev in evs:
                if not isinstance(ev, PacketDecoded):
                    self._put(LiveItem("packet", ev))
                    if isinstance(ev, ConnectionClosed):
                        self._closed(rd)
                        return
                    continue
                bev = ev.binlog_event
                if bev is None:  # not an event: EOF/ERR/OK/the ACK we sent
                    self._put(LiveItem("packet", ev))
                    if ev.direction == Peer.SERVER:
                        v = ev.value
                        if ev.kind == "err" and isinstance(v, ErrPacket):
                            raise LiveError(self._err_text(v, "the source ended the dump"))
                        if rd.session.phase == Phase.COMMAND:
                            self._note("end of the binlog (non-blocking dump)")
                            return
                    continue
                # a damaged event (truncated, bad checksum) is shown but does not move the
                # restart point: after a reconnect its complete copy is delivered, not skipped
                real = update(bev) if bev.error is None else False
                h = bev.header
                if h is not None and h.type_code in _HEARTBEATS:
                    self.heartbeats += 1
                deliver = True
                if real and skip > 0:
                    skip -= 1
                    deliver = False
                if deliver and filt.active:
                    schema, table = event_table(bev)
                    deliver = filt.accepts(schema, table)
                batch.append(LiveItem("packet", ev, None, "", restart_point(), deliver))
                semi = ev.semi_sync
                if semi is not None and semi.flag & 0x01 and h is not None:
                    self._ack(rd, ev)
                elif len(batch) >= 256:
                    self._flush()

    def _ack(self, rd: _Reader, ev: PacketDecoded) -> None:
        """The semi-sync ACK for ``ev`` (its item is the last one in the batch).

        The event is safely in the store before it is acknowledged; the consumer is woken
        after the ACK is out (its wake-up costs a syscall, and its thread would then compete
        for the GIL with this one)."""
        bev = ev.binlog_event
        assert bev is not None and bev.header is not None
        self._flush(wake=False)
        rd.send(SemiSyncAck(bev.header.log_pos, self.fetch_pos.log_file or ""))
        self.store.wake()
        self.acks_sent += 1
        self.ack_delays.append(rd.sent_at - rd.read_at)

    def _closed(self, rd: _Reader) -> None:
        if rd.session.phase == Phase.COMMAND:
            self._note("the source ended the dump (end of the binlog, non-blocking)")
            return
        raise ConnectionError("the source closed the connection")

    def _err_text(self, err: ErrPacket, what: str) -> str:
        hint = ERR_HINTS.get(err.error_code)
        text = f"{what}: ERR {err.error_code} ({err.sql_state}) {err.error_message}"
        return f"{text} - hint: {hint}" if hint else text


def _mysql_gtid_set(text: str) -> tuple[Any, ...]:
    import uuid

    from binlogscope.wire.commands import GtidInterval, GtidSid

    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        sid, *ranges = part.split(":")
        ivs = []
        for rg in ranges:
            a, _, b = rg.partition("-")
            ivs.append(GtidInterval(int(a), int(b or a) + 1))
        out.append(GtidSid(uuid.UUID(sid), tuple(ivs)))
    return tuple(out)


class _Reader:
    """Socket <-> Session plumbing for one connection (plus every item to the store)."""

    def __init__(self, owner: LiveReplica, sock: socket.socket, session: Session) -> None:
        self.owner = owner
        self.sock: socket.socket = sock
        self.session = session
        self._pending: list[SessionEvent] = []
        self.read_at = 0.0  # perf_counter() when the last read returned
        self.sent_at = 0.0  # perf_counter() when the last send was written
        #: reads go into one reused buffer: ``recv(1 MiB)`` would allocate (mmap) a 1 MiB
        #: object per read, ~10 us on every small packet of a semi-sync commit. 64 KiB, not
        #: more: every event of a read is decoded before the first is handed on, and a 1 MiB
        #: read (~5,000 events alive at once, rows and all) made the decode ~2x slower
        #: (caches, GC passes over the survivors) than 64 KiB reads (~300 events) when streaming
        self._rbuf = memoryview(bytearray(1 << 16))

    def send(self, value: Any) -> None:
        data = self.session.send(value)
        if self.owner.recorder is not None:
            self.owner.recorder.data(Peer.CLIENT, data)
        self.sock.sendall(data)
        self.sent_at = time.perf_counter()
        self._drain()

    def start_tls(self, ctx: ssl.SSLContext, server_hostname: str) -> None:
        self.sock = ctx.wrap_socket(self.sock, server_hostname=server_hostname)
        self.session.tls_established()
        self.owner._put(LiveItem("note", text=f"TLS established ({self.sock.version()})"))

    def flush_packets(self) -> None:
        """Hand the packets already decoded (but not yet consumed) to the store."""
        self._drain()
        keep: list[SessionEvent] = []
        for ev in self._pending:
            if isinstance(ev, PacketDecoded) and ev.binlog_event is None:
                self.owner._put(LiveItem("packet", event=ev))
            else:
                keep.append(ev)
        self._pending = keep

    def _drain(self) -> None:
        rec = self.owner.recorder
        for ev in self.session.events():
            if rec is not None and isinstance(ev, PacketDecoded):
                rec.packet(ev)
            self._pending.append(ev)

    def take(self, allow_close: bool = False) -> list[SessionEvent] | None:
        """Every event decoded so far (reading once when there is none), for the stream loop,
        which routes them itself; None when the server closed and nothing is left."""
        while True:
            self._drain()
            if self._pending:
                out = self._pending
                self._pending = []
                return out
            if not self._more(allow_close):
                return None

    def _more(self, allow_close: bool) -> bool:
        """One read. False when the server closed with nothing left to hand out and
        ``allow_close``; without it that raises ConnectionError."""
        if self._read():
            return True
        self._drain()
        if self._pending:
            return True
        if allow_close:
            return False
        raise ConnectionError("the server closed the connection")

    def _read(self) -> bool:
        """Hand what was decoded to the consumer, then one read into the session (False: EOF)."""
        self.owner._flush()  # everything decoded so far reaches the consumer first
        try:
            n = self.sock.recv_into(self._rbuf)
            self.read_at = time.perf_counter()
        except TimeoutError as exc:
            raise TimeoutError("no data from the source within the read timeout "
                               "(net_read_timeout / missed heartbeats)") from exc
        data = bytes(self._rbuf[:n])
        self.session.receive_data(data, Peer.SERVER)
        if self.owner.recorder is not None and data:
            self.owner.recorder.data(Peer.SERVER, data)
        return bool(data)

    def next_event(self, allow_close: bool = False) -> SessionEvent | None:
        while True:
            self._drain()
            while self._pending:
                ev = self._pending.pop(0)
                if isinstance(ev, PacketDecoded) and self.session.phase == Phase.BINLOG_STREAM \
                        and ev.binlog_event is not None:
                    return ev  # stream packets are put by the stream loop (with positions)
                if isinstance(ev, PacketDecoded | ConnectionClosed):
                    if not (isinstance(ev, PacketDecoded) and ev.binlog_event is not None):
                        self.owner._put(LiveItem("packet", event=ev))
                    if isinstance(ev, ConnectionClosed) and ev.direction == Peer.SERVER:
                        return ev
                    return ev if isinstance(ev, PacketDecoded) else None
                if isinstance(ev, ResultSetComplete):
                    return ev
                self.owner._put(LiveItem("packet", event=ev))
            if not self._more(allow_close):
                return None

    def next_packet(self) -> PacketDecoded:
        while True:
            ev = self.next_event()
            if isinstance(ev, PacketDecoded) and ev.direction == Peer.SERVER:
                return ev
            if ev is None:
                raise ConnectionError("the server closed the connection")


def _is_real_event(item: LiveItem) -> bool:
    """A binlog event with a position in the source's file (not one of the dump's artificial
    events: flag 0x20 or log_pos 0): what ``count`` counts."""
    if item.kind != "packet" or item.restart is None:
        return False
    ev = item.event
    if not isinstance(ev, PacketDecoded) or ev.binlog_event is None:
        return False
    h = ev.binlog_event.header
    return h is not None and not h.flags & 0x20 and h.log_pos != 0


def run_live(settings: LiveSettings, consume: Callable[[LiveItem], None],
             count: int | None = None) -> LiveReplica:
    """Run a replica until the dump ends, ``count`` delivered events, or an error.

    While it runs, the cyclic garbage collector runs less often (``gc_tuning``: the thresholds
    are process-wide, and put back when it returns)."""
    rep = LiveReplica(settings)
    with fewer_gc_passes():  # the process streams for a while: see binlogscope.gc_tuning
        return _run(rep, settings, consume, count)


def _run(rep: LiveReplica, settings: LiveSettings, consume: Callable[[LiveItem], None],
         count: int | None) -> LiveReplica:
    rep.start()
    delivered = 0
    # acked a batch at a time (one ack per store batch instead of one per item), unless the
    # state file is to be written after every item (--state-interval 0)
    per_item = bool(settings.state_path) and settings.state_interval <= 0
    try:
        for batch in rep.batches():
            last: int | None = None
            restart: RestartPoint | None = None
            done = False
            try:
                for cursor, item in batch:
                    if item.deliver:
                        consume(item)
                    if per_item:
                        rep.ack(cursor, item)
                    else:
                        last = cursor
                        if item.restart is not None:
                            restart = item.restart
                    if count is not None and item.deliver and _is_real_event(item):
                        delivered += 1
                        if delivered >= count:
                            done = True
                            break
            finally:  # what was consumed is acked, also when consume() raised
                if last is not None:
                    rep.ack_upto(last, restart)
            if done:
                break
    finally:
        rep.stop()
        rep.join(5)
        rep.save_state()
        if rep.recorder is not None:
            rep.recorder.close()
    return rep
