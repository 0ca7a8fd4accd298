"""``analyze`` draws a session's health over time (issue 29 item 4): the semi-sync ACK latency and
the replication delay per second of capture time and session, from the export of a real MariaDB
semi-sync capture, equal to what its packets and events give; ``--plots`` writes both charts."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import read_table

pytestmark = pytest.mark.spark

CAP = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"


def test_ack_latency_and_delay_over_time(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.report_output import write_plots
    from binlogscope.export.spark.analyze import (
        register_tables,
        report_ack_latency_over_time,
        report_delay_over_time,
    )

    out = tmp_path / "ss"
    assert main(["export", "--pcap", str(CAP), "--out", str(out)], out=io.StringIO(),
                err=io.StringIO()) == 0
    packets = read_table(out, "packets").to_pylist()
    sent = {(p["binlog_file"], p["log_pos"]): p["time"] for p in packets if p["ack_request"]}
    per_second: dict[Any, list[float]] = defaultdict(list)
    for a in packets:
        if a["kind"] == "semi_sync_ack":
            q = sent[(a["binlog_file"], a["log_pos"])]
            per_second[q.replace(microsecond=0)].append((a["time"] - q).total_seconds() * 1e3)
    assert per_second  # (this capture: its 8 ACKs within one second)
    register_tables(spark, out, reports_only=True)
    rep = report_ack_latency_over_time(spark)
    assert len(rep.rows) == len(per_second)
    for second, lats in per_second.items():
        row = next(r for r in rep.rows if r[0].timestamp() == second.timestamp())
        _, source, _sid, n, mean, hi = row
        assert source == str(CAP) and n == len(lats)
        assert float(mean) == pytest.approx(sum(lats) / len(lats))
        assert float(hi) == pytest.approx(max(lats))
    delay = report_delay_over_time(spark)
    events = read_table(out, "events").to_pylist()
    timed = [e for e in events if e["capture_time"] is not None and e["timestamp"].timestamp() > 0]
    assert sum(int(r[3]) for r in delay.rows) == len(timed)
    worst = max((e["capture_time"] - e["timestamp"]).total_seconds() for e in timed)
    assert max(float(r[5]) for r in delay.rows) == pytest.approx(worst)
    pngs = {p.name for p in write_plots([rep, delay], tmp_path / "png")}
    assert pngs == {"ack_latency_over_time.png", "replication_delay_over_time.png"}
