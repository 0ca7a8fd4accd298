"""scripts/mariadb.sh: starts a private server with the replication settings, stops it cleanly."""

from __future__ import annotations

import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.mariadb_server import SCRIPT, MariaDB, pid_alive, start, stop

pytestmark = pytest.mark.mysql


def _variables(server: MariaDB, **kwargs: Any) -> dict[str, str]:
    conn = server.connect(**kwargs)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', "
                        "'binlog_format', 'binlog_checksum', 'binlog_row_metadata', "
                        "'binlog_row_image', 'binlog_annotate_row_events', 'server_id', "
                        "'rpl_semi_sync_master_enabled', 'bind_address', 'time_zone', "
                        "'log_bin_basename', 'max_binlog_size')")
            return {str(k): str(v) for k, v in cur.fetchall()}
    finally:
        conn.close()


def test_fixture_server_has_replication_settings(mariadb: MariaDB) -> None:
    v = _variables(mariadb)
    assert v["log_bin"] == "ON"
    assert v["binlog_format"] == "ROW"
    assert v["binlog_checksum"] == "CRC32"
    assert v["binlog_row_metadata"] == "FULL"
    assert v["binlog_row_image"] == "FULL"
    assert v["binlog_annotate_row_events"] == "ON"
    assert v["rpl_semi_sync_master_enabled"] == "ON"
    assert v["server_id"] == "1"
    assert v["bind_address"] == "127.0.0.1"
    assert v["time_zone"] == "+00:00"
    assert v["log_bin_basename"] == str(mariadb.binlog_dir / "mysql-bin")
    assert int(v["max_binlog_size"]) <= 64 << 20
    assert mariadb.binlog_files()[0].name == "mysql-bin.000001"
    assert mariadb.binlog_files()[0].read_bytes()[:4] == b"\xfebin"


def test_repl_user_can_ask_for_binlogs(mariadb: MariaDB) -> None:
    conn = mariadb.connect(user=mariadb.repl_user, password=mariadb.repl_password,
                           database=None)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            assert cur.fetchall()
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            assert row[0].startswith("mysql-bin.")
            cur.execute("SHOW GRANTS")
            grants = " ".join(r[0] for r in cur.fetchall())
    finally:
        conn.close()
    assert "REPLICATION SLAVE" in grants
    assert "BINLOG MONITOR" in grants


def test_two_servers_in_parallel_start_and_stop(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    try:
        with ThreadPoolExecutor(2) as pool:
            servers = list(pool.map(start, dirs))
        a, b = servers
        assert a.port != b.port
        assert a.socket != b.socket
        assert a.pid != b.pid
        for s in servers:
            assert pid_alive(s.pid)
            assert (s.dir / "server.env").is_file()
            with socket.create_connection((s.host, s.port), timeout=5):
                pass
            assert _variables(s, database=None)["log_bin"] == "ON"
        # start on a running DIR reports the same server
        again = start(dirs[0])
        assert (again.port, again.pid) == (a.port, a.pid)
    finally:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(stop, dirs))
    for s in servers:
        deadline = time.monotonic() + 10
        while pid_alive(s.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(s.pid)
        assert not (s.dir / "mariadbd.pid").exists()
        with pytest.raises(OSError):
            socket.create_connection((s.host, s.port), timeout=1).close()
    # stopping a stopped server is fine
    stop(dirs[0])


def test_script_rejects_bad_usage() -> None:
    proc = subprocess.run(["bash", str(SCRIPT), "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage" in proc.stderr
