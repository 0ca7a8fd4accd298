"""``spark.read.format("binlog")``: binlog files, relay logs and captures as a Spark data source
(PySpark 4's Python Data Source API, :mod:`pyspark.sql.datasource`).

::

    from binlogscope.export.spark import register
    register(spark)
    rows = spark.read.format("binlog").option("table", "rows").load("/archive/mysql-bin.*")

* **Tables**: ``option("table", ...)``: ``rows`` (default), ``events``, ``packets`` or ``errors``,
  with the export's columns (docs/export-schema.md: the data columns, then the partition
  columns ``date`` and ``schema`` as strings) and ``schema_version``. The rows are the local
  export's: every input is decoded by :func:`binlogscope.export.task.decode_input`, the
  function ``export``, ``export --spark`` and ``--jobs`` run.
* **Inputs**: ``load(PATH)`` or ``load([PATH, ...])``: files, directories (their binlog files,
  as ``export`` reads a directory), globs and ``file:`` URIs, expanded when the query is planned
  (on the driver; the executors open the same paths: on a cluster, a filesystem every node
  mounts). One input partition per file or capture, the biggest first. ``option("kind", ...)``:
  ``auto`` (default: a capture by its magic, else a binlog), ``file`` or ``pcap``;
  ``option("ports", "3306,3307")`` for captures.
* **Damage**: a damaged, truncated or missing input never fails the query: its readable rows
  are there, and it is one row of the ``errors`` table (the export's). ``option("failFast",
  "true")`` fails the query instead.
* **Filters** Spark pushes (with ``option("pushFilters", "true")`` and the session's
  ``spark.sql.python.filterPushdown.enabled``: :class:`FilteringBinlogReader` says why it is
  opt-in) that are cheap to honour are honoured in the task, on each decoded batch before it is
  handed to Spark: ``=``/``IN``/``IS NULL`` on the string
  columns ``table``, ``schema``, ``event_type``, ``operation``, ``gtid``, ``source``, ``date``,
  and ranges on ``timestamp``, ``commit_timestamp``, ``date``, ``offset``; every other filter is
  returned to Spark.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)

from binlogscope.export.arrow import (
    ERRORS_SCHEMA,
    ERRORS_TABLE,
    TABLES,
    full_schema,
    partition_columns,
)
from binlogscope.export.task import InputReport, TaskOptions, decode_input

#: the source's short name (``spark.read.format("binlog")``)
NAME = "binlog"
READ_TABLES = (*TABLES, ERRORS_TABLE)
_PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
                b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a")
_GZIP = b"\x1f\x8b"
#: the columns whose pushed filters the reader honours (the rest go back to Spark)
_EQUAL_COLUMNS = frozenset({"table", "schema", "event_type", "operation", "gtid", "source",
                            "date", "source_kind", "binlog_file", "kind", "path"})
_RANGE_COLUMNS = frozenset({"timestamp", "commit_timestamp", "date", "offset", "log_pos"})


class BinlogSourceError(ValueError):
    """A bad option or no input (shown by Spark as the query's error)."""


def read_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table as the source reads it: the export's columns (data columns,
    then the partition columns), or the ``errors`` table's."""
    if table == ERRORS_TABLE:
        return ERRORS_SCHEMA
    return full_schema(table)


def _option_paths(options: Any) -> list[str]:
    raw = options.get("paths")
    paths: list[str] = []
    if raw:
        value = json.loads(raw)
        paths += [str(p) for p in (value if isinstance(value, list) else [value])]
    if options.get("path"):
        paths.append(str(options["path"]))
    return paths


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Every input the paths name, in order: files, directories (their binlog files), globs,
    ``file:`` URIs. A missing path stays (its task reports it in ``errors``)."""
    out: list[str] = []
    for raw in paths:
        local = raw[5:] if raw.startswith("file:") else raw
        if local.startswith("//"):
            local = local[2:]
        if "://" in raw and not raw.startswith("file:"):
            raise BinlogSourceError(f"{raw}: only local paths and file: URIs are read by the "
                                    "binlog source (copy the files, or mount the store)")
        names = sorted(glob.glob(local)) if glob.has_magic(local) else [local]
        if not names:
            raise BinlogSourceError(f"{raw}: no file matches")
        for name in names:
            if Path(name).is_dir():  # its binlogs and captures, by name (as export reads it)
                out += sorted(str(p) for p in Path(name).iterdir() if p.is_file()
                              and not p.name.startswith((".", "_")) and _kind_of(str(p)))
            else:
                out.append(name)
    return out


def _kind_of(path: str) -> str | None:
    """``file`` (a binlog), ``pcap`` (a capture) or None, by the first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return None
    if head[:2] == _GZIP:
        return "pcap" if ".pcap" in Path(path).name else "file"
    if head == b"\xfebin":
        return "file"
    return "pcap" if head in _PCAP_MAGICS else None


@dataclass(frozen=True, slots=True)
class BinlogInput(InputPartition):  # type: ignore[misc]
    """One input partition: one file or capture."""

    index: int
    source: str
    size: int


def _filter_mask(batch: pa.RecordBatch, filters: Sequence[Any]) -> Any:
    mask: Any = None
    for f in filters:
        col = batch.column(f.attribute[0])
        if isinstance(f, EqualTo):
            m = pc.equal(col, pa.scalar(f.value, col.type))
        elif isinstance(f, In):
            m = pc.is_in(col, value_set=pa.array(list(f.value), col.type))
        elif isinstance(f, IsNull):
            m = pc.is_null(col)
        elif isinstance(f, IsNotNull):
            m = pc.is_valid(col)
        else:
            op = {GreaterThan: pc.greater, GreaterThanOrEqual: pc.greater_equal,
                  LessThan: pc.less, LessThanOrEqual: pc.less_equal}[type(f)]
            m = op(col, pa.scalar(f.value, col.type))
        mask = m if mask is None else pc.and_kleene(mask, m)
    return mask


def _supported(f: Any, schema: pa.Schema) -> bool:
    if len(f.attribute) != 1 or f.attribute[0] not in schema.names:
        return False
    name = f.attribute[0]
    typ = schema.field(name).type
    try:
        if isinstance(f, (IsNull, IsNotNull)):
            return name in _EQUAL_COLUMNS or name in _RANGE_COLUMNS
        if isinstance(f, (EqualTo, In)) and name in _EQUAL_COLUMNS:
            values = list(f.value) if isinstance(f, In) else [f.value]
            pa.array(values, typ)
            return True
        if isinstance(f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)) \
                and name in _RANGE_COLUMNS:
            pa.scalar(f.value, typ)
            return True
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return False
    return False


class BinlogReader(DataSourceReader):  # type: ignore[misc]
    """The batch reader: one partition per input, Arrow batches of the chosen table."""

    def __init__(self, options: Any) -> None:
        table = str(options.get("table", "rows")).lower()
        if table not in READ_TABLES:
            raise BinlogSourceError(f"table {table!r}: expected one of "
                                    f"{', '.join(READ_TABLES)}")
        kind = str(options.get("kind", "auto")).lower()
        if kind not in ("auto", "file", "pcap"):
            raise BinlogSourceError(f"kind {kind!r}: expected auto, file or pcap")
        self.table = table
        self.kind = kind
        self.schema = read_schema(table)
        self.fail_fast = str(options.get("failFast", "false")).lower() == "true"
        self.no_raw = str(options.get("noRaw", "false")).lower() == "true"
        ports = str(options.get("ports", "") or "")
        self.ports = [int(p) for p in ports.split(",") if p.strip()] or None
        self.paths = _option_paths(options)
        if not self.paths:
            raise BinlogSourceError("no input: load(PATH) or load([PATH, ...])")
        self.filters: list[Filter] = []

    def partitions(self) -> list[BinlogInput]:
        inputs = expand_paths(self.paths)
        if not inputs:
            raise BinlogSourceError(f"{', '.join(self.paths)}: no inputs")
        parts = []
        for i, source in enumerate(inputs):
            try:
                size = Path(source).stat().st_size
            except OSError:
                size = 0
            parts.append(BinlogInput(i, source, size))
        return sorted(parts, key=lambda p: (-p.size, p.index))  # the long tasks start early

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, BinlogInput)
        kind = self.kind if self.kind != "auto" else (_kind_of(partition.source) or "file")
        tables = (self.table,) if self.table in TABLES else ()
        opts = TaskOptions(kind, self.no_raw, self.ports, tables=tables)
        for item in decode_input(partition.index, partition.source, partition.size, None,
                                 opts):
            if isinstance(item, InputReport):
                if self.fail_fast and item.failed:
                    rows = item.error_rows()
                    raise RuntimeError(rows[0]["message"] if rows else item.path)
                if self.table == ERRORS_TABLE and item.error_rows():
                    yield self._filtered(pa.RecordBatch.from_pylist(item.error_rows(),
                                                                    schema=ERRORS_SCHEMA))
                continue
            table, partition_values, data = item
            if table != self.table:
                continue
            yield self._filtered(self._with_partition(table, partition_values, data))

    def _with_partition(self, table: str, values: tuple[str, ...], data: pa.Table
                        ) -> pa.RecordBatch:
        n = data.num_rows
        cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                for c in data.columns]
        for v in values:  # "" is the NULL partition (as the dataset's __HIVE_DEFAULT__)
            cols.append(pa.repeat(pa.scalar(v or None, pa.string()), n))
        assert len(values) == len(partition_columns(table))
        return pa.RecordBatch.from_arrays(cols, schema=self.schema)

    def _filtered(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not self.filters or batch.num_rows == 0:
            return batch
        return batch.filter(_filter_mask(batch, self.filters), null_selection_behavior="drop")


class FilteringBinlogReader(BinlogReader):
    """The reader with filter pushdown (``option("pushFilters", "true")`` and the session's
    ``spark.sql.python.filterPushdown.enabled``): PySpark refuses a reader that has
    ``pushFilters`` when the setting is off, and with it on PySpark 4.3 keeps a DataFrame's
    reader after a filtered query (a later query of the same DataFrame still got the pushed
    filters: measured), so it is the user's choice, per read."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 (Spark's name)
        self.filters = []  # (this query's filters only)
        for f in filters:
            if _supported(f, self.schema):
                self.filters.append(f)
            else:
                yield f


class BinlogDataSource(DataSource):  # type: ignore[misc]
    """``spark.read.format("binlog")`` (see the module doc)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> Any:
        from pyspark.sql import types as st

        from binlogscope.export.spark.spark_types import spark_type

        table = str(self.options.get("table", "rows")).lower()
        if table not in READ_TABLES:
            raise BinlogSourceError(f"table {table!r}: expected one of "
                                    f"{', '.join(READ_TABLES)}")
        return st.StructType([st.StructField(f.name, spark_type(f.type), True)
                              for f in read_schema(table)])

    def reader(self, schema: Any) -> BinlogReader:
        if str(self.options.get("pushFilters", "false")).lower() == "true":
            return FilteringBinlogReader(self.options)
        return BinlogReader(self.options)

    def streamReader(self, schema: Any) -> Any:  # noqa: N802 (Spark's name)
        """``spark.readStream.format("binlog")``: :mod:`binlogscope.export.spark.stream`."""
        from binlogscope.export.spark.stream import BinlogStreamReader

        return BinlogStreamReader(self.options)


__all__ = ["NAME", "BinlogDataSource", "BinlogInput", "BinlogReader", "BinlogSourceError",
           "FilteringBinlogReader",
           "expand_paths", "read_schema"]
