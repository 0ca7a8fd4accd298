"""Session state machine: an in-memory REPLICA <-> SOURCE conversation (h11 ConnectionPair)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.session import BinlogEventData, ProtocolViolation, Session
from binlogscope.session.events import (
    ConnectionClosed,
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    ResultSetComplete,
    Role,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.wire import commands as cm
from binlogscope.wire import handshake as hs
from binlogscope.wire import replication as rp
from binlogscope.wire import results as rs
from binlogscope.wire.binlog.header import HEADER
from binlogscope.wire.constants import CapabilityFlag as C
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.node import check_tiling

FIXTURE = Path("/work/shared/fixtures/Percona-Lab__percona-binlog-server/mtr/binlog_streaming/"
               "std_data/data_80045_gtid/binlog.000001")  # MySQL 8.0.45, CRC32

SERVER_CAPS = 0xDFFFFFFF & ~C.CLIENT_SSL & ~C.CLIENT_COMPRESS
CLIENT_CAPS = int(C.CLIENT_LONG_PASSWORD | C.CLIENT_PROTOCOL_41 | C.CLIENT_SECURE_CONNECTION
                  | C.CLIENT_PLUGIN_AUTH | C.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
                  | C.CLIENT_TRANSACTIONS | C.CLIENT_DEPRECATE_EOF | C.CLIENT_SESSION_TRACK)


def fixture_events() -> list[bytes]:
    data = FIXTURE.read_bytes()
    out, pos = [], 4
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append(data[pos : pos + size])
        pos += size
    return out


def artificial_rotate(name: str) -> bytes:
    body = struct.pack("<Q", 4) + name.encode()
    ev = HEADER.pack(0, 4, 1, 19 + len(body) + 4, 0, 0x20) + body
    return ev + struct.pack("<I", zlib.crc32(ev))


class ConnectionPair:
    """Two sessions wired back to back; every byte one sends the other receives."""

    def __init__(self) -> None:
        self.replica = Session(Role.REPLICA)
        self.source = Session(Role.SOURCE)
        self.observer = Session(Role.OBSERVER)
        self.log: dict[str, list[SessionEvent]] = {"replica": [], "source": [], "observer": []}

    def send(self, who: str, value: Any) -> list[PacketDecoded]:
        me, other = ((self.replica, self.source) if who == "replica"
                     else (self.source, self.replica))
        sender = Peer.CLIENT if who == "replica" else Peer.SERVER
        data = me.send(value)
        other.receive_data(data, sender)
        self.observer.receive_data(data, sender)
        got = {"replica": list(self.replica.events()), "source": list(self.source.events()),
               "observer": list(self.observer.events())}
        for k, v in got.items():
            self.log[k].extend(v)
        peer_events = got["source" if who == "replica" else "replica"]
        return [e for e in peer_events if isinstance(e, PacketDecoded)]

    def check_clean(self) -> None:
        for name, evs in self.log.items():
            bad = [e for e in evs if isinstance(e, DecodeError | SequenceMismatch)]
            assert bad == [], (name, bad[:3])
            for e in evs:
                if isinstance(e, PacketDecoded):
                    assert e.node is not None and check_tiling(e.node) == [], (name, e.kind)


def handshake_and_login(pair: ConnectionPair) -> None:
    greeting = hs.HandshakeV10("8.0.45", 12, b"abcdefghij0123456789", SERVER_CAPS,
                               auth_plugin_name="mysql_native_password")
    (p,) = pair.send("source", greeting)
    assert p.kind == "handshake_v10" and p.value == greeting and p.seq == 0
    assert pair.replica.phase == Phase.AUTH
    resp = hs.HandshakeResponse41(CLIENT_CAPS, "repl", b"\x01" * 20,
                                  client_plugin_name="mysql_native_password")
    (p,) = pair.send("replica", resp)
    assert p.kind == "handshake_response41" and p.seq == 1 and p.value == resp
    (p,) = pair.send("source", hs.OkPacket())
    assert p.kind == "ok" and p.seq == 2
    for s in (pair.replica, pair.source, pair.observer):
        assert s.phase == Phase.COMMAND
        assert s.capabilities == CLIENT_CAPS & SERVER_CAPS
        assert s.deprecate_eof


def test_whole_replication_conversation() -> None:
    pair = ConnectionPair()
    handshake_and_login(pair)

    # SET queries answered OK; the semi-sync one switches the header on
    (q,) = pair.send("replica",
                     cm.ComQuery("SET @master_binlog_checksum = @@global.binlog_checksum"))
    assert q.kind == "com_query" and q.seq == 0
    (ok,) = pair.send("source", hs.OkPacket())
    assert ok.seq == 1 and pair.replica.semi_sync is False
    pair.send("replica", cm.ComQuery("SET @rpl_semi_sync_slave = 1"))
    pair.send("source", hs.OkPacket())
    assert pair.replica.semi_sync and pair.source.semi_sync and pair.observer.semi_sync

    # a SELECT answered with a result set (DEPRECATE_EOF: no EOF packets, OK 0xFE at the end)
    pair.send("replica", cm.ComQuery("SELECT @@GLOBAL.SERVER_ID"))
    data = pair.source.send_result_set([rs.ColumnDefinition41("@@GLOBAL.SERVER_ID", 8)],
                                       [rs.TextRow((b"1",))])
    pair.replica.receive_data(data, Peer.SERVER)
    pair.observer.receive_data(data, Peer.SERVER)
    rep = list(pair.replica.events())
    pair.log["replica"].extend(rep)
    pair.log["observer"].extend(pair.observer.events())
    pair.log["source"].extend(pair.source.events())
    kinds = [(e.kind, e.seq) for e in rep if isinstance(e, PacketDecoded)]
    assert kinds == [("column_count", 1), ("column_definition41", 2), ("text_row", 3), ("ok", 4)]
    (done,) = [e for e in rep if isinstance(e, ResultSetComplete)]
    assert done.names == ("@@GLOBAL.SERVER_ID",) and done.rows == (rs.TextRow((b"1",)),)

    # register, then dump
    (p,) = pair.send("replica", cm.ComRegisterSlave(1001, "h", "repl", "secret", 3306))
    assert p.kind == "com_register_slave" and p.value.server_id == 1001
    pair.send("source", hs.OkPacket())
    (p,) = pair.send("replica", cm.ComBinlogDump(4, 1001, "binlog.000001"))
    assert p.kind == "com_binlog_dump" and p.seq == 0
    for s in (pair.replica, pair.source, pair.observer):
        assert s.phase == Phase.BINLOG_STREAM

    # the stream: artificial ROTATE, then the fixture's events; ACKs for XIDs
    events = [artificial_rotate("binlog.000001"), *fixture_events()]
    seen = []
    acks = 0
    for i, ev in enumerate(events):
        want_ack = ev[4] == 16  # XID_EVENT ends a transaction
        (p,) = pair.send("source", BinlogEventData(ev, ack_requested=want_ack))
        assert p.kind == "binlog_event" and p.seq == (1 + i) & 0xFF
        assert p.semi_sync is not None and p.semi_sync.ack_requested == want_ack
        assert p.binlog_event is not None and p.binlog_event.error is None
        assert p.binlog_event.checksum_ok is True
        seen.append(p.binlog_event.type_name)
        if want_ack:
            pos = struct.unpack_from("<I", ev, 13)[0]
            (a,) = pair.send("replica", rp.SemiSyncAck(pos, "binlog.000001"))
            assert a.kind == "semi_sync_ack" and a.seq == 0 and a.value.binlog_pos == pos
            acks += 1
    assert seen[0] == "ROTATE_EVENT" and seen[1] == "FORMAT_DESCRIPTION_EVENT"
    assert seen.count("WRITE_ROWS_EVENT") == 6 and acks == 3
    assert pair.replica.phase == Phase.BINLOG_STREAM  # ACKs do not leave the stream

    # end of a non-blocking dump
    (p,) = pair.send("source", hs.EofPacket())
    assert p.kind == "ok" and p.value.header == 0xFE  # DEPRECATE_EOF: an OK with 0xFE
    assert pair.replica.phase == Phase.COMMAND
    pair.check_clean()
    # the observer saw the same packets as each side
    obs = [(e.direction, e.kind) for e in pair.log["observer"] if isinstance(e, PacketDecoded)]
    rep_all = [(e.direction, e.kind) for e in pair.log["replica"]
               if isinstance(e, PacketDecoded)]
    assert obs == rep_all


def test_semi_sync_not_negotiated_means_no_header() -> None:
    pair = ConnectionPair()
    handshake_and_login(pair)
    pair.send("replica", cm.ComBinlogDump(4, 1001, "binlog.000001"))
    ev = fixture_events()[0]
    (p,) = pair.send("source", BinlogEventData(ev))
    assert p.semi_sync is None and p.binlog_event is not None
    assert p.binlog_event.type_name == "FORMAT_DESCRIPTION_EVENT"
    try:
        pair.source.send(BinlogEventData(ev, ack_requested=True))
    except ProtocolViolation as exc:
        assert "semi-sync" in str(exc)
    else:
        raise AssertionError("ACK without semi-sync must be refused")


def test_role_checks() -> None:
    s = Session(Role.REPLICA)
    try:
        s.send(hs.OkPacket())
    except ProtocolViolation:
        pass
    else:
        raise AssertionError("a replica cannot send an OK packet")
    try:
        Session().send(cm.COM_PING)
    except ProtocolViolation:
        pass
    else:
        raise AssertionError("an observer cannot send")


def test_tls_switch_stops_decoding() -> None:
    s = Session()
    greeting = hs.HandshakeV10("8.0.45", 1, b"x" * 20, 0xDFFFFFFF)
    s.receive_data(encode_packet(hs.encode_handshake_v10(greeting), 0), Peer.SERVER)
    ssl = encode_packet(hs.encode_ssl_request(hs.SslRequest(CLIENT_CAPS)), 1)
    s.receive_data(ssl + b"\x16\x03\x01\x02\x00" + b"\x01" * 40, Peer.CLIENT)
    s.receive_data(b"\x16\x03\x03\x00\x10" + b"\x02" * 16, Peer.SERVER)
    evs = list(s.events())
    assert [e.kind for e in evs if isinstance(e, PacketDecoded)] == ["handshake_v10",
                                                                    "ssl_request"]
    (tls,) = [e for e in evs if isinstance(e, TlsStarted)]
    assert tls.offset == len(ssl) and tls.node.name == "encrypted"
    assert s.phase == Phase.ENCRYPTED
    assert s.opaque_bytes == {Peer.CLIENT: 45, Peer.SERVER: 21}
    assert not [e for e in evs if isinstance(e, DecodeError)]


def test_observer_told_it_sees_the_plaintext_decodes_after_the_tls_switch() -> None:
    """A driver that terminates TLS (the proxy) feeds the decrypted bytes after saying so: the
    connection phase goes on (HandshakeResponse with sequence id 2, OK); without the call the
    same bytes stay opaque."""
    greeting = hs.HandshakeV10("8.0.45", 1, b"x" * 20, 0xDFFFFFFF)
    ssl = encode_packet(hs.encode_ssl_request(hs.SslRequest(CLIENT_CAPS | C.CLIENT_SSL)), 1)
    response = encode_packet(hs.encode_handshake_response41(hs.HandshakeResponse41(
        CLIENT_CAPS | C.CLIENT_SSL, username="u", auth_response=b"r" * 20)), 2)
    ok = encode_packet(hs.encode_ok(hs.OkPacket()), 3)
    query = encode_packet(cm.encode_com_query(cm.ComQuery("SELECT 1")), 0)
    for told in (True, False):
        s = Session()
        s.receive_data(encode_packet(hs.encode_handshake_v10(greeting), 0), Peer.SERVER)
        s.receive_data(ssl, Peer.CLIENT)
        assert s.phase == Phase.CONNECT  # (queued: nothing is decoded before events())
        if told:
            s.tls_established(plaintext=True)
        s.receive_data(response, Peer.CLIENT)
        s.receive_data(ok, Peer.SERVER)
        s.receive_data(query, Peer.CLIENT)
        evs = list(s.events())
        kinds = [e.kind for e in evs if isinstance(e, PacketDecoded)]
        assert not [e for e in evs if isinstance(e, DecodeError | SequenceMismatch)]
        if told:
            assert kinds == ["handshake_v10", "ssl_request", "handshake_response41", "ok",
                             "com_query"]
            assert s.phase == Phase.COMMAND
        else:
            assert kinds == ["handshake_v10", "ssl_request"]
            assert s.phase == Phase.ENCRYPTED
    s = Session()
    s.tls_established()  # an observer not told it sees the plaintext: nothing changes
    assert s.phase == Phase.CONNECT and not list(s.events())


def test_damaged_packet_resyncs_at_the_next_one() -> None:
    s = Session(start_phase=Phase.COMMAND)
    s.receive_data(encode_packet(b"\x03SELECT 1", 0), Peer.CLIENT)
    s.receive_data(encode_packet(b"\xff\x01", 1), Peer.SERVER)  # ERR cut after 1 byte of code
    s.receive_data(encode_packet(b"\x0e", 0), Peer.CLIENT)
    s.receive_data(encode_packet(hs.encode_ok(hs.OkPacket()), 1), Peer.SERVER)
    evs = list(s.events())
    pk = [e for e in evs if isinstance(e, PacketDecoded)]
    assert [e.kind for e in pk] == ["com_query", "err", "command", "ok"]
    assert pk[1].error is not None and pk[1].value is None
    (err,) = [e for e in evs if isinstance(e, DecodeError)]
    assert err.offset == 5 and "error_code" in err.message  # server bytes: header 0-3, 0xff
    assert pk[1].node is not None and check_tiling(pk[1].node) == []
    assert pk[3].value == hs.OkPacket()


def test_sequence_mismatch_is_reported() -> None:
    s = Session(start_phase=Phase.COMMAND)
    s.receive_data(encode_packet(b"\x0e", 0), Peer.CLIENT)
    s.receive_data(encode_packet(hs.encode_ok(hs.OkPacket()), 5), Peer.SERVER)
    (m,) = [e for e in s.events() if isinstance(e, SequenceMismatch)]
    assert (m.direction, m.expected, m.got, m.offset) == (Peer.SERVER, 1, 5, 0)


def test_closed_mid_packet() -> None:
    s = Session(start_phase=Phase.COMMAND)
    s.receive_data(b"\x10\x00\x00\x00\x03SEL", Peer.CLIENT)
    s.receive_data(b"", Peer.CLIENT)
    evs = list(s.events())
    (err,) = [e for e in evs if isinstance(e, DecodeError)]
    assert "middle of a packet" in err.message and err.node is not None
    assert err.node.length == 8
    assert [e for e in evs if isinstance(e, ConnectionClosed)]


def test_joined_mid_connection_without_a_greeting() -> None:
    s = Session()
    s.receive_data(encode_packet(b"\x03SELECT 1", 0), Peer.CLIENT)
    evs = list(s.events())
    assert s.phase == Phase.COMMAND
    assert [e.kind for e in evs if isinstance(e, PacketDecoded)] == ["com_query"]
    assert not [e for e in evs if isinstance(e, DecodeError | SequenceMismatch)]


def test_mid_stream_semi_sync_detection() -> None:
    ev = fixture_events()[0]
    s = Session(start_phase=Phase.BINLOG_STREAM, semi_sync=None)
    s.receive_data(encode_packet(rp.encode_binlog_packet(ev, 1), 17), Peer.SERVER)
    s.receive_data(encode_packet(rp.encode_binlog_packet(ev), 18), Peer.SERVER)
    pk = [e for e in s.events() if isinstance(e, PacketDecoded)]
    assert [p.semi_sync for p in pk] == [rp.SemiSyncHeader(1), None]
    assert all(p.binlog_event is not None and p.binlog_event.checksum_ok for p in pk)


def test_fast_mode_builds_no_nodes() -> None:
    s = Session(start_phase=Phase.BINLOG_STREAM, record=False)
    for i, ev in enumerate(fixture_events()):
        s.receive_data(encode_packet(rp.encode_binlog_packet(ev), i), Peer.SERVER)
    pk = [e for e in s.events() if isinstance(e, PacketDecoded)]
    assert len(pk) == len(fixture_events())
    assert all(p.node is None and p.error is None for p in pk)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(Phase)[:4]), st.lists(st.tuples(st.booleans(), st.binary(max_size=60)),
                                                 max_size=8))
def test_random_bytes_never_raise(phase: Phase, chunks: list[tuple[bool, bytes]]) -> None:
    s = Session(start_phase=phase)
    for client, data in chunks:
        s.receive_data(data, Peer.CLIENT if client else Peer.SERVER)
        for e in s.events():
            if isinstance(e, PacketDecoded) and e.node is not None:
                assert check_tiling(e.node) == []
    s.receive_data(b"", Peer.SERVER)
    s.receive_data(b"", Peer.CLIENT)
    list(s.events())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=6))
def test_random_framed_payloads_never_raise(payloads: list[bytes]) -> None:
    for phase in (Phase.CONNECT, Phase.AUTH, Phase.COMMAND, Phase.BINLOG_STREAM):
        s = Session(start_phase=phase, semi_sync=None)
        for i, p in enumerate(payloads):
            s.receive_data(encode_packet(p, i), Peer.SERVER if i % 2 else Peer.CLIENT)
        evs = list(s.events())
        assert len([e for e in evs if isinstance(e, PacketDecoded)]) == len(payloads)
