"""Two SIGINTs to ``binlogscope proxy --json`` while a real client's big dump is relayed: the
second one ends the decoding drain at the next whole output line (before, it raised inside the
write of a long JSON line and left it cut), exit 130, no traceback, the summary line, and the
client's dump itself was relayed whole (mariadb-binlog's --raw files equal the server's)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.watch_support import start_proxy

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]


def test_a_second_ctrl_c_ends_at_a_whole_line(mariadb: Any, tmp_path: Path) -> None:
    client = shutil.which("mariadb-binlog")
    assert client is not None
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_int (id INT PRIMARY KEY, b LONGBLOB)")
        cur.execute("FLUSH BINARY LOGS")
        for i in range(60):
            cur.execute("REPLACE INTO proxy_int VALUES (%s, REPEAT(%s, 400000))",
                        (i, chr(97 + i % 26)))
        conn.commit()
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        logs = [r[0] for r in cur.fetchall()]
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--json")
    res = subprocess.run(
        [client, "--read-from-remote-server", "--raw", "--host=127.0.0.1", f"--port={port}",
         f"--user={mariadb.user}", f"--password={mariadb.password}",
         f"--result-file={tmp_path}/", logs[-2]],
        capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / logs[-2]).read_bytes() == (mariadb.binlog_dir / logs[-2]).read_bytes()
    proxy.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proxy.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    out, err = proxy.communicate(timeout=90)
    took = time.monotonic() - t0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proxy.returncode == 130, (proxy.returncode, err)
    assert took < 30, took
    assert "connection(s) relayed" in err, err
    assert out.endswith("\n") or not out
    for line in out.splitlines():  # (a cut line would not parse)
        json.loads(line)
