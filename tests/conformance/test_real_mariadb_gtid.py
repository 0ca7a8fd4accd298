"""The GTID strict-mode cases against a real MariaDB: it writes seq_no out of order when
gtid_strict_mode is off (so such binlogs exist) and refuses to in strict mode (ERR 1950); a
GTID start on that binlog gets the same packets from the real server and from the mock master
serving a copy of its files (strict mode and not: the ERR 1236 of the case, or the dump); and
mariadb-binlog stops at the out-of-order GTID on the real server as on the mock."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB
from tests.mock_master.conftest import private_mariadb
from tests.mock_master.test_mm_dump_diff import CAP4, CRC, _copy, dump, same

pytestmark = [pytest.mark.mysql, pytest.mark.network]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[MariaDB, list[Path], Any]]:
    with private_mariadb(tmp_path_factory, "gtid-order") as server:
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")  # 0-1-1
            for seq, i in ((None, 2), (5, 5), (3, 3), (6, 6)):
                if seq is not None:
                    cur.execute(f"SET SESSION gtid_seq_no = {seq}")
                cur.execute("INSERT INTO t VALUES (%s)", (i,))
            cur.execute("SET GLOBAL gtid_strict_mode = ON")
            try:
                cur.execute("SET SESSION gtid_seq_no = 4")
                cur.execute("INSERT INTO t VALUES (4)")
                refused: Any = None
            except pymysql.MySQLError as exc:
                refused = exc
            finally:
                cur.execute("SET GLOBAL gtid_strict_mode = OFF")
        conn.close()
        yield server, _copy(server, tmp_path_factory.mktemp("gtid-order-binlogs")), refused


@pytest.fixture(scope="module")
def mock(source: tuple[MariaDB, list[Path], Any]) -> Iterator[ThreadedMockMaster]:
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(source[1]))])).start()
    yield mm
    mm.stop()


def test_strict_mode_refuses_to_write_out_of_order(source: Any) -> None:
    refused = source[2]
    assert refused is not None and refused.args[0] == 1950, refused


@pytest.mark.parametrize("strict", [0, 1])
@pytest.mark.parametrize("state", ["0-1-3", "0-1-4"])
def test_a_gtid_start_on_an_out_of_order_binlog(source: Any, mock: ThreadedMockMaster,
                                                 strict: int, state: str) -> None:
    """0-1-3 comes after 0-1-5: in strict mode a start at 0-1-3 meets 0-1-5 first and is
    refused as a hole (ERR 1236), as is 0-1-4, which is not there at all; not in strict mode
    both dumps go on. Real and mock packets byte for byte."""
    server = source[0]
    setup = [CRC, CAP4, f"SET @slave_connect_state = '{state}'",
             f"SET @slave_gtid_strict_mode = {strict}"]
    real = dump(server.host, server.port, setup)
    same(real, dump(mock.host, mock.port, setup))
    assert (real[-2][0] == 0xFF) == bool(strict)
    if strict:
        assert b"strict mode is enabled" in real[-2] and real[-2][1:3] == (1236).to_bytes(2,
                                                                                        "little")


def test_mariadb_binlog_stops_at_the_out_of_order_gtid_on_both(
        source: Any, mock: ThreadedMockMaster) -> None:
    server, files = source[0], source[1]
    out = []
    for port in (server.port, mock.port):
        r = subprocess.run(["mariadb-binlog", "--read-from-remote-server", "--host=127.0.0.1",
                            f"--port={port}", f"--user={server.repl_user}", "--protocol=TCP",
                            "--to-last-log", files[0].name],
                           env=dict(os.environ, MYSQL_PWD=server.repl_password),
                           capture_output=True, text=True, timeout=60, check=False)
        out.append((r.returncode, r.stderr.strip().splitlines()[-1:]))
    assert out[0] == out[1], out
    assert out[0][0] != 0 and "out of order GTID" in out[0][1][0], out
