"""The proxy's ``--summary`` of the faults it injected (issue 29 item 7), in front of the real
MariaDB with a real client (``mariadb-binlog --read-from-remote-server``, run twice: after the
injected disconnect it is run again, as a replica reconnects).

Before: the summary listed no fault, the injected disconnect read "server closed the
connection", and the proxy exited 1 for the CRC32 it had flipped itself."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from typing import Any

import pytest

from tests.watch_support import run_sql, start_proxy

pytestmark = pytest.mark.mysql


def _client(db: Any, port: int, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
         "--host=127.0.0.1", f"--port={port}", f"--user={db.user}",
         f"--password={db.password}", name], capture_output=True, text=True, timeout=60)


def test_summary_lists_each_fault_its_closer_and_the_clients_answer(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS pfsum (id INT PRIMARY KEY)", "FLUSH BINARY LOGS")
    name = str(run_sql(mariadb, "SHOW MASTER STATUS")[0][0])
    for i in range(4):
        run_sql(mariadb, f"REPLACE INTO pfsum VALUES ({i})")
    proc, port = start_proxy((mariadb.host, mariadb.port), "--summary", "--json",
                             "--action", "corrupt_checksum_at at=5",
                             "--action", "disconnect_after_event at=7")
    try:
        first = _client(mariadb, port, name)
        again = _client(mariadb, port, name)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert first.returncode != 0 and "Lost connection" in first.stderr, first.stderr
    assert again.returncode == 0, again.stderr
    # the only damage is the proxy's own: exit 0
    assert proc.returncode == 0, err
    flows = [json.loads(line) for line in out.splitlines()]
    cut, whole = flows[0], flows[1]
    assert cut["closed"]["by"] == "proxy"  # not "server"
    assert cut["errors"] == 0 and cut["injected_errors"] == 1
    faults = cut["faults"]
    assert [f["fault"].split()[0] for f in faults] == ["corrupt_checksum_at",
                                                       "disconnect_after_event"]
    assert faults[0]["fault"].endswith("fired on event 5")
    assert all(f["time"] >= 0 and f["frame"] for f in faults)
    # what the client did next: it connected again and asked for the file from its start
    for f in faults:
        assert f["client_next"] == (f"reconnected (flow {whole['flow_id']}), COM_BINLOG_DUMP "
                                    f"{name}:4"), f
        assert f["client_next_after_s"] > 0
    assert whole["faults"] == [] and whole["closed"]["by"] == "server"
    assert whole["errors"] == 0 and whole["injected_errors"] == 0


def test_summary_text_names_the_fault_and_the_injected_damage(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS pfsum (id INT PRIMARY KEY)", "FLUSH BINARY LOGS")
    name = str(run_sql(mariadb, "SHOW MASTER STATUS")[0][0])
    run_sql(mariadb, "REPLACE INTO pfsum VALUES (9)")
    proc, port = start_proxy((mariadb.host, mariadb.port), "--summary",
                             "--action", "truncate_event at=4")
    try:
        res = _client(mariadb, port, name)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert res.returncode != 0
    assert proc.returncode == 0, err
    assert "proxy closed the connection (FIN)" in out
    assert "made by the proxy's fault actions" in out and "damage    0 decode error(s)" in out
    line = next(x for x in out.splitlines() if x.startswith("  fault     truncate_event"))
    assert "fired on event 4" in line and "then the client: did not reconnect" in line
