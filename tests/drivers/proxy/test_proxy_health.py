"""The health in the proxy's ``--summary`` (issue 29 item 4) with a real replica (``binlogscope
live``, heartbeats every second) of the real MariaDB: a ``stall`` the proxy injects leaves the
dump silent while heartbeats are due - the summary, taken during the stall, says the connection
is stalled (or half-open: from the wire the two look the same), with the heartbeat period the
replica asked for and the server's silence; the replica's next connection is its reconnect."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.watch_support import start_proxy

pytestmark = pytest.mark.mysql


def test_a_stall_reads_as_stalled_while_heartbeats_are_due(mariadb: Any) -> None:
    proc, port = start_proxy((mariadb.host, mariadb.port), "--summary", "--json",
                             "--action", "stall after_seconds=3.5 seconds=120")
    env = dict(os.environ, MYSQL_PWD=mariadb.repl_password, HOME=str(mariadb.dir))
    live = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1", "--port",
         str(port), "-u", mariadb.repl_user, "--ssl-mode", "DISABLED", "--heartbeat", "1",
         "--net-read-timeout", "60", "--json"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env=env, stdin=subprocess.DEVNULL)
    try:
        time.sleep(8.5)  # the dump, 3.5 s of heartbeats, then the stall for ~4 s
    finally:
        proc.send_signal(signal.SIGINT)
        out, _err = proc.communicate(timeout=60)
        live.kill()
        live.wait(10)
    flows = [json.loads(x) for x in out.splitlines()]
    dump = next(f for f in flows if f["dump"] is not None)
    h = dump["health"]
    assert h["heartbeat_period_s"] == 1.0
    assert h["heartbeat_cadence"] is not None and h["heartbeat_cadence"]["median_s"] < 1.5
    # (the proxy's own stop closes the connections: the state is the one before)
    assert h["state"].startswith("closed; before: stalled or half-open: no byte from the "
                                 "server for "), h
    assert [f["fault"].split()[0] for f in dump["faults"]] == ["stall"]
    assert h["longest_server_silence_s"] < 1.5  # (the silence still going on is the state's)
    assert h["last_event"] is not None and h["last_event"]["type"] != "HEARTBEAT_LOG_EVENT"
