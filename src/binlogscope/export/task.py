"""One input (a binlog file or a capture) -> Arrow batches of the export tables: the per-input
function every parallel engine runs (a Spark task of ``export --spark`` and of the ``binlog``
data source; a ``--jobs`` process).

Nothing here imports PySpark. The input is decoded by the local exporter's own code (the record
functions of :mod:`binlogscope.export.records` / :mod:`binlogscope.export.sources`, the
:class:`~binlogscope.export.mapper.TableMapper` and the row-group building of
:class:`~binlogscope.export.writer.DatasetWriter`, its row groups kept instead of written), so
the rows and their columns are the local export's. The input's bytes may be handed in (Spark
read them): they are decoded from memory, never written to a file to be read back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from binlogscope.export.arrow import TABLES
from binlogscope.export.core import (
    LOSS_KINDS,
    InputDamage,
    collect_as_before,
    collect_rarely,
    error_rows,
    note_damage,
)
from binlogscope.export.images import COLUMN_BUILDERS
from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import (
    EventRecord,
    HealthRecord,
    InputDone,
    PacketRecord,
    Record,
    WrittenRun,
    binlog_file_records,
)
from binlogscope.export.writer import DatasetWriter, _Part

#: one table's row group: (table, partition values, data columns)
TableBatch = tuple[str, tuple[str, ...], pa.Table]


@dataclass(slots=True)
class TaskOptions:
    """What every task of an export needs to know (pickled with the task function)."""

    kind: str  # "file" or "pcap"
    no_raw: bool = False
    ports: list[int] | None = None
    #: ``--writer tasks``: each task writes its input's parts here (``input-<index>/``) with
    #: the local exporter's writer and hands back only its report
    write_dir: str | None = None
    #: tables to build (None: all); the others' rows are not even made into columns
    tables: tuple[str, ...] | None = None
    #: rows per batch handed back at most (None: the local exporter's row group size): the
    #: Spark source's tasks hand the JVM smaller batches, so that it converts and writes one
    #: while the worker decodes the next (bench/README.md, "the Spark task's rate")
    batch_rows: int | None = None


@dataclass(slots=True)
class InputReport:
    """What a task tells its driver about its input (always the last item it yields)."""

    index: int
    path: str
    bytes: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    seconds: float = 0.0
    #: the input could not be read to its end (missing, not a binlog, a damaged capture)
    failure: str | None = None
    damage: InputDamage | None = None
    #: its rows of the ``health`` table (written by the driver with the input's checkpoint)
    health: list[dict[str, Any]] = field(default_factory=list)
    #: a range of the input (``export --jobs``' units, :mod:`binlogscope.export.split`):
    #: where its read stopped (``InputDone.stopped_at``) and why its rows may differ from a
    #: read of the whole input (damage, or ``InputDone.doubt``); None: no doubt
    stopped_at: int | None = None
    doubt: str | None = None
    #: (where :func:`~binlogscope.export.core.note_damage` counts; the input's only entry
    #: is :attr:`damage`)
    _noted: dict[int, InputDamage] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(self.failure or self.damage is not None)

    def error_rows(self) -> list[dict[str, Any]]:
        """Its rows of the ``errors`` table."""
        return error_rows(self.path, self.failure, self.damage)


class BatchCollector(DatasetWriter):
    """The local exporter's writer with its row groups kept as Arrow tables instead of being
    written: same buffering, same column building (the row images' builders), same limits on
    the memory the buffered rows hold. :meth:`take` hands over what is ready."""

    def __init__(self, tables: tuple[str, ...] | None = None,
                 batch_rows: int | None = None) -> None:
        super().__init__(Path("."), background=False, directories=False,
                         builders=COLUMN_BUILDERS)
        if batch_rows is not None:
            self.row_group_size = batch_rows
        self.ready: list[TableBatch] = []
        self._keys: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._wanted = None if tables is None else frozenset(tables)

    def add_values(self, table: str, partition: tuple[str, ...], values: list[Any],
                   weight: int = 0) -> None:
        if self._wanted is None or table in self._wanted:
            super().add_values(table, partition, values, weight)

    def add_rows(self, table: str, partition: tuple[str, ...], rows: list[list[Any]],
                 weights: list[int]) -> None:
        if self._wanted is None or table in self._wanted:
            super().add_rows(table, partition, rows, weights)

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

    def take(self) -> list[TableBatch]:
        out, self.ready = self.ready, []
        return out


def input_records(index: int, source: str, opts: TaskOptions, data: bytes | None = None,
                  span: tuple[int | None, int | None] | None = None) -> Iterator[Record]:
    """The records of one input, ending with its :class:`InputDone`; ``span``: only the range
    ``[start, stop)`` of a binlog file (``export --jobs``' units; a start where a transaction
    starts, None: the file's start; a stop None: its end)."""
    if opts.kind == "pcap":
        from binlogscope.export.sources import capture_records

        return capture_records(index, source, opts.ports, data=data)
    if span is not None:
        return binlog_file_records(index, source, start=span[0], stop=span[1], trusted=True,
                                   data=data)
    return binlog_file_records(index, source, data=data)


def decode_input(index: int, source: str, size: int, data: bytes | None, opts: TaskOptions,
                 *, added: Callable[[int], None] | None = None,
                 records: Iterable[Record] | None = None,
                 span: tuple[int | None, int | None] | None = None, unit: int | None = None
                 ) -> Generator[TableBatch | InputReport, None, None]:
    """Decode one input into its tables' row groups, then its :class:`InputReport`.

    ``source`` is the input as the dataset names it (the local exporter's path string, or a
    URI); ``data`` its bytes when they were read elsewhere (else ``source`` is opened). A
    problem with the input (missing, not a binlog, a capture that cannot be read, or any other
    failure while decoding) goes into the report and the task goes on: it never raises for a
    bad input. With ``opts.write_dir`` the rows are written there and only the report comes
    back. ``added(size)``: called once the input is done (a progress accumulator).
    ``records``: the input's records when they come from elsewhere (a slice of a live stream:
    the Spark streaming source), instead of reading ``source``. ``span``: only that range of
    a binlog file (see :func:`input_records`), written as unit ``unit`` of the input (its
    parts' own directory, ``input-<index>-<unit>``); the report says where the read stopped
    and any doubt (:attr:`InputReport.doubt`).
    """
    t0 = time.perf_counter()
    report = InputReport(index, source, size)
    own_parts = opts.write_dir is not None
    name = f"input-{index:06d}" + ("" if unit is None else f"-{unit:04d}")
    writer = (DatasetWriter(Path(str(opts.write_dir)) / name,
                            builders=COLUMN_BUILDERS) if own_parts
              else BatchCollector(opts.tables, opts.batch_rows))
    mapper = TableMapper(no_raw=opts.no_raw, emit_values=writer.add_values,
                         emit_rows=writer.add_rows, tables=None if own_parts else opts.tables)
    counts = report.counts
    collect_rarely()
    try:
        try:
            for rec in (input_records(index, source, opts, data, span) if records is None
                        else records):
                if isinstance(rec, WrittenRun):
                    mapper.written(rec)
                elif isinstance(rec, EventRecord):
                    mapper.event(rec)
                    if rec.event.error:
                        note_damage(report._noted, rec)
                        if span is not None and report.doubt is None:
                            report.doubt = f"at offset {rec.event.offset}: {rec.event.error}"
                elif isinstance(rec, PacketRecord):
                    mapper.packet(rec)
                    if rec.kind in LOSS_KINDS:
                        note_damage(report._noted, rec)
                elif isinstance(rec, InputDone):
                    mapper.input_done()
                    if rec.error:
                        report.failure = rec.error
                    report.stopped_at = rec.stopped_at
                    report.doubt = report.doubt or rec.doubt or (
                        rec.error if span is not None else None)
                elif isinstance(rec, HealthRecord):
                    report.health += rec.rows
                if isinstance(writer, BatchCollector) and writer.ready:
                    for item in writer.take():
                        counts[item[0]] += item[2].num_rows
                        yield item
            mapper.input_done()
            if isinstance(writer, BatchCollector):
                writer.finish()
            else:
                writer.checkpoint()
                counts.update(writer.rows_written)
        except Exception as exc:  # a failure decoding this input must not end the job
            report.failure = f"{source}: {type(exc).__name__}: {exc}"
            writer.abort()  # (--writer tasks: none of the input's rows is kept)
        if isinstance(writer, BatchCollector):
            for item in writer.take():
                counts[item[0]] += item[2].num_rows
                yield item
    finally:
        collect_as_before()
    writer.close()
    report.damage = next(iter(report._noted.values()), None)
    if added is not None:
        added(size)
    report.seconds = time.perf_counter() - t0
    yield report


__all__ = ["BatchCollector", "InputReport", "TableBatch", "TaskOptions", "decode_input",
           "input_records"]
