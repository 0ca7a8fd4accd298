"""``pcap --summary``'s health of a dump (issue 29 item 4) on real captures: the last event,
GTID and ACK of each flow equal what ``pcap --json`` lists last; the heartbeat period is the one
the replica asked for and the cadence the heartbeats' own spacing; the per-transaction ACK
latencies are the ACKs matched to their events."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main

CAPTURES = Path(__file__).resolve().parents[3] / "captures"


def _run(*args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    main(["pcap", *args], out=out, err=io.StringIO())
    return [json.loads(x) for x in out.getvalue().splitlines()]


@pytest.mark.parametrize("name", ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng",
                                  "pcap-pymysqlrepl.pcapng"])
def test_last_event_gtid_ack_and_heartbeats_match_the_packets(name: str) -> None:
    path = str(CAPTURES / name)
    flows = _run("--summary", "--json", path)
    items = _run("--json", path)
    dumped = [f for f in flows if f["dump"] is not None]
    assert dumped
    for f in dumped:
        h = f["health"]
        mine = [o for o in items if o.get("flow_id") == f["flow_id"]]
        events = [o for o in mine if o.get("kind") == "binlog_event"
                  and "HEARTBEAT" not in (o.get("event_type") or "")]
        last = events[-1]
        assert h["last_event"]["type"] == last["event_type"]
        assert h["last_event"]["log_pos"] == (last["log_pos"] or None)
        assert h["last_event"]["time"] == pytest.approx(last["wire_time"], abs=1e-6)
        gtids = [o["gtid"] for o in events if o.get("gtid")]
        assert (h["last_gtid"] or {}).get("gtid") == (gtids[-1] if gtids else None)
        acks = [o for o in mine if o.get("kind") == "semi_sync_ack"]
        if acks:
            assert h["last_ack"]["log_pos"] == acks[-1]["fields"]["binlog_pos"]
            assert len(h["ack_latency_per_transaction"]) == f["semi_sync_acks"]
            assert all(a["gtid"] and a["ms"] > 0 for a in h["ack_latency_per_transaction"])
        else:
            assert h["last_ack"] is None
        beats = [o["wire_time"] for o in mine if "HEARTBEAT" in (o.get("event_type") or "")]
        if len(beats) > 1:
            gaps = sorted(b - a for a, b in itertools.pairwise(beats))
            assert h["heartbeat_cadence"]["max_s"] == pytest.approx(gaps[-1], abs=1e-5)
        queries = [o["fields"]["query"] for o in mine if o.get("kind") == "com_query"]
        asked = [q for q in queries if "heartbeat_period" in q]
        if asked:
            ns = int(asked[-1].rsplit("=", 1)[1].strip())
            assert h["heartbeat_period_s"] == ns / 1e9
        if f["closed"]:
            assert h["state"].startswith("closed")
