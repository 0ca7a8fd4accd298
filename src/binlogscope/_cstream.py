"""Glue for the C loops of the binlog stream (``_crows.stream_run`` and ``_crows.fetch_run``).

``Session._stream_direct`` is the per-packet loop of the BINLOG_STREAM phase without trees:
header, semi-sync header, sequence id check, event decode, one ``PacketDecoded`` per packet.
``stream_run(data, offset, ctx, semi, seq, after_ack, out, decode)`` is that loop in C: it
appends to ``out`` exactly the objects the Python loop appends (the same dataclasses, their
slots filled directly from the offsets read here) and stops, with nothing of that packet done,
at anything the Python loop should handle. ``decode`` is the Python decoder for the events the
C fast path does not take.

``ack_run(data, offset, out) -> used`` is ``Session._ack_direct``'s loop over the replica's
semi-sync ACKs. ``fetch_run(evs, i, tracker, batch) -> (i, ack)`` is the replica fetcher's loop
(``drivers.live.LiveReplica._stream``) for the ordinary events of a read: the same
``PositionTracker`` moves and the same ``LiveItem``/``RestartPoint`` objects (see the C source
for where it stops and hands over to the Python loop).

Each is None when the C module is not built or ``BINLOGSCOPE_PURE_PYTHON`` is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from binlogscope.events import DecodeError, PacketDecoded, Peer, Phase, SequenceMismatch
from binlogscope.pipeline.position import PositionTracker, RestartPoint
from binlogscope.wire.binlog import _cfast
from binlogscope.wire.binlog._rowcode import c_module
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.replication import BinlogPacket, SemiSyncAck, SemiSyncHeader

StreamRun = Callable[[bytes, int, DecodeContext, bool, "int | None", bool, list[Any],
                      Callable[..., DecodedEvent]], tuple[int, "int | None", bool]]


def decode_plain(payload: bytes, ctx: DecodeContext, start: int, base: int) -> DecodedEvent:
    """``decode_event`` without a tree, positional (what the C loop calls back)."""
    return decode_event(payload, ctx, start=start, base=base, record=False)


#: ack_run(data, offset, out) -> bytes used: Session._ack_direct's loop in C
AckRun = Callable[[bytes, int, list[Any]], int]


def stream_loops_c(semi_headers: tuple[SemiSyncHeader, SemiSyncHeader]
                   ) -> tuple[StreamRun, AckRun] | None:
    """The two C loops of the session (events from the source, ACKs from the replica),
    configured to hand out ``semi_headers`` (the session's shared ``SemiSyncHeader(0)`` and
    ``(1)``), or None."""
    crows = c_module()
    if crows is None or _cfast.fast_event_c is None:
        return None
    crows.configure_stream(_cfast._layout(crows, PacketDecoded, 13),
                           _cfast._layout(crows, BinlogPacket, 3), Peer.SERVER,
                           Phase.BINLOG_STREAM, "binlog_event", semi_headers, SequenceMismatch,
                           DecodeError, _cfast._REQUIRED)
    crows.configure_acks(_cfast._layout(crows, SemiSyncAck, 2), Peer.CLIENT, "semi_sync_ack",
                         _cfast._REQUIRED)
    return crows.stream_run, crows.ack_run


FetchRun = Callable[[list[Any], int, PositionTracker, list[Any]], tuple[int, bool]]
#: PositionTracker's fields in the order _crows.c's T_* slot indices name them
_TRACKER_FIELDS = ("log_file", "next_pos", "txn_start", "txn_events", "in_txn", "maria_gtid",
                   "mysql_gtid", "_pending_gtid", "_gtid_text", "_gtid_stale")


def fetch_run_c(live_item: type) -> FetchRun | None:
    """The C fetcher loop, configured to build ``live_item`` objects (``LiveItem``), or None.
    (It runs on the session's events: :func:`stream_loops_c` must have configured those; the
    C code says so if not.)"""
    crows = c_module()
    if crows is None or _cfast.fast_event_c is None:
        return None
    names = tuple(f.name for f in dataclasses.fields(PositionTracker))
    if names != _TRACKER_FIELDS:  # the C code reads and writes these slots by position
        raise TypeError(f"PositionTracker fields changed: {names}")
    crows.configure_fetch(_cfast._layout(crows, live_item, 6),
                          _cfast._layout(crows, RestartPoint, 4), _cfast._REQUIRED,
                          PositionTracker,
                          tuple(crows.slot_offset(PositionTracker.__dict__[n]) for n in names))
    fn: FetchRun = crows.fetch_run
    return fn


__all__ = ["AckRun", "FetchRun", "StreamRun", "decode_plain", "fetch_run_c", "stream_loops_c"]
