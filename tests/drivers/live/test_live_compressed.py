"""``live --compression-algorithms`` (as the mysql client's option) against the real MariaDB:
the zlib-compressed protocol (CLIENT_COMPRESS; MariaDB has no zstd) gives the same events as
the uncompressed session, its frames are shown, the recorded capture decodes the same with
``pcap``; zstd alone is refused with one line (MariaDB does not offer it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.mysql

_DROP = ("wire_time", "packet_offset", "seq")


def _sql(db: Any, *stmts: str) -> str:
    c = db.connect()
    try:
        with c.cursor() as cur:
            for s in stmts:
                cur.execute(s)
            cur.execute("SHOW BINARY LOGS")
            return str(cur.fetchall()[0][0])
    finally:
        c.close()


def _live(db: Any, first: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MYSQL_PWD=db.repl_password, HOME=str(db.dir))
    return subprocess.run(
        [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port", str(db.port),
         "-u", db.repl_user, "--ssl-mode", "DISABLED", "--non-blocking", "--start",
         f"{first}:4", *args], capture_output=True, text=True, timeout=120, env=env,
        stdin=subprocess.DEVNULL)


def _events(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in o.items() if k not in _DROP} for o in lines
            if o.get("kind") == "binlog_event"]


def test_live_zlib_gives_the_same_events(mariadb: Any, tmp_path: Path) -> None:
    first = _sql(mariadb, "CREATE DATABASE IF NOT EXISTS zc",
                 "CREATE TABLE IF NOT EXISTS zc.t (id INT PRIMARY KEY, v TEXT)",
                 *(f"REPLACE INTO zc.t VALUES ({i}, REPEAT('ab', {i * 30}))" for i in range(30)))
    plain = _live(mariadb, first, "--json")
    rec = tmp_path / "z.pcapng"
    comp = _live(mariadb, first, "--json", "--compression-algorithms", "zlib",
                 "--record", str(rec))
    assert plain.returncode == 0 and comp.returncode == 0, (plain.stderr, comp.stderr)
    a = [json.loads(x) for x in plain.stdout.splitlines() if x.strip()]
    b = [json.loads(x) for x in comp.stdout.splitlines() if x.strip()]
    frames = [o for o in b if o["kind"] == "compressed_frame"]
    assert not [o for o in a if o["kind"] == "compressed_frame"]
    assert {o["direction"] for o in frames} == {"client", "server"}
    assert any(o["algorithm"] == "zlib" and o["uncompressed_length"] > o["compressed_length"]
               for o in frames)
    ea, eb = _events(a), _events(b)
    assert len(ea) > 100 and ea == eb
    assert not [o for o in b if o.get("error") or o["kind"] in ("decode_error",
                                                                 "sequence_mismatch")]
    # the recorded (compressed) conversation decodes to the same events
    p = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", "--port",
                        str(mariadb.port), str(rec)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    c = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert [o for o in c if o["kind"] == "compressed_frame"]
    drop = {"flow", "flow_id", "frame"}
    assert [{k: v for k, v in o.items() if k not in drop} for o in _events(c)] == eb


def test_zstd_is_refused_by_mariadb_and_uncompressed_allowed(mariadb: Any) -> None:
    first = _sql(mariadb)
    p = _live(mariadb, first, "--brief", "--compression-algorithms", "zstd")
    assert p.returncode != 0
    assert "none of the compression algorithms 'zstd'" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    q = _live(mariadb, first, "--json", "--compression-algorithms", "zstd,uncompressed")
    assert q.returncode == 0, q.stderr
    assert '"compressed_frame"' not in q.stdout and '"binlog_event"' in q.stdout


def _status(db: Any, name: str) -> int:
    c = db.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
            row = cur.fetchone()
            return int(row[1]) if row else -1
    finally:
        c.close()


def test_semi_sync_acks_over_zlib(mariadb: Any) -> None:
    """--semi-sync over the compressed protocol: each commit is acknowledged in a frame of its
    own (compressed id 0, as MariaDB's net_clear expects), the server counts them as
    semi-sync transactions."""
    import time

    _sql(mariadb, "CREATE DATABASE IF NOT EXISTS zs",
         "CREATE TABLE IF NOT EXISTS zs.t (id INT PRIMARY KEY)", "DELETE FROM zs.t")
    c = mariadb.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            f, pos = cur.fetchone()[:2]
    finally:
        c.close()
    env = dict(os.environ, MYSQL_PWD=mariadb.repl_password, HOME=str(mariadb.dir))
    p = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "live", "--host", mariadb.host, "--port",
         str(mariadb.port), "-u", mariadb.repl_user, "--ssl-mode", "DISABLED", "--json",
         "--semi-sync", "--start", f"{f}:{pos}", "--compression-algorithms", "zlib"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while _status(mariadb, "Rpl_semi_sync_master_clients") < 1:
            assert time.monotonic() < deadline and p.poll() is None, "no semi-sync replica"
            time.sleep(0.1)
        before = _status(mariadb, "Rpl_semi_sync_master_yes_tx")
        _sql(mariadb, *(f"INSERT INTO zs.t VALUES ({i})" for i in range(3)))
        while _status(mariadb, "Rpl_semi_sync_master_yes_tx") < before + 3:
            assert time.monotonic() < deadline, "the commits were not acknowledged"
            time.sleep(0.1)
    finally:
        p.terminate()
        out, _ = p.communicate(timeout=30)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    assert [o for o in lines if o["kind"] == "semi_sync_ack"]
    assert [o for o in lines if o["kind"] == "compressed_frame" and o["direction"] == "client"]
    assert not [o for o in lines if o.get("error") or o["kind"] in ("decode_error",
                                                                     "sequence_mismatch")]
