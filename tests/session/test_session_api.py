"""What a driver may tell the session (it owns its phase): join_stream, end_dump, resync."""

from __future__ import annotations

import pytest

from binlogscope.events import PacketDecoded, Peer, Phase, PhaseChanged, Role
from binlogscope.session import Session
from binlogscope.session.resync import find_packet_start, greeting_plausible
from binlogscope.wire import replication as rp
from binlogscope.wire.framing import encode_packet
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
