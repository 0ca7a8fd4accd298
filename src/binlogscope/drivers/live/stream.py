"""The live replica's binlog stream: every event of the dump in order into the store, with its
restart point, and the semi-sync ACKs as soon as they are due.

:func:`stream` runs on the fetcher thread of a :class:`~.live.LiveReplica` once the dump
command is sent; it ends at the end of a non-blocking dump, or raises when the connection is
lost (the replica's loop reconnects) or the source refuses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from binlogscope.drivers.live.connect import Connection
from binlogscope.drivers.live.items import SERVER_GOING, LiveError, LiveItem, err_text
from binlogscope.pipeline.filter import event_table
from binlogscope.session.events import ConnectionClosed, PacketDecoded, Peer, Phase
from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.replication import SemiSyncAck

if TYPE_CHECKING:
    from binlogscope.drivers.live.replica import LiveReplica

_HEARTBEATS = (27, 41)  # HEARTBEAT_LOG_EVENT, HEARTBEAT_LOG_EVENT_V2
_BATCH = 256  # items handed to the store at once
#: ERR codes that end a dump because the connection goes, not because the request is wrong
_LOST = SERVER_GOING


def stream(rep: LiveReplica, rd: Connection) -> None:
    """The dump: every event in order into the store, ACKs as soon as they are due.

    Each read's events are handled in one pass (a semi-sync transaction arrives in one
    read: GTID .. XID, the ACK request on the last). An event whose semi-sync header asks
    for an ACK is put in the store (decoded, positioned, visible to the consumer) and the
    ACK goes out at once: before the events after it in the same read and without waiting for
    the consumer; the ACK packet, as the session decodes it, is listed right after that event
    (so the order of the list does not depend on how the server's bytes were split into reads).
    """
    skip = rep.resume_skip
    update, restart_point = rep.fetch_pos.update, rep.fetch_pos.restart_point
    if not rep.s.stream_tree and rep.recorder is None:
        rd.session.record = False
    filt = rep.s.table_filter
    batch = rep.batch
    rd.sock.settimeout(max(rep.s.net_read_timeout, (rep.s.heartbeat or 0) * 3 + 1))
    while not rep.stop_event.is_set():
        evs = rd.take(allow_close=True)
        if evs is None:
            _closed(rep, rd)
            return
        for ev in evs:
            if not isinstance(ev, PacketDecoded):
                rep.put(LiveItem("packet", ev))
                if isinstance(ev, ConnectionClosed):
                    _closed(rep, rd)
                    return
                continue
            bev = ev.binlog_event
            if bev is None:  # not an event: EOF/ERR/OK/the ACK we sent
                rep.put(LiveItem("packet", ev))
                if ev.direction == Peer.SERVER:
                    v = ev.value
                    if ev.kind == "err" and isinstance(v, ErrPacket):
                        if v.error_code in _LOST:  # killed, shutting down: reconnect
                            raise ConnectionError(err_text(v, "the source ended the dump"))
                        raise LiveError(err_text(v, "the source ended the dump"), v.error_code)
                    if rd.session.phase == Phase.COMMAND:
                        _ended(rep, "EOF")
                        return
                continue
            # a damaged event (truncated, bad checksum) is shown but does not move the
            # restart point: after a reconnect its complete copy is delivered, not skipped
            real = update(bev) if bev.error is None else False
            h = bev.header
            if h is not None and h.type_code in _HEARTBEATS:
                rep.heartbeats += 1
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
                _ack(rep, rd, h.log_pos)
            elif len(batch) >= _BATCH:
                rep.flush()


def _ack(rep: LiveReplica, rd: Connection, log_pos: int) -> None:
    """The semi-sync ACK of the event just put (the last item in the batch).

    The event is safely in the store before it is acknowledged; the consumer is woken
    after the ACK is out (its wake-up costs a syscall, and its thread would then compete
    for the GIL with this one)."""
    rep.flush(wake=False)
    rd.send(SemiSyncAck(log_pos, rep.fetch_pos.log_file or ""))
    for sent in rd.take_sent():  # listed right after the event it acknowledges, whatever
        rep.put(LiveItem("packet", sent))  # else the same read brought
    rep.store.wake()
    rep.acks_sent += 1
    rep.ack_delays.append(rd.sent_at - rd.read_at)


def _closed(rep: LiveReplica, rd: Connection) -> None:
    if rd.session.phase == Phase.COMMAND:
        _ended(rep, "the connection closed")
        return
    raise ConnectionError("the source closed the connection")


def _ended(rep: LiveReplica, how: str) -> None:
    """The source ended the dump (``how``): the end of a non-blocking dump; for a blocking
    dump a lost connection (a clean shutdown of the source sends EOF or closes), which the
    replica's loop reconnects."""
    if rep.s.non_blocking:
        rep.note(f"end of the binlog (non-blocking dump; {how})")
        return
    raise ConnectionError(f"the source ended the blocking dump ({how}; shutting down?)")


__all__ = ["stream"]
