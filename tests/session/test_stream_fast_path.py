"""The no-tree stream path of the Session gives the same packets, values and errors as the
general path (which builds trees), on a whole conversation with semi-sync, damage included, with
the native kernel and without it."""

from __future__ import annotations

import functools
import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.render.json_out import dumps
from binlogscope.render.shapes import binlog_event_json
from binlogscope.session import BinlogEventData, Session
from binlogscope.session.events import DecodeError, PacketDecoded, Peer, Role, SequenceMismatch
from binlogscope.wire import commands as cm
from binlogscope.wire import handshake as hs
from binlogscope.wire import replication as rp
from binlogscope.wire.constants import Command
from binlogscope.wire.framing import encode_packet
from tests.native_switch import NativeSwitch
from tests.property.test_fuzz_binlog import event_key
from tests.session.test_session import (
    ConnectionPair,
    artificial_rotate,
    fixture_events,
    handshake_and_login,
)


def _key(e: Any) -> tuple[Any, ...]:
    if isinstance(e, PacketDecoded):
        semi = None if e.semi_sync is None else e.semi_sync.flag
        # (serialized: a rows list may be an orjson.Fragment, which compares by identity)
        summary = (dumps(binlog_event_json(e.binlog_event)) if e.binlog_event is not None
                   else None)
        return ("packet", e.direction, e.offset, e.seq, e.payload_length, e.kind, semi, e.error,
                e.wire_length, e.payload, summary, e.env)
    if isinstance(e, DecodeError):
        return ("error", e.direction, e.offset, e.message)
    if isinstance(e, SequenceMismatch):
        return ("seq", e.direction, e.offset, e.expected, e.got)
    return (type(e).__name__,)


def _conversation() -> tuple[list[tuple[Peer, bytes]], list[Any], int]:
    """A semi-sync dump with one damaged event: the bytes of both directions in order, the
    general path's (tree-building observer's) events, and how many binlog events were sent."""
    pair = ConnectionPair()
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
    return wire, pair.log["observer"], len(events)


def test_fast_stream_path_equals_general_path() -> None:
    wire, slow, n_sent = _conversation()
    fast = Session(Role.OBSERVER, record=False)
    for peer, data in wire:
        fast.receive_data(data, peer)
    fast_events = [_key(e) for e in fast.events()]
    slow_events = [_key(e) for e in slow]
    assert fast_events == slow_events
    errors = [k for k in fast_events if k[0] == "error"]
    assert len(errors) == 1 and "checksum" in errors[0][3]
    n_events = sum(1 for k in fast_events if k[0] == "packet" and k[5] == "binlog_event")
    assert n_events == n_sent


def _joined(wire: list[tuple[Peer, bytes]]) -> list[tuple[Peer, bytes]]:
    """Consecutive bytes of one direction joined into one read."""
    runs: list[tuple[Peer, bytes]] = []
    for peer, data in wire:
        if runs and runs[-1][0] == peer and data and runs[-1][1]:
            runs[-1] = (peer, runs[-1][1] + data)
        else:
            runs.append((peer, data))
    return runs


def test_fast_stream_path_any_read_boundaries() -> None:
    """Reads that hold several packets, or end inside a header or a payload: the direct path
    (a read on a packet boundary) and the buffered one hand over without a byte lost."""
    wire, slow, _ = _conversation()
    want = [_key(e) for e in slow]
    runs = _joined(wire)
    for step in (1, 3, 7, 64, 1 << 20):
        fast = Session(Role.OBSERVER, record=False)
        for peer, data in runs:
            for i in range(0, len(data), step):
                fast.receive_data(data[i : i + step], peer)
        assert [_key(e) for e in fast.events()] == want, step


def test_replica_ack_bytes_first_decoded_in_order() -> None:
    """A REPLICA's semi-sync ACK: send() returns its bytes at once; the session decodes it at
    the next events() call, after what was received before and before what comes after."""
    wire, _, _ = _conversation()
    first_ack = next(i for i, (peer, data) in enumerate(wire)
                     if peer == Peer.CLIENT and data[4:5] == b"\xef")
    s = Session(Role.REPLICA, record=False)
    for peer, data in wire[:first_ack]:
        if peer == Peer.SERVER:
            s.receive_data(data, peer)
        else:
            s._chunks.append((peer, data))  # what our own earlier send() calls wrote
    list(s.events())
    ack = rp.SemiSyncAck(1234, "binlog.000001")
    data = s.send(ack)
    payload = rp.encode_semi_sync_ack(ack)
    assert data == len(payload).to_bytes(3, "little") + b"\x00" + payload
    s.receive_data(wire[first_ack + 1][1], Peer.SERVER)
    evs = list(s.events())
    got = [e for e in evs if isinstance(e, PacketDecoded)]
    assert got[0].direction == Peer.CLIENT and got[0].value == ack
    assert got[1].direction == Peer.SERVER and got[1].binlog_event is not None
    assert not [e for e in evs if isinstance(e, SequenceMismatch | DecodeError)]


def _damaged_seq_wire() -> list[tuple[Peer, bytes]]:
    """The conversation with a server packet's sequence id wrong and one after an ACK reset to 1
    (MariaDB's NET counter), so the sequence checks of the loop have something to report."""
    wire, _, _ = _conversation()
    out = list(wire)
    server_events = [i for i, (peer, data) in enumerate(out)
                     if peer == Peer.SERVER and data[4:5] == b"\x00" and len(data) > 30]
    i = server_events[len(server_events) // 2]
    bad = bytearray(out[i][1])
    bad[3] = (bad[3] + 5) & 0xFF
    out[i] = (Peer.SERVER, bytes(bad))
    acks = [k for k, (peer, data) in enumerate(out) if peer == Peer.CLIENT
            and data[4:5] == b"\xef"]
    k = acks[len(acks) // 2]
    bad = bytearray(out[k][1])
    bad[3] = 3  # an ACK goes out with sequence id 0
    out[k] = (Peer.CLIENT, bytes(bad))
    return out


def _events(wire: list[tuple[Peer, bytes]], record: bool) -> list[Any]:
    s = Session(Role.OBSERVER, record=record)
    for peer, data in wire:
        s.receive_data(data, peer)
    return list(s.events())


def test_sequence_checks_without_trees() -> None:
    """A server packet's sequence id wrong, and an ACK's: the no-tree session reports the
    same mismatches (and everything else) as the tree-building one."""
    wire = _damaged_seq_wire()
    fast = _events(wire, record=False)
    assert [_key(e) for e in fast] == [_key(e) for e in _events(wire, record=True)]
    # (the wrong id inside a read of several packets, as a capture's segments hold them)
    assert [_key(e) for e in _events(_joined(wire), record=False)] == [_key(e) for e in fast]
    assert any(isinstance(e, SequenceMismatch) and e.direction == Peer.SERVER for e in fast)
    assert any(isinstance(e, SequenceMismatch) and e.direction == Peer.CLIENT for e in fast)


def _full_key(e: Any) -> tuple[Any, ...]:
    """:func:`_key` and, for an event packet, everything its decoded event says but its tree
    (header, body, rows read, checksum, error, size, raw bytes)."""
    bev = getattr(e, "binlog_event", None)
    return (_key(e), event_key(bev) if bev is not None else None)


@functools.lru_cache(maxsize=1)
def _conversation_wire() -> tuple[tuple[Peer, bytes], ...]:
    return tuple(_conversation()[0])


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_damaged_streams_decode_alike(data: st.DataObject, native: NativeSwitch) -> None:
    """Random damage in the stream (bytes of headers, lengths, semi-sync bytes, event bodies,
    ACKs; bit flips; a packet cut short): the session never raises, and with or without trees,
    with or without the native kernel, and however the bytes are cut into reads, it gives the
    same packets, events, values and errors (message and offset)."""
    wire = list(_conversation_wire())
    for _ in range(data.draw(st.integers(1, 4))):
        k = data.draw(st.integers(len(wire) // 2, len(wire) - 1))
        peer, chunk = wire[k]
        if not chunk:
            continue
        b = bytearray(chunk)
        i = data.draw(st.integers(0, len(b) - 1))
        how = data.draw(st.sampled_from(["byte", "flip", "cut"]))
        if how == "byte":
            b[i] = data.draw(st.integers(0, 255))
        elif how == "flip":
            b[i] ^= 1 << data.draw(st.integers(0, 7))
        else:  # (not to nothing: b"" is the end of the connection)
            del b[max(i, 1):]
        wire[k] = (peer, bytes(b))
    step = data.draw(st.sampled_from([1, 5, 64, 1 << 20]))
    pieces = [(peer, chunk[i : i + step]) for peer, chunk in wire
              for i in range(0, len(chunk), step)]
    want = [_full_key(e) for e in _events(wire, True)]
    assert [_full_key(e) for e in _events(wire, False)] == want
    assert [_full_key(e) for e in _events(pieces, False)] == want
    # (a direction's consecutive packets in one read, as a capture's 64 KiB segments hold
    # them: the stream's packets taken in one run, the damage among them)
    assert [_full_key(e) for e in _events(_joined(wire), False)] == want
    if native.loaded:
        with native.off():
            assert [_full_key(e) for e in _events(pieces, False)] == want
            assert [_full_key(e) for e in _events(wire, True)] == want


def _env_order(events: list[Any]) -> list[int]:
    """Each packet's decode environment as the number of the object (by identity) in order of
    first use: a new one where a FORMAT_DESCRIPTION changed it."""
    seen: dict[int, int] = {}
    return [seen.setdefault(id(e.env), len(seen)) for e in events
            if isinstance(e, PacketDecoded)]


def test_one_read_of_many_event_packets() -> None:
    """The dump's event packets in one read, as a capture's 64 KiB segments hold them: the
    file's events twice over (a second FORMAT_DESCRIPTION in the middle of the read: a new
    decode environment from that packet on), one packet's sequence id wrong and the peer going
    on from the wrong one, later a second wrong one. The no-tree session gives what
    the tree-building one gives packet by packet, environments included."""
    wire, _, _ = _conversation()
    dump = next(i for i, (peer, data) in enumerate(wire)
                if peer == Peer.CLIENT and data[4] == Command.COM_BINLOG_DUMP)
    payloads = [data[4:] for peer, data in wire[dump + 1 :]
                if peer == Peer.SERVER and data[4] == 0]
    payloads = payloads + payloads[1:]  # (again from the FORMAT_DESCRIPTION on)
    ids = [(1 + k) & 0xFF for k in range(len(payloads))]
    wrong = len(payloads) // 3
    ids[wrong:] = [(i + 7) & 0xFF for i in ids[wrong:]]  # (the rest follows the wrong id)
    # later, the id the packet after the wrong one would have had by the old count: wrong
    # again (that alternative held only for the packet right after the mismatch)
    again = 2 * len(payloads) // 3
    ids[again:] = [(ids[wrong + 1] - 7 + k) & 0xFF for k in range(len(ids) - again)]
    packets = [encode_packet(p, i) for p, i in zip(payloads, ids, strict=True)]
    one_read = [*wire[: dump + 1], (Peer.SERVER, b"".join(packets))]
    by_packet = [*wire[: dump + 1], *((Peer.SERVER, p) for p in packets)]
    slow = _events(by_packet, record=True)
    fast = _events(one_read, record=False)
    assert [_full_key(e) for e in fast] == [_full_key(e) for e in slow]
    assert _env_order(fast) == _env_order(slow)
    assert len(set(_env_order(fast))) >= 3  # (the greeting's, and one per FORMAT_DESCRIPTION)
    assert sum(isinstance(e, SequenceMismatch) for e in fast) == 2
