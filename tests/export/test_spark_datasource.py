"""``spark.read.format("binlog")`` (real Spark ``local[2]``): every table equals the local
export's, row for row and column for column; pushed filters give the rows Spark-side filters
give; damaged, truncated and missing inputs among good ones are one ``errors`` row each."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from binlogscope.export.arrow import TABLES, read_table
from binlogscope.export.records import BinlogFileSource
from binlogscope.export.run import run_export
from binlogscope.export.sources import PcapRecordSource
from tests.export.test_export_spark import CAPTURES, MARIADB, RELAY_LOGS, WORKLOAD

pytestmark = pytest.mark.spark

FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MYSQL = [FIX / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32",
         FIX / "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001",
         FIX / "blackbeam__rust_mysql_common/test-data/binlogs/vector.binlog"]


@pytest.fixture(scope="module")
def binlog(spark: Any) -> Iterator[Any]:
    from binlogscope.export.spark import register

    register(spark)
    yield spark


def _rows(t: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def _read(spark: Any, table: str, paths: list[str], **options: str) -> Any:
    r = spark.read.format("binlog").option("table", table)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(paths if len(paths) > 1 else paths[0])


def _arrow(df: Any, table: str) -> pa.Table:
    from binlogscope.export.spark.datasource import read_schema

    return df.toArrow().cast(read_schema(table))


def test_tables_equal_the_local_export(binlog: Any, tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    for p in [WORKLOAD, *MARIADB, *[m for m in MYSQL if m.exists()]]:
        shutil.copy(p, d / p.name)
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(d)]), local)
    for table in TABLES:
        want = read_table(local, table)
        got = _arrow(_read(binlog, table, [str(d)]), table)
        assert got.schema == want.schema, table
        assert _rows(got) == _rows(want), table
    assert read_table(local, "rows").num_rows > 500
    # captures: a glob of them, their kind found by their magic
    caps = sorted(str(p) for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
    run_export(PcapRecordSource(caps), tmp_path / "pcap")
    for table in TABLES:
        got = _arrow(_read(binlog, table, [str(CAPTURES / "*.pcap*")]), table)
        assert _rows(got) == _rows(read_table(tmp_path / "pcap", table)), table
    assert _read(binlog, "errors", [str(d)]).count() == 0


def test_pushed_filters_give_the_spark_side_rows(binlog: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as fn

    paths = [str(WORKLOAD), str(MARIADB[0])]
    all_rows = _read(binlog, "rows", paths).toArrow().to_pylist()
    binlog.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    tables = sorted({r["table"] for r in all_rows})
    times = sorted(r["timestamp"] for r in all_rows)
    pick, t_mid = tables[:2], times[len(times) // 2]
    df = _read(binlog, "rows", paths, pushFilters="true").where(
        fn.col("table").isin(pick) & (fn.col("timestamp") >= fn.lit(t_mid))
        & (fn.col("operation") == "INSERT") & fn.col("after").isNotNull())
    plan = df._jdf.queryExecution().executedPlan().toString()
    spark_filters = [ln for ln in plan.splitlines() if "Filter" in ln and "BatchScan" not in ln]
    assert spark_filters and "isnotnull(after" in spark_filters[0], plan  # (a map: not pushed)
    for name in ("operation", "timestamp", "table#"):  # pushed: Spark does not filter on them
        assert not any(name in ln for ln in spark_filters), plan
    want = [r for r in all_rows if r["table"] in pick and r["timestamp"] >= t_mid
            and r["operation"] == "INSERT" and r["after"] is not None]
    assert want
    got = df.toArrow().to_pylist()
    assert sorted(map(_key, got)) == sorted(map(_key, want))
    # the same query with nothing pushed (the filter on a cached copy: Spark's own)
    cached = _read(binlog, "rows", paths).cache()
    spark_side = cached.where(
        fn.col("table").isin(pick) & (fn.col("timestamp") >= fn.lit(t_mid))
        & (fn.col("operation") == "INSERT") & fn.col("after").isNotNull()).toArrow().to_pylist()
    cached.unpersist()
    binlog.conf.unset("spark.sql.python.filterPushdown.enabled")
    assert sorted(map(_key, spark_side)) == sorted(map(_key, got))


def test_a_task_hands_spark_small_batches_of_the_local_exports_rows(tmp_path: Path) -> None:
    """The reader's batches are at most ``batch_rows`` rows (the JVM converts and writes one
    while the worker decodes the next: bench/README.md, "the Spark task's rate"), not the
    local exporter's row groups of up to 64k rows; together they are the local export's rows
    and columns."""
    from binlogscope.export.spark.datasource import BATCH_ROWS, BinlogReader, read_schema

    assert 0 < BATCH_ROWS < 65536
    run_export(BinlogFileSource([str(WORKLOAD)]), tmp_path / "local")
    for table in ("events", "rows"):
        reader = BinlogReader({"table": table, "path": str(WORKLOAD)})
        reader.batch_rows = 50
        (part,) = reader.partitions()
        batches = list(reader.read(part))
        want = read_table(tmp_path / "local", table)
        assert want.num_rows > 200, table
        assert len(batches) >= want.num_rows // 50, table
        assert max(b.num_rows for b in batches) <= 50, table
        got = pa.Table.from_batches(batches, schema=read_schema(table))
        assert got.schema == want.schema, table
        assert _rows(got) == _rows(want), table


def _key(r: dict[str, Any]) -> str:
    return json.dumps(r, sort_keys=True, default=str)


def test_the_reader_keeps_the_filters_it_can_honour() -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, StringContains

    from binlogscope.export.spark.datasource import FilteringBinlogReader

    reader = FilteringBinlogReader({"table": "events", "path": str(WORKLOAD)})
    keep = [EqualTo(("table",), "t1"), GreaterThan(("offset",), 4)]
    back = [StringContains(("query",), "x"), EqualTo(("rows",), 3), EqualTo(("table",), 5)]
    assert list(reader.pushFilters([*keep, *back])) == back
    assert reader.filters == keep


def test_damaged_truncated_and_missing_inputs_are_errors_rows(binlog: Any,
                                                              tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    good = [d / "a.000001", d / "c.000003"]
    shutil.copy(WORKLOAD, good[0])
    shutil.copy(MARIADB[0], good[1])
    data = WORKLOAD.read_bytes()
    bad = d / "b.000002"
    bad.write_bytes(b"\x00\x00\x00\x00" + data[4:])  # not a binlog
    cut = d / "t.000004"
    cut.write_bytes(data[: len(data) // 2])  # truncated in the middle of an event
    damaged = d / "x.000005"
    shutil.copy(RELAY_LOGS[2], damaged)  # a corrupt relay log
    missing = str(d / "gone.000006")
    paths = [str(p) for p in (good[0], bad, good[1], cut, damaged)] + [missing]
    errors = _read(binlog, "errors", paths).toArrow().to_pylist()
    assert sorted(e["path"] for e in errors) == sorted([str(bad), str(cut), str(damaged),
                                                       missing])
    assert all(e["message"] for e in errors)
    # every good row is there; the damaged inputs' readable rows too (the local export's)
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(p) for p in (good[0], bad, good[1], cut, damaged)]),
               local)
    for table in ("events", "rows"):
        got = _arrow(_read(binlog, table, paths), table)
        assert _rows(got) == _rows(read_table(local, table)), table
    # failFast: the query fails, naming the input
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    with pytest.raises((PySparkException, Py4JJavaError)) as info:
        _read(binlog, "rows", [str(good[0]), str(bad)], failFast="true").count()
    assert "b.000002 is not a binlog file" in str(info.value)


def test_analyze_reads_binlog_files_through_the_source(binlog: Any, tmp_path: Path) -> None:
    """``analyze FILES`` (no export first): the views come from the binlog source."""
    import io

    from binlogscope.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    rc = main(["analyze", str(WORKLOAD), str(MARIADB[0]), "--reports", str(tmp_path / "r"),
               "--sql", "SELECT operation, count(*) AS n FROM rows GROUP BY operation "
               "ORDER BY operation"], out=out, err=err)
    assert rc == 0, err.getvalue()
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(WORKLOAD), str(MARIADB[0])]), local)
    ops: dict[str, int] = {}
    for r in read_table(local, "rows").to_pylist():
        ops[r["operation"]] = ops.get(r["operation"], 0) + 1
    assert ops
    for op, n in ops.items():
        assert any(line.split()[:2] == [op, str(n)] for line in out.getvalue().splitlines())
    rc = main(["analyze", str(tmp_path / "nothing")], out=io.StringIO(), err=err)
    assert rc == 1 and "no such file or directory" in err.getvalue()


def test_a_filtered_query_leaves_its_dataframe_whole(binlog: Any) -> None:
    """By default nothing is pushed, so a DataFrame queried with a filter and then without one
    gives all its rows (with PySpark 4.3's pushdown on, the second query kept the first one's
    pushed filters: 263 rows of 596)."""
    df = _read(binlog, "rows", [str(WORKLOAD)])
    total = df.count()
    assert df.where("operation = 'INSERT'").count() < total
    assert df.count() == total == len(df.collect())
