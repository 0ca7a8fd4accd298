"""``binlogscope live``: connect to a server as a replica (Canal's "MockSlave" way).

The driver is a loop around the sans-IO :class:`~binlogscope.session.Session` (role REPLICA):
read bytes -> ``receive_data`` -> ``events()`` -> act -> ``send`` -> write. It blocks (sockets),
so the TUI runs it in a worker thread. Every packet in both directions goes through the shared
decoder and reaches the consumer as a :class:`SourceItem`.

Pipeline (Canal's, kept visible): fetcher (this module's thread) -> decoder (Session) -> filter
(:class:`TableFilter`) -> bounded :class:`EventStore` (put/get/ack; a slow consumer holds the
fetcher back) -> consumer (printer, TUI, recorder) which acks; the acked position is what the
``--state`` file keeps, so a restart loses no event. With :func:`run_live`'s ``commit`` the
consumer's output advances with the state at transaction boundaries: ``live --out FILE`` repeats
nothing (:mod:`.live_output`), stdout at most the transaction in flight at a crash.

Semi-sync: the 0xEF header is expected only once ``SET @rpl_semi_sync_slave = 1`` was answered
OK (the Session tracks that); an event whose flag asks for an ACK is acknowledged (position + file
name, sequence id 0, no reply expected) right after it is safely in the store.

Modules: this one is the replica loop (fetcher thread, reconnects, store, consumer side, ACKs
released); :mod:`.live_connect` the socket, TLS and authentication; :mod:`.live_dialog` the setup
queries, COM_REGISTER_SLAVE and the dump command (:mod:`.live_setup`: the steps and their why);
:mod:`.live_stream` the binlog stream; :mod:`.consume` the consumer side of :func:`run_live`;
:mod:`.live_items` the types they share.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live import dialog as live_dialog
from binlogscope.drivers.live.columns import ColumnNames, InformationSchema
from binlogscope.drivers.live.connect import (
    Connection,
    authenticate,
    connect_error,
    open_socket,
)
from binlogscope.drivers.live.consume import Commit, run_committed, run_plain
from binlogscope.drivers.live.items import (
    ERR_HINTS,
    SERVER_GOING,
    LiveError,
    LiveSettings,
    ServerInfo,
)
from binlogscope.drivers.live.lag_poll import LagWatch
from binlogscope.drivers.live.setup import SetupStep
from binlogscope.drivers.live.states import StateWatch, reconnect_item
from binlogscope.drivers.live.stream import StreamPlan, StreamStats, stream
from binlogscope.drivers.pcapng import SessionRecorder
from binlogscope.pipeline.gc_tuning import fewer_gc_passes
from binlogscope.pipeline.position import PositionTracker, RestartPoint
from binlogscope.pipeline.state import ReplicaState
from binlogscope.pipeline.store import EventStore, StoreClosed
from binlogscope.session import Session
from binlogscope.session.events import Role

#: ER_NO_SUCH_THREAD: a KILL of a thread that had already ended
_ER_NO_SUCH_THREAD = 1094


class ServerGoingAwayError(ConnectionError):
    """A reconnect's login or setup refused because the server is shutting down (or the
    connection was killed): retried like a lost connection."""


class LiveReplica:
    """One replica connection (with reconnects) feeding a bounded store."""

    def __init__(self, settings: LiveSettings) -> None:
        self.s = settings
        self.store: EventStore[SourceItem] = EventStore(settings.store_size)
        self.info = ServerInfo()
        self.state = (ReplicaState.load(settings.state_path) if settings.state_path
                      else ReplicaState())
        self.fetch_pos = PositionTracker()  # what was put in the store (reconnect point)
        #: what the consumer acked last: a boundary and the events after it to skip
        #: (:attr:`acked_pos`, built when read)
        self._acked_at: RestartPoint | None = None
        self._acked_skip = 0
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.reconnects = 0
        #: warnings for the command to print once the run ended (the consumer no longer reads
        #: items then): a semi-sync dump thread that could not be KILLed
        self.warnings: list[str] = []
        #: the consumer shows note items (``live``, the TUI); False (the export, which keeps
        #: only events): a warning goes to :attr:`warnings` even while items are read
        self.shows_notes = True
        #: heartbeats, ACKs sent and their delays (the stream counts them)
        self.stats = StreamStats()
        #: column names from information_schema for TABLE_MAPs without them (one connection
        #: of its own, opened when first needed; answers kept across reconnects)
        self._schema = InformationSchema(settings)
        filt = settings.table_filter
        self.column_names = ColumnNames(self._schema, self.note,
                                        filt.accepts if filt.active else None)
        self._sock: socket.socket | None = None
        self._conn: Connection | None = None  # the open connection (its last read's time)
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
        #: ack_upto saves the state by itself (off when the consumer commits its output with
        #: the state: :func:`run_live` with ``commit``)
        self.auto_save = True
        #: asked while no item arrives: True ends :meth:`batches` (a stop signal)
        self.should_stop: Callable[[], bool] | None = None
        self.batch: list[SourceItem] = []  # fetched, not yet in the store
        if self.state.log_file and (settings.out_path is not None
                                    or (not settings.start and not settings.gtid)):
            self.resume: RestartPoint | None = RestartPoint(
                self.state.log_file, self.state.log_pos, self.state.skip, self.state.gtid_set)
        else:
            self.resume = None
        self.fetch_pos.seed_gtid(self.state.gtid_set)

    @property
    def acks_sent(self) -> int:
        return self.stats.acks_sent

    @property
    def heartbeats(self) -> int:
        return self.stats.heartbeats

    @property
    def ack_delays(self) -> deque[float]:
        """Seconds from the read that brought an ACK-requesting event to the ACK written to
        the socket (the replica's share of the source's commit latency), recent ones."""
        return self.stats.ack_delays

    def lag_watch(self) -> LagWatch | None:
        """``--lag-every``: the head poller on a control connection of its own (not started)."""
        if self.s.lag_every <= 0:
            return None
        return LagWatch(InformationSchema(self.s), self.s.lag_every)

    # ------------------------------------------------------------------ consumer side
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="binlogscope-fetcher", daemon=True)
        self._thread.start()

    def items(self, timeout: float = 0.2) -> Iterator[tuple[int, SourceItem]]:
        """(cursor, item) in order until the fetcher ends; ack each with :meth:`ack`.

        Items are taken from the store in batches; what was acked is released to the store
        (making room for the fetcher) before the next batch is taken.
        """
        for batch in self.batches(timeout):
            yield from batch

    def batches(self, timeout: float = 0.2, idle: Callable[[], None] | None = None
                ) -> Iterator[list[tuple[int, SourceItem]]]:
        """:meth:`items` a store batch at a time (up to 512 items; never an empty list), for
        consumers that ack a whole batch at once (:meth:`ack_upto`). Each ``timeout`` the
        stream stays quiet, ``idle()`` is called and a state acked since its last save is
        saved (``auto_save``): what was consumed before a pause does not wait for the next
        event to be written out."""
        while True:
            self._release()
            batch = self.store.get_many(512, timeout)
            if not batch:
                if self._thread is not None and not self._thread.is_alive():
                    batch = self.store.get_many(512, 0)
                    if not batch:
                        self._release()
                        if self.auto_save:
                            self.save_state()
                        return
                elif self.should_stop is not None and self.should_stop():
                    return
                else:
                    if idle is not None:
                        idle()
                    if self.auto_save:
                        self.save_state()
                    continue
            yield batch

    @property
    def acked_pos(self) -> RestartPoint | None:
        """The restart point of the last acked item that has one (None: none yet)."""
        at = self._acked_at
        return None if at is None else at.skipping(self._acked_skip)

    def ack(self, cursor: int, item: SourceItem) -> None:
        """The consumer is done with ``item``: its position becomes the restart point."""
        self.ack_upto(cursor, item.at, item.skip)

    def ack_upto(self, cursor: int, restart: RestartPoint | None, skip: int = 0) -> None:
        """:meth:`ack` of every item up to ``cursor`` at once; ``restart``: the restart point
        of the last of them that has one (None: none has), or with ``skip`` its boundary
        (``SourceItem.at``, skip 0) and the events after it to skip (``SourceItem.skip``):
        the point is then built only when read (:attr:`acked_pos`)."""
        self._acked_cursor = cursor
        if cursor - self._released >= self._release_every or (
                self._thread is not None and not self._thread.is_alive()):
            self._release()
        if restart is not None:
            self._acked_at, self._acked_skip = restart, skip
            self._state_dirty = True
            if self.s.state_path and self.auto_save and (
                    self.s.state_interval <= 0 or time.monotonic()
                                      - self._state_saved >= self.s.state_interval):
                self.save_state()

    def _release(self) -> None:
        c = self._acked_cursor
        if c > self._released:
            self.store.ack(c)
            self._released = c

    def save_state(self, out_length: int | None = None, *, durable: bool = True) -> None:
        """Write the last acked position to the --state file (atomically), if it changed;
        ``out_length``: the length of the ``--out`` file that holds exactly the output up to
        that position (written, flushed and fsynced by the caller before this)."""
        rp = self.acked_pos
        if not self.s.state_path or rp is None or not self._state_dirty:
            return
        st = self.state
        st.log_file, st.log_pos = rp.log_file, rp.log_pos
        st.skip, st.gtid_set = rp.skip, rp.gtid_set
        st.server_id = self.server_id
        if out_length is not None:
            st.out_length = out_length
        st.save(self.s.state_path, durable=durable)
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
    def put(self, item: SourceItem) -> None:
        """Fetcher side: hand ``item`` on (in batches)."""
        self.batch.append(item)
        if len(self.batch) >= 256:
            self.flush()

    def flush(self, wake: bool = True) -> None:
        """Hand the fetched items to the store (blocks while the store is full); ``wake=False``:
        do not wake the consumer yet (see :meth:`EventStore.put_many`)."""
        batch = self.batch
        while batch:
            if self.stop_event.is_set():
                raise StoreClosed("stopping")
            n = self.store.put_many(batch, timeout=0.2, wake=wake)
            del batch[:n]

    def note(self, text: str) -> None:
        self.put(SourceItem("note", text=text))

    def wake(self) -> None:
        """Wake the consumer (the stream flushed with ``wake=False`` before an ACK)."""
        self.store.wake()

    def stopping(self) -> bool:
        return self.stop_event.is_set()

    def _run(self) -> None:
        try:
            delay = 0.5
            attempts = 0  # reconnects since the stream last moved on
            while not self.stop_event.is_set():
                try:
                    self._session_once()
                    return  # non-blocking dump ended, or count reached
                except LiveError as exc:
                    self.error = str(exc)
                    self.put(SourceItem("error", text=str(exc)))
                    return
                except (OSError, TimeoutError, ConnectionError) as exc:
                    if self.stop_event.is_set():
                        return
                    rp = self.fetch_pos.restart_point()
                    if rp.log_file is None:
                        rp = self.resume or rp
                    if rp != self.resume:  # the stream moved on since the last (re)connect
                        attempts, delay = 0, 0.5
                    if not self.s.reconnect or attempts >= self.s.max_reconnects \
                            or rp.log_file is None:
                        msg = connect_error(self.s.conn, exc)
                        if attempts:
                            msg += f" (gave up after {attempts} reconnects)"
                        self.error = msg
                        self.put(SourceItem("error", text=msg))
                        return
                    attempts += 1
                    self.reconnects += 1
                    self.note(f"connection lost ({exc}); reconnect {attempts}/"
                              f"{self.s.max_reconnects} in {delay:.1f}s, resuming at "
                              f"{rp.log_file}:{rp.log_pos} (+{rp.skip} delivered)")
                    self.put(reconnect_item(str(exc), attempts, f"{rp.log_file}:{rp.log_pos}"))
                    self.resume = rp
                    if self.stop_event.wait(delay):
                        return
                    delay = min(delay * 2, 10.0)
            return
        except StoreClosed:
            return
        finally:
            self._schema.close()
            try:
                self.flush()
            except StoreClosed:
                pass
            self.store.close()

    def _connect(self) -> socket.socket:
        return open_socket(self.s)

    def _session_once(self) -> None:
        """One connection: connect, log in, set up, register, dump, stream."""
        if self.s.record_path and self.recorder is None:
            self.recorder = SessionRecorder(self.s.record_path, server_port=self.s.conn.port,
                                            raw=self.s.record_raw)
        self.put(SourceItem("step", step=SetupStep(
            "connect", f"{'Unix socket' if self.s.conn.socket else 'TCP'} connect to "
                       f"{self.s.conn.describe()}",
            "a replica is an ordinary client connection that later turns into a binlog stream")))
        sock = self._connect()
        self._sock = sock
        rd = Connection(sock, Session(Role.REPLICA), self.put, self.flush, self.recorder)
        self._conn = rd
        dumping = ended = False
        try:
            try:
                self._login_and_dump(rd)
            except LiveError as exc:
                if exc.code in SERVER_GOING and self.resume is not None:
                    # a reconnect met a server that is shutting down or restarting: the
                    # reconnect backoff retries it (the first connect stays fatal)
                    raise ServerGoingAwayError(str(exc)) from None
                raise
            if not self.s.stream_tree and self.recorder is None:
                rd.session.record = False
            rd.session.ctx.table_map_hook = self.column_names
            s = self.s
            plan = StreamPlan(s.table_filter, s.read_timeout(), s.non_blocking,
                              self.resume_skip, s.json_lines,
                              live_dialog.head_stop(s, self.info))
            dumping = True
            ended = stream(rd, self, plan, self.fetch_pos, self.stats)
        finally:
            try:
                rd.sock.close()
            except OSError:
                pass
            self._sock = None
            self._conn = None
            if dumping and rd.session.state.semi_sync is True and (
                    ended or self.stop_event.is_set()):
                self._kill_dump_thread(rd)

    def _kill_dump_thread(self, rd: Connection) -> None:
        """binlogscope ended a semi-sync dump itself (the head, ``--count``, a signal, the TUI
        quit): KILL its dump thread on the source from a connection of its own, as a MariaDB
        semi-sync replica does at STOP SLAVE (sql/semisync_slave.cc,
        ``Repl_semi_sync_slave::kill_connection``). Left alone, the thread notices the closed
        socket only at its next write, and until then the source counts this replica in
        Rpl_semi_sync_master_clients: its next commit waits rpl_semi_sync_master_timeout for an
        ACK that will not come, and semi-sync switches off. Refused (no privilege, a source
        without KILL): one warning (:attr:`warnings` once the consumer stopped reading, else a
        note), nothing else changes."""
        hs = rd.session.state.handshake
        if hs is None:
            return
        tid = int(hs.connection_id)
        stopping = self.stop_event.is_set()
        control = InformationSchema(self.s)
        gone = False
        try:
            control(f"KILL CONNECTION {tid}")
        except LiveError as exc:
            if exc.code != _ER_NO_SUCH_THREAD:
                self._kill_refused(tid, exc, stopping)
                return
            gone = True  # the thread had already ended (it met the closed socket): done
        except (OSError, ValueError) as exc:
            self._kill_refused(tid, exc, stopping)
            return
        finally:
            control.close()
        if not stopping:  # (stopping: the consumer reads no more items)
            self.put(SourceItem("step", step=SetupStep(  # (after the stream: its phase)
                "stream", f"KILL CONNECTION {tid} (the dump's thread on the source)"
                + (": it had already ended" if gone else ""),
                "a semi-sync source counts a replica until its dump thread ends: killed from "
                "a second connection, as a MariaDB replica does at STOP SLAVE, the next "
                "commit does not wait for an ACK that will not come",
                f"KILL CONNECTION {tid}")))

    def _kill_refused(self, tid: int, exc: Exception, stopping: bool) -> None:
        """The one warning of a KILL the source refused (or that could not be sent)."""
        msg = (f"warning: could not KILL the dump's thread {tid} on the source ({exc}): "
               "it counts a semi-sync replica until its next write, and its next commit "
               "may wait rpl_semi_sync_master_timeout for an ACK")
        if stopping or not self.shows_notes:
            self.warnings.append(msg)
        else:
            self.note(msg)

    def last_read(self) -> float | None:
        """When the open connection's socket last returned bytes (seconds since the epoch;
        None: no connection, or nothing read yet)."""
        rd = self._conn
        if rd is None or not rd.read_at:
            return None
        return time.time() - (time.perf_counter() - rd.read_at)

    def _login_and_dump(self, rd: Connection) -> None:
        """Log in, set up, register and send the dump command."""
        authenticate(rd, self.s.conn, self.info, self.put)
        rd.sock.settimeout(self.s.net_read_timeout)  # logged in: the connect limit is over
        live_dialog.run_setup(rd, self.s, self.info, self.state.slave_uuid,
                              self._gtid_start(), self.put)
        self._register_and_dump(rd)

    def _register_and_dump(self, rd: Connection) -> None:
        sid = self.server_id
        if sid == self.info.server_id:
            raise LiveError(f"--server-id {sid} is the server's own id: a replica must differ")
        live_dialog.register(rd, sid, self.put)
        self.resume_skip = live_dialog.dump(rd, self.s, self.info, sid, self._gtid_start(),
                                            self.resume, self.put)

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


def run_live(settings: LiveSettings, consume: Callable[[SourceItem], None],
             count: int | None = None, *, commit: Commit | None = None,
             should_stop: Callable[[], bool] | None = None) -> LiveReplica:
    """Run a replica until the dump ends, ``count`` events shown (:func:`counted_event`),
    ``should_stop()`` or an error.

    ``commit`` (with a ``--state`` file): the consumer's output and the state advance
    together. ``commit()`` writes out (and, for a file, fsyncs) everything consumed so far
    and returns the output's length (None for a stream); the state is saved after it, with
    that length. Commits happen at transaction boundaries: after every transaction with
    ``settings.commit_each_txn`` (a stream: a crash repeats at most the transaction in
    flight), else at most every ``settings.state_interval`` seconds (a file: a restart cuts
    it back to the length the state holds, so nothing repeats); when the stream pauses (0.2 s
    without an event: what was consumed is written out then, not when the next event comes);
    and once more when the run ends cleanly. An interrupt (KeyboardInterrupt) saves nothing
    more: the last commit stands.

    While it runs, the cyclic garbage collector runs less often (``gc_tuning``: the thresholds
    are process-wide, and put back when it returns)."""
    rep = LiveReplica(settings)
    rep.should_stop = should_stop
    states = StateWatch(settings.heartbeat_period(), rep.last_read)
    plain = consume

    def with_states(item: SourceItem) -> None:  # state changes after the item that brought them
        plain(item)
        for h in states.after(item):
            plain(h)

    consume = with_states

    def quiet() -> None:  # the store is empty: a stall is told now, not at the next byte
        for h in states.tick():
            consume(h)

    # the loops below call states.after themselves (one call less per item) unless the lag
    # watch wraps the consumer too (its items then come after the state items, as here)
    inline: StateWatch | None = states
    watch = rep.lag_watch()
    if watch is not None:  # --lag-every: health items after the item that brought them
        shown = consume

        def consume(item: SourceItem) -> None:
            shown(item)
            for h in watch.after(item):
                shown(h)

        inline = None
        watch.start()
    each = consume if inline is None else plain
    try:
        with fewer_gc_passes():  # the process streams for a while: see pipeline.gc_tuning
            if commit is not None and settings.state_path:
                run_committed(rep, settings, each, count, commit, should_stop, quiet, inline)
            else:
                run_plain(rep, settings, each, count, should_stop, quiet, inline)
            return rep
    finally:
        if watch is not None:
            watch.stop()
            watch.close()


__all__ = [
    "ERR_HINTS",
    "LiveError",
    "LiveReplica",
    "LiveSettings",
    "ServerInfo",
    "SourceItem",
    "run_live",
]
