"""A real MariaDB with binlog_row_metadata=NO_LOG (its default; the test server runs FULL,
set back after the test): TABLE_MAPs without names, signedness or charsets. ``live --json``
shows the rows keyed by column name, an INT UNSIGNED as unsigned and a VARBINARY as bytes -
taken from information_schema.COLUMNS on a second connection - and says so in a note (the
failure paths: tests/drivers/live/test_column_names.py)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from binlogscope.cli.main import main
from tests.mariadb_server import MariaDB, sql

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def _live(mariadb: MariaDB, start: str, monkeypatch: pytest.MonkeyPatch
          ) -> tuple[int, list[dict[str, Any]], str]:
    monkeypatch.setenv("MYSQL_PWD", mariadb.repl_password)
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", "--host", mariadb.host, "--port", str(mariadb.port),
               "--user", mariadb.repl_user, "--start", start, "--non-blocking"],
              out=out, err=err)
    return rc, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_names_from_information_schema(mariadb: MariaDB, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    meta = sql(mariadb, "SELECT @@GLOBAL.binlog_row_metadata")[0][0]
    sql(mariadb, "SET GLOBAL binlog_row_metadata = 'NO_LOG'")
    try:
        _check(mariadb, monkeypatch)
    finally:
        sql(mariadb, f"SET GLOBAL binlog_row_metadata = '{meta}'")


def _check(mariadb: MariaDB, monkeypatch: pytest.MonkeyPatch) -> None:
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS colnames")
    sql(mariadb, "DROP TABLE IF EXISTS colnames.t")
    sql(mariadb, "CREATE TABLE colnames.t (id INT PRIMARY KEY, u INT UNSIGNED, "
                 "b VARBINARY(4), s VARCHAR(10) CHARACTER SET utf8mb4)")
    f, pos = sql(mariadb, "SHOW MASTER STATUS")[0][:2]
    sql(mariadb, "INSERT INTO colnames.t VALUES (1, 4294967295, x'00ff', 'hé')")
    rc, items, err = _live(mariadb, f"{f}:{pos}", monkeypatch)
    assert rc == 0, err
    rows = {i["table"]: i["rows"] for i in items
            if str(i.get("event_type", "")).startswith("WRITE_ROWS")}
    assert rows["t"] == [{"before": None, "after": {"id": 1, "u": 4294967295,
                                                    "b": "00ff", "s": "hé"}}], rows
    notes = [i["text"] for i in items if i.get("kind") == "note"]
    assert any("column names of colnames.t taken from information_schema" in n
               for n in notes), notes
