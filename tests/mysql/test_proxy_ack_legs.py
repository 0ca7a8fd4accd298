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
from watch_support import run_sql, start_proxy

from binlogscope.drivers.live import LiveReplica, LiveSettings
from binlogscope.drivers.options import ConnectionOptions

pytestmark = pytest.mark.mysql

COMMITS = 6


def _status(db: Any, name: str) -> int:
    rows = run_sql(db, f"SHOW GLOBAL STATUS LIKE '{name}'")
    return int(rows[0][1]) if rows else 0


def test_summary_gives_the_ack_latency_of_both_legs(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS proxy_legs (id BIGINT PRIMARY KEY)")
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--summary", "--json")
    clients = _status(mariadb, "Rpl_semi_sync_master_clients")
    rep = LiveReplica(LiveSettings(conn=ConnectionOptions(
        host=mariadb.host, port=port, user=mariadb.repl_user, password=mariadb.repl_password,
        ssl_mode="DISABLED"), semi_sync=True, heartbeat=1))
    rep.start()
    import threading

    def consume() -> None:
        for cur, item in rep.items():
            rep.ack(cur, item)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    waits: list[float] = []
    try:
        deadline = time.time() + 20
        while _status(mariadb, "Rpl_semi_sync_master_clients") <= clients and \
                time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        yes = _status(mariadb, "Rpl_semi_sync_master_yes_tx")
        for _ in range(COMMITS):
            t0 = time.monotonic()
            run_sql(mariadb, f"INSERT INTO proxy_legs VALUES ({time.time_ns()})")
            waits.append(time.monotonic() - t0)
        assert _status(mariadb, "Rpl_semi_sync_master_yes_tx") - yes == COMMITS
    finally:
        rep.stop()
        rep.join(5)
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
