"""SHOW SLAVE HOSTS / SHOW REPLICA HOSTS / SHOW REPLICAS: the registered replicas, as the
emulated server lists them.

- MariaDB flavour: compared with the real MariaDB (the test server): a connection registers
  with COM_REGISTER_SLAVE (report host, port, master id 0), another asks; the column
  definitions (name, type, length, decimals, nullability) and the row must be the real ones.
- MySQL flavour (no server here; ``show_replicas`` in mysql-server sql/rpl_source.cc at
  08415f0d): SHOW REPLICAS from 8.0.22 (Server_Id, Host, Port, Source_Id, Replica_UUID), SHOW
  SLAVE HOSTS with the old names (Server_id, Master_id, Slave_UUID) until 8.4 removed it; a
  replica's UUID is its @replica_uuid (8.0.26+) / @slave_uuid; master id 0 reads as the
  server's own server_id. The old mock answered none of these (ERR 1105).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql
import pytest

from binlogscope.wire.commands import ComRegisterSlave, encode_com_register_slave
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB

pytestmark = pytest.mark.network

REPO = Path(__file__).resolve().parents[2]
MARIADB_FILE = REPO / "captures" / "mariadb-10.11-workload.000001"
MYSQL_FILE = REPO.parent / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_position/"
    "binlog.000001")


def _register(conn: Any, server_id: int, host: str, port: int, setup: list[str]) -> None:
    with conn.cursor() as cur:
        for q in setup:
            cur.execute(q)
    conn._execute_command(0x15, encode_com_register_slave(
        ComRegisterSlave(server_id, host, "", "", port, 0, 0))[1:])
    conn._read_ok_packet()


def _ask(host: str, port: int, user: str, password: str, q: str) -> tuple[Any, Any] | int:
    conn = pymysql.connect(host=host, port=port, user=user, password=password)
    try:
        with conn.cursor() as cur:
            cur.execute(q)
            return cur.description, cur.fetchall()
    except (pymysql.err.ProgrammingError, pymysql.err.OperationalError) as exc:
        return int(exc.args[0])
    finally:
        conn.close()


@pytest.mark.mysql
def test_mariadb_slave_hosts_as_the_real_server(
        mariadb: MariaDB, serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("SELECT @@server_id")
        real_id = int(cur.fetchone()[0])
    c.close()
    mm = serve_scenario(Scenario(flavor="mariadb", server_version=mariadb.version,
                                 server_id=real_id, sources=[BinlogSource([MARIADB_FILE])]))
    answers = []
    for host, port, user, pw in ((mariadb.host, mariadb.port, mariadb.repl_user,
                                  mariadb.repl_password),
                                 (mm.host, mm.port, "repl", "replpass")):
        reg = pymysql.connect(host=host, port=port, user=user, password=pw)
        try:
            _register(reg, 4242, "replica-host.example", 3307, [])
            answers.append([_ask(host, port, user, pw, q) for q in
                            ("SHOW SLAVE HOSTS", "SHOW REPLICA HOSTS")])
        finally:
            reg.close()
    real, mock = answers
    assert mock == real
    first = real[0]
    assert not isinstance(first, int)
    desc, rows = first
    assert [d[0] for d in desc] == ["Server_id", "Host", "Port", "Master_id"]
    assert (4242, "replica-host.example", 3307, real_id) in rows


def test_mysql_replicas_by_version(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    uuid = "5f1e6b1e-0000-4000-8000-00000000abcd"
    for version, new_ok, old_ok in (("8.0.21", False, True), ("8.0.45", True, True),
                                    ("8.4.3", True, False), ("9.1.0", True, False)):
        mm = serve_scenario(Scenario(flavor="mysql", server_version=version, server_id=11,
                                     sources=[BinlogSource([MYSQL_FILE])]))
        reg = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
        try:
            _register(reg, 77, "r1", 3310, [f"SET @replica_uuid = '{uuid}', "
                                            f"@slave_uuid = '{uuid}'"])
            new = _ask(mm.host, mm.port, "repl", "replpass", "SHOW REPLICAS")
            old = _ask(mm.host, mm.port, "repl", "replpass", "SHOW SLAVE HOSTS")
        finally:
            reg.close()
        if new_ok:
            assert not isinstance(new, int)
            assert [d[0] for d in new[0]] == ["Server_Id", "Host", "Port", "Source_Id",
                                              "Replica_UUID"]
            assert new[1] == ((77, "r1", 3310, 11, uuid),)
        else:
            assert new == 1064
        if old_ok:
            assert not isinstance(old, int)
            assert [d[0] for d in old[0]] == ["Server_id", "Host", "Port", "Master_id",
                                              "Slave_UUID"]
            assert old[1] == ((77, "r1", 3310, 11, uuid),)
        else:
            assert old == 1064
    # a connection that closed is no longer listed
    after = _ask(mm.host, mm.port, "repl", "replpass", "SHOW REPLICAS")
    assert not isinstance(after, int) and after[1] == ()


@pytest.mark.mysql
def test_mariadb_slave_status_as_the_real_server(
        mariadb: MariaDB, serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """A server that is no replica answers SHOW [ALL] SLAVE(S) STATUS with no row; the column
    definitions must be the real 10.11's (asked as the server's own user: the replication
    user lacks SLAVE MONITOR there - privileges are not modelled by the mock)."""
    mm = serve_scenario(Scenario(flavor="mariadb", server_version=mariadb.version,
                                 sources=[BinlogSource([MARIADB_FILE])]))
    for q in ("SHOW SLAVE STATUS", "SHOW REPLICA STATUS", "SHOW ALL SLAVES STATUS",
              "SHOW ALL REPLICAS STATUS"):
        real = _ask(mariadb.host, mariadb.port, mariadb.user, mariadb.password, q)
        mock = _ask(mm.host, mm.port, "repl", "replpass", q)
        assert not isinstance(real, int) and not isinstance(mock, int) and real[1] == ()
        # Gtid_Slave_Pos (ALL): sized by the server's replica GTID state - 0 on a server that
        # never replicated (the mock's); the shared test server's holds what other tests
        # replicated onto it (24 bytes seen, with @@gtid_slave_pos empty): not compared
        if q.startswith("SHOW ALL"):
            assert real[0][-1][0] == mock[0][-1][0] == "Gtid_Slave_Pos"
            assert mock[0][-1][3] == 0
            real = (real[0][:-1], real[1])
            mock = (mock[0][:-1], mock[1])
        assert mock == real, q


def test_mysql_replica_status_statements_by_version(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    for version, new_code, old_code in (("8.0.21", 1064, 1105), ("8.0.45", 1105, 1105),
                                        ("8.4.3", 1105, 1064)):
        mm = serve_scenario(Scenario(flavor="mysql", server_version=version,
                                     sources=[BinlogSource([MYSQL_FILE])]))
        got = [_ask(mm.host, mm.port, "repl", "replpass", q)
               for q in ("SHOW REPLICA STATUS", "SHOW SLAVE STATUS")]
        assert got == [new_code, old_code], version
