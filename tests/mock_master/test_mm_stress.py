"""50 honest replication clients and 200 hostile connections at once against one mock master.

The clients run in their own process (``stress_clients.py``): python-mysql-replication readers
(each its own server_id) and garbage, slowloris, huge length headers, data floods, connection
churn and mid-handshake disconnects. Every honest client must get the whole stream, the server
must stay up, and its resident memory and open descriptors must come back near where they
started. Sizes are kept small for CI (a 120-transaction stream, 1 MiB max_allowed_packet,
2 s connect_timeout); the client counts are the ones of the issue.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from mock_master.history.builder import EventBuilder
from mock_master.scenario.scenarios import Scenario, StreamSource
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.stress_clients import KINDS, honest

pytestmark = pytest.mark.network

HONEST = 50
HOSTILE = 200
ROWS = 120


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _stream() -> Any:
    b = EventBuilder("mariadb")
    t = b.table("shop", "orders", [("id", "INT"), ("name", "VARCHAR(40)")])
    for i in range(ROWS):
        b.transaction(t, [(i, f"order {i}")])
    return b.build()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_fifty_honest_clients_and_two_hundred_hostile_ones(serve_scenario: Any) -> None:
    sc = Scenario(sources=[StreamSource(_stream())],
                  variables={"max_allowed_packet": 1 << 20, "connect_timeout": 2},
                  max_closed_clients=100)
    mm: ThreadedMockMaster = serve_scenario(sc)
    warm = honest(mm.host, mm.port, 999)  # warms the server (wire image, code paths)
    assert warm == list(range(ROWS))
    time.sleep(0.2)
    rss0, fds0 = _rss(), _fds()
    lines: list[str] = []
    mm.master.announce = lines.append  # the stderr lines of the command line

    here = Path(__file__).resolve().parent
    repo = here.parents[1]
    proc = subprocess.run(
        [sys.executable, str(here / "stress_clients.py"), mm.host, str(mm.port), str(HONEST),
         str(HOSTILE)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), str(repo),
                                                          str(here)])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    bad = [(k, r) for k, r in enumerate(got["honest"]) if r != warm]
    assert not bad, (len(bad), bad[:2])
    assert sum(got["hostile"].values()) == HOSTILE, got["hostile"]
    assert set(got["hostile"]) == set(KINDS)

    # every connection ends (the stalled ones by connect_timeout), the server still serves
    deadline = time.monotonic() + 20
    while mm.master._conns and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not mm.master._conns, len(mm.master._conns)
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    c.cursor().execute("SELECT 1")
    c.close()
    time.sleep(0.3)
    rss1, fds1 = _rss(), _fds()
    assert fds1 <= fds0 + 2, (fds0, fds1)
    assert rss1 - rss0 < 48 << 20, (rss0 >> 20, rss1 >> 20)

    log = mm.log
    assert len([c for c in log.clients if c.closed_by]) <= 100  # bounded: the newest kept
    assert log.clients_dropped > 0
    closes = [x for x in lines if " closed by " in x]
    assert len([x for x in lines if " connected from " in x]) == len(closes) > HOSTILE + HONEST
    assert len([x for x in closes if "connect_timeout" in x]) >= HOSTILE // len(KINDS), closes
    assert len([x for x in closes if "ERR 1153" in x]) >= HOSTILE // len(KINDS), closes
    print(f"stress: RSS {rss0 >> 20} -> {rss1 >> 20} MiB, fds {fds0} -> {fds1}, "
          f"{len(closes)} connections")
