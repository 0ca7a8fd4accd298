"""``live`` without ``--heartbeat`` asks for heartbeats as MySQL's and MariaDB's replicas do:
every half of its read timeout (``--net-read-timeout``, default 60 s: a heartbeat every 30 s,
as slave_net_timeout 60 gives MASTER_HEARTBEAT_PERIOD 30). So an idle but healthy source keeps
the connection (before: no heartbeat asked, the read timeout cut a quiet link and reconnected)
and a silent dead one is noticed within the read timeout. ``--heartbeat 0`` asks for none."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.items import LiveSettings
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import run_live

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def test_the_default_heartbeat_is_half_the_read_timeout() -> None:
    s = LiveSettings(conn=ConnectionOptions())
    assert (s.heartbeat_period(), s.read_timeout()) == (30.0, 60.0)
    s = LiveSettings(conn=ConnectionOptions(), net_read_timeout=10)
    assert (s.heartbeat_period(), s.read_timeout()) == (5.0, 10.0)
    s = LiveSettings(conn=ConnectionOptions(), heartbeat=0)  # none asked: the read timeout
    assert (s.heartbeat_period(), s.read_timeout()) == (0, 60.0)


def test_a_quiet_source_keeps_the_connection(mock_master: Callable[..., Any]) -> None:
    """A blocking dump from the end of the binlog: the source has nothing to send. With
    ``--net-read-timeout 2`` alone the replica asks for a heartbeat every second, gets them,
    and the link stays up (before: none asked, the read timed out after 2 s)."""
    mm = mock_master(binlogs=[CAPTURE])
    settings = LiveSettings(conn=ConnectionOptions(host=mm.host, port=mm.port, user="repl",
                                                   password="replpass", ssl_mode="DISABLED"),
                            net_read_timeout=2, reconnect=False, stream_tree=False)
    items: list[SourceItem] = []
    t0 = time.monotonic()
    rep = run_live(settings, items.append, should_stop=lambda: time.monotonic() - t0 > 5)
    assert rep.error is None and rep.reconnects == 0, rep.error
    assert rep.heartbeats >= 2
    queries = [q for c in mm.log.clients for q in c.queries]
    assert "SET @master_heartbeat_period = 1000000000" in queries, queries
