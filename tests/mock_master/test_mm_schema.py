"""Where the mock master's table knowledge comes from (no real server needed): the scenario's
DDL over the stream's DDL (tracked by position) over TABLE_MAP metadata, and what an unknown
table gets. The values themselves are compared with MariaDB in test_mm_metadata.py."""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from mock_master import EventBuilder, Scenario, StreamSource
from mock_master.schema.ddl import catalog_from_ddl
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network


def test_ddl_history_follows_create_alter_rename_drop() -> None:
    cat = catalog_from_ddl("")
    steps = [
        ("CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(3) DEFAULT 'x;y')", "db"),
        ("ALTER TABLE t ADD COLUMN c ENUM('p','q''r') FIRST, DROP COLUMN b", "db"),
        ("RENAME TABLE t TO u", "db"),
        ("CREATE TABLE v LIKE u", "db"),
        ("ALTER TABLE u ADD COLUMN (broken", "db"),  # not parseable: noted, nothing changes
        ("DROP TABLE IF EXISTS v", "db"),
    ]
    for i, (sql, db) in enumerate(steps):
        cat.apply_sql(sql, db, origin="stream DDL", where=f" at event {i}")
        cat.snapshot((0, i))
    assert sorted(cat.tables) == [("db", "u")]
    assert [c.name for c in cat.tables[("db", "u")].columns] == ["c", "a"]
    assert cat.tables[("db", "u")].columns[0].column_type() == "enum('p','q''r')"
    assert sorted(cat.at((0, 1))) == [("db", "t")]
    assert [c.name for c in cat.at((0, 1))[("db", "t")].columns] == ["a", "b"]
    assert sorted(cat.at((0, 4))) == [("db", "u"), ("db", "v")]
    assert sorted(cat.at((0, 99))) == [("db", "u")]
    assert len(cat.notes) == 1 and "at event 4" in cat.notes[0]
    assert "ALTER TABLE u ADD COLUMN (broken" in cat.notes[0]


def _stream() -> Any:
    b = EventBuilder("mariadb")
    b.query("CREATE TABLE shop.orders (id INT UNSIGNED NOT NULL, note VARCHAR(10) "
            "CHARACTER SET latin1, PRIMARY KEY (id))", schema="shop")
    orders = b.table("shop", "orders", [("id", "INT UNSIGNED"), ("note", "VARCHAR(10)")])
    b.transaction(orders, [(1, "a")])
    mapped = b.table("shop", "mapped", [("k", "BIGINT UNSIGNED"), ("e", "CHAR(4)"),
                                          ("v", "VARBINARY(5)")])
    b.transaction(mapped, [(1, "a", b"b")])
    hidden = b.table("shop", "hidden", [("x", "INT")])
    for c in hidden.columns:  # binlog_row_metadata=MINIMAL: no column names in the TABLE_MAP
        c.name = None
    b.transaction(hidden, [(1,)])
    return b.build()


def _query(mm: ThreadedMockMaster, q: str) -> Any:
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    try:
        with c.cursor() as cur:
            cur.execute(q)
            return cur.fetchall()
    except pymysql.err.MySQLError as exc:
        return exc.args
    finally:
        c.close()


def test_stream_ddl_then_table_maps_and_never_invented_names() -> None:
    mm = ThreadedMockMaster(Scenario(sources=[StreamSource(_stream())])).start()
    try:
        q = ("SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLUMN_KEY "
             "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'shop' "
             "ORDER BY TABLE_NAME, ORDINAL_POSITION")
        assert _query(mm, q) == (
            ("mapped", "k", "bigint(20) unsigned", None, "PRI"),
            ("mapped", "e", "char(4)", "utf8mb4", ""),
            ("mapped", "v", "varbinary(5)", None, ""),
            ("orders", "id", "int(10) unsigned", None, "PRI"),  # the DDL: latin1, widths
            ("orders", "note", "varchar(10)", "latin1", ""),
        )
        assert _query(mm, "SHOW CREATE TABLE shop.hidden") == (
            1146, "Table 'shop.hidden' doesn't exist")
        assert _query(mm, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                          "TABLE_NAME = 'hidden'") == ()
        k = mm.master.knowledge()
        orders, mapped = k.find("shop", "orders"), k.find("shop", "mapped")
        assert orders is not None and orders.origin == "stream DDL"
        assert mapped is not None and mapped.origin == "TABLE_MAP"
        assert any("shop.hidden has TABLE_MAPs without column names" in n
                   for n in mm.log.notes)
        assert any("unknown table shop.hidden" in n for n in mm.log.notes)
    finally:
        mm.stop()


def test_the_scenarios_ddl_comes_first(tmp_path: Any) -> None:
    ddl = tmp_path / "schema.sql"
    ddl.write_text("CREATE DATABASE shop;\nUSE shop;\n"
                   "CREATE TABLE orders (id BIGINT NOT NULL, PRIMARY KEY (id)) "
                   "COMMENT 'from; the file';\n"
                   "CREATE TABLE hidden (x INT NOT NULL DEFAULT 5);\n")
    mm = ThreadedMockMaster(Scenario(sources=[StreamSource(_stream())],
                                     schema_ddl=str(ddl))).start()
    try:
        assert _query(mm, "SHOW COLUMNS FROM shop.hidden") == (
            ("x", "int(11)", "NO", "", "5", ""),)
        assert _query(mm, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE "
                          "TABLE_NAME = 'orders'") == (("from; the file",),)
        found = mm.master.knowledge().find("shop", "orders")
        assert found is not None and found.origin == "scenario"
    finally:
        mm.stop()


def test_prepared_statements_with_mysql_connector() -> None:
    mysql_connector = pytest.importorskip("mysql.connector")
    mm = ThreadedMockMaster(Scenario(sources=[StreamSource(_stream())])).start()
    try:
        c = mysql_connector.connect(host=mm.host, port=mm.port, user="repl",
                                    password="replpass", use_pure=True)
        cur = c.cursor(prepared=True)
        cur.execute("SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY 2 DESC",
                    ("shop", "orders"))
        assert cur.fetchall() == [("note", 2), ("id", 1)]
        cur.execute("SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY 2 DESC",
                    ("shop", "mapped"))
        assert cur.fetchall() == [("v", 3), ("e", 2), ("k", 1)]
        cur.close()
        c.close()
        assert not mm.log.unknown_queries
        assert any(q.startswith("PREPARE SELECT COLUMN_NAME") for cl in mm.log.clients
                   for q in cl.queries)
    finally:
        mm.stop()


def test_schema_ddl_on_the_command_line(tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    ddl = tmp_path / "schema.sql"
    ddl.write_text("CREATE TABLE cli.t (id INT UNSIGNED PRIMARY KEY, s SET('a','b'));")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_master", str(repo / "captures" /
                                                  "mariadb-10.11-workload.000001"),
         "--port", "0", "--quiet", "--user", "cdc", "--password-env", "MM_TEST_PW",
         "--schema-ddl", str(ddl)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo,
        env={**os.environ, "PYTHONPATH": f"{repo / 'src'}{os.pathsep}{repo}",
             "MM_TEST_PW": "pw"})
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        port = int(proc.stdout.readline())
        c = pymysql.connect(host="127.0.0.1", port=port, user="cdc", password="pw")
        with c.cursor() as cur:
            cur.execute("SHOW COLUMNS FROM cli.t")
            assert cur.fetchall() == (("id", "int(10) unsigned", "NO", "PRI", None, ""),
                                      ("s", "set('a','b')", "YES", "", None, ""))
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_mysql_flavour_shows_mysql_8_values() -> None:
    """MySQL 8.0's information_schema forms (as documented: no MySQL server here to compare
    with): no integer display widths, JSON its own type, NULL for no default, unquoted string
    defaults, DEFAULT_GENERATED, utf8mb4_0900_ai_ci, SRS_ID instead of IS_GENERATED."""
    b = EventBuilder("mysql")
    b.query("CREATE TABLE shop.m (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
            "flag TINYINT(1), n BIGINT, y YEAR, j JSON, s VARCHAR(4) DEFAULT 'x', "
            "ts TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP) "
            "DEFAULT CHARSET=utf8mb4", schema="shop")
    mm = ThreadedMockMaster(Scenario(flavor="mysql", sources=[StreamSource(b.build())])).start()
    try:
        rows = _query(mm, "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, COLUMN_DEFAULT, EXTRA, "
                          "COLLATION_NAME FROM information_schema.COLUMNS WHERE "
                          "TABLE_NAME = 'm' ORDER BY ORDINAL_POSITION")
        assert rows == (
            ("id", "int unsigned", "int", None, "auto_increment", None),
            ("flag", "tinyint(1)", "tinyint", None, "", None),
            ("n", "bigint", "bigint", None, "", None),
            ("y", "year", "year", None, "", None),
            ("j", "json", "json", None, "", None),
            ("s", "varchar(4)", "varchar", "x", "", "utf8mb4_0900_ai_ci"),
            ("ts", "timestamp", "timestamp", "CURRENT_TIMESTAMP",
             "DEFAULT_GENERATED on update CURRENT_TIMESTAMP", None),
        )
        c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
        with c.cursor() as cur:
            cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_NAME = 'm'")
            names = [d[0] for d in cur.description]
        c.close()
        assert "IS_GENERATED" not in names and names[-2:] == ["GENERATION_EXPRESSION", "SRS_ID"]
    finally:
        mm.stop()


def test_ddl_appended_while_serving_is_seen_by_the_next_query() -> None:
    """A live server's information_schema changes with its DDL: so does the mock's when events
    are appended (a blocking dump's live commits)."""
    mm = ThreadedMockMaster(Scenario(sources=[StreamSource(_stream())])).start()
    try:
        q = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'late'"
        assert _query(mm, q) == ()
        extra = EventBuilder("mariadb")
        extra.query("CREATE TABLE shop.late (a INT, b TEXT)", schema="shop")
        mm.append_events(extra.files[0].events[2:])  # after its FD and GTID_LIST
        assert _query(mm, q) == (("a",), ("b",))
    finally:
        mm.stop()
