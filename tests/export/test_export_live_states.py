"""``export --live`` writes the connection's state changes (drivers/live/states.py) to the
``health`` table as they happen: a stall (no byte, no heartbeat for over two heartbeat periods)
as a ``state`` row when noticed, its end as a ``state`` row, and each reconnect once as a
``reconnect`` row (the fetcher's reconnect item; its "connection lost" note is not a second
one). The mock master (real MariaDB binlog) stalls the dump, then drops the connection."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings
from binlogscope.export.records import HealthRecord
from binlogscope.export.sources import LiveRecordSource
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import BinlogSource, Scenario

pytestmark = pytest.mark.timeout(120)

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def test_stall_recovery_and_reconnect_are_health_rows(
        mock_master: Callable[..., Any]) -> None:
    mm = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
        Action("stall", at=10, seconds=2.0, times=1),
        Action("disconnect_after_event", at=20, times=1)]))
    conn = ConnectionOptions(host=mm.host, port=mm.port, user="repl", password="replpass",
                             ssl_mode="DISABLED")
    settings = LiveSettings(conn=conn, start=f"{mm.master.stream.files[0].name}:4",
                            non_blocking=True, reconnect=True, heartbeat=0.5, server_id=4243)
    rows: list[dict[str, Any]] = []
    events = 0
    for rec in LiveRecordSource(settings).records():
        if isinstance(rec, HealthRecord):
            rows.extend(rec.rows)
        elif type(rec).__name__ == "EventRecord":
            events += 1
    assert events > 20
    kinds = [(r["kind"], str(r.get("text"))) for r in rows]
    stalled = [i for i, (k, t) in enumerate(kinds) if k == "state" and t.startswith("stalled")]
    recovered = [i for i, (k, t) in enumerate(kinds)
                 if k == "state" and t.startswith("recovered")]
    reconnects = [i for i, (k, _) in enumerate(kinds) if k == "reconnect"]
    # each stall is told once and ends once, in turn (a loaded box may add a short one; the
    # injected 2 s one is there)
    assert stalled and len(stalled) == len(recovered), kinds
    assert all(a < b for a, b in zip(stalled, recovered, strict=True)), kinds
    assert all(b < a for a, b in zip(stalled[1:], recovered, strict=False)), kinds
    assert len(reconnects) == 1 and recovered[0] < reconnects[0], kinds
    pairs = [(rows[a], rows[b]) for a, b in zip(stalled, recovered, strict=True)]
    st, rc = max(pairs, key=lambda p: p[1]["seconds"])
    assert st["seconds"] > 1.0 and 1.5 < rc["seconds"] < 10.0, (st, rc)
    assert st["time"] <= rc["time"]
    assert "reconnect 1: connection lost" in str(rows[reconnects[0]]["text"])
    # the silence the packets measured is there too, starting before the stalled row
    silences = [r for r in rows if r["kind"] == "silence"]
    assert silences and any(r["time"] <= st["time"] and r["seconds"] > 1.5 for r in silences)
