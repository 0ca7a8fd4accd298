"""The proxy's relay in its own process, and the channel that carries the decoder's copies.

Decoding a busy stream holds a CPU (and, in one process, the GIL) all the time; a relay in the
same process waits for it and the client slows down. So :class:`~binlogscope.drivers.proxy.relay.\
ReplicationProxy` starts the relay in a child process (``multiprocessing`` with the
``forkserver`` start method: the parent has threads, so a plain fork is not safe; the fork
server, started once per parent with this module preloaded, makes each later child quick to
start). The child runs an asyncio loop (:class:`Relay`): it listens and relays every
connection. Without fault actions two blocking threads relay it
(:mod:`binlogscope.drivers.proxy.threads`; a client that asks for TLS is handed to the loop's
protocol legs, :mod:`binlogscope.drivers.proxy.tls_legs`); with them the loop relays it packet by
packet (:class:`~binlogscope.drivers.proxy.faults.FaultRelay`). After forwarding, a copy of
every chunk is offered to the parent (:meth:`Relay.offer`, from any thread: ``cid, peer, data,
extra``; ``extra`` is a small picklable tuple whose first element names its kind - "open",
"refused", "fault", "tls", ... - and is passed on unchanged). With ``RelayConfig.tls`` the
relay terminates TLS (:mod:`binlogscope.drivers.proxy.tls`; its SSL contexts are built here,
in the child). With ``RelayConfig.record`` every offer also goes, before the channel may skip
it, to the recorder (:mod:`binlogscope.drivers.proxy.record`), which writes the pcapng in a
thread of this process - the recording does not depend on the decoder keeping up.

The channel is one Unix socketpair. Relay -> decoder: messages (:data:`HEADER`, then the data,
then the pickled extra); the child never blocks on it - unsent messages wait in a queue the
loop writes out when the socket is writable. Decoder -> relay: how many bytes and chunks it has
taken so far (:data:`ACK`), and EOF to stop. The relay counts what it offered minus what was
taken; past ``queue_bytes`` bytes or ``queue_chunks`` chunks a connection's decoding stops (a
"skipped" message says so, its bytes are still forwarded; only its close notices follow). On
stop (EOF from the parent, or SIGTERM) the child stops listening, closes its relays, writes out
everything queued and an "end" message, and exits; a parent that reads EOF without "end" knows
the relay died. A parent that dies closes the socket, and the child stops too.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import multiprocessing
import pickle
import signal
import socket
import struct
import sys
import threading
import time
import types
from dataclasses import dataclass
from typing import Any

from binlogscope.drivers.pcapng import RecordError
from binlogscope.drivers.proxy.faults import ActionPlan, FaultRelay, RelayAction
from binlogscope.drivers.proxy.record import ProxyRecorder
from binlogscope.drivers.proxy.threads import Pair, listen_sockets
from binlogscope.drivers.proxy.tls import Contexts, TlsSettings, stream_prelude
from binlogscope.pipeline.jobs import exit_text
from binlogscope.session.events import Peer

#: the most bytes read from a socket at a time by the fault relay
READ = 1 << 20
#: a message: connection id, peer (0 none, 1 client, 2 server), time.time() when forwarded (as
#: the send began, else when offered), time.time() when the data was read (0: not known), data
#: length, pickled extra length
HEADER = struct.Struct("<IBddII")
#: after a small read the decoder waits this long (s) before reading again, so that a trickle of
#: small chunks (a semi-sync stream: an event, an ACK) wakes it once for many rather than twice a
#: commit - each wake-up is CPU taken from the relay, the client and the server while the commit
#: is in flight (bench/README.md, issue 18); a busy stream (reads of 64 KiB and more) never waits
COALESCE = 0.005
#: the decoder's progress: bytes and chunks taken (cumulative)
ACK = struct.Struct("<QQ")
_PEERS: dict[Peer | None, int] = {None: 0, Peer.CLIENT: 1, Peer.SERVER: 2}
_BY_CODE: tuple[Peer | None, ...] = (None, Peer.CLIENT, Peer.SERVER)
#: one message of the channel: (cid, peer, data, time.time() forwarded, extra, time.time() read
#: or 0.0)
Message = tuple[int, Peer | None, bytes, float, Any, float]


@dataclass(frozen=True)
class RelayConfig:
    """What the relay process needs (pickled to it)."""

    listen: tuple[str, int]
    upstream: tuple[str, int]
    actions: tuple[RelayAction, ...] = ()
    queue_chunks: int = 20_000
    queue_bytes: int = 1 << 30
    #: TLS termination (None: TLS sessions relayed opaque); the SSL contexts are built here
    tls: TlsSettings | None = None
    #: ``--record``: the pcapng file the relay writes (:mod:`binlogscope.drivers.proxy.record`)
    record: str | None = None
    #: ``--record-raw``: the recording keeps the login secrets
    record_raw: bool = False


def _addr(hostport: tuple[str, int]) -> str:
    return f"{hostport[0]}:{hostport[1]}"


# ---------------------------------------------------------------------- the child: relay side
class _Outbox:
    """The relay's end of the channel: messages queued and written when the socket takes them;
    the parent's acknowledgements read as they come. Thread-safe: the plain relay's threads
    offer from their own threads (under ``lock``; a message that does not fit the socket now
    waits for the loop's writer)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 on_eof: Any) -> None:
        self.loop = loop
        self.sock = sock
        sock.setblocking(False)
        self.lock = threading.Lock()
        self.out: collections.deque[bytes | memoryview] = collections.deque()
        self.writing = False  # the loop's writer is armed (it drains ``out``)
        self.broken = False
        self.taken = self.taken_chunks = 0
        self._acks = bytearray()
        self._on_eof = on_eof
        loop.add_reader(sock.fileno(), self._read)

    def send(self, cid: int, peer: Peer | None, data: bytes, extra: Any = None,
             read: float = 0.0, sent: float = 0.0) -> None:
        """Queue a message and write what the socket takes now (the caller holds ``lock``)."""
        if self.broken:
            return
        blob = pickle.dumps(extra) if extra is not None else b""
        self.out.append(HEADER.pack(cid, _PEERS[peer], sent or time.time(), read, len(data),
                                    len(blob)))
        if data:
            self.out.append(data)
        if blob:
            self.out.append(blob)
        if not self.writing:
            self._write()
            if self.out:
                self.writing = True
                self.loop.call_soon_threadsafe(self._arm)

    def _arm(self) -> None:
        self.loop.add_writer(self.sock.fileno(), self._writable)

    def _writable(self) -> None:
        with self.lock:
            self._write()
            if not self.out:
                self.loop.remove_writer(self.sock.fileno())
                self.writing = False

    def _write(self) -> None:
        out = self.out
        while out:
            try:
                n = self.sock.sendmsg(list(itertools.islice(out, 0, 256)))
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # the parent is gone: nothing more to say
                self.broken = True
                out.clear()
                break
            while n:
                first = out[0]
                if len(first) <= n:
                    n -= len(first)
                    out.popleft()
                else:
                    out[0] = memoryview(first)[n:]
                    n = 0

    def _read(self) -> None:
        try:
            data = self.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.loop.remove_reader(self.sock.fileno())
            self._on_eof()
            return
        acks = self._acks
        acks += data
        whole = len(acks) - len(acks) % ACK.size
        if whole:
            self.taken, self.taken_chunks = ACK.unpack_from(acks, whole - ACK.size)
            del acks[:whole]

    async def flush(self, timeout: float) -> None:
        """Wait until everything queued is written (the parent is reading) or ``timeout``."""
        end = time.monotonic() + timeout
        while self.out and not self.broken and time.monotonic() < end:
            await asyncio.sleep(0.01)


class Relay:
    """The relay process's loop: listen, relay each connection, offer copies to the decoder."""

    def __init__(self, config: RelayConfig, sock: socket.socket) -> None:
        self.config = config
        #: fault actions (:mod:`binlogscope.drivers.proxy.faults`); none: chunks copied as read
        self.plan = ActionPlan(list(config.actions)) if config.actions else None
        self.sock = sock
        self._ids = itertools.count(1)
        self._skipping: set[int] = set()
        self._added = self._added_chunks = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._transports: set[asyncio.BaseTransport] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pairs: set[Pair] = set()
        self._pairs_lock = threading.Lock()
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._box: _Outbox | None = None
        self._ctxs: Contexts | None = None
        self.recorder: ProxyRecorder | None = None
        self._record_failed = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        stopping = self._stopping = asyncio.Event()
        box = self._box = _Outbox(loop, self.sock, stopping.set)
        loop.add_signal_handler(signal.SIGTERM, stopping.set)
        listen = self.config.listen
        if self.config.tls is not None:
            from binlogscope.drivers.proxy.tls import contexts

            try:
                self._ctxs = contexts(self.config.tls)
            except ValueError as exc:
                self.offer(0, None, b"", ("error", f"TLS: {exc}"))
                await box.flush(5)
                return
        if self.config.record is not None:
            try:
                self.recorder = ProxyRecorder(self.config.record, raw=self.config.record_raw,
                                              tls_terminated=self.config.tls is not None)
            except RecordError as exc:
                self.offer(0, None, b"", ("error", str(exc)))
                await box.flush(5)
                return
        server: asyncio.Server | None = None
        listeners: list[socket.socket] = []
        try:
            if self.plan is not None:
                server = await asyncio.start_server(self._handle, listen[0], listen[1],
                                                    limit=4 * READ)
                port = server.sockets[0].getsockname()[1]
            else:
                listeners = listen_sockets(listen[0], listen[1])
                port = listeners[0].getsockname()[1]
        except OSError as exc:
            self.offer(0, None, b"", ("error", f"cannot listen on {_addr(listen)}: "
                                               f"{exc.strerror or exc}"))
            await box.flush(5)
            return
        accepting = [loop.create_task(self._accept(s)) for s in listeners]
        self.offer(0, None, b"", ("listening", port))
        await stopping.wait()
        for t in accepting:
            t.cancel()
        for s in listeners:
            s.close()
        if server is not None:
            server.close()
        with self._pairs_lock:
            pairs = list(self._pairs)
        for pair in pairs:  # the relays still open end as if the peers closed
            pair.wake()
        for w in list(self._writers):
            w.close()
        for tr in list(self._transports):
            tr.close()
        tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
        if tasks:
            await asyncio.wait(tasks, timeout=2)
        end = time.monotonic() + 2
        while self._pairs and time.monotonic() < end:
            await asyncio.sleep(0.01)
        if server is not None:
            await server.wait_closed()
        rec = self.recorder
        if rec is not None:  # (everything relayed is written before the parent hears "end")
            await loop.run_in_executor(None, rec.close)
            with box.lock:
                self._check_recorder(rec)
        self.offer(0, None, b"", ("end",))
        await box.flush(3600)  # (the parent decodes what it was sent, then reads on)

    def offer(self, cid: int, peer: Peer | None, data: bytes, extra: Any = None,
              read: float = 0.0, sent: float = 0.0) -> None:
        """A copy for the decoder, after forwarding (``read``, ``sent``: when, if known);
        never blocks the relay (any thread)."""
        box = self._box
        assert box is not None
        with box.lock:
            rec = self.recorder
            if rec is not None and cid:
                if rec.put(cid, peer, data, extra, sent or time.time()):
                    box.send(cid, None, b"", ("record-gap",))
                if rec.failed is not None:
                    self._check_recorder(rec)
            if cid in self._skipping:
                if data:
                    return  # (only close notices and notes after decoding stopped)
            elif data:
                cfg = self.config
                if self._added - box.taken > cfg.queue_bytes or \
                        self._added_chunks - box.taken_chunks >= cfg.queue_chunks:
                    self._skipping.add(cid)
                    box.send(cid, None, b"", ("skipped",))
                    return
                self._added += len(data)
                self._added_chunks += 1
            box.send(cid, peer, data, extra, read, sent)

    def _check_recorder(self, rec: ProxyRecorder) -> None:
        """A recording that failed (a write error) is told to the decoder once."""
        if rec.failed is not None and not self._record_failed and self._box is not None:
            self._record_failed = True
            self._box.send(0, None, b"", ("record-failed", rec.failed))

    # ------------------------------------------------------------------ no fault actions
    async def _accept(self, listener: socket.socket) -> None:
        """Accept clients; each is relayed by threads (:mod:`.proxy_threads`)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except asyncio.CancelledError:
                raise
            except OSError:  # (e.g. out of descriptors: try again shortly)
                await asyncio.sleep(0.05)
                continue
            conn.setblocking(True)
            pair = Pair(next(self._ids), conn, self.offer, self._pair_ended)
            with self._pairs_lock:
                self._pairs.add(pair)
            threading.Thread(target=pair.run, name=f"proxy-{pair.cid}", daemon=True, args=(
                self.config.upstream, self._ctxs is not None, self._hand_tls)).start()

    def _pair_ended(self, pair: Pair) -> None:
        with self._pairs_lock:
            self._pairs.discard(pair)

    def _hand_tls(self, pair: Pair, held: bytes, offers_ssl: bool | None) -> None:
        """A client asked for TLS (a pair's thread): the loop's TLS path takes its sockets."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._start_tls, pair, held, offers_ssl)

    def _start_tls(self, pair: Pair, held: bytes, offers_ssl: bool | None) -> None:
        assert self._loop is not None
        assert self._ctxs is not None
        task = self._loop.create_task(
            pair.terminate_tls(self._ctxs, held, offers_ssl, self._transports))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter
                      ) -> None:
        """A client connected (fault actions on): relay it packet by packet."""
        cid = next(self._ids)
        upstream = self.config.upstream
        client = c_writer.get_extra_info("peername")
        try:
            s_reader, s_writer = await asyncio.open_connection(*upstream, limit=4 * READ)
        except OSError as exc:
            self.offer(cid, None, b"", ("refused", client,
                                        f"upstream {_addr(upstream)}: {exc.strerror or exc}"))
            c_writer.close()
            return
        self.offer(cid, None, b"", ("open", client, s_writer.get_extra_info("peername")))
        self._writers |= {c_writer, s_writer}
        peers = {"client": Peer.CLIENT, "server": Peer.SERVER}
        plan = self.plan
        assert plan is not None
        relay = FaultRelay(lambda: plan.for_connection(cid),
                           lambda who, data, read, sent: self.offer(cid, peers[who], data, None,
                                                                    read, sent),
                           lambda text: self.offer(cid, None, b"", ("fault", text)))
        relay.c_writer, relay.s_writer = c_writer, s_writer
        c_src: Any = c_reader
        s_src: Any = s_reader
        c_dst: Any = c_writer
        s_dst: Any = s_writer
        if self._ctxs is not None:  # (the greeting, the first packet, TLS: plaintext after)
            ends = await stream_prelude(
                self._ctxs, c_reader, c_writer, s_reader, s_writer,
                lambda who, data: self.offer(cid, peers[who], data),
                lambda extra: self.offer(cid, None, b"", extra))
            if ends is None:
                for w in (c_writer, s_writer):
                    w.close()
                    self._writers.discard(w)
                return
            c_src = c_dst = ends[0]
            s_src = s_dst = ends[1]

        async def pump(src: Any, dst: Any, peer: Peer) -> None:
            try:
                await relay.pump(src, dst, peer is Peer.CLIENT, READ)
            except (ConnectionError, OSError):
                pass
            finally:  # (who closed: the proxy itself when a fault action did)
                self.offer(cid, peer, b"", ("proxy",) if relay.closed_by_action else None)
                try:
                    if dst.can_write_eof() and not dst.is_closing():
                        dst.write_eof()
                except (ConnectionError, OSError, RuntimeError):
                    pass

        await asyncio.gather(pump(c_src, s_dst, Peer.CLIENT), pump(s_src, c_dst, Peer.SERVER))
        for w in (c_writer, s_writer):
            w.close()
            self._writers.discard(w)


def relay_main(sock: socket.socket, config: RelayConfig) -> None:
    """The relay process's entry point."""
    # Ctrl-C reaches the whole process group: the parent decides when the relay stops
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        asyncio.run(Relay(config, sock).run())
    finally:
        sock.close()


# ---------------------------------------------------------------------- the parent: decoder side
class RelayGoneError(Exception):
    """The relay process ended without saying so (its exit status in the text)."""


class RelayProcess:
    """The parent's handle on the relay process and its end of the channel."""

    #: acknowledge the decoder's progress at least this often (bytes, chunks)
    ACK_BYTES, ACK_CHUNKS = 1 << 20, 256

    def __init__(self, config: RelayConfig) -> None:
        self.config = config
        self.sock: socket.socket | None = None
        self.proc: multiprocessing.process.BaseProcess | None = None
        self._buf = bytearray()
        self._pos = 0
        self.taken = self.taken_chunks = 0
        self._acked = self._acked_chunks = 0
        self.ended = False  # the relay said "end" (or is known to be gone)
        self._eof = False
        self._stop_sent = False
        self._small = False

    def start(self, timeout: float = 60) -> int | str:
        """Start the child; its port, or the line saying why it cannot listen."""
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        mine, theirs = socket.socketpair()
        self.sock = mine
        self.proc = ctx.Process(target=relay_main, args=(theirs, self.config),
                                name="binlogscope-proxy-relay", daemon=True)
        # multiprocessing would have the child run the parent's main script again (as
        # __mp_main__: a caller's script without a ``__name__ == "__main__"`` guard would start
        # over in the relay); the relay needs nothing from it, so it is not named to the child
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            self.proc.start()
        finally:
            if main is not None:
                sys.modules["__main__"] = main
            theirs.close()
        end = time.monotonic() + timeout
        while True:
            try:
                msg = self.next(max(0.0, end - time.monotonic()))
            except RelayGoneError as exc:
                return f"the relay process ended before listening ({exc})"
            if msg is None:
                self.close()
                return f"the relay process did not start listening within {timeout:g} s"
            extra = msg[4]
            if extra[0] == "listening":
                return int(extra[1])
            if extra[0] == "error":
                self.close()
                return str(extra[1])

    def next(self, timeout: float) -> Message | None:
        """The next message; None when none came within ``timeout`` or the relay ended
        (``ended``); raises :class:`RelayGoneError` if it died."""
        sock = self.sock
        assert sock is not None
        while True:
            msg = self._parse()
            if msg is not None:
                if msg[0] == 0 and msg[4] is not None and msg[4][0] == "end":
                    self.ended = True
                    return None
                return msg
            if self._eof or self.ended:
                return None
            self.ack()
            if self._small and COALESCE:  # (a trickle: let it gather rather than wake per chunk)
                time.sleep(min(COALESCE, timeout))
            sock.settimeout(timeout)
            try:
                data = sock.recv(1 << 20)
            except TimeoutError:
                return None
            except OSError:
                data = b""
            if not data:
                self._eof = True
                if not self.ended:
                    self.ended = True
                    raise RelayGoneError(self._exit_status())
                return None
            self._small = len(data) < 65536
            buf = self._buf
            if self._pos:
                del buf[:self._pos]
                self._pos = 0
            buf += data

    def _parse(self) -> Message | None:
        buf, pos = self._buf, self._pos
        if len(buf) - pos < HEADER.size:
            return None
        cid, peer, ts, read, n, m = HEADER.unpack_from(buf, pos)
        end = pos + HEADER.size + n + m
        if len(buf) < end:
            return None
        start = pos + HEADER.size
        data = bytes(buf[start:start + n])
        extra = pickle.loads(buf[start + n:end]) if m else None
        self._pos = end
        if n:
            self.taken += n
            self.taken_chunks += 1
            if self.taken - self._acked >= self.ACK_BYTES or \
                    self.taken_chunks - self._acked_chunks >= self.ACK_CHUNKS:
                self.ack()
        return cid, _BY_CODE[peer], data, ts, extra, read

    def ack(self) -> None:
        """Tell the relay how much the decoder has taken (never blocks)."""
        if self.sock is None or self._stop_sent or (
                self.taken == self._acked and self.taken_chunks == self._acked_chunks):
            return
        try:
            self.sock.send(ACK.pack(self.taken, self.taken_chunks), socket.MSG_DONTWAIT)
            self._acked, self._acked_chunks = self.taken, self.taken_chunks
        except OSError:
            pass

    def request_stop(self) -> None:
        """Ask the relay to stop (EOF on its socket); what it relayed still comes."""
        if self.sock is not None and not self._stop_sent:
            self._stop_sent = True
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _exit_status(self) -> str:
        proc = self.proc
        if proc is None:
            return "not started"
        proc.join(5)
        code = proc.exitcode
        if code is None:
            return "it closed its channel but still runs"
        return exit_text(code)

    def close(self, wait: float = 5) -> None:
        """End the relay now (what it still holds is dropped) and close the channel."""
        if self.sock is not None:
            self.request_stop()
            self.sock.close()
            self.sock = None
        proc = self.proc
        if proc is not None:
            proc.join(wait)
            if proc.exitcode is None:
                proc.terminate()
                proc.join(2)
                if proc.exitcode is None:
                    proc.kill()
                    proc.join(2)
            self.ended = True


__all__ = ["ACK", "HEADER", "READ", "Message", "Relay", "RelayConfig", "RelayGoneError",
           "RelayProcess", "relay_main"]
