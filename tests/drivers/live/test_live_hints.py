"""Hints that fit the real server's errors (MariaDB): an account without REPLICATION SLAVE
logs in and is refused at COM_REGISTER_SLAVE with ERR 1045 - not a password problem; a GTID
that is not in the binlog is not a file/position problem; a wrong password stays one."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.watch_support import run_sql

pytestmark = pytest.mark.mysql


def _live(db: Any, user: str, password: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MYSQL_PWD=password, HOME=str(db.dir))
    return subprocess.run(
        [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port", str(db.port),
         "-u", user, "--no-reconnect", "--non-blocking", *args], capture_output=True,
        text=True, env=env, timeout=90, stdin=subprocess.DEVNULL)




def test_missing_replication_slave_is_a_privilege_hint(mariadb: Any) -> None:
    run_sql(mariadb, "DROP USER IF EXISTS 'cli17_nopriv'@'%'",
         "CREATE USER 'cli17_nopriv'@'%' IDENTIFIED BY 'pw'",
         "GRANT BINLOG MONITOR ON *.* TO 'cli17_nopriv'@'%'")
    try:
        p = _live(mariadb, "cli17_nopriv", "pw")
    finally:
        run_sql(mariadb, "DROP USER IF EXISTS 'cli17_nopriv'@'%'")
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "ERR 1045" in p.stderr  # what MariaDB sends (MySQL: 1227)
    assert "REPLICATION SLAVE" in p.stderr and "wrong user or password" not in p.stderr


def test_wrong_password_is_still_a_password_hint(mariadb: Any) -> None:
    p = _live(mariadb, mariadb.repl_user, "not-the-password")
    assert p.returncode == 1 and "ERR 1045" in p.stderr
    assert "wrong user or password" in p.stderr and "REPLICATION SLAVE" not in p.stderr
    assert "--ssl-mode" not in p.stderr  # this server offers no TLS: no TLS hint


def test_gtid_not_in_the_binlog_is_a_gtid_hint(mariadb: Any) -> None:
    p = _live(mariadb, mariadb.repl_user, mariadb.repl_password, "--gtid", "0-1-999999999")
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "ERR 1236" in p.stderr and "not in the master's binlog" in p.stderr
    assert "gtid_binlog_pos" in p.stderr and "SHOW BINARY LOGS" not in p.stderr


def test_missing_file_and_bad_position_hints(mariadb: Any) -> None:
    p = _live(mariadb, mariadb.repl_user, mariadb.repl_password, "--start", "nope-bin.000001:4")
    assert "ERR 1236" in p.stderr and "SHOW BINARY LOGS" in p.stderr, p.stderr
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        first = cur.fetchone()[0]
    c.close()
    p = _live(mariadb, mariadb.repl_user, mariadb.repl_password, "--start",
              f"{first}:999999999")
    assert "ERR 1236" in p.stderr and "SHOW BINLOG EVENTS" in p.stderr, p.stderr
