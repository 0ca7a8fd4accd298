"""The executor side of ``binlogscope export --spark``: one input -> Arrow batches of one union
schema, in a task of the ``binlog`` data source's export table
(:data:`binlogscope.export.spark.datasource.EXPORT_TABLE`, which ``export --spark`` reads).

Nothing here imports PySpark. Each input is decoded by the per-input function every engine
runs, :func:`binlogscope.export.task.decode_input` (the local exporter's decoder, mapper and
column building); this module only packs what it yields into one schema.

A task's output is one Arrow schema for every table (:func:`union_schema`): the columns
``table``, ``date`` and ``schema`` (the partition values), then one struct column per table
(``packets``, ``events``, ``rows``: the table's data columns, :func:`data_schema`), ``errors``
(the ``errors`` table's columns), ``health`` (the ``health`` table's: the input's health
timeline, :func:`~binlogscope.export.core.report_table`, as the local export writes it) and
``stats`` (one row per input: its counts and decode time).
Each batch fills the struct of its own table; the others are NULL. The driver
(:mod:`binlogscope.export.spark.export`) splits them into the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from binlogscope.export.arrow import (
    ERRORS_SCHEMA,
    ERRORS_TABLE,
    HEALTH_SCHEMA,
    HEALTH_TABLE,
    TABLES,
    data_schema,
    partition_columns,
)
from binlogscope.export.core import report_table
from binlogscope.export.task import InputReport, TaskOptions, decode_input

STATS_SCHEMA = pa.schema([
    pa.field("input_index", pa.int32()), pa.field("path", pa.string()),
    pa.field("bytes", pa.int64()), pa.field("events", pa.int64()),
    pa.field("rows", pa.int64()), pa.field("packets", pa.int64()),
    pa.field("seconds", pa.float64()), pa.field("failed", pa.bool_()),
])


def union_schema() -> pa.Schema:
    """The Arrow schema of every batch a task yields (see the module doc)."""
    fields = [pa.field("table", pa.string()), pa.field("date", pa.string()),
              pa.field("schema", pa.string())]
    fields += [pa.field(t, pa.struct(list(data_schema(t)))) for t in TABLES]
    fields += [pa.field(ERRORS_TABLE, pa.struct(list(ERRORS_SCHEMA))),
               pa.field(HEALTH_TABLE, pa.struct(list(HEALTH_SCHEMA))),
               pa.field("stats", pa.struct(list(STATS_SCHEMA)))]
    return pa.schema(fields)


_UNION = union_schema()


def table_batch(table: str, partition: tuple[str, ...], data: pa.Table) -> pa.RecordBatch:
    """One table's row group as a batch of the union schema."""
    n = data.num_rows
    values = dict(zip(partition_columns(table), partition, strict=True))
    cols: list[pa.Array] = [pa.repeat(pa.scalar(table, pa.string()), n)]
    for name in ("date", "schema"):
        v = values.get(name) or None  # "" is the NULL partition, as Spark writes it
        cols.append(pa.repeat(pa.scalar(v, pa.string()), n))
    for f in _UNION:
        if f.name in ("table", "date", "schema"):
            continue
        if f.name == table:
            arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                      for c in data.columns]
            cols.append(pa.StructArray.from_arrays(arrays, fields=list(f.type)))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=_UNION)


def _report_batch(table: str, data: pa.Table) -> pa.RecordBatch:
    """A batch of ``errors``, ``health`` or ``stats`` rows (no partition values)."""
    n = data.num_rows
    cols: list[pa.Array] = [pa.repeat(pa.scalar(table, pa.string()), n),
                            pa.nulls(n, pa.string()), pa.nulls(n, pa.string())]
    for f in _UNION:
        if f.name in ("table", "date", "schema"):
            continue
        if f.name == table:
            arrays = [c.combine_chunks() for c in data.columns]
            cols.append(pa.StructArray.from_arrays(arrays, fields=list(f.type)))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=_UNION)


def report_batches(report: InputReport) -> Iterator[pa.RecordBatch]:
    """An input's report as batches: its ``errors`` rows, its ``health`` rows, then its
    ``stats`` row."""
    errors = report.error_rows()
    if errors:
        yield _report_batch(ERRORS_TABLE, report_table(errors, ERRORS_TABLE))
    if report.health:
        yield _report_batch(HEALTH_TABLE, report_table(report.health, HEALTH_TABLE))
    c = report.counts
    yield _report_batch("stats", pa.Table.from_pylist([{
        "input_index": report.index, "path": report.path, "bytes": report.bytes,
        "events": c["events"], "rows": c["rows"], "packets": c["packets"],
        "seconds": report.seconds, "failed": report.failed}], schema=STATS_SCHEMA))


def decode_to_union(index: int, source: str, size: int, content: bytes | None,
                    opts: TaskOptions, *, added: Callable[[int], None] | None = None
                    ) -> Iterator[pa.RecordBatch]:
    """:func:`~binlogscope.export.task.decode_input` as batches of the union schema, the last
    one the input's ``stats`` row."""
    for item in decode_input(index, source, size, content, opts, added=added):
        if isinstance(item, InputReport):
            yield from report_batches(item)
        else:
            yield table_batch(*item)


__all__ = ["STATS_SCHEMA", "TaskOptions", "decode_to_union",
           "report_batches", "table_batch", "union_schema"]
