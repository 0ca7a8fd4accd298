"""The proxy's recorder on compressed sessions (drivers/proxy/record_frames.py): a
COM_CHANGE_USER after the login, inside compressed frames - its arguments, the server's new
nonce (AuthSwitchRequest) and the client's auth switch response - is masked through the
inflated view, in deflated (zlib, zstd) and stored frames, whole or cut anywhere; the dump's
frames are recorded as relayed; ``pcap`` reads the recording back. Before, the frames after
the login were written unmasked (issue 32).

A real client doing it through the proxy (mysql-connector-python with ``compress=True`` and
``cmd_change_user`` against the real MariaDB) is at the end."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import DecodeError, PacketDecoded, Peer, Phase, SequenceMismatch
from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from binlogscope.wire.compressed import ZLIB, ZSTD, FrameReader, encode_frames
from binlogscope.wire.constants import CapabilityFlag, Command
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    AuthSwitchRequest,
    AuthSwitchResponse,
    HandshakeResponse41,
    HandshakeV10,
    encode_auth_switch_request,
    encode_auth_switch_response,
    encode_handshake_response41,
    encode_handshake_v10,
)
from binlogscope.wire.responses import OkPacket, encode_ok
from tests.ci_support import unavailable
from tests.drivers.proxy.test_proxy_record import CAPS, CLIENT, SERVER, _event, record, streams

NONCE = bytes(range(0x41, 0x55))
AUTH = bytes(range(0xA0, 0xB4))
NEW_NONCE = bytes(range(0x21, 0x35))  # the AuthSwitchRequest's after COM_CHANGE_USER
CHANGE_AUTH = bytes(range(0xC0, 0xD4))  # COM_CHANGE_USER's auth response
SWITCH_AUTH = bytes(range(0xE0, 0xF4))  # the client's auth switch response
USER2 = b"second_user_name"
SECRETS = [NONCE[:8], NONCE[8:], AUTH, NEW_NONCE, CHANGE_AUTH, SWITCH_AUTH, USER2]
FLAG = {ZLIB: CapabilityFlag.CLIENT_COMPRESS,
        ZSTD: CapabilityFlag.CLIENT_ZSTD_COMPRESSION_ALGORITHM}


def change_user() -> bytes:
    """A COM_CHANGE_USER payload (user, auth response, schema, charset, plugin, padding to
    make it long enough to be deflated)."""
    return (bytes([Command.COM_CHANGE_USER]) + USER2 + b"\0" + bytes([len(CHANGE_AUTH)])
            + CHANGE_AUTH + b"some_schema_name\0" + (33).to_bytes(2, "little")
            + b"mysql_native_password\0")


def compressed_session(algorithm: str, *, store: bool = False, events: int = 12
                       ) -> list[tuple[Peer | None, bytes]]:
    """A login with compression, then (in frames) a query and its OK, a COM_CHANGE_USER with
    an auth switch, and a binlog dump. ``store``: the change-user exchange in stored frames
    (uncompressed length 0) rather than deflated ones."""
    caps = int(CAPS | FLAG[algorithm])
    out: list[tuple[Peer | None, bytes]] = []
    out.append((Peer.SERVER, encode_packet(encode_handshake_v10(
        HandshakeV10("11.4.2-MariaDB", 7, NONCE, caps)), 0)))
    out.append((Peer.CLIENT, encode_packet(encode_handshake_response41(
        HandshakeResponse41(caps, "repl", AUTH, None, "mysql_native_password")), 1)))
    out.append((Peer.SERVER, encode_packet(encode_ok(OkPacket()), 2)))
    minimum = 10**9 if store else 0

    def frames(peer: Peer, packets: bytes, seq: int) -> None:
        out.append((peer, encode_frames(packets, seq, algorithm, min_length=minimum)[0]))

    frames(Peer.CLIENT, encode_packet(b"\x03SELECT 1", 0), 0)
    frames(Peer.SERVER, encode_packet(encode_ok(OkPacket()), 1), 1)
    frames(Peer.CLIENT, encode_packet(change_user(), 0), 0)
    frames(Peer.SERVER, encode_packet(encode_auth_switch_request(
        AuthSwitchRequest("mysql_native_password", NEW_NONCE)), 1), 1)
    frames(Peer.CLIENT, encode_packet(encode_auth_switch_response(
        AuthSwitchResponse(SWITCH_AUTH)), 2), 2)
    frames(Peer.SERVER, encode_packet(encode_ok(OkPacket()), 3), 3)
    frames(Peer.CLIENT, encode_packet(encode_com_binlog_dump(
        ComBinlogDump(4, 99, "bin.000001")), 0), 0)
    dump = b"".join(encode_packet(_event(i, 2000), (i + 1) % 256) for i in range(events))
    frames(Peer.SERVER, dump, 1)
    return out


def plain_packets(data: bytes, algorithm: str, login: int) -> list[bytes]:
    """The payloads of the packets in one direction of a recording: ``login`` plain packets,
    then frames (inflated)."""
    out, pos = [], 0
    for _ in range(login):
        n = int.from_bytes(data[pos:pos + 3], "little")
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    fr = FrameReader(algorithm, pos, 0)
    fr.feed(data[pos:])
    plain = bytearray()
    while (f := fr.next_frame()) is not None:
        plain += f.plain
    assert not fr.pending
    pos = 0
    while pos < len(plain):
        n = int.from_bytes(plain[pos:pos + 3], "little")
        out.append(bytes(plain[pos + 4:pos + 4 + n]))
        pos += 4 + n
    return out


def _masked(field: bytes, inside: bytes, where: int) -> None:
    """``field`` (its length) at ``where`` in ``inside`` is all '*'."""
    assert inside[where:where + len(field)] == b"*" * len(field), inside.hex()


@pytest.mark.parametrize("algorithm", [ZLIB, ZSTD])
@pytest.mark.parametrize("store", [False, True], ids=["deflated", "stored"])
@pytest.mark.parametrize("cut", [0, 5], ids=["whole", "cut"])
def test_change_user_inside_compressed_frames_is_masked(tmp_path: Path, algorithm: str,
                                                        store: bool, cut: int) -> None:
    packets = compressed_session(algorithm, store=store)
    rec = tmp_path / "rec.pcapng"
    record(rec, packets, cut=cut)
    got = streams(rec)
    blob = rec.read_bytes()
    client = plain_packets(got[Peer.CLIENT], algorithm, 1)
    server = plain_packets(got[Peer.SERVER], algorithm, 2)
    inflated = b"".join(client + server)
    present = [s.hex() for s in SECRETS if s in blob or s in inflated]
    assert not present, present
    # what is masked is those secrets, '*' bytes of the same length; the rest is as sent
    change = change_user()
    assert client[1] == b"\x03SELECT 1"
    assert len(client[2]) == len(change) and client[2][:1] == bytes([Command.COM_CHANGE_USER])
    assert set(client[2][1:]) == {0x2A}
    assert client[3] == b"*" * len(SWITCH_AUTH)
    switch = encode_auth_switch_request(AuthSwitchRequest("mysql_native_password", NEW_NONCE))
    at = len(switch) - len(NEW_NONCE)
    assert server[3][:at] == switch[:at]  # (the plugin name is no secret)
    _masked(NEW_NONCE, server[3], at)
    assert server[5:] == [_event(i, 2000) for i in range(12)]
    # the dump's frames (after the change-user exchange) are recorded as relayed
    sent = b"".join(d for p, d in packets if p is Peer.SERVER)
    assert got[Peer.SERVER].endswith(packets[-1][1])
    if store:  # stored frames: masked in place, the stream keeps its length
        assert len(got[Peer.SERVER]) == len(sent)
    # and `pcap` reads it all back: the change user, the auth switch, the dump's events
    items = list(read_capture(str(rec), {SERVER[1]}))
    decoded = [it.event for it in items if isinstance(it.event, PacketDecoded)]
    kinds = [e.kind for e in decoded]
    assert "auth_switch_request" in kinds and kinds.count("binlog_event") == 12, kinds
    # (the events' bodies are filler: only their decoding may complain, not the framing)
    errors = [e.message for e in (it.event for it in items) if isinstance(e, DecodeError)
              and "event" not in e.message]
    mismatches = [e for e in (it.event for it in items) if isinstance(e, SequenceMismatch)]
    assert not errors and not mismatches, (errors, mismatches)


def test_record_raw_keeps_the_compressed_change_user(tmp_path: Path) -> None:
    """``--record-raw``: the frames are written as relayed, secrets and all."""
    packets = compressed_session(ZLIB)
    rec = tmp_path / "raw.pcapng"
    record(rec, packets, raw=True, cut=5)
    got = streams(rec)
    for peer in (Peer.CLIENT, Peer.SERVER):
        assert got[peer] == b"".join(d for p, d in packets if p is peer)
    inflated = b"".join(plain_packets(got[Peer.CLIENT], ZLIB, 1)
                        + plain_packets(got[Peer.SERVER], ZLIB, 2))
    assert all(s in inflated for s in (NEW_NONCE, CHANGE_AUTH, SWITCH_AUTH))


def test_a_frame_that_does_not_inflate_is_masked_whole(tmp_path: Path) -> None:
    """A client frame whose payload is not zlib (a hostile peer): nothing in it can be read,
    so its payload is '*' in the recording (its header kept); the session goes on."""
    packets = compressed_session(ZLIB)
    bad = bytearray(packets[3][1])  # the client's first frame (COM_QUERY, stored)
    junk = b"\x78\x9cNOT-ZLIB-" + CHANGE_AUTH + b"-" * 40
    bad = bytearray(len(junk).to_bytes(3, "little") + b"\0" + (90).to_bytes(3, "little") + junk)
    packets[3] = (Peer.CLIENT, bytes(bad))
    rec = tmp_path / "bad.pcapng"
    record(rec, packets)
    client = streams(rec)[Peer.CLIENT]
    assert CHANGE_AUTH not in client and b"*" * len(junk) in client
    header = bad[:7]
    assert bytes(header) + b"*" * len(junk) in client
    # the frames after it are still read and masked
    assert SWITCH_AUTH not in client


# ------------------------------------------------------------------ a real client
class ConnectorC:
    """MariaDB Connector/C (libmariadb, the library of the mariadb client tools) through
    ctypes: the one client here that sends COM_CHANGE_USER over the compressed protocol
    (mysql-connector-python refuses: "Change user is not supported with compression";
    pymysql has no change user)."""

    MYSQL_OPT_COMPRESS = 1

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("mariadb")
        if name is None:
            unavailable("libmariadb (MariaDB Connector/C) is not installed")
        lib = self.lib = ctypes.CDLL(name)
        lib.mysql_init.restype = ctypes.c_void_p
        lib.mysql_init.argtypes = [ctypes.c_void_p]
        lib.mysql_options.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.mysql_real_connect.restype = ctypes.c_void_p
        lib.mysql_real_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint,
                                           ctypes.c_char_p, ctypes.c_ulong]
        lib.mysql_change_user.restype = ctypes.c_char  # my_bool
        lib.mysql_change_user.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_char_p]
        lib.mysql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.mysql_store_result.restype = ctypes.c_void_p
        lib.mysql_store_result.argtypes = [ctypes.c_void_p]
        lib.mysql_fetch_row.restype = ctypes.POINTER(ctypes.c_char_p)
        lib.mysql_fetch_row.argtypes = [ctypes.c_void_p]
        lib.mysql_free_result.argtypes = [ctypes.c_void_p]
        lib.mysql_error.restype = ctypes.c_char_p
        lib.mysql_error.argtypes = [ctypes.c_void_p]
        lib.mysql_close.argtypes = [ctypes.c_void_p]
        self.ctypes = ctypes
        self.h = lib.mysql_init(None)

    def connect(self, port: int, user: str, password: str) -> None:
        self.lib.mysql_options(self.h, self.MYSQL_OPT_COMPRESS, None)
        ok = self.lib.mysql_real_connect(self.h, b"127.0.0.1", user.encode(), password.encode(),
                                         None, port, None, 0)
        assert ok, self.lib.mysql_error(self.h)

    def change_user(self, user: str, password: str) -> None:
        failed = self.lib.mysql_change_user(self.h, user.encode(), password.encode(), None)
        assert failed == b"\0", self.lib.mysql_error(self.h)

    def value(self, query: str) -> str:
        assert self.lib.mysql_query(self.h, query.encode()) == 0, self.lib.mysql_error(self.h)
        res = self.lib.mysql_store_result(self.h)
        assert res, self.lib.mysql_error(self.h)
        row = self.lib.mysql_fetch_row(res)
        out = str(row[0].decode())
        self.lib.mysql_free_result(res)
        return out

    def close(self) -> None:
        self.lib.mysql_close(self.h)


def test_connector_c_change_user_with_compression(mariadb: Any, tmp_path: Path) -> None:
    """MariaDB Connector/C with MYSQL_OPT_COMPRESS through the proxy to the real MariaDB: a
    query, ``mysql_change_user`` to another user, a query as that user. Read back with
    ``pcap``, the recording holds both users' queries in zlib frames; the COM_CHANGE_USER's
    arguments and every secret leaf of the auth exchange after it are '*' (found by decoding
    the recording, not by a guess of where they are); neither password nor the second user's
    name (inside the masked arguments) is in the file."""
    from binlogscope.wire.fields import is_sensitive
    from tests.watch_support import CLI, ENV, run_sql, start_proxy

    pw1, pw2 = "First-compressed-pw-19", "Second-compressed-pw-83"
    run_sql(mariadb, "SET SESSION sql_log_bin = 0",
            f"CREATE USER IF NOT EXISTS 'zc_one'@'%' IDENTIFIED BY '{pw1}'",
            f"CREATE USER IF NOT EXISTS 'zc_second'@'%' IDENTIFIED BY '{pw2}'")
    client = ConnectorC()
    rec = tmp_path / "rec.pcapng"
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--record", str(rec),
                              stdout=subprocess.DEVNULL)
    try:
        client.connect(port, "zc_one", pw1)
        assert client.value("SELECT CONCAT(CURRENT_USER(), REPEAT('x', 300))") \
            .startswith("zc_one@")
        client.change_user("zc_second", pw2)
        assert client.value("SELECT CONCAT(CURRENT_USER(), REPEAT('y', 300))") \
            .startswith("zc_second@")
        client.close()
    finally:
        proxy.terminate()
        proxy.communicate(timeout=30)
    blob = rec.read_bytes()
    assert pw1.encode() not in blob and pw2.encode() not in blob
    # (trees on: the secret leaves below are found in them)
    items = list(read_capture(str(rec), {mariadb.port}, record=True))
    decoded = [it.event for it in items if isinstance(it.event, PacketDecoded)]
    conns = {id(it.event): it.conn for it in items if isinstance(it.event, PacketDecoded)}
    assert len(set(conns.values())) == 1, sorted(set(conns.values()))  # one connection
    kinds = [e.kind for e in decoded]
    queries = [e.value.query for e in decoded if e.kind == "com_query"]
    assert any("REPEAT('x'" in q for q in queries) and any("REPEAT('y'" in q for q in queries)
    # the client's commands (sequence id 0 in the command phase: not an auth exchange's answer,
    # whose first byte may be anything; not another connection's login)
    sent = [e for e in decoded if e.direction is Peer.CLIENT]
    changes = [e for e in sent if e.phase is Phase.COMMAND and e.seq == 0
               and e.payload[:1] == bytes([Command.COM_CHANGE_USER])]
    # (on failure: what each match was, without its bytes - they may hold a scramble)
    assert len(changes) == 1, [(e.kind, e.phase, e.seq, e.payload_length,
                               set(e.payload[1:]) == {0x2A}) for e in changes]
    (change,) = changes
    # (on failure never the bytes, not even as a set: they are a secret; hence the booleans)
    masked = len(change.payload) > 30 and set(change.payload[1:]) == {0x2A}
    assert masked, (len(change.payload), change.payload.count(0x2A))
    after = decoded[decoded.index(change) + 1:]
    answers = [e for e in sent[sent.index(change) + 1:] if e.seq != 0]
    # (on failure: each answer's place and how much of it is masked, never its bytes; and the
    # exchange's packets around it in the order read)
    assert answers and all(set(e.payload) == {0x2A} for e in answers), (
        [(e.kind, e.seq, e.offset, e.payload_length, e.payload.count(0x2A)) for e in answers],
        [(e.direction.value, e.kind, e.seq, e.offset, e.payload_length)
         for e in decoded[decoded.index(change) - 2:decoded.index(change) + 6]])
    secret = [(e, n) for e in after[:4] if e.node is not None
              for _, n in e.node.walk() if n.length and not n.children and is_sensitive(n)]
    assert secret, [e.kind for e in after[:4]]  # (the nonce and the answer were found)
    for e, n in secret:  # (the auth switch's nonce, the client's answer, if the server asked)
        lo = n.offset - e.offset - 4
        masked = set(e.payload[lo:lo + n.length]) == {0x2A}
        assert masked, (e.kind, n.name, n.length, e.payload[lo:lo + n.length].count(0x2A))
    assert "ok" in kinds[kinds.index("com_query"):], kinds
    out = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(rec)],
                         capture_output=True, text=True, timeout=60, env=ENV)
    assert out.returncode == 0, out.stderr
    assert '"kind":"compressed_frame"' in out.stdout
    assert '"decode_error"' not in out.stdout and '"sequence_mismatch"' not in out.stdout


def test_a_full_queue_in_a_compressed_session_leaves_the_rest_out(tmp_path: Path) -> None:
    """Bytes of a compressed session that the queue could not take: its frames cannot be
    followed past them (nor its secrets found), so nothing more of the connection is written;
    the file says how many bytes are missing and why, and holds no secret."""
    import threading

    from binlogscope.drivers.proxy.record import ProxyRecorder

    packets = compressed_session(ZLIB, events=40)
    rec_path = tmp_path / "gap.pcapng"
    rec = ProxyRecorder(rec_path, queue_bytes=400)  # (the login fits, the frames do not)
    gate = threading.Event()
    frame = rec.w.frame

    def slow(*a: Any, **kw: Any) -> None:
        gate.wait(10)
        frame(*a, **kw)

    rec.w.frame = slow  # type: ignore[method-assign]
    rec.put(1, None, b"", ("open", CLIENT, SERVER), 1.0)
    firsts = [rec.put(1, peer, data, None, 2.0) for peer, data in packets if peer is not None]
    gate.set()
    rec.put(1, Peer.SERVER, b"", None, 3.0)
    rec.put(1, Peer.CLIENT, b"", None, 3.0)
    rec.close()
    assert rec.failed is None and firsts.count(True) == 1
    blob = rec_path.read_bytes()
    assert b"where a secret may be" in blob  # (the gap's comment)
    assert not [s.hex() for s in SECRETS if s in blob]
