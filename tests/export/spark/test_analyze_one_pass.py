"""``analyze FILES`` reads each input once (real Spark ``local[2]``): one read of the source's
export table feeds every view, and the reports are those of the three reads it replaced (one
per view), over real binlogs (MariaDB, MySQL, a relay log) and the shipped captures."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.export.test_export_spark import CAPTURES, MARIADB, RELAY_LOGS, WORKLOAD

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # (~60-80 s: 30 Spark queries)

INPUTS = [WORKLOAD, *MARIADB, RELAY_LOGS[0], *sorted(CAPTURES.glob("pcap-*.pcap*"))]
SQL = """SELECT e.event_type, r.operation, count(*) AS n, sum(e.event_size) AS bytes
FROM events e JOIN rows r ON e.source = r.source AND e.offset = r.offset
GROUP BY e.event_type, r.operation"""


def _three_reads(spark: Any, paths: list[str], reports_only: bool) -> None:
    """The views as analyze registered them before: one read of the source per view (and
    one of its ``health`` table)."""
    from binlogscope.export.arrow import HEALTH, HEALTH_TABLE
    from binlogscope.export.spark import register
    from binlogscope.export.spark.analyze import _register

    register(spark)
    _register(spark, lambda name, _: spark.read.format("binlog").option("table", name)
              .load(paths), reports_only)
    (spark.read.format("binlog").option("table", HEALTH_TABLE).load(paths)
     .select(*[f"`{c.name}`" for c in HEALTH]).createOrReplaceTempView(HEALTH_TABLE))


def _plain(v: Any) -> Any:
    if isinstance(v, float):
        return float(f"{v:.9g}")  # (a mean's last bits depend on the order of the sum)
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return v


def _reports(spark: Any) -> dict[str, Any]:
    from binlogscope.export.spark.analyze import run_reports

    return {r.name: (r.columns, sorted(map(repr, map(_plain, r.rows))), r.note)
            for r in run_reports(spark)}


def test_analyze_inputs_reads_each_input_once_and_reports_the_same(spark: Any,
                                                                    tmp_path: Path) -> None:
    from binlogscope.export.spark.analyze import register_inputs, run_sql

    d = tmp_path / "in"
    d.mkdir()
    copies = []
    for i, p in enumerate(p for p in INPUTS if p.exists()):
        copies.append(d / f"{i:02d}-{p.name}")
        shutil.copy(p, copies[-1])
    assert len(copies) >= 10
    paths = [str(p) for p in copies]

    spark.catalog.clearCache()
    _three_reads(spark, paths, reports_only=True)
    before = _reports(spark)
    _three_reads(spark, paths, reports_only=False)
    sql_before = sorted(map(repr, map(_plain, run_sql(spark, SQL).rows)))
    spark.catalog.clearCache()
    assert before["changes_per_table"][1] and before["ddl_timeline"][1]
    assert any(before[r][1] for r in ("semi_sync_ack_latency", "replication_delay"))
    assert before["lag_over_time"][1]

    # reports: the first query reads the inputs; then they are gone, and every later query
    # (every view: events, rows, packets, transactions) must come from that one read
    register_inputs(spark, paths, reports_only=True)
    assert spark.table("rows").count() > 0
    moved = tmp_path / "moved"
    d.rename(moved)
    try:
        assert _reports(spark) == before
    finally:
        moved.rename(d)
    spark.catalog.clearCache()

    # --sql: every column of every view, kept on disk from the one read
    register_inputs(spark, paths, reports_only=False)
    assert spark.table("packets").count() > 0
    d.rename(moved)
    try:
        assert sorted(map(repr, map(_plain, run_sql(spark, SQL).rows))) == sql_before
        assert sql_before
    finally:
        moved.rename(d)
    spark.catalog.clearCache()
