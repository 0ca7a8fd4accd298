"""The live replica's binlog stream: every event of the dump in order into the store, with its
restart point, and the semi-sync ACKs as soon as they are due.

:func:`stream` runs on the fetcher thread of a :class:`~.replica.LiveReplica` once the dump
command is sent; it ends at the end of a non-blocking dump, or raises when the connection is
lost (the replica's loop reconnects) or the source refuses. It knows the replica only through
:class:`StreamSink` (where the items go) and the values it is handed, so this module does not
import the replica.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from binlogscope.drivers.items import SourceItem, stream_item
from binlogscope.drivers.live.connect import Connection
from binlogscope.drivers.live.items import SERVER_GOING, LiveError, err_text
from binlogscope.drivers.live.lines import LiveLines, ReplicaLines
from binlogscope.pipeline.filter import TableFilter, event_table
from binlogscope.pipeline.position import PositionTracker
from binlogscope.session.events import ConnectionClosed, LinesWritten, PacketDecoded, Peer, Phase
from binlogscope.wire.binlog.header import EventHeader, is_fake_rotate
from binlogscope.wire.binlog.types import HEARTBEATS
from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.replication import SemiSyncAck

_BATCH = 256  # items handed to the store at once
#: ERR codes that end a dump because the connection goes, not because the request is wrong
_LOST = SERVER_GOING


class StreamSink(Protocol):
    """Where the stream's items go (the replica: a batch in front of its bounded store)."""

    #: fetched items not yet in the store (the stream appends to it and flushes it)
    batch: list[SourceItem]

    def put(self, item: SourceItem) -> None:
        """Hand ``item`` on (batched)."""

    def flush(self, wake: bool = True) -> None:
        """The batch into the store; ``wake=False``: the consumer is not woken yet."""

    def wake(self) -> None:
        """Wake the consumer."""

    def stopping(self) -> bool:
        """True once the replica is being stopped."""


@dataclass(slots=True)
class StreamStats:
    """What the stream counts (the TUI's source details, tests, the benchmark)."""

    heartbeats: int = 0
    acks_sent: int = 0
    #: seconds from the read that brought an ACK-requesting event to the ACK written to the
    #: socket (the replica's share of the source's commit latency), recent ones
    ack_delays: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))


@dataclass(slots=True)
class StreamPlan:
    """What the stream is told about the dump it reads."""

    table_filter: TableFilter
    read_timeout: float  # seconds without a byte before the connection counts as lost
    non_blocking: bool  # the dump ends at the end of the binlog (EOF) instead of waiting
    skip: int = 0  # real events at the start that were delivered before (resume)
    #: the command's writer of the events' ``--json`` lines (``live --json``: :mod:`.lines`);
    #: used when nothing is skipped or filtered
    lines: ReplicaLines | None = None
    #: binlogscope ends the dump itself once the events reach this ``(file, pos)`` (the
    #: binlog's head before the dump): ``--non-blocking --semi-sync`` from MariaDB, whose
    #: semi-sync source never ends a non-blocking dump (:func:`.dialog.head_stop`)
    stop_at: tuple[str, int] | None = None


def stream(rd: Connection, sink: StreamSink, plan: StreamPlan, pos: PositionTracker,
           stats: StreamStats) -> bool:
    """The dump: every event in order into ``sink``, ACKs as soon as they are due; ``pos``
    follows the events put (the reconnect point). True: binlogscope ended the dump itself
    (``plan.stop_at`` reached, or the replica stopping); False: the source ended it.

    Each read's events are handled in one pass (a semi-sync transaction arrives in one
    read: GTID .. XID, the ACK request on the last). An event whose semi-sync header asks
    for an ACK is put in the store (decoded, positioned, visible to the consumer) and the
    ACK goes out at once: before the events after it in the same read and without waiting for
    the consumer; the ACK packet, as the session decodes it, is listed right after that event
    (so the order of the list does not depend on how the server's bytes were split into reads).
    """
    skip = plan.skip
    update, boundary = pos.update, pos.boundary
    filt = plan.table_filter
    filtered = filt.active
    batch = sink.batch
    if plan.lines is not None and not skip and not filtered:
        got = plan.lines()
        if got is not None:
            packets = rd.session.packets
            packets.lines = LiveLines(got[0], got[1], packets)
    written = pos.written
    stop_at = plan.stop_at
    rd.sock.settimeout(plan.read_timeout)
    while not sink.stopping():
        evs = rd.take(allow_close=True)
        if evs is None:
            _closed(sink, plan, rd)
            return False
        for ev in evs:
            if type(ev) is LinesWritten:  # (the kernel's lines: the positions move over them)
                for code, start, end, gtid in ev.events or ():
                    written(code, start, end, gtid)
                batch.append(stream_item(ev, pos.at or boundary(), pos.txn_events, True))
                if stop_at is not None and _at_head(pos, stop_at, None):
                    _head_reached(sink, stop_at)
                    return True
                if len(batch) >= _BATCH:
                    sink.flush()
                continue
            if type(ev) is not PacketDecoded:
                sink.put(SourceItem("packet", ev))
                if isinstance(ev, ConnectionClosed):
                    _closed(sink, plan, rd)
                    return False
                continue
            bev = ev.binlog_event
            if bev is None:  # not an event: EOF/ERR/OK/the ACK we sent
                sink.put(SourceItem("packet", ev))
                if ev.direction == Peer.SERVER:
                    v = ev.value
                    if ev.kind == "err" and isinstance(v, ErrPacket):
                        if v.error_code in _LOST:  # killed, shutting down: reconnect
                            raise ConnectionError(err_text(v, "the source ended the dump"))
                        raise LiveError(err_text(v, "the source ended the dump"), v.error_code)
                    if rd.session.phase == Phase.COMMAND:
                        _ended(sink, plan, "EOF")
                        return False
                continue
            # a damaged event (truncated, bad checksum) is shown but does not move the
            # restart point: after a reconnect its complete copy is delivered, not skipped
            real = update(bev) if bev.error is None else False
            h = bev.header
            if h is not None and h.type_code in HEARTBEATS:
                stats.heartbeats += 1
            deliver = True
            if real and skip > 0:
                skip -= 1
                deliver = False
            if deliver and filtered:
                schema, table = event_table(bev)
                deliver = filt.accepts(schema, table)
            # its restart point: the tracker's shared boundary and the events to skip (no
            # object per event: PositionTracker.at)
            batch.append(stream_item(ev, pos.at or boundary(), pos.txn_events, deliver))
            semi = ev.semi_sync
            if semi is not None and semi.flag & 0x01 and h is not None:
                # where the event ends in the file: its log_pos, or from the stream where the
                # source wrote 0 (MariaDB 11.4 inside a transaction)
                fp = bev.file_pos
                end = h.log_pos or (fp + h.event_size if fp is not None else 0)
                _ack(sink, rd, stats, end, pos.log_file or "")
            elif len(batch) >= _BATCH:
                sink.flush()
            if stop_at is not None and _at_head(pos, stop_at, h):
                _head_reached(sink, stop_at)
                return True
    return True  # the replica is stopping (--count, a signal, the TUI quit)


def _at_head(pos: PositionTracker, head: tuple[str, int], h: EventHeader | None) -> bool:
    """The events reached the binlog's ``head`` (a later file, or its position in its file);
    not at a fake ROTATE (the dump's first event, in no file: the FORMAT_DESCRIPTION after it
    is still shown). A real ROTATE that ends the head's file moves the position to the next
    file: the head is reached (a source whose last file ends with one, as a binlog copied
    from a server that rotated)."""
    if h is not None and is_fake_rotate(h):
        return False
    f, p = pos.log_file, pos.next_pos
    if f is None or p is None:
        return False
    if f != head[0]:
        return _file_key(f) > _file_key(head[0])
    return p >= head[1]


def _file_key(name: str) -> tuple[str, int, str]:
    """A binlog file name's order: its base name, then its numeric extension."""
    base, _, ext = name.rpartition(".")
    return (base, int(ext), "") if ext.isdigit() else (name, -1, name)


def _head_reached(sink: StreamSink, head: tuple[str, int]) -> None:
    sink.put(SourceItem("note", text=(
        f"end of the binlog (non-blocking dump; the head {head[0]}:{head[1]} that SHOW "
        "MASTER STATUS reported before the dump reached: binlogscope closed the semi-sync "
        "dump itself: a MariaDB semi-sync source does not end it)")))


def _ack(sink: StreamSink, rd: Connection, stats: StreamStats, log_pos: int,
         log_file: str) -> None:
    """The semi-sync ACK of the event just put (the last item in the batch).

    The event is safely in the store before it is acknowledged; the consumer is woken
    after the ACK is out (its wake-up costs a syscall, and its thread would then compete
    for the GIL with this one)."""
    sink.flush(wake=False)
    rd.send(SemiSyncAck(log_pos, log_file))
    for sent in rd.take_sent():  # listed right after the event it acknowledges, whatever
        sink.put(SourceItem("packet", sent))  # else the same read brought
    sink.wake()
    stats.acks_sent += 1
    stats.ack_delays.append(rd.sent_at - rd.read_at)


def _closed(sink: StreamSink, plan: StreamPlan, rd: Connection) -> None:
    if rd.session.phase == Phase.COMMAND:
        _ended(sink, plan, "the connection closed")
        return
    raise ConnectionError("the source closed the connection")


def _ended(sink: StreamSink, plan: StreamPlan, how: str) -> None:
    """The source ended the dump (``how``): the end of a non-blocking dump; for a blocking
    dump a lost connection (a clean shutdown of the source sends EOF or closes), which the
    replica's loop reconnects."""
    if plan.non_blocking:
        sink.put(SourceItem("note", text=f"end of the binlog (non-blocking dump; {how})"))
        return
    raise ConnectionError(f"the source ended the blocking dump ({how}; shutting down?)")


__all__ = ["StreamPlan", "StreamSink", "StreamStats", "stream"]
