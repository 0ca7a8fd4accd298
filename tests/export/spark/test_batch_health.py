"""The ``health`` table on Spark (issue 29 item 4, real Spark ``local[2]``): ``export --spark``
writes the rows the local ``export`` writes for the same captures (one definition of the rows:
the tasks' reports), ``spark.read.format("binlog").option("table", "health")`` gives them for
captures and binlogs read directly, and ``analyze`` over inputs reports the lag from them as
over the export."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import HEALTH_SCHEMA, HEALTH_TABLE
from tests.export.test_export_spark import CAPTURES, MARIADB, WORKLOAD

pytestmark = pytest.mark.spark

PCAPS = sorted(str(p) for p in CAPTURES.glob("pcap-*.pcap*"))


def _health(out: Path) -> list[dict[str, Any]]:
    t = pq.read_table(out / HEALTH_TABLE)
    assert t.schema.equals(HEALTH_SCHEMA)
    rows: list[dict[str, Any]] = t.to_pylist()
    return rows


def _key(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.fixture(scope="module")
def local_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("health") / "local"
    rc = main(["export", "--pcap", *PCAPS, "--out", str(out), "--jobs", "1"],
              out=io.StringIO(), err=io.StringIO())
    assert rc in (0, 1)  # (the loss capture's gap makes it 1)
    return out


def test_export_spark_writes_the_local_exports_health_rows(spark: Any, local_export: Path,
                                                           tmp_path: Path) -> None:
    from binlogscope.export.spark.export import run_spark_export

    local = _health(local_export)
    kinds = {r["kind"] for r in local}
    assert {"dump", "heartbeat", "ack", "lag", "state"} <= kinds, kinds
    assert len({r["source"] for r in local}) >= 4  # (every capture with a dump has rows)
    out = tmp_path / "spark"
    res = run_spark_export(PCAPS, out, kind="pcap", spark=spark, checkpoint_files=4)
    assert res.complete
    # the same rows in the same order (input order, each input's timeline in its order),
    # though Spark runs the biggest capture first and checkpoints in other groups
    assert _health(out) == local


def test_the_binlog_source_offers_the_health_table(spark: Any, local_export: Path) -> None:
    """Captures and binlogs read directly (kind auto): the captures' rows are the local
    export's; a binlog file has none (no replication connection) and adds none."""
    from binlogscope.export.spark import register
    from binlogscope.export.spark.datasource import read_schema

    register(spark)
    paths = [*PCAPS, str(WORKLOAD), *(str(p) for p in MARIADB if p.exists())]
    df = spark.read.format("binlog").option("table", "health").load(paths)
    assert [f.name for f in df.schema.fields] == [f.name for f in HEALTH_SCHEMA]
    rows = df.toArrow().cast(read_schema("health")).to_pylist()
    assert _key(rows) == _key(_health(local_export))
    only_binlogs = spark.read.format("binlog").option("table", "health").load(
        [str(WORKLOAD), *(str(p) for p in MARIADB if p.exists())])
    assert only_binlogs.count() == 0


def test_analyze_over_inputs_reports_the_lag_of_the_export(spark: Any,
                                                           local_export: Path) -> None:
    from binlogscope.export.spark.analyze import (
        register_inputs,
        register_tables,
    )
    from binlogscope.export.spark.reports import report_lag_over_time

    spark.catalog.clearCache()
    register_tables(spark, local_export, reports_only=True)
    exported = report_lag_over_time(spark)
    assert exported.rows and not exported.note
    spark.catalog.clearCache()
    register_inputs(spark, PCAPS, reports_only=True)
    direct = report_lag_over_time(spark)
    assert sorted(map(repr, direct.rows)) == sorted(map(repr, exported.rows))
    assert spark.table(HEALTH_TABLE).count() == len(_health(local_export))
    spark.catalog.clearCache()
