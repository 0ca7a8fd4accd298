"""``binlogscope proxy --summary``: a semi-sync replica's ACK latency on each leg - the
replica's (the event forwarded to it -> its ACK read) and the server's (the event read from the
server -> the ACK forwarded to it) - with binlogscope's own semi-sync replica and a real
MariaDB committing through it, on the plain relay and on the fault relay, where a ``delay_ack``
shows on the server's leg only. (A TLS-terminated session: test_proxy_tls.py.)"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.watch_support import ack_legs, semi_sync_commits, start_proxy

pytestmark = pytest.mark.mysql

COMMITS = 6
DELAY_MS = 150


@pytest.mark.parametrize("faults", [[], ["--action", f"delay_ack seconds={DELAY_MS / 1000}"]],
                         ids=["plain", "delay_ack"])
def test_summary_gives_the_ack_latency_of_both_legs(mariadb: Any, faults: list[str]) -> None:
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--summary", "--json", *faults)
    try:
        waits = semi_sync_commits(mariadb, port, "proxy_legs", COMMITS)
    finally:
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=60)
    assert proxy.returncode == 0, err
    replica, server = ack_legs(out, COMMITS, waits)
    if faults:  # the proxy held each ACK: the server waited for it, the replica did not
        assert server["min_ms"] >= DELAY_MS * 0.95, server
        assert replica["median_ms"] < DELAY_MS / 2, replica
