"""The ``binlog`` source plans only the files the catalog says can hold rows of a pushed
time/GTID filter (``binlogscope.diagnose.catalog``, the entries ``locate --catalog`` builds):
fewer input partitions, and the rows the whole read gives filtered afterwards (real Spark)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.datasource import GreaterThan, GreaterThanOrEqual, In, LessThan

from binlogscope.diagnose import catalog as cat
from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.export.spark.datasource import catalog_skip, pushed_window

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
#: real MariaDB binlogs written at different times (tests/diagnose/test_catalog_skip.py)
EARLY = CAPTURES / "pcap-loss-reorder.binlog"
MIDDLE = CAPTURES / "pcap-mariadb-binlog.binlog"
LATE = CAPTURES / "pcap-pymysqlrepl.binlog"
FILES = [str(EARLY), str(MIDDLE), str(LATE)]


def _catalog(directory: Path) -> dict[str, cat.FileCatalog]:
    entries = {}
    for p in FILES:
        b = cat.Builder(cat.new_entry(Path(p)))
        for ev in read_binlog_file(Path(p), record=False):
            b.feed(ev)
        cat.save(b.c, directory)
        entries[p] = b.c
    return entries


def _t(secs: float) -> datetime:
    return datetime.fromtimestamp(secs, UTC)


def test_the_window_and_the_files_it_keeps(tmp_path: Path) -> None:
    e = _catalog(tmp_path)
    late = e[str(LATE)]
    middle_last = e[str(MIDDLE)].last_time
    assert late.first_time is not None and middle_last is not None
    assert middle_last < late.first_time  # the three are apart in time
    f = [GreaterThanOrEqual(("timestamp",), _t(late.first_time - 0.5)),
         LessThan(("timestamp",), _t(late.first_time + 9))]
    assert pushed_window(f) == (late.first_time, [])
    assert catalog_skip(FILES, f, str(tmp_path)) == ([str(LATE)], [str(EARLY), str(MIDDLE)])
    assert pushed_window([GreaterThan(("commit_timestamp",), _t(100.0))])[0] == 101
    assert catalog_skip(FILES, f, "false") == (FILES, [])  # no catalog: every file
    assert catalog_skip(FILES, [LessThan(("timestamp",), _t(1))], str(tmp_path))[1] == []
    # a GTID: only the files whose ranges can hold it
    key, (lo, _hi) = next(iter(e[str(MIDDLE)].gtid_ranges.items()))
    gtid = f"{key}-{lo}" if "-" in key else f"{key}:{lo}"
    keep, _ = catalog_skip(FILES, [In(("gtid",), (gtid, "9-9-9"))], str(tmp_path))
    assert str(MIDDLE) in keep and len(keep) < len(FILES)
    # a file that changed since its entry was built is read
    copy = tmp_path / "copy.binlog"
    copy.write_bytes(EARLY.read_bytes())
    entry = cat.Builder(cat.new_entry(copy))
    for ev in read_binlog_file(copy, record=False):
        entry.feed(ev)
    cat.save(entry.c, tmp_path)
    assert catalog_skip([str(copy)], f, str(tmp_path))[1] == [str(copy)]
    copy.write_bytes(EARLY.read_bytes() + b"\0")
    assert catalog_skip([str(copy)], f, str(tmp_path))[1] == []


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.spark
def test_a_pushed_filter_reads_only_the_files_covering_it(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as fn

    from binlogscope.export.spark import register

    register(spark)
    e = _catalog(tmp_path / "catalog")
    late = e[str(LATE)]
    assert late.first_time is not None

    def read(**options: str) -> Any:
        r = spark.read.format("binlog").option("table", "events")
        for k, v in options.items():
            r = r.option(k, v)
        return r.load(FILES)

    whole = read().toArrow().to_pylist()
    assert {r["source"] for r in whole} == set(FILES)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        since = _t(late.first_time)
        df = read(pushFilters="true", catalog=str(tmp_path / "catalog")).where(
            fn.col("timestamp") >= fn.lit(since))
        assert df.rdd.getNumPartitions() == 1  # the late file only
        got = df.toArrow().to_pylist()
        want = [r for r in whole if r["timestamp"] is not None and r["timestamp"] >= since]
        assert want and _rows(got) == _rows(want)
        # without the catalog: every file is a partition, the same rows
        df = read(pushFilters="true", catalog="false").where(
            fn.col("timestamp") >= fn.lit(since))
        assert df.rdd.getNumPartitions() == 3
        assert _rows(df.toArrow().to_pylist()) == _rows(want)
        # a GTID
        gtid = next(r["gtid"] for r in whole if r["gtid"] and r["source"] == str(MIDDLE))
        df = read(pushFilters="true", catalog=str(tmp_path / "catalog")).where(
            fn.col("gtid") == gtid)
        assert df.rdd.getNumPartitions() < 3
        assert _rows(df.toArrow().to_pylist()) == _rows([r for r in whole
                                                         if r["gtid"] == gtid])
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
