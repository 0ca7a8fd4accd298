"""Helpers of the streaming-source tests: the rows a sink holds and the rows the server's
binlog holds, both as comparable tuples (every column but those that say how and when a row
was read: ``source_kind``, ``source``, ``session_id``, ``capture_time``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the columns that differ between a live read and a file read of the same event
READ_COLUMNS = ("source_kind", "source", "session_id", "capture_time")


def row_tuples(df: Any) -> list[tuple[Any, ...]]:
    """A rows DataFrame as sorted tuples of its comparable columns (maps as sorted JSON)."""
    cols = [c for c in df.columns if c not in READ_COLUMNS]
    out = []
    for r in df.select(*cols).collect():
        out.append(tuple(json.dumps(sorted(v.items()), default=str) if isinstance(v, dict)
                         else v for v in (r[c] for c in cols)))
    return sorted(out, key=lambda t: json.dumps(t, default=str))


def binlog_rows(spark: Any, files: list[Path], start: tuple[str, int], table: str) -> Any:
    """The ``rows`` of ``table`` in the server's binlog files from ``start`` on (the batch
    source over the files themselves)."""
    from pyspark.sql import functions as fn

    df = spark.read.format("binlog").option("table", "rows").load([str(f) for f in files])
    name, pos = start
    return df.where((fn.col("table") == table)
                    & ((fn.col("binlog_file") > name)
                       | ((fn.col("binlog_file") == name) & (fn.col("offset") >= pos))))


def master_status(db: Any) -> tuple[str, int]:
    from tests.watch_support import run_sql

    name, pos = run_sql(db, "SHOW MASTER STATUS")[0][:2]
    return str(name), int(pos)
