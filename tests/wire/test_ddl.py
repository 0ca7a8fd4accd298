"""CREATE TABLE statements seen in QUERY events: the declared temporal decimals per table."""

from __future__ import annotations

from binlogscope.wire.binlog._ddl import Declared, watch_ddl


def _watch(*queries: str, schema: str = "db") -> dict[tuple[str, str], Declared]:
    declared: dict[tuple[str, str], Declared] = {}
    for q in queries:
        watch_ddl(q, schema, declared)
    return declared


def test_create_table_temporal_decimals_in_column_order() -> None:
    d = _watch("CREATE TABLE t_old (id INT NOT NULL PRIMARY KEY, rev INT NOT NULL DEFAULT 0, "
               "t0 TIME, t3 TIME(3), dt6 DATETIME(6), ts2 TIMESTAMP(2) NULL DEFAULT NULL, "
               "note VARCHAR(10) DEFAULT 'a,b (c)', KEY k (rev)) ENGINE=InnoDB")
    assert d[("db", "t_old")] == [
        ("id", None, 0), ("rev", None, 0), ("t0", "TIME", 0), ("t3", "TIME", 3),
        ("dt6", "DATETIME", 6), ("ts2", "TIMESTAMP", 2), ("note", None, 0)]


def test_quoted_and_qualified_names_if_not_exists() -> None:
    d = _watch("create table if not exists `Other`.`My Table` (`a b` datetime( 4 ), "
               "`c` int, CONSTRAINT pk PRIMARY KEY (`c`))", schema="ignored")
    assert d == {("other", "my table"): [("a b", "DATETIME", 4), ("c", None, 0)]}


def test_alter_and_drop_forget_the_table() -> None:
    create = "CREATE TABLE t (a TIME(1))"
    assert ("db", "t") not in _watch(create, "ALTER TABLE t ADD COLUMN b INT")
    assert ("db", "t") not in _watch(create, "DROP TABLE IF EXISTS `db`.`t`, u")
    assert ("db", "t") in _watch(create, "ALTER TABLE other ADD COLUMN b INT")


def test_other_statements_are_ignored() -> None:
    assert _watch("BEGIN", "INSERT INTO t VALUES (1)", "CREATE DATABASE x",
                  "CREATE TABLE broken (a TIME(3)") == {}
