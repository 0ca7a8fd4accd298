"""MySQL flavour: what PyMySQL and mysql-connector-python (pure Python, text and prepared
statements) read from information_schema and SHOW CREATE TABLE of a mock master serving MySQL 8
fixture binlogs. The tables come from the binlogs' own DDL (``CREATE TABLE t1(id SERIAL,
PRIMARY KEY(id))`` in the 8.0.45 GTID fixtures, a CHAR/VARCHAR/ENUM/SET/TEXT table in the 8.0.28
one). There is no MySQL server here: the expected answers are MySQL 8's as its source writes
them (sql/sql_show.cc store_create_info; the information_schema views of
sql/dd/impl/system_views), with the column definitions the fixture captures verified (see
mock_master/answers/mysql_shapes.py and test_mm_mysql_captures.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pymysql
import pytest

from binlogscope.session.events import Peer
from binlogscope.wire.reader import ByteReader
from binlogscope.wire.results import decode_column_definition41
from mock_master.diff.compare import decode
from mock_master.diff.run import record
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.diff_mysql import FILES, FIXTURE

pytestmark = pytest.mark.network

ENUMS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / \
    "blackbeam__rust_mysql_common" / "test-data" / "binlogs" / "mysql-enum-string-set.000001"

# MySQL 8 (store_create_info): SERIAL = BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE, so the
# PRIMARY KEY and a UNIQUE KEY named after the column; no display width; utf8mb4's default
# collation printed as COLLATE=utf8mb4_0900_ai_ci. (A real server adds AUTO_INCREMENT=n once
# rows were inserted: the mock master has no table data - a documented difference.)
T1 = ("CREATE TABLE `t1` (\n  `id` bigint unsigned NOT NULL AUTO_INCREMENT,\n"
      "  PRIMARY KEY (`id`),\n  UNIQUE KEY `id` (`id`)\n"
      ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci")
# nullable columns DEFAULT NULL, except TEXT (a BLOB field: no default clause)
T = ("CREATE TABLE `t` (\n  `f1` char(128) DEFAULT NULL,\n  `f2` varchar(300) DEFAULT NULL,\n"
     "  `f3` enum('var1','variant2','foo') DEFAULT NULL,\n"
     "  `f4` set('one','two','three','four') DEFAULT NULL,\n  `f5` text\n"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci")

COLUMNS_Q = ("SELECT column_name, column_type, is_nullable, column_key, column_default, extra "
             "FROM information_schema.columns WHERE table_schema = %s ORDER BY ordinal_position")


def _serve(files: list[Path]) -> ThreadedMockMaster:
    if not all(f.exists() for f in files):
        pytest.fail(f"MySQL 8 fixture binlogs missing: {files}")
    return ThreadedMockMaster(Scenario(flavor="mysql", sources=[BinlogSource(list(files))],
                                       users=[User("repl", "replpass",
                                                   "caching_sha2_password"),
                                              # mysql-connector's pure caching_sha2 client
                                              # does no RSA exchange without TLS
                                              User("native", "nativepw",
                                                   "mysql_native_password")]))


def _columns_of(conv: Any, query_start: str) -> list[Any]:
    """The column definitions the server sent for the first query starting so."""
    out: list[Any] = []
    on = False
    for p in decode(conv):
        if p.direction is Peer.CLIENT:
            q = getattr(p.value, "query", None)
            if p.kind == "command" and p.value.command == 0x16:  # COM_STMT_PREPARE
                q = bytes(p.value.arguments).decode()
            if q is not None:
                on = isinstance(q, str) and q.startswith(query_start)
        elif on and p.kind == "column_definition41":
            out.append(p.value)
        elif on and p.kind == "raw" and p.value.data[:4] == b"\x03def":
            # a prepared statement's column (binlogscope's session leaves them raw)
            d = decode_column_definition41(ByteReader(p.value.data))
            if d.name != "?":  # not a parameter's
                out.append(d)
        elif on and out and (p.kind in ("ok", "eof", "text_row") or
                             (p.kind == "raw" and p.value.data[:1] == b"\xfe")):
            return out
    return out


def test_pymysql_show_create_table_and_columns_as_mysql_8_0_45() -> None:
    def session(host: str, port: int) -> Any:
        conn = pymysql.connect(host=host, port=port, user="repl", password="replpass",
                               database="test", charset="utf8mb4",
                               collation="utf8mb4_0900_ai_ci",
                               cursorclass=pymysql.cursors.DictCursor)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW CREATE TABLE t1")
                create = cur.fetchall()
                cur.execute(COLUMNS_Q, ("test",))
                return create, cur.fetchall()
        finally:
            conn.close()

    with _serve([FIXTURE / f for f in FILES]) as mm:
        run = record(session, mm.host, mm.port)
    assert run.error is None, run.error
    create, cols = cast(Any, run.result)
    assert create == [{"Table": "t1", "Create Table": T1}]
    # MySQL 8 names information_schema columns as the view does (upper case), whatever the
    # query wrote - DictCursor keys included
    assert cols == [{"COLUMN_NAME": "id", "COLUMN_TYPE": "bigint unsigned", "IS_NULLABLE": "NO",
                     "COLUMN_KEY": "PRI", "COLUMN_DEFAULT": None, "EXTRA": "auto_increment"}]
    conv = run.conversations[0]
    table, create_col = _columns_of(conv, "SHOW CREATE TABLE")
    # Item_empty_string: VAR_STRING NOT NULL, decimals 31, chars x mbmaxlen (utf8mb4_0900: 255)
    assert (table.type, table.character_set, table.column_length, table.flags,
            table.decimals) == (253, 255, 64 * 4, 1, 31)
    assert (create_col.type, create_col.column_length, create_col.flags,
            create_col.decimals) == (253, max(len(T1), 1024) * 4, 1, 31)
    defs = _columns_of(conv, "SELECT column_name")
    got = [(d.name, d.type, d.schema, d.table, d.org_table, d.org_name, d.character_set,
            d.column_length, d.flags) for d in defs]
    assert got == [
        # COLUMN_NAME: an expression of the view (col.name COLLATE utf8_tolower_ci)
        ("COLUMN_NAME", 253, "information_schema", "COLUMNS", "", "COLUMN_NAME", 255, 256, 0),
        ("COLUMN_TYPE", 252, "information_schema", "COLUMNS", "columns", "COLUMN_TYPE", 255,
         16777215 * 4, 0x1091),
        ("IS_NULLABLE", 253, "information_schema", "COLUMNS", "", "IS_NULLABLE", 255, 12, 1),
        ("COLUMN_KEY", 254, "information_schema", "COLUMNS", "columns", "COLUMN_KEY", 255, 12,
         0x1181),
        ("COLUMN_DEFAULT", 252, "information_schema", "COLUMNS", "columns", "COLUMN_DEFAULT",
         255, 65535 * 4, 0x90),
        ("EXTRA", 253, "information_schema", "COLUMNS", "", "EXTRA", 255, 1024, 0),
    ]


@pytest.mark.parametrize("prepared", [False, True])
def test_mysql_connector_reads_information_schema_and_show_create(prepared: bool) -> None:
    mysql_connector = pytest.importorskip("mysql.connector")

    def session(host: str, port: int) -> Any:
        c = mysql_connector.connect(host=host, port=port, user="native", password="nativepw",
                                    use_pure=True, database="mysql", charset="utf8mb4",
                                    collation="utf8mb4_0900_ai_ci")
        try:
            cur = c.cursor(prepared=prepared)
            cur.execute("SELECT table_name, column_name, data_type, column_type, "
                        "character_set_name, collation_name FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                        ("mysql", "t"))
            desc = [d[0] for d in cur.description]
            rows = [tuple(v.decode() if isinstance(v, bytes | bytearray) else v for v in r)
                    for r in cur.fetchall()]
            cur.close()
            text = c.cursor()
            text.execute("SHOW CREATE TABLE t")
            return desc, rows, text.fetchall()
        finally:
            c.close()

    with _serve([ENUMS]) as mm:
        run = record(session, mm.host, mm.port)
    assert run.error is None, run.error
    desc, rows, create = cast(Any, run.result)
    assert desc == ["TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "COLUMN_TYPE",
                    "CHARACTER_SET_NAME", "COLLATION_NAME"]
    cs = ("utf8mb4", "utf8mb4_0900_ai_ci")
    assert rows == [("t", "f1", "char", "char(128)", *cs),
                    ("t", "f2", "varchar", "varchar(300)", *cs),
                    ("t", "f3", "enum", "enum('var1','variant2','foo')", *cs),
                    ("t", "f4", "set", "set('one','two','three','four')", *cs),
                    ("t", "f5", "text", "text", *cs)]
    assert create == [("t", T)]
    defs = _columns_of(run.conversations[0], "SELECT table_name")
    assert [(d.name, d.org_table, d.flags) for d in defs[:2]] == [
        ("TABLE_NAME", "tables", 0x1081), ("COLUMN_NAME", "", 0)]
    assert all(d.decimals == 0 and d.schema == "information_schema" for d in defs)


def test_replication_setup_queries_as_mysql_8_0_45() -> None:
    """What CDC clients ask before a GTID dump, with MySQL's column definitions (source:
    sql_show_status.cc build_query for SHOW VARIABLES - a derived table over
    performance_schema.global_variables -, rpl_source.cc show_master_status)."""
    uuid = "396e294c-1ca4-11f1-9ae7-00155da79c6b"

    def session(host: str, port: int) -> Any:
        conn = pymysql.connect(host=host, port=port, user="repl", password="replpass",
                               charset="utf8mb4", collation="utf8mb4_0900_ai_ci")
        out = []
        try:
            with conn.cursor() as cur:
                for q in ("SHOW GLOBAL VARIABLES LIKE 'gtid_mode'", "SHOW MASTER STATUS",
                          "SELECT @@gtid_executed, @@gtid_purged, @@server_uuid"):
                    cur.execute(q)
                    out.append(cur.fetchall())
            return out
        finally:
            conn.close()

    with _serve([FIXTURE / f for f in FILES]) as mm:
        run = record(session, mm.host, mm.port)
    assert run.error is None, run.error
    variables, status, gtids = cast(Any, run.result)
    assert variables == (("gtid_mode", "ON"),)
    assert status[0][0] == "binlog.000002" and status[0][4] == f"{uuid}:1-6"
    assert gtids == ((f"{uuid}:1-6", "", uuid),)
    conv = run.conversations[0]
    name, value = _columns_of(conv, "SHOW GLOBAL VARIABLES")
    assert (name.schema, name.table, name.org_table, name.org_name, name.column_length,
            name.flags) == ("", "global_variables", "global_variables", "Variable_name",
                            256, 0x1001)
    assert (value.org_name, value.column_length, value.flags) == ("Value", 4096, 0)
    executed = _columns_of(conv, "SHOW MASTER STATUS")[4]
    assert (executed.name, executed.column_length, executed.decimals) == (
        "Executed_Gtid_Set", len(f"{uuid}:1-6") * 4, 31)


def test_primary_key_lookups_as_cdc_clients_make_them() -> None:
    """KEY_COLUMN_USAGE and STATISTICS (the views of sql/dd/impl/system_views): upper-case
    labels, the PRIMARY and the SERIAL column's UNIQUE key, STATISTICS' IS_VISIBLE."""
    def session(host: str, port: int) -> Any:
        conn = pymysql.connect(host=host, port=port, user="repl", password="replpass",
                               cursorclass=pymysql.cursors.DictCursor)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT constraint_name, column_name, ordinal_position FROM "
                            "information_schema.key_column_usage WHERE table_schema = 'test' "
                            "AND table_name = 't1' ORDER BY constraint_name")
                kcu = cur.fetchall()
                cur.execute("SELECT index_name, non_unique, seq_in_index, column_name, "
                            "is_visible FROM information_schema.statistics WHERE "
                            "table_schema = 'test' AND table_name = 't1'")
                return kcu, cur.fetchall()
        finally:
            conn.close()

    with _serve([FIXTURE / f for f in FILES]) as mm:
        run = record(session, mm.host, mm.port)
    assert run.error is None, run.error
    kcu, stats = cast(Any, run.result)
    assert list(kcu) == [
        {"CONSTRAINT_NAME": "id", "COLUMN_NAME": "id", "ORDINAL_POSITION": 1},
        {"CONSTRAINT_NAME": "PRIMARY", "COLUMN_NAME": "id", "ORDINAL_POSITION": 1}]
    assert sorted(s["INDEX_NAME"] for s in stats) == ["PRIMARY", "id"]
    assert all(s["NON_UNIQUE"] == 0 and s["IS_VISIBLE"] == "YES" for s in stats)
    defs = _columns_of(run.conversations[0], "SELECT index_name")
    assert [(d.name, d.org_table, d.org_name) for d in defs] == [
        ("INDEX_NAME", "", "INDEX_NAME"), ("NON_UNIQUE", "", "NON_UNIQUE"),
        ("SEQ_IN_INDEX", "index_column_usage", "SEQ_IN_INDEX"),
        ("COLUMN_NAME", "", "COLUMN_NAME"), ("IS_VISIBLE", "", "IS_VISIBLE")]


def test_unknown_columns_are_named_by_mysqls_clause_names() -> None:
    """ER_BAD_FIELD_ERROR with thd->where as MySQL words it (MariaDB 10.11: SELECT/WHERE)."""
    with _serve([FIXTURE / f for f in FILES]) as mm:
        conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
        try:
            got = []
            for q in ("SELECT nope FROM information_schema.columns",
                      "SELECT column_name FROM information_schema.columns WHERE nope = 1",
                      "SELECT column_name FROM information_schema.columns ORDER BY nope"):
                with pytest.raises(pymysql.err.OperationalError) as exc, \
                        conn.cursor() as cur:
                    cur.execute(q)
                got.append(exc.value.args)
        finally:
            conn.close()
    assert got == [(1054, "Unknown column 'nope' in 'field list'"),
                   (1054, "Unknown column 'nope' in 'where clause'"),
                   (1054, "Unknown column 'nope' in 'order clause'")]


def test_show_table_status_has_mysqls_columns() -> None:
    """MySQL 8's SHOW TABLE STATUS (the manual's list; show.cc's derived table TABLES): no
    MariaDB Max_index_length/Temporary; Name typed as SHOW TABLES' captured column."""
    with _serve([FIXTURE / f for f in FILES]) as mm:
        run = record(lambda h, p: _status_names(h, p), mm.host, mm.port)
    assert run.error is None, run.error
    assert run.result == [
        "Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
        "Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time",
        "Update_time", "Check_time", "Collation", "Checksum", "Create_options", "Comment"]
    name = _columns_of(run.conversations[0], "SHOW TABLE STATUS")[0]
    assert (name.schema, name.table, name.org_table, name.org_name, name.flags) == (
        "", "TABLES", "tables", "Name", 0x1081)


def _status_names(host: str, port: int) -> list[str]:
    conn = pymysql.connect(host=host, port=port, user="repl", password="replpass",
                           database="test")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW TABLE STATUS")
            cur.fetchall()
            return [d[0] for d in cur.description]
    finally:
        conn.close()
