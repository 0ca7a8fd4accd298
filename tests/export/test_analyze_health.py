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
    )
    from binlogscope.export.spark.reports import (
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


def test_lag_over_time_from_the_health_table(spark: Any, tmp_path: Path) -> None:
    """``analyze``'s ``lag_over_time`` sums the export's ``health`` lag rows per second and
    session (the real capture's heartbeat heads: caught up; and a reader falling behind,
    written as the live export writes its rows), and ``--plots`` draws it."""
    import datetime as dt

    from binlogscope.export.arrow import HEALTH_TABLE
    from binlogscope.export.core import write_errors
    from binlogscope.export.records import health_rows
    from binlogscope.export.report_output import write_plots
    from binlogscope.export.spark.analyze import register_tables
    from binlogscope.export.spark.reports import report_lag_over_time

    out = tmp_path / "ss"
    assert main(["export", "--pcap", str(CAP), "--out", str(out)], out=io.StringIO(),
                err=io.StringIO()) == 0
    health = read_table_health(out)
    real = [h for h in health if h["kind"] == "lag"]
    assert real and all(h["bytes_behind"] == 0 for h in real)
    t0 = 1_800_000_000.0
    falling = [{"time": t0 + i * 0.25, "kind": "lag", "binlog_file": "b.000001", "log_pos": 400,
                "head_file": "b.000001", "head_pos": 400 + 1000 * i, "files_behind": 0,
                "bytes_behind": 1000 * i, "text": ""} for i in range(8)]
    write_errors(out, 99, health_rows(falling, "live:x", "live-1", None), HEALTH_TABLE)
    register_tables(spark, out, reports_only=True)
    rep = report_lag_over_time(spark)
    mine = [r for r in rep.rows if r[2] == "live-1"]
    assert [(r[0].timestamp(), int(r[3]), float(r[4]), int(r[5]), int(r[6])) for r in mine] == [
        (t0, 4, 1500.0, 3000, 0), (t0 + 1, 4, 5500.0, 7000, 0)]
    seconds = {h["time"].replace(microsecond=0) for h in real}
    capture = [r for r in rep.rows if r[2] != "live-1"]
    assert len(capture) == len(seconds) and all(int(r[5]) == 0 for r in capture)
    assert sum(int(r[3]) for r in capture) == len(real)
    assert isinstance(mine[0][0], dt.datetime)
    assert {p.name for p in write_plots([rep], tmp_path / "png")} == {"lag_over_time.png"}


def read_table_health(out: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(out / "health").to_pylist()
    return rows
