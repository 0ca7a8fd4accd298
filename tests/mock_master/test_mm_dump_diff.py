"""The dump packet by packet: a real MariaDB and the mock master serving copies of its binlog
files get the same raw COM_BINLOG_DUMP sessions (file/pos, GTID starts, UNTIL, replicas without
the GTID capability, semi-sync), and every server-to-client packet must be byte-identical.

Allowed differences: none for non-blocking dumps; heartbeats (their number depends on timing)
are dropped in the blocking semi-sync session. The last test commits on the real server, so it
runs last and works on its own copy of the binlogs.
"""

from __future__ import annotations

import shutil
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB
from tests.mock_master.conftest import private_mariadb

pytestmark = [pytest.mark.mysql, pytest.mark.network]

CRC = "SET @master_binlog_checksum = 'CRC32'"
CAP4 = "SET @mariadb_slave_capability = 4"


def _workload(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))")
        for i in range(1, 6):
            cur.execute("INSERT INTO t VALUES (%s, %s)", (i, "x" * i))
        cur.execute("SET SESSION binlog_format = 'STATEMENT'")
        cur.execute("SET @uv = 100")
        cur.execute("INSERT INTO t VALUES (@uv, 'user var')")
        cur.execute("SET SESSION binlog_format = 'ROW'")
        cur.execute("SET SESSION gtid_seq_no = 100")  # a hole in domain 0: 0-1-100 follows
        cur.execute("INSERT INTO t VALUES (300, 'after the hole')")
        cur.execute("FLUSH BINARY LOGS")
        for i in range(6, 16):
            cur.execute("INSERT INTO t VALUES (%s, %s)", (i, "y" * (i * 3)))
            if i == 9:
                cur.execute("SET SESSION gtid_domain_id = 3")
                cur.execute("INSERT INTO t VALUES (1000, 'domain 3')")
                cur.execute("INSERT INTO t VALUES (1001, 'domain 3 again')")
                for d in (5, 1, 7, 2, 11):  # the order of a GTID_LIST's domains is the server's
                    cur.execute(f"SET SESSION gtid_domain_id = {d}")
                    cur.execute("INSERT INTO t VALUES (%s, 'more domains')", (2000 + d,))
                cur.execute("SET SESSION gtid_domain_id = 0")
        cur.execute("CREATE TABLE u (a INT)")  # DDL: a standalone GTID
        cur.execute("FLUSH BINARY LOGS")
        for i in range(16, 19):
            cur.execute("INSERT INTO t VALUES (%s, 'z')", (i,))


def _settled(server: MariaDB) -> None:
    """Wait until the server has written everything it writes on its own (the BINLOG_CHECKPOINT
    of the active file follows InnoDB's flush, after FLUSH BINARY LOGS): sizes stable 1.5 s."""
    last: list[int] = []
    stable = time.monotonic()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        sizes = [f.stat().st_size for f in server.binlog_files()]
        if sizes != last:
            last, stable = sizes, time.monotonic()
        elif time.monotonic() - stable >= 1.5:
            return
        time.sleep(0.1)


def _copy(server: MariaDB, dest: Path) -> list[Path]:
    _settled(server)
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Any] = []
    for f in server.binlog_files():
        shutil.copy(f, dest / f.name)
        out.append(dest / f.name)
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MariaDB, list[Path]]]:
    with private_mariadb(tmp_path_factory, "mm-dump-src") as server:
        conn = server.connect()
        _workload(conn)
        conn.close()
        yield server, _copy(server, tmp_path_factory.mktemp("mm-dump-binlogs"))


@pytest.fixture(scope="module")
def mock(source: tuple[MariaDB, list[Path]]) -> Iterator[ThreadedMockMaster]:
    _, files = source
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(files))])).start()
    yield mm
    mm.stop()


def _packet(conn: Any) -> bytes:
    return _packet_seq(conn)[1:]


def _packet_seq(conn: Any) -> bytes:
    """The sequence id, then the payload."""
    hdr = conn._read_bytes(4)
    n = int.from_bytes(hdr[:3], "little")
    return bytes(hdr[3:4]) + bytes(conn._read_bytes(n))


def _login(host: str, port: int, setup: list[str]) -> Any:
    conn = pymysql.connect(host=host, port=port, user="repl", password="replpass",
                           autocommit=True)
    with conn.cursor() as cur:
        for q in setup:
            cur.execute(q)
    return conn


def dump(host: str, port: int, setup: list[str], *, file: str = "", pos: int = 4,
         flags: int = 1, server_id: int = 77) -> list[bytes]:
    """A raw non-blocking COM_BINLOG_DUMP: every packet payload up to EOF or ERR."""
    conn = _login(host, port, setup)
    conn._sock.settimeout(20)
    try:
        conn._execute_command(0x12, struct.pack("<IHI", pos, flags, server_id) + file.encode())
        out: list[bytes] = []
        while True:
            p = _packet(conn)
            out.append(p)
            if p[0] == 0xFF or (p[0] == 0xFE and len(p) < 9):
                # then the server closes the connection (its dump command ends the session)
                conn._sock.settimeout(5)
                out.append(b"closed" if conn._sock.recv(1) == b"" else b"open")
                return out
            assert len(out) < 100_000
    finally:
        conn.close()


def _types(pk: list[bytes]) -> list[str]:
    return [f"{p[5]}@{int.from_bytes(p[14:18], 'little')}" if p[0] == 0 and len(p) > 19
            else p[:1].hex() for p in pk]


def same(a: list[bytes], b: list[bytes]) -> None:
    assert len(a) == len(b), " ".join(_types(a)) + "\n MOCK " + " ".join(_types(b))
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x == y, f"{k}\n{x.hex()}\n{y.hex()}"


def both(source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster, setup: list[str],
         **kw: Any) -> list[bytes]:
    server, _ = source
    real = dump(server.host, server.port, setup, **kw)
    got = dump(mock.host, mock.port, setup, **kw)
    same(real, got)
    return real


def _gtids(mock: ThreadedMockMaster, domain: int = 0) -> list[Any]:
    return [g for g in mock.master.stream.gtids if g.domain == domain]


def test_file_pos_from_the_first_file(source: Any, mock: ThreadedMockMaster) -> None:
    pk = both(source, mock, [CRC, CAP4], flags=3)
    assert len(pk) > 40 and pk[-2][0] == 0xFE and pk[-1] == b"closed"


def test_file_pos_mid_file_sends_the_fde_with_log_pos_and_created_0(
        source: Any, mock: ThreadedMockMaster) -> None:
    g = _gtids(mock)[-6]
    f = mock.master.stream.files[g.file_index]
    pk = both(source, mock, [CRC, CAP4], file=f.name, pos=f.offsets[g.event_index])
    fde = pk[1][1:]
    assert fde[4] == 15 and fde[13:17] == bytes(4)


@pytest.mark.parametrize("extra", ["", ",42-7-7", ",3-1-1"], ids=["one", "unknown", "two"])
def test_gtid_start_inside_the_binlog(source: Any, mock: ThreadedMockMaster,
                                      extra: str) -> None:
    g = _gtids(mock)[-5]  # in the second file
    pk = both(source, mock, [CRC, CAP4, f"SET @slave_connect_state = '{g.gtid}{extra}'"],
              flags=3)
    lists = [p for p in pk if len(p) > 19 and p[5] == 163 and p[18] & 0x20]
    assert lists, "the fake GTID_LIST at the start position"


@pytest.mark.parametrize("state", ["0-1-99999", "0-5-3", "0-1-1,3-1-99", "bad"])
def test_gtid_start_errors(source: Any, mock: ThreadedMockMaster, state: str) -> None:
    pk = both(source, mock, [CRC, CAP4, f"SET @slave_connect_state = '{state}'"])
    assert pk[-2][0] == 0xFF and pk[-1] == b"closed"


@pytest.mark.parametrize("strict", [0, 1])
def test_gtid_start_in_a_hole(source: Any, mock: ThreadedMockMaster, strict: int) -> None:
    """0-1-50 is not in the binlog, but lower and higher ones are: strict mode refuses, else
    the dump starts after it."""
    pk = both(source, mock, [CRC, CAP4, "SET @slave_connect_state = '0-1-50'",
                             f"SET @slave_gtid_strict_mode = {strict}"])
    assert (pk[-2][0] == 0xFF) == bool(strict)


@pytest.mark.parametrize("ignore", [0, 1])
def test_gtid_start_ahead_of_the_binlog(source: Any, mock: ThreadedMockMaster,
                                        ignore: int) -> None:
    """A position beyond the binlog's last GTID of the domain: an error, unless
    @slave_gtid_ignore_duplicates (it may have come another way)."""
    last = _gtids(mock)[-1]
    pk = both(source, mock, [CRC, CAP4,
                             f"SET @slave_connect_state = '0-1-{last.seq + 5}'",
                             f"SET @slave_gtid_ignore_duplicates = {ignore}"])
    assert (pk[-2][0] == 0xFF) == (not ignore)


@pytest.mark.parametrize("ahead", [2, 0, -1], ids=["later", "at-start", "before"])
def test_until_gtid(source: Any, mock: ThreadedMockMaster, ahead: int) -> None:
    gs = _gtids(mock)
    start_g, until_g = gs[-8], gs[-8 + ahead]
    pk = both(source, mock, [CRC, CAP4, f"SET @slave_connect_state = '{start_g.gtid}'",
                             f"SET @slave_until_gtid = '{until_g.gtid}'"], flags=2)
    assert pk[-2][0] == 0xFE
    until = pk[-3][1:]
    assert until[4] == 163 and until[22] >> 4 & 1  # FLAG_UNTIL_REACHED in the count word


@pytest.mark.parametrize("cap", [None, 0, 1, 2, 3])
@pytest.mark.parametrize("flags", [1, 3], ids=["no-annotate", "annotate"])
def test_replicas_below_the_gtid_capability(source: Any, mock: ThreadedMockMaster,
                                            cap: int | None, flags: int) -> None:
    setup = [CRC] + ([] if cap is None else [f"SET @mariadb_slave_capability = {cap}"])
    pk = both(source, mock, setup, flags=flags)
    types = {p[5] for p in pk if len(p) > 5}
    assert 162 not in types and ((cap is not None and cap >= 2) or 2 in types)


@pytest.mark.parametrize("file", ["", "mysql-bin.000002"])
def test_checksums_not_announced(source: Any, mock: ThreadedMockMaster, file: str) -> None:
    """A client that never set @master_binlog_checksum: the fake ROTATE, then the server's
    error (its binlog has CRC32 checksums)."""
    pk = both(source, mock, [CAP4], file=file)
    assert pk[-2][0] == 0xFF and len(pk) == 3


def test_com_binlog_dump_gtid_is_an_unknown_command_for_mariadb(
        source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster) -> None:
    """MariaDB has no COM_BINLOG_DUMP_GTID (MySQL's): ERR 1047 and the connection goes on."""
    server, _ = source
    seen = []
    for host, port in ((server.host, server.port), (mock.host, mock.port)):
        conn = _login(host, port, [CRC])
        conn._sock.settimeout(10)
        payload = struct.pack("<HIIQI", 0, 77, 0, 4, 8) + bytes(8)
        conn._execute_command(0x1E, payload)
        err = _packet(conn)
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            seen.append((err, cur.fetchall()))
        conn.close()
    assert seen[0] == seen[1]
    assert seen[0][0][:3] == b"\xff\x17\x04"  # 1047


def _read_events(conn: Any, *, until_type: int | None, deadline: float) -> list[bytes]:
    """Events of a blocking semi-sync dump, each as its sequence id + payload: up to the first
    heartbeat (until_type None: the history is sent) or up to an event of ``until_type``;
    heartbeats are dropped (their number depends on timing, so the sequence ids after one are
    compared only where a semi-sync flush resets them)."""
    out: list[Any] = []
    while time.monotonic() < deadline:
        p = _packet_seq(conn)
        assert p[1] == 0, p
        t = p[1 + (3 if p[2] == 0xEF else 1) + 4]  # after the semi-sync header, if any
        if t == 27:
            if until_type is None:
                return out
            continue
        out.append(p)
        if t == until_type:
            return out
    raise AssertionError(f"timed out after {len(out)} packets")


def _commit_and_append(server: MariaDB, mm: ThreadedMockMaster, name: str,
                       *sql: str) -> None:
    f = next(f for f in server.binlog_files() if f.name == name)
    size = f.stat().st_size
    w = server.connect()
    with w.cursor() as cur:
        for q in sql:
            cur.execute(q)
    w.close()
    new = f.read_bytes()[size:]
    evs, off = [], 0
    while off < len(new):
        n = int.from_bytes(new[off + 9:off + 13], "little")
        evs.append(new[off:off + n])
        off += n
    mm.append_events(evs)


def test_a_requested_domain_turning_up_short_of_the_position_ends_the_dump(
        source: tuple[MariaDB, list[Path]], tmp_path: Path) -> None:
    """Commits on the real server (runs after the non-blocking tests). A GTID dump asks for a
    domain the binlog never had (ignored at the start); when a transaction of that domain turns
    up below the requested sequence number, the server ends the dump with its error there."""
    server, _ = source
    files = _copy(server, tmp_path / "binlogs")
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(files))])).start()
    try:
        g = mm.master.stream.gtids[-1]
        setup = [CRC, CAP4, f"SET @slave_connect_state = '{g.gtid},44-1-5'",
                 "SET @master_heartbeat_period = 100000000"]
        conns: list[Any] = []
        for host, port in ((server.host, server.port), (mm.host, mm.port)):
            c = _login(host, port, setup)
            c._sock.settimeout(20)
            c._execute_command(0x12, struct.pack("<IHI", 4, 2, 95 + len(conns)))
            conns.append(c)
        deadline = time.monotonic() + 30
        before = [[p[1:] for p in _read_events(c, until_type=None, deadline=deadline)]
                  for c in conns]
        same(before[0], before[1])
        _commit_and_append(server, mm, files[-1].name,
                           "SET SESSION gtid_domain_id = 44",
                           "INSERT INTO t VALUES (6000, 'd44')")
        ends = []
        for c in conns:
            while True:
                p = _packet(c)
                if p[0] == 0xFF:
                    ends.append(p)
                    break
                assert p[0] == 0 and p[5] == 27, p  # heartbeats only: the group is refused
        assert ends[0] == ends[1] and b"44-1-5" in ends[0], ends
        for c in conns:
            c.close()
    finally:
        mm.stop()


def test_semi_sync_acks_only_for_transactions_after_connect(
        source: tuple[MariaDB, list[Path]], tmp_path: Path) -> None:
    """Runs last: it commits on the real server. Both sides: a blocking semi-sync dump of the
    last file (its history: no ACK request), then one new transaction (ACK requested at its
    XID). A non-blocking semi-sync dump cannot be compared: MariaDB 10.11 does not end it."""
    server, _ = source
    files = _copy(server, tmp_path / "binlogs")
    last = files[-1]
    setup = [CRC, CAP4, "SET @rpl_semi_sync_slave = 1",
             "SET @master_heartbeat_period = 100000000"]
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(files))])).start()
    try:
        conns: list[Any] = []
        for host, port in ((server.host, server.port), (mm.host, mm.port)):
            c = _login(host, port, setup)
            c._sock.settimeout(20)
            c._execute_command(0x12, struct.pack("<IHI", 4, 2, 88 + len(conns))
                               + last.name.encode())
            conns.append(c)
        deadline = time.monotonic() + 30
        history = [_read_events(c, until_type=None, deadline=deadline) for c in conns]
        same([p[1:] for p in history[0]], [p[1:] for p in history[1]])
        assert len(history[0]) > 5 and all(p[2:4] == b"\xef\x00" for p in history[0])
        _commit_and_append(server, mm, last.name, "INSERT INTO t VALUES (5000, 'live')")
        live = [_read_events(c, until_type=16, deadline=deadline) for c in conns]
        same([p[1:] for p in live[0]], [p[1:] for p in live[1]])
        assert live[0][-1][2:4] == b"\xef\x01" and all(p[3] == 0 for p in live[0][:-1])
        # the ACK (sequence 0) is read on the dump's connection: the server's packet counter
        # follows it, the next packet (a heartbeat or the next event) has sequence 1
        xid = live[0][-1]
        ack = b"\xef" + xid[1 + 3 + 13:1 + 3 + 17] + bytes(4) + last.name.encode()
        for c in conns:
            c._sock.sendall(len(ack).to_bytes(3, "little") + b"\x00" + ack)
            assert _packet_seq(c)[0] == 1
        _commit_and_append(server, mm, last.name, "INSERT INTO t VALUES (5001, 'live 2')")
        again = [_read_events(c, until_type=16, deadline=deadline) for c in conns]
        same([p[1:] for p in again[0]], [p[1:] for p in again[1]])
        for c in conns:
            c.close()
    finally:
        mm.stop()
