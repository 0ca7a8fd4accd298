"""The mock master's limits, as the real server's: max_allowed_packet before and after login,
connect_timeout and wait_timeout, the same-server_id kill, the bounded run log, and what the
run log records (closed_by, unknown commands, file names).

The server's answers were read off MariaDB 10.11.19 (``scripts/mariadb.sh`` with
``--max-allowed-packet=1M --connect-timeout=3 --wait-timeout=5``, bare sockets): a packet whose
length header reaches max_allowed_packet gets ``ERR 1153 #08S01 Got a packet bigger than
'max_allowed_packet' bytes`` with the sequence id after the header's, before its body is read,
before login as after, and the connection closes; a client silent in the login or between
commands is disconnected without a packet; a second COM_BINLOG_DUMP with the same non-zero
server_id ends the first dump with ``ERR 4052 #HY000 A slave with the same server_uuid/server_id
is already connected; the first event 'F' at P, the last event read from 'F' at X, the last
byte read from 'F' at Y.`` (COM_REGISTER_SLAVE alone kills nothing).
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import pymysql
import pytest

from binlogscope.wire import auth
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet
from binlogscope.wire.handshake import (
    DEFAULT_CAPABILITIES,
    HandshakeResponse41,
    decode_handshake_v10,
    encode_handshake_response41,
)
from binlogscope.wire.reader import ByteReader
from mock_master.history.builder import EventBuilder
from mock_master.scenario.scenarios import Scenario, StreamSource
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network


def _stream() -> Any:
    b = EventBuilder("mariadb")
    t = b.table("db", "t", [("id", "INT")])
    for i in range(3):
        b.transaction(t, [(i,)])
    return b.build()


def _scenario(**kw: Any) -> Scenario:
    return Scenario(sources=[StreamSource(_stream())], **kw)


class Raw:
    """A client over a bare socket (for what real client libraries never send)."""

    def __init__(self, mm: ThreadedMockMaster | tuple[str, int], timeout: float = 10) -> None:
        addr = mm if isinstance(mm, tuple) else (mm.host, mm.port)
        self.s = socket.create_connection(addr, timeout=timeout)
        self.buf = bytearray()

    def packet(self) -> tuple[int, bytes] | None:
        """(sequence id, payload), or None when the server closed the connection."""
        while True:
            if len(self.buf) >= 4:
                n = int.from_bytes(self.buf[:3], "little")
                if len(self.buf) >= 4 + n:
                    seq, p = self.buf[3], bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return seq, p
            try:
                d = self.s.recv(1 << 16)
            except ConnectionResetError:
                return None
            if not d:
                return None
            self.buf += d

    def login(self, user: str = "repl", password: bytes = b"replpass") -> None:
        got = self.packet()
        assert got is not None
        nonce = decode_handshake_v10(ByteReader(got[1])).auth_plugin_data[:20]
        self.s.sendall(encode_packet(encode_handshake_response41(HandshakeResponse41(
            DEFAULT_CAPABILITIES, user, auth.scramble_native(password, nonce),
            client_plugin_name="mysql_native_password")), 1))
        ok = self.packet()
        assert ok is not None and ok[1][0] == 0, ok

    def command(self, payload: bytes) -> tuple[int, bytes] | None:
        self.s.sendall(encode_packet(payload, 0))
        return self.packet()

    def dump(self, server_id: int, *, name: bytes = b"mysql-bin.000001",
             blocking: bool = True, setup: tuple[bytes, ...] = ()) -> None:
        for q in (b"SET @master_binlog_checksum = 'CRC32'", b"SET @mariadb_slave_capability=4",
                  *setup):
            ok = self.command(b"\x03" + q)
            assert ok is not None and ok[1][0] == 0
        self.s.sendall(encode_packet(b"\x12" + struct.pack("<IHI", 4, 0 if blocking else 1,
                                                           server_id) + name, 0))

    def until_quiet(self, seconds: float = 0.5) -> list[tuple[int, bytes]]:
        """Packets until none came for ``seconds`` (or the connection closed)."""
        self.s.settimeout(seconds)
        out: list[tuple[int, bytes]] = []
        try:
            while (p := self.packet()) is not None:
                out.append(p)
        except TimeoutError:
            pass
        return out

    def closed(self, within: float) -> bool:
        self.s.settimeout(within)
        try:
            while self.packet() is not None:
                pass
        except TimeoutError:
            return False
        return True


def _err(p: tuple[int, bytes] | None) -> tuple[int, int, str, str]:
    assert p is not None and p[1][0] == 0xFF, p
    return p[0], int.from_bytes(p[1][1:3], "little"), p[1][4:9].decode(), p[1][9:].decode()


TOO_LARGE = "Got a packet bigger than 'max_allowed_packet' bytes"


def _wait(cond: Any, seconds: float = 5) -> None:
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        time.sleep(0.02)


# ------------------------------------------------------------------------ max_allowed_packet
def test_max_allowed_packet_before_login(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario(variables={"max_allowed_packet": 1 << 20}))
    c = Raw(mm)
    assert c.packet() is not None  # greeting
    # a length header of max_allowed_packet: refused at once, its body never awaited
    c.s.sendall((1 << 20).to_bytes(3, "little") + b"\x01")
    assert _err(c.packet()) == (2, 1153, "08S01", TOO_LARGE)
    assert c.closed(5)
    # one byte less is read (the server waits for the body)
    c = Raw(mm)
    assert c.packet() is not None
    c.s.sendall(((1 << 20) - 1).to_bytes(3, "little") + b"\x01" + b"x" * 1000)
    assert c.until_quiet(0.5) == []
    c.s.close()
    # the fragments of one packet count together: a full 16 MiB - 1 fragment, then more
    mm2 = serve_scenario(_scenario(variables={"max_allowed_packet": MAX_PAYLOAD + 10}))
    c = Raw(mm2)
    assert c.packet() is not None
    c.s.sendall(MAX_PAYLOAD.to_bytes(3, "little") + b"\x01" + bytes(MAX_PAYLOAD)
                + (10).to_bytes(3, "little") + b"\x02")
    assert _err(c.packet()) == (3, 1153, "08S01", TOO_LARGE)
    assert c.closed(5)
    _wait(lambda: all(cl.closed_by for cl in mm.log.clients))
    first = mm.log.clients[0]
    assert not first.authenticated and "max_allowed_packet 1048576" in (first.closed_by or "")
    assert any(e.startswith("ERR 1153") for e in first.errors)


def test_max_allowed_packet_after_login(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario(variables={"max_allowed_packet": 1 << 20}))
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    cur = c.cursor()
    cur.execute("SELECT @@max_allowed_packet")
    assert cur.fetchall() == ((1 << 20,),)
    c.close()
    c2 = Raw(mm)
    c2.login()
    c2.s.sendall((1 << 20).to_bytes(3, "little") + b"\x00")  # a COM_QUERY's header
    assert _err(c2.packet()) == (1, 1153, "08S01", TOO_LARGE)
    assert c2.closed(5)


def test_default_max_allowed_packet_is_the_servers(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario())
    assert mm.master.limit("max_allowed_packet") == 16 << 20  # MariaDB 10.11's default
    mm = serve_scenario(Scenario(flavor="mysql", sources=[StreamSource(_stream())]))
    assert mm.master.limit("max_allowed_packet") == 64 << 20  # MySQL 8.0's


# ------------------------------------------------------------------------------- timeouts
def test_connect_timeout_closes_silent_and_slow_logins(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario(variables={"connect_timeout": 1}))
    silent = Raw(mm)
    slow = Raw(mm)
    t0 = time.monotonic()
    assert silent.packet() is not None and slow.packet() is not None
    slow.s.sendall(b"\x40")  # slowloris: a byte now and then, never a whole packet
    for _ in range(3):
        time.sleep(0.3)
        try:
            slow.s.sendall(b"\x00")
        except OSError:
            break
    assert silent.closed(3) and slow.closed(3)
    assert time.monotonic() - t0 < 3
    _wait(lambda: len([c for c in mm.log.clients if c.closed_by]) == 2)
    assert all("connect_timeout" in (c.closed_by or "") for c in mm.log.clients)


def test_wait_timeout_closes_an_idle_client_but_not_a_blocking_dump(serve_scenario: Any
                                                                    ) -> None:
    mm = serve_scenario(_scenario(variables={"wait_timeout": 1}))
    idle = Raw(mm)
    idle.login()
    dumping = Raw(mm)
    dumping.login()
    dumping.dump(9)
    first = dumping.until_quiet(0.3)
    assert first and all(p[1][0] == 0 for p in first)
    assert idle.closed(4)
    time.sleep(0.5)
    # the dump was silent for longer than wait_timeout and is still served
    extra = EventBuilder("mariadb")
    extra.seq = 9
    t = extra.table("db", "t", [("id", "INT")])
    extra.transaction(t, [(99,)])
    mm.append_events(extra.files[0].events[3:])
    more = dumping.until_quiet(0.5)
    assert more and all(p[1][0] == 0 for p in more)
    logs = {c.id: c for c in mm.log.clients}
    assert "wait_timeout" in (logs[1].closed_by or "")
    assert logs[2].closed_by is None


# ------------------------------------------------------------------------ same server_id
def test_a_second_dump_with_the_same_server_id_kills_the_first(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario())
    f = mm.master.stream.files[-1]
    old = Raw(mm)
    old.login()
    old.dump(77)
    n_old = len(old.until_quiet(0.3))
    reg = Raw(mm)  # COM_REGISTER_SLAVE with the same server_id alone kills nothing
    reg.login()
    ok = reg.command(b"\x15" + struct.pack("<IBBBHII", 77, 0, 0, 0, 0, 0, 0))
    assert ok is not None and ok[1][0] == 0
    assert old.until_quiet(0.3) == []
    zero = Raw(mm)  # neither does a dump with server_id 0 (mariadb-binlog's)
    zero.login()
    zero.dump(0, blocking=False)
    assert zero.until_quiet(0.3)
    assert old.until_quiet(0.2) == []
    new = Raw(mm)
    new.login()
    new.dump(77)
    got = old.until_quiet(1)
    assert len(got) == 1
    seq, code, state, msg = _err(got[0])
    assert (seq, code, state) == ((n_old + 1) & 0xFF, 4052, "HY000")
    assert msg == ("A slave with the same server_uuid/server_id is already connected; the first "
                   f"event '{f.name}' at 4, the last event read from '{f.name}' at "
                   f"{f.offsets[-1]}, the last byte read from '{f.name}' at {f.size}.")
    assert old.closed(3)
    assert len(new.until_quiet(0.3)) == n_old  # the new dump is served
    _wait(lambda: mm.log.clients[0].closed_by is not None)
    assert "same server_id" in (mm.log.clients[0].closed_by or "")
    assert mm.log.clients[-1].closed_by is None


# ------------------------------------------------------------------------------- the run log
def test_the_run_log_is_bounded(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario(max_closed_clients=3))
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    cur = c.cursor()
    for i in range(1100):
        cur.execute(f"SELECT {i}")
    cur.execute("SELECT '" + "x" * 10000 + "'")
    log = mm.log.clients[0]
    assert len(log.queries) == 1000 and log.dropped["queries"] >= 101
    assert log.queries[0] == f"SELECT {1100 - 999}"  # the oldest went first
    assert log.queries[-1].endswith("... [10009 characters]") and len(log.queries[-1]) < 4200
    c.close()
    for _ in range(5):
        pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass").close()
    _wait(lambda: mm.log.clients_dropped == 3)
    assert [cl.id for cl in mm.log.clients] == [4, 5, 6]
    assert mm.log.to_dict()["clients_dropped"] == 3


def test_closed_by_unknown_commands_and_file_names(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario())
    c = Raw(mm)
    c.login()
    assert _err(c.command(b"\x0f"))[1:3] == (1047, "08S01")  # COM_TIME: Unknown command
    c.dump(5, name=b"mysql-bin.000001\0\0\0")
    assert c.until_quiet(0.3)
    c.s.close()  # the client goes away during the blocking dump
    _wait(lambda: mm.log.clients[0].closed_by is not None)
    log = mm.log.clients[0]
    assert log.unknown_commands == ["0x0f COM_TIME"]
    assert any("unknown command 0x0f COM_TIME" in n for n in mm.log.notes)
    assert (log.closed_by or "").startswith("client")
    assert log.dump is not None and log.dump["file"] == "mysql-bin.000001"


def test_no_default_root(serve_scenario: Any) -> None:
    mm = serve_scenario(_scenario())
    with pytest.raises(pymysql.err.OperationalError) as exc:
        pymysql.connect(host=mm.host, port=mm.port, user="root", password="")
    assert exc.value.args[0] == 1045


def test_mysql_matches_a_replica_by_its_uuid(serve_scenario: Any) -> None:
    """MySQL's kill_zombie_dump_threads: a replica that sets @replica_uuid is matched by it
    (not by server_id); the killed dump gets ERR 1236 with MySQL's text."""
    b = EventBuilder("mysql")
    t = b.table("db", "t", [("id", "INT")])
    b.transaction(t, [(1,)])
    mm = serve_scenario(Scenario(flavor="mysql", sources=[StreamSource(b.build())]))

    def replica(server_id: int, uuid: str) -> Raw:
        c = Raw(mm)
        c.login()
        ok = c.command(b"\x03SET @replica_uuid = '" + uuid.encode() + b"'")
        assert ok is not None and ok[1][0] == 0
        c.dump(server_id)
        assert c.until_quiet(0.3)
        return c

    a = replica(5, "aaaaaaaa-0000-0000-0000-000000000001")
    b2 = replica(5, "bbbbbbbb-0000-0000-0000-000000000002")  # same server_id, other uuid
    assert a.until_quiet(0.3) == []
    replica(6, "aaaaaaaa-0000-0000-0000-000000000001")  # other server_id, same uuid
    got = a.until_quiet(1)
    assert len(got) == 1
    _seq, code, state, msg = _err(got[0])
    assert (code, state) == (1236, "HY000")
    assert msg.startswith("A replica with the same server_uuid/server_id as this replica has "
                          "connected to the source; the first event 'mysql-bin.000001' at 4")
    assert a.closed(3) and b2.until_quiet(0.2) == []


# ------------------------------------------------------------------- compressed protocol
def test_the_compressed_protocol_with_real_clients(serve_scenario: Any) -> None:
    """CLIENT_COMPRESS is offered as by the server; mysql-connector-python and the mariadb
    command-line client (libmariadb) log in with it and read their answers."""
    import shutil
    import subprocess

    import mysql.connector

    mm = serve_scenario(_scenario())
    greeting = Raw(mm).packet()
    assert greeting is not None
    caps = decode_handshake_v10(ByteReader(greeting[1])).capability_flags
    assert caps & 0x20 and caps & 0xFFFF == 0xF7FE  # MariaDB 10.11's lower flags
    c = mysql.connector.connect(host=mm.host, port=mm.port, user="repl", password="replpass",
                                compress=True)
    cur = c.cursor()
    cur.execute("SELECT @@version_comment, @@server_id, '" + "x" * 5000 + "'")
    assert cur.fetchall() == [("binlogscope mock master", 1, "x" * 5000)]
    cur.execute("SHOW BINARY LOGS")
    assert cur.fetchall() == [(f.name, f.size) for f in mm.master.stream.files]
    c.close()
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is not None:
        out = subprocess.run([client, "--compress", f"-h{mm.host}", f"-P{mm.port}", "-urepl",
                              "--skip-ssl", "-e", "SELECT @@server_id"], capture_output=True,
                             text=True, timeout=30, env={"MYSQL_PWD": "replpass"})
        assert out.returncode == 0 and out.stdout.split() == ["@@server_id", "1"], out.stderr
    _wait(lambda: all(cl.closed_by for cl in mm.log.clients))
    assert [cl.compressed for cl in mm.log.clients if cl.authenticated] == \
        [True] * (2 if client is not None else 1)


def test_a_compressed_dump_carries_the_same_events(serve_scenario: Any) -> None:
    from mock_master.serve.compression import Compression

    mm = serve_scenario(_scenario())

    def dump(compress: bool) -> bytes:
        c = Raw(mm)
        got = c.packet()
        assert got is not None
        nonce = decode_handshake_v10(ByteReader(got[1])).auth_plugin_data[:20]
        c.s.sendall(encode_packet(encode_handshake_response41(HandshakeResponse41(
            DEFAULT_CAPABILITIES | (0x20 if compress else 0), "repl",
            auth.scramble_native(b"replpass", nonce),
            client_plugin_name="mysql_native_password")), 1))
        ok = c.packet()
        assert ok is not None and ok[1][0] == 0
        z = Compression(0)
        plain = bytearray()

        def send(payload: bytes) -> None:
            z.seq = 0  # a client's command starts the compressed ids at 0
            c.s.sendall(z.wrap(encode_packet(payload, 0)) if compress
                        else encode_packet(payload, 0))

        def packet() -> bytes | None:
            if not compress:
                got = c.packet()
                return None if got is None else got[1]
            while True:
                if len(plain) >= 4 and len(plain) >= 4 + int.from_bytes(plain[:3], "little"):
                    n = int.from_bytes(plain[:3], "little")
                    p = bytes(plain[4:4 + n])
                    del plain[:4 + n]
                    return p
                more = z.take()
                if more is not None:
                    plain.extend(more)
                    continue
                d = c.s.recv(1 << 16)
                if not d:
                    return None
                z.feed(d)

        for q in (b"SET @master_binlog_checksum = 'CRC32'", b"SET @mariadb_slave_capability=4"):
            send(b"\x03" + q)
            assert (packet() or b"\xff")[0] == 0
        send(b"\x12" + struct.pack("<IHI", 4, 1, 0) + b"mysql-bin.000001")
        out = bytearray()
        while (p := packet()) is not None and not (p[0] == 0xFE and len(p) < 9):
            out += p
        c.s.close()
        return bytes(out)

    plain_dump = dump(False)
    assert len(plain_dump) > 500
    assert dump(True) == plain_dump
    assert [cl.compressed for cl in mm.log.clients] == [False, True]
