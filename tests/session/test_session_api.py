"""What a driver may tell the session (it owns its phase): join_stream, end_dump, resync."""

from __future__ import annotations

import pytest

from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Peer, Phase, PhaseChanged, Role
from binlogscope.session.resync import find_packet_start, greeting_plausible
from binlogscope.wire import replication as rp
from binlogscope.wire.framing import HEADER_LEN, encode_packet
from tests.session.test_session import fixture_events


def test_phase_is_read_only() -> None:
    s = Session()
    with pytest.raises(AttributeError):
        s.phase = Phase.COMMAND  # type: ignore[misc]


def test_join_stream_from_command() -> None:
    """An observer joined mid-connection (COMMAND, nothing from the server yet) learns that the
    server's side is a binlog stream: events decode, semi-sync headers are detected."""
    s = Session(start_phase=Phase.COMMAND)
    ev = fixture_events()[0]
    s.join_stream()
    s.receive_data(encode_packet(rp.encode_binlog_packet(ev, 1), 9), Peer.SERVER)
    evs = list(s.events())
    assert s.phase == Phase.BINLOG_STREAM and s.semi_sync is None
    assert isinstance(evs[0], PhaseChanged) and evs[0].new == Phase.BINLOG_STREAM
    (p,) = [e for e in evs if isinstance(e, PacketDecoded)]
    assert p.binlog_event is not None and p.semi_sync == rp.SemiSyncHeader(1)


def test_join_stream_only_from_command() -> None:
    s = Session()  # CONNECT
    s.join_stream()
    assert list(s.events()) == [] and s.phase == Phase.CONNECT


def test_end_dump_returns_to_command() -> None:
    s = Session(Role.SOURCE, start_phase=Phase.BINLOG_STREAM)
    s.end_dump("EOF of a non-blocking dump")
    assert s.phase == Phase.COMMAND
    assert [e for e in s.events() if isinstance(e, PhaseChanged)] == [
        PhaseChanged(Phase.BINLOG_STREAM, Phase.COMMAND, "EOF of a non-blocking dump")]
    s.end_dump()  # not in the stream: nothing to do
    assert s.phase == Phase.COMMAND and list(s.events()) == []


def test_resync_heuristics() -> None:
    ev = fixture_events()[0]
    pkt = encode_packet(rp.encode_binlog_packet(ev), 3)
    assert find_packet_start(b"\x01\x02" + pkt, binlog=True) == (2, None)
    assert greeting_plausible(Peer.SERVER, b"\x0a8.0") and not greeting_plausible(
        Peer.CLIENT, b"\x0a")


def test_reply_table() -> None:
    """A command sets the reply the session expects; the reply moves it on."""
    from binlogscope.session import Reply
    from binlogscope.wire import commands as cm
    from binlogscope.wire import handshake as hs
    from binlogscope.wire import results as rs
    from binlogscope.wire.constants import Command

    client = Session(Role.REPLICA, start_phase=Phase.COMMAND)
    source = Session(Role.SOURCE, start_phase=Phase.COMMAND)

    def both(data: bytes, peer: Peer) -> None:
        (source if peer is Peer.CLIENT else client).receive_data(data, peer)
        list(client.events())
        list(source.events())

    both(client.send(cm.SimpleCommand(Command.COM_PING)), Peer.CLIENT)
    assert client.expected_reply is Reply.OK and client.last_command == Command.COM_PING
    both(source.send(hs.OkPacket()), Peer.SERVER)
    assert client.expected_reply is Reply.NONE
    both(client.send(cm.ComQuery("SELECT 1")), Peer.CLIENT)
    assert client.expected_reply is Reply.QUERY
    col = rs.ColumnDefinition41(name="1")
    both(source.send(rs.ColumnCount(1)), Peer.SERVER)
    assert client.expected_reply is Reply.COLUMNS
    both(source.send(col), Peer.SERVER)
    assert client.expected_reply in (Reply.ROWS, Reply.COLUMNS_EOF)
    data = source.send_result_set([col], [rs.TextRow((b"1",))])
    client2 = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    client2.receive_data(encode_packet(b"\x03SELECT 1", 0), Peer.CLIENT)
    client2.receive_data(data, Peer.SERVER)
    done = [e for e in client2.events() if type(e).__name__ == "ResultSetComplete"]
    assert len(done) == 1 and done[0].names == ("1",) and len(done[0].rows) == 1
    assert client2.expected_reply is Reply.NONE


def test_a_packet_over_16_mib_in_small_reads() -> None:
    """A continued packet (two fragments) fed 64 KiB at a time: one packet, both fragments,
    and the buffered bytes are not joined again at every read."""
    query = "SELECT '" + "x" * ((1 << 24) + 100) + "'"
    payload = b"\x03" + query.encode()
    data = encode_packet(payload, 0)
    s = Session(start_phase=Phase.COMMAND, record=False)
    got: list[object] = []
    for i in range(0, len(data), 1 << 16):
        s.receive_data(data[i : i + (1 << 16)], Peer.CLIENT)
        got.extend(s.events())
        assert s._need[Peer.CLIENT] in (HEADER_LEN, (1 << 24) - 1 + HEADER_LEN, len(data))
    evs = [e for e in got if isinstance(e, PacketDecoded)]
    assert len(evs) == 1 and evs[0].kind == "com_query" and evs[0].payload == payload
    assert evs[0].wire_length == len(data) and evs[0].error is None
