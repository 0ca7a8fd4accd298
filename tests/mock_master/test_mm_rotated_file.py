"""The file a served binlog's last ROTATE names is the server's current file: a replica that
reconnects there after reading to the end is served its start (the real server's: FORMAT_
DESCRIPTION, GTID_LIST, BINLOG_CHECKPOINT x2 on MariaDB 10.11) and then waits (blocking) or gets
EOF (non-blocking). The mock answered ERR 1236 (no such file). Compared with the real MariaDB
after FLUSH BINARY LOGS, serving a copy of the file that ended with the ROTATE; read by
python-mysql-replication and ``mariadb-binlog --read-from-remote-server`` too."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql
import pytest

from binlogscope.wire.binlog.header import HEADER_LEN
from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB

pytestmark = [pytest.mark.mysql, pytest.mark.network]

FDE, ROTATE = 15, 4


def _dump(host: str, port: int, user: str, pw: str, name: str, pos: int, *,
          blocking: bool = False) -> list[Any]:
    """The dump's events (bytes after the OK byte), then "EOF", an ERR text or "waiting"
    (blocking: nothing more came within 2 s)."""
    conn = pymysql.connect(host=host, port=port, user=user, password=pw)
    try:
        with conn.cursor() as cur:
            cur.execute("SET @master_binlog_checksum = 'CRC32'")
            cur.execute("SET @mariadb_slave_capability = 4")  # (GTID events as they are)
        conn._execute_command(0x12, encode_com_binlog_dump(
            ComBinlogDump(pos, 77, name, 0 if blocking else 1))[1:])
        out: list[Any] = []
        while True:
            conn._sock.settimeout(2 if blocking and out else 20)
            try:
                hdr = conn._read_bytes(4)
            except pymysql.err.OperationalError as exc:  # (a timeout or a closed connection)
                out.append("waiting" if "timed out" in str(exc) else "closed")
                return out
            p = bytes(conn._read_bytes(int.from_bytes(hdr[:3], "little")))
            if p[0] == 0xFF:
                out.append(p[9:].decode())
                return out
            if p[0] == 0xFE and len(p) < 9:
                out.append("EOF")
                return out
            out.append(p[1:])
    finally:
        conn.close()


def _comparable(events: list[Any]) -> list[Any]:
    """Each event without its time (the real file's start is stamped when the server rotated,
    the mock's with the ROTATE's time) and without the CRC32 over it."""
    out: list[Any] = []
    for ev in events:
        if not isinstance(ev, bytes):
            out.append(ev)
            continue
        b = bytearray(ev[:-4])
        b[0:4] = bytes(4)
        if b[4] == FDE:
            b[HEADER_LEN + 52:HEADER_LEN + 56] = bytes(4)  # 'created'
        out.append(bytes(b))
    return out


def _rotate(mariadb: MariaDB) -> tuple[Path, Path, list[tuple[str, str | None]], int]:
    """A transaction, then FLUSH BINARY LOGS: the closed and the new file, and the new file's
    events once the server wrote its checkpoint."""
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("CREATE TABLE IF NOT EXISTS rotated_t (id INT PRIMARY KEY)")
        cur.execute("REPLACE INTO rotated_t VALUES (1)")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SELECT @@server_id")
        server_id = int(cur.fetchone()[0])
    conn.commit()
    conn.close()
    closed, current = mariadb.binlog_files()[-2:]
    # the new file's own BINLOG_CHECKPOINT comes from the server's background thread once the
    # older file's transactions are durable: wait for it
    deadline = time.monotonic() + 60
    while True:
        with mariadb.connect().cursor() as cur:
            cur.execute(f"SHOW BINLOG EVENTS IN '{current.name}'")
            got = [(str(r[2]), str(r[5]) if r[2] == "Binlog_checkpoint" else None)
                   for r in cur.fetchall()]
        if ("Binlog_checkpoint", current.name) in got or time.monotonic() > deadline:
            return closed, current, got, server_id
        time.sleep(0.1)


@pytest.fixture
def rotated(mariadb: MariaDB, tmp_path: Path,
            serve_scenario: Callable[[Scenario], ThreadedMockMaster]
            ) -> tuple[str, str, ThreadedMockMaster]:
    """(closed file, current file, a mock serving a copy of the closed file)."""
    for _ in range(5):
        closed, current, got, server_id = _rotate(mariadb)
        want = [("Format_desc", None), ("Gtid_list", None), ("Binlog_checkpoint", closed.name),
                ("Binlog_checkpoint", current.name)]
        if got == want:
            break
    # the settled start of a new file, which the mock writes; the real server repeats the
    # older file's checkpoint now and then (its background thread's timing): then rotate again
    assert got == want
    copy = tmp_path / closed.name
    shutil.copy(closed, copy)
    mm = serve_scenario(Scenario(flavor="mariadb", server_version=mariadb.version,
                                 server_id=server_id, sources=[BinlogSource([copy])],
                                 current_file=True))
    return closed.name, current.name, mm


def test_the_rotated_to_file_is_served_as_the_real_server(
        mariadb: MariaDB, rotated: tuple[str, str, ThreadedMockMaster]) -> None:
    closed, current, mm = rotated
    for name in (current, closed):  # the reconnect there, and a dump across the ROTATE
        real = _dump(mariadb.host, mariadb.port, mariadb.repl_user, mariadb.repl_password,
                     name, 4)
        mock = _dump(mm.host, mm.port, "repl", "replpass", name, 4)
        assert real[-1] == "EOF" and mock[-1] == "EOF", (real[-1], mock[-1])
        assert _comparable(mock) == _comparable(real), name
    # blocking: the start of the file, then it waits for events (no ERR, no close)
    mock = _dump(mm.host, mm.port, "repl", "replpass", current, 4, blocking=True)
    assert [e[4] if isinstance(e, bytes) else e for e in mock] == [
        ROTATE, FDE, 163, 161, 161, "waiting"]


def test_real_clients_read_the_rotated_to_file(
        rotated: tuple[str, str, ThreadedMockMaster]) -> None:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import RotateEvent

    closed, current, mm = rotated
    s = BinLogStreamReader(connection_settings={"host": mm.host, "port": mm.port,
                                                "user": "repl", "passwd": "replpass"},
                           server_id=78, blocking=False, log_file=current, log_pos=4,
                           resume_stream=True)
    try:
        seen = list(s)
    finally:
        s.close()
    assert any(isinstance(e, RotateEvent) and e.next_binlog == current for e in seen)
    exe = shutil.which("mariadb-binlog")
    assert exe, "mariadb-binlog comes with the MariaDB server package"
    r = subprocess.run([exe, "--read-from-remote-server", "-h", mm.host, "-P", str(mm.port),
                        "-u", "repl", "-preplpass", "--to-last-log", closed],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"Binlog checkpoint {current}" in r.stdout
