"""``export --spark`` reads its inputs through the ``binlog`` data source (one Spark path): the
decode job is a scan of the source, and the dataset it writes holds, table by table, the rows
``spark.read.format("binlog")`` gives for the same inputs (real Spark ``local[2]``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.export.arrow import ERRORS_TABLE, TABLES, read_table
from binlogscope.export.spark.export import SparkInput, _decoded, run_spark_export
from binlogscope.export.task import TaskOptions
from tests.export.test_export_spark import CAPTURES, MARIADB, RELAY_LOGS, WORKLOAD

pytestmark = pytest.mark.spark


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _source_rows(spark: Any, table: str, paths: list[str], **options: str) -> list[str]:
    from binlogscope.export.spark.datasource import read_schema

    r = spark.read.format("binlog").option("table", table)
    for k, v in options.items():
        r = r.option(k, v)
    return _rows(r.load(paths).toArrow().cast(read_schema(table)).to_pylist())


def test_export_spark_is_the_binlog_source_written(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    d = tmp_path / "in"
    d.mkdir()
    for p in [WORKLOAD, *MARIADB, RELAY_LOGS[2]]:  # the last: a damaged relay log
        shutil.copy(p, d / p.name)
    inputs = sorted(str(p) for p in d.iterdir())
    out = tmp_path / "spark"
    res = run_spark_export([str(d)], out, spark=spark, checkpoint_files=2)
    assert res.complete and res.counts["rows"] > 500
    for table in TABLES:
        assert _rows(read_table(out, table).to_pylist()) == \
            _source_rows(spark, table, inputs), table
    errors = pq.read_table(out / ERRORS_TABLE).to_pylist()
    assert errors and _rows(errors) == _source_rows(spark, ERRORS_TABLE, inputs)
    # the decode job is a scan of the binlog source, numbered as the export numbers inputs
    group = [SparkInput(7 + i, s, Path(s).stat().st_size, False)
             for i, s in enumerate(inputs[:2])]
    df = _decoded(spark, group, TaskOptions("file"))
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan binlog[table#" in plan and "(Python)" in plan, plan
    stats = [r["stats"] for r in df.where("table = 'stats'").select("stats").collect()]
    assert sorted((s["input_index"], s["path"]) for s in stats) == \
        [(7, inputs[0]), (8, inputs[1])]


@pytest.mark.slow  # captures: ~40 s on the loaded 2-core box
def test_export_spark_of_captures_is_the_binlog_source_written(spark: Any,
                                                               tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    caps = sorted(str(p) for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
    out = tmp_path / "spark"
    res = run_spark_export(caps, out, spark=spark, kind="pcap")
    assert res.complete and res.counts["packets"] > 1000
    for table in TABLES:
        assert _rows(read_table(out, table).to_pylist()) == \
            _source_rows(spark, table, caps, kind="pcap"), table
