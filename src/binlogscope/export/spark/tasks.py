"""The executor side of ``binlogscope export --spark``: one input (binlog file or capture) ->
Arrow record batches, in the process of a Spark task.

Nothing here imports PySpark: the functions run inside Spark's Python workers (``mapInArrow``)
and in tests. An input is decoded by the local exporter's own code: the record sources of
:mod:`binlogscope.export.records` / :mod:`binlogscope.export.sources`, the
:class:`~binlogscope.export.mapper.TableMapper` and the row-group building of
:class:`~binlogscope.export.writer.DatasetWriter` (its batches are kept instead of written);
so the rows and their columns are the local export's, whatever the schema holds.

A task's output is one Arrow schema for every table (:func:`union_schema`): the columns
``table``, ``date`` and ``schema`` (the partition values), then one struct column per table
(``packets``, ``events``, ``rows``: the table's data columns, :func:`data_schema`), ``errors``
(``path``, ``message``) and ``stats`` (one row per input: its counts and decode time). Each
batch fills the struct of its own table; the others are NULL. The driver
(:mod:`binlogscope.export.spark.export`) splits them into the tables.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from binlogscope.export.arrow import TABLES, data_schema, partition_columns
from binlogscope.export.images import COLUMN_BUILDERS
from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import (
    BinlogFileSource,
    EventRecord,
    InputDone,
    PacketRecord,
    Record,
    SourceError,
)
from binlogscope.export.writer import DatasetWriter, _Part

#: the tables a task hands back besides the export tables
ERRORS_SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("message", pa.string())])
STATS_SCHEMA = pa.schema([
    pa.field("input_index", pa.int32()), pa.field("path", pa.string()),
    pa.field("bytes", pa.int64()), pa.field("events", pa.int64()),
    pa.field("rows", pa.int64()), pa.field("packets", pa.int64()),
    pa.field("seconds", pa.float64()), pa.field("failed", pa.bool_()),
])
#: the columns of a task's input rows (the driver builds them; ``content`` is set for inputs
#: read through Spark's ``binaryFile`` source, NULL for paths the executor opens itself)
TASK_INPUT = ("input_index", "source", "bytes", "content")


def union_schema() -> pa.Schema:
    """The Arrow schema of every batch a task yields (see the module doc)."""
    fields = [pa.field("table", pa.string()), pa.field("date", pa.string()),
              pa.field("schema", pa.string())]
    fields += [pa.field(t, pa.struct(list(data_schema(t)))) for t in TABLES]
    fields += [pa.field("errors", pa.struct(list(ERRORS_SCHEMA))),
               pa.field("stats", pa.struct(list(STATS_SCHEMA)))]
    return pa.schema(fields)


_UNION = union_schema()


class BatchCollector(DatasetWriter):
    """The local exporter's writer with its row groups kept as Arrow tables instead of being
    written: same buffering, same column building (the row images' builders), same limits on
    the memory the buffered rows hold. :meth:`take` hands over what is ready."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, background=False, builders=COLUMN_BUILDERS)
        self.ready: list[tuple[str, tuple[str, ...], pa.Table]] = []
        self._keys: dict[int, tuple[str, tuple[str, ...]]] = {}

    def _new_part(self, table: str, partition: tuple[str, ...]) -> _Part:
        part = super()._new_part(table, partition)
        self._keys[id(part)] = (table, partition)
        return part

    def _write(self, part: _Part, batch: pa.Table) -> None:
        table, partition = self._keys[id(part)]
        self.ready.append((table, partition, batch))

    def finish(self) -> None:
        """Every buffered row becomes a ready batch."""
        for (table, _), part in list(self._open.items()):
            self._flush(table, part)
        self._open.clear()
        self._closed.clear()
        self._keys.clear()

    def take(self) -> list[tuple[str, tuple[str, ...], pa.Table]]:
        out, self.ready = self.ready, []
        return out


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


def _single_batch(table: str, row: dict[str, Any]) -> pa.RecordBatch:
    """A one-row batch of ``errors`` or ``stats``."""
    cols: list[pa.Array] = [pa.array([table], pa.string()), pa.nulls(1, pa.string()),
                            pa.nulls(1, pa.string())]
    for f in _UNION:
        if f.name in ("table", "date", "schema"):
            continue
        if f.name == table:
            cols.append(pa.array([row], f.type))
        else:
            cols.append(pa.nulls(1, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=_UNION)


@dataclass(slots=True)
class TaskOptions:
    """What every task of an export needs to know (pickled with the task function)."""

    kind: str  # "file" or "pcap"
    no_raw: bool = False
    ports: list[int] | None = None
    #: ``--writer tasks``: each task writes its input's parts here (``input-<index>/``) with
    #: the local exporter's writer and hands back only its ``stats`` and ``errors`` rows
    write_dir: str | None = None


def _records(local: str, opts: TaskOptions) -> Iterator[Record]:
    if opts.kind == "pcap":
        from binlogscope.export.sources import PcapRecordSource

        return PcapRecordSource([local], opts.ports).records()
    return BinlogFileSource([local]).records()


def decode_input(index: int, source: str, size: int, content: bytes | None,
                 opts: TaskOptions, *, added: Callable[[int], None] | None = None
                 ) -> Iterator[pa.RecordBatch]:
    """Decode one input into batches of the union schema, the last one its ``stats`` row.

    ``source`` is the input as the dataset names it (the local exporter's path string, or the
    URI); ``content`` its bytes when Spark read them (else the executor opens ``source``).
    A problem with the input (missing, not a binlog, a capture that cannot be read, or any
    other failure while decoding) yields an ``errors`` row and the task goes on.
    """
    t0 = time.perf_counter()
    tmp: str | None = None
    counts = dict.fromkeys(TABLES, 0)
    failed = False
    scratch = tempfile.mkdtemp(prefix="binlogscope-task-")
    try:
        local = source
        if content is not None:  # bytes read by Spark: the same file name, on local disk
            tmp = tempfile.mkdtemp(prefix="binlogscope-input-")
            local = os.path.join(tmp, Path(source).name or "input")
            with open(local, "wb") as f:
                f.write(content)
            del content
        own_parts = opts.write_dir is not None
        writer = (DatasetWriter(Path(str(opts.write_dir)) / f"input-{index:06d}",
                                builders=COLUMN_BUILDERS) if own_parts
                  else BatchCollector(Path(scratch)))
        mapper = TableMapper(no_raw=opts.no_raw, emit_values=writer.add_values,
                             emit_many=writer.add_many)
        errors: list[str] = []
        try:
            for rec in _records(local, opts):
                if isinstance(rec, EventRecord):
                    rec.source = source
                    mapper.event(rec)
                elif isinstance(rec, PacketRecord):
                    rec.source = source
                    mapper.packet(rec)
                elif isinstance(rec, InputDone):
                    mapper.input_done()
                    if rec.error:
                        errors.append(rec.error.replace(local, source))
                if isinstance(writer, BatchCollector) and writer.ready:
                    for table, partition, data in writer.take():
                        counts[table] += data.num_rows
                        yield table_batch(table, partition, data)
            mapper.input_done()
            if isinstance(writer, BatchCollector):
                writer.finish()
            else:
                writer.checkpoint()
                counts.update(writer.rows_written)
        except SourceError as exc:  # missing, not a file
            errors.append(str(exc).replace(local, source))
        except Exception as exc:  # a failure decoding this input must not end the job
            errors.append(f"{source}: {type(exc).__name__}: {exc}".replace(local, source)
                          + "\n" + traceback.format_exc(limit=-3).rstrip())
            writer.abort()  # (--writer tasks: none of the input's rows is kept)
        if isinstance(writer, BatchCollector):
            for table, partition, data in writer.take():
                counts[table] += data.num_rows
                yield table_batch(table, partition, data)
        writer.close()
        for message in errors:
            failed = True
            yield _single_batch("errors", {"path": source, "message": message})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if added is not None:
        added(size)
    yield _single_batch("stats", {
        "input_index": index, "path": source, "bytes": size, "events": counts["events"],
        "rows": counts["rows"], "packets": counts["packets"],
        "seconds": time.perf_counter() - t0, "failed": failed})


def decode_partition(batches: Iterator[pa.RecordBatch], opts: TaskOptions,
                     added: Callable[[int], None] | None = None) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: every input row of the partition (one, as the driver
    builds the tasks) decoded by :func:`decode_input`."""
    for batch in batches:
        for row in batch.to_pylist():
            index = row["input_index"]
            yield from decode_input(-1 if index is None else int(index), str(row["source"]),
                                    int(row["bytes"] or 0), row.get("content"), opts,
                                    added=added)


__all__ = ["ERRORS_SCHEMA", "STATS_SCHEMA", "TASK_INPUT", "BatchCollector", "TaskOptions",
           "decode_input", "decode_partition", "table_batch", "union_schema"]
