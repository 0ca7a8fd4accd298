"""Shared pieces of the differential tests: a real MariaDB that ran a small workload, copies
of its binlog files for the mock master, and the client sessions run against both.

The workload spans two binlog files (a FLUSH in between), two GTID domains are NOT used (the
"unknown domain" scenario relies on domain 7 never being in the binlog), and its table has the
column types CDC clients get wrong (unsigned, ENUM/SET, latin1, BLOB/BINARY, JSON, DECIMAL).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB

TABLE_DDL = """CREATE TABLE items (
    id INT UNSIGNED NOT NULL PRIMARY KEY,
    small TINYINT UNSIGNED,
    name VARCHAR(20) CHARACTER SET latin1,
    kind ENUM('red','green','blue'),
    tags SET('a','b','c'),
    price DECIMAL(10,2) UNSIGNED,
    data BLOB,
    code BINARY(4),
    doc JSON,
    at DATETIME(3)
)"""


@dataclass
class Source:
    """The real server, the copies of its binlog files and the GTIDs it wrote."""

    server: MariaDB
    files: list[Path]
    gtids: list[str] = field(default_factory=list)

    @property
    def real(self) -> tuple[str, int]:
        return (self.server.host, self.server.port)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.files]

    def scenario(self, **kw: Any) -> Scenario:
        """The mock serving the copies, with the real server's logins."""
        kw.setdefault("users", [User("repl", "replpass"), User("root", "")])
        return Scenario(sources=[BinlogSource(list(self.files))], **kw)

    def mock(self, **kw: Any) -> ThreadedMockMaster:
        return ThreadedMockMaster(self.scenario(**kw)).start()


def run_workload(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute(TABLE_DDL)
        for i in range(1, 6):
            cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (i, 250 + i % 5, f"caf\u00e9 {i}", ["red", "green", "blue"][i % 3],
                         "a,c", "12345678.90", bytes([i, 0, 255]), b"\x00\x01\x02\x03",
                         f'{{"k": {i}}}', "2024-01-02 03:04:05.678"))
        cur.execute("UPDATE items SET small = 255, kind = 'blue' WHERE id IN (1, 2)")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("DELETE FROM items WHERE id = 5")
        cur.execute("INSERT INTO items (id, name) VALUES (6, 'six'), (7, 'seven')")
        cur.execute("BEGIN")
        cur.execute("UPDATE items SET price = 1.5 WHERE id > 5")
        cur.execute("INSERT INTO items (id) VALUES (8)")
        cur.execute("COMMIT")


def settle_binlog(server: MariaDB, timeout: float = 15) -> None:
    """Wait for the BINLOG_CHECKPOINT the server writes into its active file some time after a
    rotation (it names the active file itself): the copies must hold what the server sends."""
    active = server.binlog_files()[-1]
    deadline = time.monotonic() + timeout
    while active.name.encode() not in active.read_bytes():
        if time.monotonic() > deadline:
            raise AssertionError(f"no BINLOG_CHECKPOINT for {active.name} after {timeout} s")
        time.sleep(0.1)


# ------------------------------------------------------------------------------ client sessions
def pmr_session(*, blocking: bool = False, stop_after: int | None = None,
                heartbeats: int = 0, **kw: Any) -> Callable[[str, int], object]:
    """python-mysql-replication reading every event; a blocking stream stops after
    ``stop_after`` events and then ``heartbeats`` heartbeats."""

    def run(host: str, port: int) -> object:
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import HeartbeatLogEvent

        s = BinLogStreamReader(
            connection_settings={"host": host, "port": port, "user": "repl",
                                 "password": "replpass"},
            server_id=4242, blocking=blocking, **kw)
        seen: list[str] = []
        beats = 0
        try:
            for ev in s:
                if isinstance(ev, HeartbeatLogEvent):
                    if stop_after is not None and len(seen) >= stop_after:
                        beats += 1
                        if beats >= heartbeats:
                            break
                    continue
                seen.append(type(ev).__name__)
                if stop_after is not None and len(seen) >= stop_after and not heartbeats:
                    break
        finally:
            s.close()
        return seen

    return run


def raw_dump_session(file: str, pos: int = 4, *, capability: int | None = None,
                     checksum: bool = True, flags: int = 1) -> Callable[[str, int], object]:
    """A bare client: login with pymysql, optional setup queries, COM_BINLOG_DUMP (non-blocking
    by default), read every packet until EOF/ERR."""

    def run(host: str, port: int) -> object:
        import pymysql

        conn = pymysql.connect(host=host, port=port, user="repl", password="replpass")
        try:
            with conn.cursor() as cur:
                if checksum:
                    cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
                if capability is not None:
                    cur.execute(f"SET @mariadb_slave_capability = {capability}")
            name = file.encode()
            payload = struct.pack("<IHI", pos, flags, 4242) + name
            conn._execute_command(0x12, payload)  # COM_BINLOG_DUMP
            n = 0
            while True:
                pkt = conn._read_packet()
                if pkt.is_eof_packet():
                    break
                n += 1
            return n
        finally:
            conn.close()

    return run


def wait_port(host: str, port: int, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
