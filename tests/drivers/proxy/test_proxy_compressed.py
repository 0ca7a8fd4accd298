"""``binlogscope proxy`` between ``live --compression-algorithms zlib`` and the real MariaDB:
the proxy relays the compressed session and decodes it (frames, then the binlog events they
carry: the ones the replica itself decoded), and its --record capture decodes the same with
``pcap``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.watch_support import CLI, start_proxy

pytestmark = pytest.mark.mysql

_KEEP = ("binlog_file", "offset", "event_type", "gtid", "rows", "log_pos")


def _events(text: str) -> list[tuple[Any, ...]]:
    out = []
    for line in text.splitlines():
        if line.strip():
            o = json.loads(line)
            if o.get("kind") == "binlog_event":
                out.append(tuple(json.dumps(o.get(k), sort_keys=True) for k in _KEEP))
    return out


def test_proxy_decodes_a_compressed_replica(mariadb: Any, tmp_path: Path) -> None:
    c = mariadb.connect()
    try:
        with c.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS zp")
            cur.execute("CREATE TABLE IF NOT EXISTS zp.t (id INT PRIMARY KEY, v TEXT)")
            # start where this test's transactions begin: the shared server's binlog holds the
            # whole suite's events, more than the proxy's bounded drain decodes at its end
            cur.execute("SHOW MASTER STATUS")
            first, pos = (str(v) for v in cur.fetchall()[0][:2])
            for i in range(20):
                cur.execute(f"REPLACE INTO zp.t VALUES ({i}, REPEAT('q', {i * 50}))")
    finally:
        c.close()
    rec = tmp_path / "p.pcapng"
    out = tmp_path / "proxy.jsonl"
    with out.open("w") as sink:
        proxy, port = start_proxy((mariadb.host, mariadb.port), "--json", "--record", str(rec),
                                  stdout=sink)
        try:
            env = dict(os.environ, MYSQL_PWD=mariadb.repl_password, HOME=str(mariadb.dir))
            live = subprocess.run(
                [sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1", "--port",
                 str(port), "-u", mariadb.repl_user, "--ssl-mode", "DISABLED", "--json",
                 "--non-blocking", "--start", f"{first}:{pos}", "--compression-algorithms", "zlib"],
                capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        finally:
            proxy.terminate()
            proxy.communicate(timeout=30)
    assert live.returncode == 0, live.stderr
    seen = out.read_text()
    assert '"kind":"compressed_frame"' in seen
    ev = _events(live.stdout)
    assert len(ev) > 50 and _events(seen) == ev
    assert '"decode_error"' not in seen and '"sequence_mismatch"' not in seen
    p = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(rec)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert _events(p.stdout) == ev
