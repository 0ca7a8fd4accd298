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
- MySQL flavour SHOW REPLICA STATUS / SHOW SLAVE STATUS (``show_slave_status_metadata`` in
  sql/rpl_replica.cc at 0305767c, an 8.0 tree, and 200daa1a, 9.7.0; the old names by
  ``rename_fields_use_old_replica_source_terms``): no row, the 62 columns by version.
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


def _only_server(answer: tuple[Any, Any] | int, server_id: int) -> tuple[Any, Any] | int:
    """A SHOW SLAVE HOSTS answer with only ``server_id``'s rows (an error code as it is)."""
    if isinstance(answer, int):
        return answer
    desc, rows = answer
    return desc, tuple(r for r in rows if r[0] == server_id)


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
    # The real server is shared by the tests of this process: a replica an earlier test ended
    # may still be registered while its dump thread winds down (seen: a binlogscope session's
    # random server id, host 'vm', port 0). Only this test's registration is compared.
    real = [_only_server(a, 4242) for a in real]
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


def _words(text: str) -> list[str]:
    return text.split()


#: MySQL's SHOW REPLICA STATUS columns, in order (mysql-server sql/rpl_replica.cc
#: show_slave_status_metadata, the same at 0305767c, an 8.0 tree, and 200daa1a, 9.7.0)
MYSQL_NEW = _words(
    "Replica_IO_State Source_Host Source_User Source_Port Connect_Retry Source_Log_File "
    "Read_Source_Log_Pos Relay_Log_File Relay_Log_Pos Relay_Source_Log_File Replica_IO_Running "
    "Replica_SQL_Running Replicate_Do_DB Replicate_Ignore_DB Replicate_Do_Table "
    "Replicate_Ignore_Table Replicate_Wild_Do_Table Replicate_Wild_Ignore_Table Last_Errno "
    "Last_Error Skip_Counter Exec_Source_Log_Pos Relay_Log_Space Until_Condition Until_Log_File "
    "Until_Log_Pos Source_SSL_Allowed Source_SSL_CA_File Source_SSL_CA_Path Source_SSL_Cert "
    "Source_SSL_Cipher Source_SSL_Key Seconds_Behind_Source Source_SSL_Verify_Server_Cert "
    "Last_IO_Errno Last_IO_Error Last_SQL_Errno Last_SQL_Error Replicate_Ignore_Server_Ids "
    "Source_Server_Id Source_UUID Source_Info_File SQL_Delay SQL_Remaining_Delay "
    "Replica_SQL_Running_State Source_Retry_Count Source_Bind Last_IO_Error_Timestamp "
    "Last_SQL_Error_Timestamp Source_SSL_Crl Source_SSL_Crlpath Retrieved_Gtid_Set "
    "Executed_Gtid_Set Auto_Position Replicate_Rewrite_DB Channel_Name Source_TLS_Version "
    "Source_public_key_path Get_Source_public_key Network_Namespace")
#: SHOW SLAVE STATUS's names (8.0 before 8.0.22, and the deprecated statement after it): the
#: MySQL 8.0 manual, and what clients read (e.g. radondb-mysql-kubernetes' SlaveStatus)
MYSQL_OLD = _words(
    "Slave_IO_State Master_Host Master_User Master_Port Connect_Retry Master_Log_File "
    "Read_Master_Log_Pos Relay_Log_File Relay_Log_Pos Relay_Master_Log_File Slave_IO_Running "
    "Slave_SQL_Running Replicate_Do_DB Replicate_Ignore_DB Replicate_Do_Table "
    "Replicate_Ignore_Table Replicate_Wild_Do_Table Replicate_Wild_Ignore_Table Last_Errno "
    "Last_Error Skip_Counter Exec_Master_Log_Pos Relay_Log_Space Until_Condition Until_Log_File "
    "Until_Log_Pos Master_SSL_Allowed Master_SSL_CA_File Master_SSL_CA_Path Master_SSL_Cert "
    "Master_SSL_Cipher Master_SSL_Key Seconds_Behind_Master Master_SSL_Verify_Server_Cert "
    "Last_IO_Errno Last_IO_Error Last_SQL_Errno Last_SQL_Error Replicate_Ignore_Server_Ids "
    "Master_Server_Id Master_UUID Master_Info_File SQL_Delay SQL_Remaining_Delay "
    "Slave_SQL_Running_State Master_Retry_Count Master_Bind Last_IO_Error_Timestamp "
    "Last_SQL_Error_Timestamp Master_SSL_Crl Master_SSL_Crlpath Retrieved_Gtid_Set "
    "Executed_Gtid_Set Auto_Position Replicate_Rewrite_DB Channel_Name Master_TLS_Version "
    "Master_public_key_path Get_master_public_key Network_Namespace")


def _connector(host: str, port: int, q: str) -> tuple[list[Any], list[Any]] | int:
    """``q`` through mysql-connector-python (pure Python): (the column descriptions, the
    rows), or the error number."""
    import mysql.connector

    conn = mysql.connector.connect(host=host, port=port, user="repl", password="replpass",
                                   use_pure=True)
    try:
        cur = conn.cursor()
        try:
            cur.execute(q)
        except mysql.connector.Error as exc:
            return int(exc.errno)
        got = cur.fetchall()
        return list(cur.description or []), list(got)
    finally:
        conn.close()


def test_mysql_replica_status_by_version(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """A MySQL that is no replica answers SHOW REPLICA STATUS / SHOW SLAVE STATUS with no row
    and its column list (before: ERR 1105): the new terms from 8.0.22, the old ones for SHOW
    SLAVE STATUS (8.0.21 has only that one, and no Network_Namespace yet), SHOW SLAVE STATUS
    a syntax error from 8.4; read by pymysql and mysql-connector-python."""
    for version, new, old in (("8.0.21", None, MYSQL_OLD[:-1]), ("8.0.30", MYSQL_NEW, MYSQL_OLD),
                              ("8.4.3", MYSQL_NEW, None), ("9.1.0", MYSQL_NEW, None)):
        mm = serve_scenario(Scenario(flavor="mysql", server_version=version,
                                     sources=[BinlogSource([MYSQL_FILE])]))
        for q, want in (("SHOW REPLICA STATUS", new), ("SHOW SLAVE STATUS", old)):
            by_pymysql = _ask(mm.host, mm.port, "repl", "replpass", q)
            by_connector = _connector(mm.host, mm.port, q)
            if want is None:
                assert by_pymysql == by_connector == 1064, (version, q)
                continue
            assert not isinstance(by_pymysql, int), (version, q, by_pymysql)
            assert not isinstance(by_connector, int), (version, q, by_connector)
            assert [d[0] for d in by_pymysql[0]] == want, (version, q)
            assert [d[0] for d in by_connector[0]] == want, (version, q)
            assert by_pymysql[1] == () and by_connector[1] == []
            types = {d[0]: (d[1], d[3]) for d in by_pymysql[0]}
            # Item_return_int(.., MYSQL_TYPE_LONGLONG) / LONG, Item_empty_string: VAR_STRING
            # in the connection's charset (utf8mb4: 4 bytes a character)
            assert types[want[6]] == (8, 10) and types[want[3]] == (3, 7)
            assert types[want[1]] == (253, 256 * 4)
    # MySQL 5.x: its columns are not described - said so (ERR 1105), not guessed
    mm = serve_scenario(Scenario(flavor="mysql", server_version="5.7.44",
                                 sources=[BinlogSource([MYSQL_FILE])]))
    assert _ask(mm.host, mm.port, "repl", "replpass", "SHOW SLAVE STATUS") == 1105
