"""``binlogscope proxy --summary``: a semi-sync replica's ACK latency on each leg - the
replica's (the event forwarded to it -> its ACK read) and the server's (the event read from the
server -> the ACK forwarded to it) - with binlogscope's own semi-sync replica and a real
MariaDB committing through it."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from watch_support import consuming, global_status_int, live_replica, run_sql, start_proxy

pytestmark = pytest.mark.mysql

COMMITS = 6


def test_summary_gives_the_ack_latency_of_both_legs(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS proxy_legs (id BIGINT PRIMARY KEY)")
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--summary", "--json")
    clients = global_status_int(mariadb, "Rpl_semi_sync_master_clients")
    waits: list[float] = []
    try:
        with consuming(live_replica(mariadb, port, semi_sync=True, heartbeat=1), []):
            deadline = time.time() + 20
            while global_status_int(mariadb, "Rpl_semi_sync_master_clients") <= clients and \
                    time.time() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            yes = global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx")
            for _ in range(COMMITS):
                t0 = time.monotonic()
                run_sql(mariadb, f"INSERT INTO proxy_legs VALUES ({time.time_ns()})")
                waits.append(time.monotonic() - t0)
            assert global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx") - yes == COMMITS
    finally:
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=60)
    assert proxy.returncode == 0, err
    flows = [json.loads(line) for line in out.splitlines()]
    (dump,) = [f for f in flows if f.get("dump")]
    assert dump["semi_sync_acks"] >= COMMITS
    legs = dump["ack_latency_legs"]
    assert legs is not None and set(legs) == {"client", "server"}, dump
    replica, server = legs["client"], legs["server"]
    assert 0 < replica["min_ms"] <= replica["median_ms"] <= replica["p99_ms"]
    # the server's leg holds the replica's (and the relay's two crossings)
    assert server["min_ms"] >= replica["min_ms"] and server["median_ms"] >= replica["median_ms"]
    # ... and no more than a commit waited for it, at its median
    assert server["median_ms"] <= sorted(waits)[len(waits) // 2] * 1000
    # the single figure (as a capture's) is still there
    assert dump["ack_latency"]["median_ms"] > 0
