"""The export's ``health`` table (issue 29 items 2 and 4): one row per health sample or
transition of each replication connection, from real captures, equal to what ``pcap --summary``
says of the same capture (ACK latency per transaction, heartbeats, lag, the state at the end);
one process per capture (``--jobs``) writes the same rows."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import HEALTH_SCHEMA

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
NAMES = ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng", "pcap-loss-reorder.pcap"]


def _summary(path: Path) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    main(["pcap", "--summary", "--json", str(path)], out=out, err=io.StringIO())
    return {f"{path.name}#{f['flow_id']}": f for f in map(json.loads, out.getvalue().splitlines())
            if f.get("dump")}


def _health(out: Path) -> list[dict[str, Any]]:
    t = pq.read_table(out / "health")
    assert t.schema.equals(HEALTH_SCHEMA)
    return sorted(t.to_pylist(), key=lambda r: (r["session_id"], r["time"]))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_health_rows_say_what_the_summary_says(tmp_path: Path, jobs: str) -> None:
    out = tmp_path / "ds"
    rc = main(["export", "--pcap", *(str(CAPTURES / n) for n in NAMES), "--out", str(out),
               "--jobs", jobs], out=io.StringIO(), err=io.StringIO())
    assert rc in (0, 1)  # (the loss capture's gap makes it 1: the health rows are there too)
    rows = _health(out)
    flows = {k: v for n in NAMES for k, v in _summary(CAPTURES / n).items()}
    assert {r["session_id"] for r in rows} == set(flows)
    acks_seen = 0
    for sid, f in flows.items():
        mine = [r for r in rows if r["session_id"] == sid]
        h = f["health"]
        acks = [(r["gtid"], r["log_pos"], round(r["seconds"] * 1000, 3)) for r in mine
                if r["kind"] == "ack" and r["seconds"] is not None]
        assert acks == [(a["gtid"], a["log_pos"], a["ms"])
                        for a in h["ack_latency_per_transaction"]], sid
        acks_seen += len(acks)
        assert len([r for r in mine if r["kind"] == "heartbeat"]) == f["heartbeats"]
        lag = [r for r in mine if r["kind"] == "lag"]
        assert len(lag) == (h["lag"]["samples"] if h["lag"] else 0)
        if lag:
            last = h["lag"]["last"]
            assert f"{lag[-1]['head_file']}:{lag[-1]['head_pos']}" == last["head"]
            assert lag[-1]["bytes_behind"] == last["bytes_behind"]
        state = [r["text"] for r in mine if r["kind"] == "state"]
        assert state == [h["state"]], sid
        assert mine[0]["kind"] in ("dump", "reconnect") and mine[-1]["kind"] == "state"
        assert all(r["flow"] == f["flow"] for r in mine)
    assert acks_seen >= 8  # the semi-sync capture's eight ACKed transactions at least


def test_an_idle_connection_without_a_dump_has_no_rows(tmp_path: Path) -> None:
    """The capture's flows that never dump (the test harness's control connections) have no
    health rows; the heartbeat intervals are the capture's."""
    out = tmp_path / "ds"
    main(["export", "--pcap", str(CAPTURES / "pcap-semisync.pcap"), "--out", str(out)],
         out=io.StringIO(), err=io.StringIO())
    rows = _health(out)
    assert {r["session_id"] for r in rows} == {"pcap-semisync.pcap#1"}
    beats = [r["seconds"] for r in rows if r["kind"] == "heartbeat"]
    f = _summary(CAPTURES / "pcap-semisync.pcap")["pcap-semisync.pcap#1"]
    cad = f["health"]["heartbeat_cadence"]
    assert beats[0] is None and round(max(b for b in beats if b), 6) == cad["max_s"]
