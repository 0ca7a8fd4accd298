"""Real clients against the mock master replaying a real MariaDB workload binlog, compared with
what the same clients get from MariaDB itself: python-mysql-replication, mariadb-binlog --raw,
and a real MariaDB replica (with semi-sync ACKs verified)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, raw_connect, start, stop
from tests.mariadb_workload import OLD_TEMPORAL_TABLE, Workload
from tests.mock_master.conftest import private_mariadb, rows_via_pymysqlreplication

pytestmark = [pytest.mark.mysql, pytest.mark.network]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MariaDB, list[Path]]]:
    """A private MariaDB that ran the workload; its binlog files, all closed (FLUSH)."""
    with private_mariadb(tmp_path_factory, "mm-source") as server:
        conn = server.connect()
        w = Workload(conn, record=False)
        w.run_full(version=server.version, bulk_rows=2000, big=False)
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
        conn.close()
        files = server.binlog_files()[:-1]  # the last one is the new, empty, active file
        copy = tmp_path_factory.mktemp("mm-binlogs")
        out = []
        for f in files:
            shutil.copy(f, copy / f.name)
            out.append(copy / f.name)
        yield server, out


@pytest.fixture
def mock(source: tuple[MariaDB, list[Path]]) -> Iterator[ThreadedMockMaster]:
    _, files = source
    # ACK requests for the replayed history too, so the real replica's ACKs are verified
    # (the server itself asks only for transactions committed while the replica is connected)
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(files))],
                                     ack_every_transaction=True)).start()
    yield mm
    mm.stop()


def test_python_mysql_replication_gets_the_same_rows_as_from_mariadb(
        source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster) -> None:
    server, files = source
    kw: dict[str, Any] = {"ignored_tables": [OLD_TEMPORAL_TABLE]}  # it cannot decode those
    from_mariadb = rows_via_pymysqlreplication(server.host, server.port, user="repl",
                                               password="replpass", log_file=files[0].name,
                                               **kw)
    from_mock = rows_via_pymysqlreplication(mock.host, mock.port, log_file=files[0].name, **kw)
    assert len(from_mariadb) > 100
    assert from_mock == from_mariadb
    assert not mock.log.violations and not mock.log.unknown_queries


def test_mariadb_binlog_raw_writes_byte_identical_files(
        source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster, tmp_path: Path) -> None:
    _, files = source
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        unavailable("mariadb-binlog is not installed")
    proc = subprocess.run(
        [exe, "--read-from-remote-server", "--raw", "--to-last-log", f"--host={mock.host}",
         f"--port={mock.port}", "--user=repl", "--password=replpass", files[0].name],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for f in files:
        assert (tmp_path / f.name).read_bytes() == f.read_bytes(), f.name
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name for f in files]


def _sql(server: MariaDB, sql: str) -> list[tuple[Any, ...]]:
    conn = raw_connect(server, database=None)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "compressed"])
def test_a_real_replica_applies_the_replayed_stream(
        source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster,
        tmp_path_factory: pytest.TempPathFactory, compressed: bool) -> None:
    """A real MariaDB replica with semi-sync, also over the compressed protocol
    (slave_compressed_protocol)."""
    server, _ = source
    d = tmp_path_factory.mktemp("mm-replica")
    try:
        replica = start(d)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        # the workload's schema was created before the binlog starts
        _sql(replica, "SET GLOBAL server_id = 2")
        _sql(replica, "SET GLOBAL rpl_semi_sync_slave_enabled = ON")
        _sql(replica, f"SET GLOBAL slave_compressed_protocol = {int(compressed)}")
        _sql(replica, f"CREATE DATABASE IF NOT EXISTS `{server.database}`")
        _sql(replica, f"CHANGE MASTER TO MASTER_HOST='{mock.host}', MASTER_PORT={mock.port}, "
                      "MASTER_USER='repl', MASTER_PASSWORD='replpass', MASTER_CONNECT_RETRY=1")
        _sql(replica, "START SLAVE")
        want = mock.master.stream.gtid_state()
        deadline = time.monotonic() + 120
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            conn = replica.connect(database=None, cursorclass=__import__(
                "pymysql").cursors.DictCursor)
            with conn.cursor() as cur:
                cur.execute("SHOW SLAVE STATUS")
                status = cur.fetchone() or {}
                cur.execute("SELECT @@gtid_slave_pos AS pos")
                status["Gtid_Slave_Pos"] = (cur.fetchone() or {}).get("pos")
            conn.close()
            if status.get("Last_SQL_Error") or status.get("Last_IO_Error"):
                break
            if status.get("Gtid_Slave_Pos") == want and (status.get(
                    "Slave_SQL_Running_State") or "").startswith("Slave has read all"):
                break
            time.sleep(0.3)
        assert not status.get("Last_SQL_Error") and not status.get("Last_IO_Error"), status
        assert status.get("Gtid_Slave_Pos") == want
        tables = [r[0] for r in _sql(server, "SELECT table_name FROM information_schema.tables "
                                     f"WHERE table_schema = '{server.database}' ORDER BY 1")]
        assert len(tables) > 5
        for t in tables:
            q = f"SELECT * FROM `{server.database}`.`{t}` ORDER BY 1"
            assert _sql(replica, q) == _sql(server, q), t
        semi = _sql(replica, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_slave_status'")
        assert semi == [("Rpl_semi_sync_slave_status", "ON")]
        _sql(replica, "STOP SLAVE")
    finally:
        stop(d)
    clients = [c for c in mock.log.clients if c.dump]
    assert clients[0].register is not None and clients[0].register["server_id"] == 2
    assert clients[0].compressed == compressed
    assert clients[0].acks_requested
    assert clients[0].acks == clients[0].acks_requested
    assert not mock.log.violations
    assert not mock.log.unknown_queries


def test_information_schema_of_the_workload_tables_as_mariadb(
        source: tuple[MariaDB, list[Path]], mock: ThreadedMockMaster) -> None:
    """Every column, key and table of the workload (every type, old-format temporals, ENUM
    members MariaDB stores in utf8mb3, geometry subtypes, DDL altered then dropped): the mock
    knows them from the DDL in the binlogs alone and answers as the server does."""
    import pymysql

    server, _ = source
    db = server.database
    queries = [
        f"SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}' "
        "ORDER BY TABLE_NAME, ORDINAL_POSITION",
        "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, NULLABLE, "
        f"SUB_PART FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '{db}' "
        "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
        "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION, TABLE_COMMENT FROM "
        f"information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' ORDER BY TABLE_NAME",
    ]
    for q in queries:
        got = []
        for host, port in ((server.host, server.port), (mock.host, mock.port)):
            c = pymysql.connect(host=host, port=port, user="repl", password="replpass")
            with c.cursor() as cur:
                cur.execute(q)
                got.append(([(f.name, f.org_name, f.length, f.type_code, f.flags, f.charsetnr)
                              for f in cur._result.fields], cur.fetchall()))
            c.close()
        assert len(got[0][1]) > 10
        assert got[1] == got[0], q
    assert not [n for n in mock.log.notes if n.startswith("schema:")]
