"""The proxy in front of a real MariaDB while a replica's dump starts inside a transaction (its
TABLE_MAP came on an earlier connection): the row event is "unknown context", the proxy's
output has no decode error and it exits 0 (before: 'no TABLE_MAP for table_id N', exit 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

from tests.mariadb_server import sql
from tests.watch_support import start_proxy

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def test_a_resume_inside_a_transaction_is_not_damage(mariadb: Any) -> None:
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS pctx")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS pctx.t (id INT PRIMARY KEY)")
    f = sql(mariadb, "SHOW MASTER STATUS")[0][0]
    sql(mariadb, "INSERT INTO pctx.t VALUES (1), (2), (3)")
    rows = sql(mariadb, f"SHOW BINLOG EVENTS IN '{f}'")
    write = [r for r in rows if r[2] == "Write_rows_v1"][-1]
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--json")
    try:
        env = dict(os.environ, MYSQL_PWD=mariadb.repl_password)
        live = subprocess.run(
            [sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1", "--port",
             str(port), "--user", mariadb.repl_user, "--start", f"{f}:{write[1]}",
             "--non-blocking", "--json"], capture_output=True, text=True, timeout=60, env=env)
        assert live.returncode == 0, live.stderr
    finally:
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=60)
    items = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    ev = next(i for i in items if i.get("event_type") == "WRITE_ROWS_EVENT_V1")
    assert ev["error"].startswith("unknown context: no TABLE_MAP for table_id")
    assert not [i for i in items if i.get("kind") == "decode_error"]
    assert proxy.returncode == 0, err
