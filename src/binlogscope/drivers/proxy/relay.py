"""A relay between a real client and a real server (``binlogscope proxy``) that shows both sides.

Each client connection gets its own upstream connection. Forwarding comes first, in its own
process (:mod:`binlogscope.drivers.proxy.process`): it copies every chunk to the other side
unchanged and only then hands a copy to the decoder in this process through a bounded channel
(:data:`QUEUE_CHUNKS` chunks, :data:`QUEUE_BYTES` bytes not yet taken by the decoder). When the
decoder falls behind and the channel is full, that connection's decoding stops (an error item
says so) - the client's bytes are never held back or dropped, and decoding never takes CPU or
the GIL from the relay. Half-closes are passed on as they come (a FIN from one side becomes a
FIN to the other), and so are resets (plain relay: a reset, or a peer that answers with one
after its FIN, becomes an RST to the other side; the close notice says which).

The decoder (the caller's thread, :meth:`ReplicationProxy.batches`) feeds both directions of a
connection into one OBSERVER :class:`~binlogscope.session.Session` and yields the same
:class:`~binlogscope.drivers.items.SourceItem` objects a capture yields - a
:class:`~binlogscope.drivers.capture.flows.Flow` per connection, ``frame`` = the chunk's number in
the proxy's recording - so ``pcap``'s outputs (``--json``, ``--plain``, ``--summary``, the TUI)
serve the proxy unchanged. ``record``: a pcapng file of every connection (its handshake, each
chunk as frames, FINs and RSTs) that ``binlogscope pcap`` and Wireshark open, written by the
relay process itself (:mod:`binlogscope.drivers.proxy.record`: lossless whatever the decoder
does; login secrets masked unless ``record_raw``).

``tls`` (:class:`~binlogscope.drivers.proxy.tls.TlsSettings`): a client that asks for TLS has
it terminated at the proxy, which speaks TLS of its own upstream
(:mod:`binlogscope.drivers.proxy.tls`); the relay offers the decoder the plaintext after a
``("tls", ok, text)`` marker, and the connection's session goes on decoding it
(:meth:`~binlogscope.session.Session.tls_established` with ``plaintext=True``). Without
``tls`` a TLS session is relayed as it is and stays opaque.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.drivers.items import Flow, SourceItem
from binlogscope.drivers.proxy.faults import RelayAction, validate
from binlogscope.drivers.proxy.process import READ, RelayConfig, RelayGoneError, RelayProcess
from binlogscope.drivers.proxy.record import RECORD_QUEUE_BYTES, frames_of
from binlogscope.drivers.proxy.tls import TlsSettings
from binlogscope.session import Role, Session
from binlogscope.session.events import DecodeError, PacketDecoded, Peer
from binlogscope.session.oversize import DEFAULT_MAX_PACKET
from binlogscope.wire.binlog.types import is_heartbeat

#: chunks relayed and not yet taken by the decoder; beyond this a connection's decode stops
QUEUE_CHUNKS = 20_000
#: bytes relayed and not yet taken by the decoder; beyond this a connection's decode stops
QUEUE_BYTES = 1 << 30
#: after a stop (the first Ctrl-C), what was relayed is decoded for at most this long (s)
DRAIN_SECONDS = 3.0
#: ... and then the relay gets this long (s) to finish writing its recording
RECORD_WAIT = 60.0
DRAIN_CUT = ("the proxy stopped and its decoder had not caught up within {:g} s: what this "
             "connection relayed after this point was forwarded (and recorded) but not decoded")
DRAIN_ABORTED = ("the proxy stopped and a second signal ended its decoding: what this "
                 "connection relayed after this point was forwarded (and recorded) but not "
                 "decoded")
FELL_BEHIND = ("the decoder fell behind the relay: this connection's decoding stops here (its "
               "bytes are still forwarded unchanged)")

#: the error item when the recording lost bytes of a connection
RECORD_GAP = (f"the recording fell behind the relay by more than {RECORD_QUEUE_BYTES >> 20} MiB "
              "(the disk did not keep up): bytes of this connection are missing from it, each "
              "gap marked by a comment in the pcapng")

#: the start of the error item's text when TLS termination failed on a connection
TLS_FAILED = "TLS termination failed: "


class ProxyError(Exception):
    """The proxy cannot listen or reach its upstream, or its relay died (one clear line)."""


@dataclass
class _Conn:
    flow: Flow
    session: Session
    skipped: bool = False
    closed: set[Peer] = field(default_factory=set)
    #: binlog events (heartbeats aside) the server sent since the client's dump request -
    #: the count the fault actions' ``at`` uses
    events: int = 0
    #: event number -> a fault action that damages it fired (:data:`DAMAGING`): that event's
    #: errors are the proxy's own, marked ``injected``
    damaged: dict[int, str] = field(default_factory=dict)


#: fault actions whose event reaches the client damaged on purpose
DAMAGING = frozenset({"corrupt_checksum_at", "truncate_event"})
_FIRED = re.compile(r"^(\w+) .*: fired on event (\d+)$")
_DUMPS = frozenset({"com_binlog_dump", "com_binlog_dump_gtid"})


def _injected(conn: _Conn, ev: object) -> bool:
    """Whether session event ``ev`` is the damage a fault action made on purpose (the event it
    damaged, the DecodeError that follows it); counts the dump's events as the relay does."""
    if isinstance(ev, PacketDecoded):
        if ev.direction is Peer.CLIENT:
            if ev.kind in _DUMPS:
                conn.events = 0
            return False
        bev = ev.binlog_event
        if bev is None or bev.header is None or is_heartbeat(bev.header.type_code):
            return False
        conn.events += 1
        return ev.error is not None and conn.events in conn.damaged
    return (isinstance(ev, DecodeError) and ev.direction is Peer.SERVER
            and conn.events in conn.damaged)


def _addr(hostport: tuple[str, int]) -> str:
    return f"{hostport[0]}:{hostport[1]}"


class ReplicationProxy:
    """Listen on ``listen``; relay every connection to ``upstream`` (in a child process);
    decode in this one, off the hot path."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], *,
                 record: str | Path | None = None, record_raw: bool = False,
                 queue_chunks: int = QUEUE_CHUNKS, queue_bytes: int = QUEUE_BYTES,
                 actions: list[RelayAction] | None = None,
                 tls: TlsSettings | None = None,
                 max_packet: int = DEFAULT_MAX_PACKET) -> None:
        self.listen = listen
        #: the largest packet payload a connection's decoder buffers (``--max-packet-size``)
        self.max_packet = max_packet
        self.upstream = upstream
        #: what the relay process is given (pickled to it)
        self.config = RelayConfig(listen, upstream, tuple(validate(a) for a in actions or ()),
                                  queue_chunks, queue_bytes, tls,
                                  None if record is None else str(record), record_raw)
        #: why the recording stopped (it could not be written), or None
        self.record_error: str | None = None
        self._relay: RelayProcess | None = None
        self._decoding = False
        self.port = 0
        #: connections relayed (opened or refused upstream), as the decoder has seen them
        self.connections = 0

    def start(self) -> int:
        """Start the relay process listening (the port, useful with port 0); raises
        :class:`ProxyError`."""
        relay = RelayProcess(self.config)
        try:
            got = relay.start()
        except OSError as exc:
            relay.close()
            raise ProxyError(f"cannot start the relay process: {exc.strerror or exc}") from None
        if isinstance(got, str):
            relay.close()
            raise ProxyError(got)
        self._relay, self.port = relay, got
        return got

    def stop(self) -> None:
        """Stop listening and close every relay (never blocks long). While :meth:`batches`
        runs it still decodes everything relayed, then ends."""
        relay = self._relay
        if relay is None:
            return
        if self._decoding:
            relay.request_stop()
        else:
            relay.close()

    # ------------------------------------------------------------------ decoding (caller)
    def batches(self, *, record: bool = False, stop: Callable[[], bool] = lambda: False,
                count: int | None = None, poll: float = 0.2,
                drain: float | None = DRAIN_SECONDS,
                abort: Callable[[], bool] = lambda: False) -> Iterator[list[SourceItem]]:
        """The decoded items, a chunk's at a time, until ``stop()`` (then the relay stops and
        what it relayed is still decoded, for at most ``drain`` seconds - None: all of it -,
        or until ``abort()``; past that each connection still open gets an error item saying
        its decoding was cut, and the relay ends once its recording is written) or ``count``
        packets; raises
        :class:`ProxyError` (after the items of everything relayed) if the relay process
        died."""
        relay = self._relay
        if relay is None:
            raise ProxyError("the proxy is not started")
        conns: dict[int, _Conn] = {}
        frame = 0
        packets = 0
        stopping = False
        drain_until: float | None = None
        self._decoding = True
        try:
            while True:
                if not stopping and stop():
                    relay.request_stop()  # no new bytes: decode what was relayed, then end
                    stopping = True
                    if drain is not None:
                        drain_until = time.monotonic() + drain
                aborted = stopping and abort()
                if aborted or (drain_until is not None and time.monotonic() > drain_until):
                    now = time.time()
                    text = DRAIN_ABORTED if aborted else DRAIN_CUT.format(drain)
                    cut = [SourceItem("error", flow=c.flow, frame=frame, time=now, text=text)
                           for c in conns.values() if not c.skipped]
                    cut += self._not_reached(relay, conns, frame, now, text, record)
                    if cut:
                        yield cut
                    relay.close(wait=RECORD_WAIT if self.config.record else 5)
                    return
                try:
                    msg = relay.next(poll)
                except RelayGoneError as exc:
                    raise ProxyError(f"the proxy's relay process died ({exc}); what it "
                                     "relayed before was decoded") from None
                if msg is None:
                    if relay.ended:
                        return
                    continue
                cid, peer, data, ts, extra, read = msg
                out: list[SourceItem] = []
                conn = conns.get(cid)
                if peer is None:
                    kind = extra[0]
                    if kind == "fault":
                        if conn is not None:  # (not a recorded frame: numbered as the last one)
                            m = _FIRED.match(extra[1])
                            if m and m.group(1) in DAMAGING:
                                conn.damaged[int(m.group(2))] = m.group(1)
                            yield [SourceItem("note", flow=conn.flow, frame=frame, time=ts,
                                              text=f"fault: {extra[1]}")]
                    elif kind == "skipped":
                        if conn is not None and not conn.skipped:
                            conn.skipped = True
                            yield [SourceItem("error", flow=conn.flow, frame=frame, time=ts,
                                              text=FELL_BEHIND)]
                    elif kind == "tls":  # TLS terminated, or it failed: (_, ok, text)
                        if conn is not None:
                            ok, text = extra[1], extra[2]
                            if ok:  # (the bytes that follow are the plaintext)
                                conn.session.tls_established(plaintext=True)
                            yield [SourceItem("note" if ok else "error", flow=conn.flow,
                                              frame=frame, time=ts,
                                              text=text if ok else f"{TLS_FAILED}{text} (the "
                                              "client's connection was closed)")]
                    elif kind == "record-gap":
                        if conn is not None:
                            yield [SourceItem("error", flow=conn.flow, frame=frame, time=ts,
                                              text=RECORD_GAP)]
                    elif kind == "record-failed":
                        self.record_error = str(extra[1])
                    elif kind == "tls-note":  # (after a close: not an error)
                        if conn is not None:
                            yield [SourceItem("note", flow=conn.flow, frame=frame, time=ts,
                                              text=extra[1])]
                    elif kind in ("open", "refused"):
                        yield self._opened(conns, cid, extra, frame + 1, ts, record)
                        self.connections += 1
                        frame += 1 if kind == "refused" else 3  # (SYN, SYN-ACK, ACK)
                    continue
                if conn is None:
                    continue
                frame += frames_of(data)  # (frames as recorded)
                flag = "RST" if extra == ("reset",) else "FIN"  # (how that direction ended)
                if not data:
                    # (the proxy itself, when a fault action closed both sides)
                    who = "proxy" if extra == ("proxy",) else \
                        "client" if peer is Peer.CLIENT else "server"
                    if not conn.closed:
                        conn.flow.closed_by, conn.flow.close_flag = who, flag
                        conn.flow.close_frame = frame
                        out.append(SourceItem("note", flow=conn.flow, frame=frame, time=ts,
                                              text=f"{who} closed the connection ({flag})"
                                              + (" - the fault action" if who == "proxy"
                                                 else "")))
                    conn.closed.add(peer)
                if not conn.skipped:
                    conn.session.receive_data(data, peer)
                    for ev in conn.session.events():
                        if isinstance(ev, PacketDecoded):
                            ev.wire_time = ts
                            packets += 1
                        out.append(SourceItem("packet", ev, "", None, ts, frame, conn.flow,
                                              received=read or None,
                                              injected=_injected(conn, ev)))
                if len(conn.closed) == 2:
                    del conns[cid]
                if out:
                    yield out
                if count is not None and packets >= count:
                    return
        finally:
            self._decoding = False
            if relay.ended:
                relay.close()

    def _not_reached(self, relay: RelayProcess, conns: dict[int, _Conn], frame: int, now: float,
                     text: str, record: bool) -> list[SourceItem]:
        """At a cut drain: the connections the decoder had not even reached (opened while it
        lagged) - each its flow item and the cut, so none is missing silently from the
        output. The rest of the queue is read, not decoded (for at most a few seconds)."""
        out: list[SourceItem] = []
        until = time.monotonic() + 3.0
        while time.monotonic() < until:
            try:
                msg = relay.next(0.05)
            except RelayGoneError:
                break
            if msg is None:
                break
            cid, peer, _, _, extra, _ = msg
            if peer is None and extra[0] in ("open", "refused") and cid not in conns:
                items = self._opened(conns, cid, extra, frame + 1, now, record)
                out += items
                if extra[0] == "open":
                    out.append(SourceItem("error", flow=items[0].flow, frame=frame, time=now,
                                          text=text))
        if time.monotonic() >= until:
            out.append(SourceItem("error", frame=frame, time=now,
                                  text="the proxy stopped with more relayed than it could list: "
                                  "connections opened after this point may be missing from "
                                  "this output (they were forwarded and recorded)"))
        return out

    def _opened(self, conns: dict[int, _Conn], cid: int, extra: tuple[str, tuple[str, int], Any],
                frame: int, ts: float, record: bool) -> list[SourceItem]:
        """A connection opened (or was refused upstream): its first item."""
        what, client, server = extra
        flow = Flow(cid, _addr(client), _addr(self.upstream) if what == "refused"
                    else _addr(server), frame, ts)
        if what == "refused":
            return [SourceItem("error", flow=flow, frame=frame, time=ts, text=server)]
        conn = conns[cid] = _Conn(flow, Session(Role.OBSERVER, record=record))
        conn.session.max_packet = self.max_packet
        conn.session.tls_terminated = self.config.tls is not None
        return [SourceItem("flow", flow=flow, frame=frame, time=ts, text="new connection")]


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


__all__ = ["FELL_BEHIND", "QUEUE_BYTES", "QUEUE_CHUNKS", "READ", "RECORD_GAP", "TLS_FAILED",
           "ProxyError",
           "ReplicationProxy", "parse_hostport"]
