"""A relay between a real client and a real server (``binlogscope proxy``) that shows both sides.

Each client connection gets its own upstream connection. Forwarding comes first: an asyncio loop
in its own thread copies every chunk to the other side unchanged and only then hands a copy to
the decoder through a bounded queue (:data:`QUEUE_CHUNKS` chunks, :data:`QUEUE_BYTES` bytes).
When the decoder falls behind and the queue is full, that connection's decoding stops (a note
says so) - the client's bytes are never held back or dropped. Half-closes are passed on as
they come (a FIN from one side becomes a FIN to the other).

The decoder (the caller's thread, :meth:`ReplicationProxy.batches`) feeds both directions of a
connection into one OBSERVER :class:`~binlogscope.session.Session` and yields the same
:class:`~binlogscope.drivers.pcap_flows.CaptureItem` objects a capture yields - a
:class:`~binlogscope.drivers.pcap_flows.Flow` per connection, ``frame`` = the chunk's number in
the proxy's recording - so ``pcap``'s outputs (``--json``, ``--plain``, ``--summary``, the TUI)
serve the proxy unchanged. ``record``: every chunk as a TCP frame (with the connection's
handshake and FINs) in a pcapng file that ``binlogscope pcap`` and Wireshark open; the frames
are built with scapy.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.pcap_flows import CaptureItem, Flow
from binlogscope.drivers.proxy_faults import ActionPlan, FaultRelay, RelayAction
from binlogscope.drivers.proxy_relay import Leg, relay_connection
from binlogscope.drivers.sniff import PcapNgFile
from binlogscope.events import PacketDecoded, Peer
from binlogscope.session import Role, Session

#: chunks waiting for the decoder (all connections); beyond this a connection's decode stops
QUEUE_CHUNKS = 20_000
#: bytes waiting for the decoder (all connections); beyond this a connection's decode stops
QUEUE_BYTES = 1 << 30
#: the most bytes read from a socket at a time (fewer, larger reads: the relay thread needs the
#: GIL once per read, and the decoder holds it between switch intervals)
READ = 1 << 20
#: the largest recorded frame payload (a read is recorded as several frames)
CHUNK = 65_000


class ProxyError(Exception):
    """The proxy cannot listen or reach its upstream (one clear line)."""


@dataclass
class _Conn:
    flow: Flow
    session: Session
    skipped: bool = False
    #: TCP sequence numbers of the recording, per direction
    seq: dict[Peer, int] = field(default_factory=lambda: {Peer.CLIENT: 1000, Peer.SERVER: 5000})
    closed: set[Peer] = field(default_factory=set)


def _addr(hostport: tuple[str, int]) -> str:
    return f"{hostport[0]}:{hostport[1]}"


class ReplicationProxy:
    """Listen on ``listen``; relay every connection to ``upstream``; decode off the hot path."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], *,
                 record: PcapNgFile | None = None, queue_chunks: int = QUEUE_CHUNKS,
                 queue_bytes: int = QUEUE_BYTES,
                 actions: list[RelayAction] | None = None) -> None:
        self.listen = listen
        #: fault actions (:mod:`binlogscope.drivers.proxy_faults`); none: chunks copied as read
        self.plan = ActionPlan(actions) if actions else None
        self.upstream = upstream
        self.record = record
        self._q: queue.Queue[tuple[int, Peer | None, bytes, float, Any]] = queue.Queue(
            queue_chunks)
        self._ids = itertools.count(1)
        self._skipping: set[int] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._added = 0  # bytes queued for the decoder (relay thread) ...
        self._taken = 0  # ... and taken off the queue (decoder)
        self._max_bytes = queue_bytes
        self._writers: set[asyncio.StreamWriter] = set()
        self._transports: set[asyncio.BaseTransport] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._error: str | None = None
        self.port = 0
        self.connections = 0

    # ------------------------------------------------------------------ forwarding (own thread)
    def start(self) -> int:
        """Start listening (the port, useful with port 0); raises :class:`ProxyError`."""
        self._thread = threading.Thread(target=self._run, name="binlogscope-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error:
            raise ProxyError(self._error)
        return self.port

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self.listen[0], self.listen[1],
                                     limit=4 * READ) if self.plan is not None else
                loop.create_server(self._client_leg, self.listen[0], self.listen[1]))
        except OSError as exc:
            self._error = f"cannot listen on {_addr(self.listen)}: {exc.strerror or exc}"
            self._ready.set()
            loop.close()
            return
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for w in list(self._writers):  # the relays still open end as if the peers closed
                w.close()
            for t in list(self._transports):
                t.close()
            tasks = asyncio.all_tasks(loop)
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=2))
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

    def _offer(self, cid: int, peer: Peer | None, data: bytes, extra: Any = None) -> None:
        """A copy for the decoder, after forwarding; never blocks the relay."""
        if cid in self._skipping:
            return
        # (the relay thread only adds to _added, the decoder to _taken: no lock needed)
        if self._added - self._taken > self._max_bytes:
            self._skipping.add(cid)
            return
        try:
            self._q.put_nowait((cid, peer, data, time.time(), extra))
            self._added += len(data)
        except queue.Full:
            self._skipping.add(cid)

    def _client_leg(self) -> Leg:
        """A client connected (no fault actions): relay it with the protocols of
        :mod:`binlogscope.drivers.proxy_relay`."""
        cid = next(self._ids)
        self.connections += 1

        def offer(peer: Peer, data: bytes) -> None:
            self._offer(cid, peer, data)

        leg = Leg(Peer.CLIENT, offer, self._transports)
        server_leg = Leg(Peer.SERVER, offer, self._transports)

        def made(c: Leg) -> None:
            assert c.transport is not None and self._loop is not None
            client = c.transport.get_extra_info("peername")
            task = self._loop.create_task(relay_connection(
                c, self.upstream, server_leg,
                lambda server: self._offer(cid, None, b"", ("open", client, server)),
                lambda msg: self._offer(cid, None, b"", (
                    "refused", client, f"upstream {_addr(self.upstream)}: {msg}"))))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        leg.on_made = made
        return leg

    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter
                      ) -> None:
        cid = next(self._ids)
        self.connections += 1
        client = c_writer.get_extra_info("peername")
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.upstream, limit=4 * READ)
        except OSError as exc:
            self._offer(cid, None, b"", ("refused", client,
                                         f"upstream {_addr(self.upstream)}: "
                                         f"{exc.strerror or exc}"))
            c_writer.close()
            return
        self._offer(cid, None, b"", ("open", client, s_writer.get_extra_info("peername")))
        self._writers |= {c_writer, s_writer}

        peers = {"client": Peer.CLIENT, "server": Peer.SERVER}
        relay = None
        if self.plan is not None:
            plan = self.plan
            relay = FaultRelay(lambda: plan.for_connection(cid),
                               lambda who, data: self._offer(cid, peers[who], data),
                               lambda text: self._offer(cid, None, b"", ("fault", text)))
            relay.c_writer, relay.s_writer = c_writer, s_writer

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, peer: Peer) -> None:
            try:
                if relay is not None:
                    await relay.pump(src, dst, peer is Peer.CLIENT, READ)
                    return
                while True:
                    data = await src.read(READ)
                    if not data:
                        break
                    dst.write(data)  # forwarding first ...
                    self._offer(cid, peer, data)  # ... then the decoder's copy
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                self._offer(cid, peer, b"")
                try:
                    if dst.can_write_eof() and not dst.is_closing():
                        dst.write_eof()
                except (ConnectionError, OSError, RuntimeError):
                    pass

        await asyncio.gather(pump(c_reader, s_writer, Peer.CLIENT),
                             pump(s_reader, c_writer, Peer.SERVER))
        for w in (c_writer, s_writer):
            w.close()
            self._writers.discard(w)

    def stop(self) -> None:
        """Stop listening and close every relay (never blocks long)."""
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    # ------------------------------------------------------------------ decoding (caller)
    def batches(self, *, record: bool = False, stop: Callable[[], bool] = lambda: False,
                count: int | None = None, poll: float = 0.2) -> Iterator[list[CaptureItem]]:
        """The decoded items, a chunk's at a time, until ``stop()`` (then the relay stops and
        everything it relayed is still decoded) or ``count`` packets."""
        conns: dict[int, _Conn] = {}
        frame = 0
        packets = 0
        draining = False
        while True:
            if not draining and stop():
                self.stop()  # no new bytes: decode what was relayed, then end
                draining = True
            try:
                cid, peer, data, ts, extra = (self._q.get_nowait() if draining
                                              else self._q.get(timeout=poll))
            except queue.Empty:
                if draining:
                    return
                continue
            out: list[CaptureItem] = []
            conn = conns.get(cid)
            if peer is None and extra[0] == "fault":
                if conn is not None:  # (not a recorded frame: numbered as the last one)
                    yield [CaptureItem(conn.flow, "note", frame, ts, text=f"fault: {extra[1]}")]
                continue
            if peer is None:  # a connection opened (or was refused upstream)
                what, client, server = extra
                frame += 1  # (the SYN; with the SYN-ACK and ACK: frames as recorded)
                flow = Flow(cid, _addr(client), _addr(self.upstream) if what == "refused"
                            else _addr(server), frame, ts)
                if what == "refused":
                    out.append(CaptureItem(flow, "error", frame, ts, text=server))
                else:
                    conn = conns[cid] = _Conn(flow, Session(Role.OBSERVER, record=record))
                    out.append(CaptureItem(flow, "flow", frame, ts, text="new connection"))
                    self._record_open(conn, ts)
                    frame += 2
                yield out
                continue
            if conn is None:
                continue
            self._taken += len(data)
            frame += max(1, -(-len(data) // CHUNK))  # (frames as recorded)
            self._record_data(conn, peer, data, ts)
            if not data:
                who = "client" if peer is Peer.CLIENT else "server"
                if not conn.closed:
                    conn.flow.closed_by, conn.flow.close_flag = who, "FIN"
                    conn.flow.close_frame = frame
                    out.append(CaptureItem(conn.flow, "note", frame, ts,
                                           text=f"{who} closed the connection (FIN)"))
                conn.closed.add(peer)
            if cid in self._skipping and not conn.skipped:
                conn.skipped = True
                out.append(CaptureItem(conn.flow, "error", frame, ts, text=(
                    "the decoder fell behind the relay: this connection's decoding stops "
                    "here (its bytes are still forwarded unchanged)")))
            if not conn.skipped:
                conn.session.receive_data(data, peer)
                for ev in conn.session.events():
                    if isinstance(ev, PacketDecoded):
                        ev.wire_time = ts
                        packets += 1
                    out.append(CaptureItem(conn.flow, "event", frame, ts, ev))
            if len(conn.closed) == 2:
                del conns[cid]
            if out:
                yield out
            if count is not None and packets >= count:
                return

    # ------------------------------------------------------------------ the recording
    def _frame(self, conn: _Conn, peer: Peer, flags: str, payload: bytes = b"") -> bytes:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.l2 import Ether

        c_ip, c_port = conn.flow.client.rsplit(":", 1)
        s_ip, s_port = conn.flow.server.rsplit(":", 1)
        src, dst = ((c_ip, int(c_port)), (s_ip, int(s_port))) if peer is Peer.CLIENT else (
            (s_ip, int(s_port)), (c_ip, int(c_port)))
        other = Peer.SERVER if peer is Peer.CLIENT else Peer.CLIENT
        pkt = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
               / IP(src=src[0], dst=dst[0])
               / TCP(sport=src[1], dport=dst[1], flags=flags, seq=conn.seq[peer],
                     ack=conn.seq[other] if "A" in flags else 0, window=65535)
               / payload)
        conn.seq[peer] += len(payload) + (1 if ("S" in flags or "F" in flags) else 0)
        return bytes(pkt)

    def _record_open(self, conn: _Conn, ts: float) -> None:
        if self.record is None or ":" not in conn.flow.client or "[" in conn.flow.client:
            return  # (IPv4 only)
        for peer, flags in ((Peer.CLIENT, "S"), (Peer.SERVER, "SA"), (Peer.CLIENT, "A")):
            self.record.write(self._frame(conn, peer, flags), ts)

    def _record_data(self, conn: _Conn, peer: Peer, data: bytes, ts: float) -> None:
        if self.record is None or "[" in conn.flow.client:
            return
        if not data:
            self.record.write(self._frame(conn, peer, "FA"), ts)
        for i in range(0, len(data), CHUNK):
            self.record.write(self._frame(conn, peer, "PA", data[i:i + CHUNK]), ts)


def parse_hostport(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); raises ValueError with a readable message."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    try:
        n = int(port)
    except ValueError:
        raise ValueError(f"{text!r}: expected [HOST:]PORT") from None
    if not 0 <= n <= 65535:
        raise ValueError(f"{text!r}: port out of range")
    return host.strip("[]") or default_host, n


__all__ = ["CHUNK", "QUEUE_BYTES", "QUEUE_CHUNKS", "READ", "ProxyError", "ReplicationProxy",
           "parse_hostport"]
