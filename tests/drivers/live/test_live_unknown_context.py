"""A real MariaDB dump started inside a transaction (--start at its row event, after its
TABLE_MAP): the row event is "unknown context", not a decode error; ``live`` prints no error
item and ``export --live`` exits 0 (before: 'no TABLE_MAP for table_id N' as damage)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from tests.mariadb_server import MariaDB, sql

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def test_a_dump_that_starts_inside_a_transaction(mariadb: MariaDB, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS ctx")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS ctx.t (id INT PRIMARY KEY)")
    f = sql(mariadb, "SHOW MASTER STATUS")[0][0]
    sql(mariadb, "INSERT INTO ctx.t VALUES (1), (2)")
    rows = sql(mariadb, f"SHOW BINLOG EVENTS IN '{f}'")
    write = [r for r in rows if r[2] == "Write_rows_v1"][-1]
    monkeypatch.setenv("MYSQL_PWD", mariadb.repl_password)
    conn = ["--host", mariadb.host, "--port", str(mariadb.port), "--user", mariadb.repl_user,
            "--start", f"{f}:{write[1]}", "--non-blocking"]
    out = io.StringIO()
    rc = main(["live", "--json", *conn], out=out, err=io.StringIO())
    items = [json.loads(line) for line in out.getvalue().splitlines()]
    assert rc == 0
    ev = next(i for i in items if i.get("event_type") == "WRITE_ROWS_EVENT_V1")
    assert ev["error"].startswith("unknown context: no TABLE_MAP for table_id")
    assert not [i for i in items if i.get("kind") == "decode_error"]
    err = io.StringIO()
    rc = main(["export", "--live", *conn, "--out", str(tmp_path / "x")], out=io.StringIO(),
              err=err)
    assert rc == 0, err.getvalue()
