"""The no-tree stream path of the Session gives the same packets, values and errors as the
general path (which builds trees), on a whole conversation with semi-sync, damage included."""

from __future__ import annotations

import struct
from typing import Any

from binlogscope.events import DecodeError, PacketDecoded, Peer, Role, SequenceMismatch
from binlogscope.session import BinlogEventData, Session
from binlogscope.summary import event_summary
from binlogscope.wire import commands as cm
from binlogscope.wire import handshake as hs
from binlogscope.wire import replication as rp
from tests.session.test_session import (
    ConnectionPair,
    artificial_rotate,
    fixture_events,
    handshake_and_login,
)


def _key(e: Any) -> tuple[Any, ...]:
    if isinstance(e, PacketDecoded):
        semi = None if e.semi_sync is None else e.semi_sync.flag
        summary = event_summary(e.binlog_event) if e.binlog_event is not None else None
        return ("packet", e.direction, e.offset, e.seq, e.payload_length, e.kind, semi, e.error,
                e.wire_length, e.payload, summary)
    if isinstance(e, DecodeError):
        return ("error", e.direction, e.offset, e.message)
    if isinstance(e, SequenceMismatch):
        return ("seq", e.direction, e.offset, e.expected, e.got)
    return (type(e).__name__,)


def test_fast_stream_path_equals_general_path() -> None:
    pair = ConnectionPair()
    fast = Session(Role.OBSERVER, record=False)
    wire: list[tuple[Peer, bytes]] = []
    original = pair.send

    def send(who: str, value: Any) -> list[PacketDecoded]:
        got = original(who, value)
        wire.append((Peer.CLIENT if who == "replica" else Peer.SERVER, me_last[0]))
        return got

    me_last: list[bytes] = [b""]

    def capture(session: Session) -> None:
        real = session.send

        def wrapped(value: Any, **kw: Any) -> bytes:
            data = real(value, **kw)
            me_last[0] = data
            return data

        session.send = wrapped  # type: ignore[method-assign]

    capture(pair.replica)
    capture(pair.source)
    pair.send = send  # type: ignore[method-assign]

    handshake_and_login(pair)
    pair.send("replica", cm.ComQuery("SET @rpl_semi_sync_slave = 1"))
    pair.send("source", hs.OkPacket())
    pair.send("replica", cm.ComBinlogDump(4, 1001, "binlog.000001"))
    events = [artificial_rotate("binlog.000001"), *fixture_events()]
    damaged = bytearray(events[5])
    damaged[25] ^= 0x10  # a body byte: a checksum error on that event
    events[5] = bytes(damaged)
    for ev in events:
        want_ack = ev[4] == 16
        pair.send("source", BinlogEventData(ev, ack_requested=want_ack))
        if want_ack:
            pos = struct.unpack_from("<I", ev, 13)[0]
            pair.send("replica", rp.SemiSyncAck(pos, "binlog.000001"))
    for peer, data in wire:
        fast.receive_data(data, peer)
    fast_events = [_key(e) for e in fast.events()]
    slow_events = [_key(e) for e in pair.log["observer"]]
    assert fast_events == slow_events
    errors = [k for k in fast_events if k[0] == "error"]
    assert len(errors) == 1 and "checksum" in errors[0][3]
    n_events = sum(1 for k in fast_events if k[0] == "packet" and k[5] == "binlog_event")
    assert n_events == len(events)
