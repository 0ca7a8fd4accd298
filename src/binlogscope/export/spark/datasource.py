"""``spark.read.format("binlog")``: binlog files, relay logs and captures as a Spark data source
(PySpark 4's Python Data Source API, :mod:`pyspark.sql.datasource`).

::

    from binlogscope.export.spark import register
    register(spark)
    rows = spark.read.format("binlog").option("table", "rows").load("/archive/mysql-bin.*")

* **Tables**: ``option("table", ...)``: ``rows`` (default), ``events``, ``packets``, ``errors``
  or ``health`` (each capture's replication connections' health timeline: heartbeats, ACK
  latency, lag, silences, reconnects), with the export's columns (docs/export-schema.md: the
  data columns, then the partition columns ``date`` and ``schema`` as strings) and
  ``schema_version``. The rows are the local
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

import fnmatch
import glob
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

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
    HEALTH_SCHEMA,
    HEALTH_TABLE,
    TABLES,
    full_schema,
    partition_columns,
)
from binlogscope.export.core import report_table
from binlogscope.export.spark.tasks import decode_to_union, union_schema
from binlogscope.export.task import InputReport, TaskOptions, decode_input

#: the source's short name (``spark.read.format("binlog")``)
NAME = "binlog"
#: ``export --spark``'s table: every table of an input in one pass, as
#: :func:`~binlogscope.export.spark.tasks.union_schema` batches (not for users' queries)
EXPORT_TABLE = "_export"
READ_TABLES = (*TABLES, ERRORS_TABLE, HEALTH_TABLE)
_TABLES = (*READ_TABLES, EXPORT_TABLE)
_PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
                b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a")
_GZIP = b"\x1f\x8b"
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
#: the columns whose pushed filters the reader honours (the rest go back to Spark)
_EQUAL_COLUMNS = frozenset({"table", "schema", "event_type", "operation", "gtid", "source",
                            "date", "source_kind", "binlog_file", "kind", "path"})
_RANGE_COLUMNS = frozenset({"timestamp", "commit_timestamp", "date", "offset", "log_pos"})


#: rows per Arrow batch a task hands Spark at most. Spark's JVM converts a batch to rows and
#: writes them only once the whole batch has arrived, and the worker cannot go on decoding
#: while the JVM is busy reading the one before; the local exporter's row groups (up to 64k
#: rows, ~16 MB for ``events``) left the JVM idle while a batch was decoded and the worker idle
#: while it was written. With small batches the two overlap (bench/README.md, "the Spark
#: task's rate").
BATCH_ROWS = 2048


class BinlogSourceError(ValueError):
    """A bad option or no input (shown by Spark as the query's error)."""


def read_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table as the source reads it: the export's columns (data columns,
    then the partition columns), or the ``errors`` or ``health`` table's."""
    if table == ERRORS_TABLE:
        return ERRORS_SCHEMA
    if table == HEALTH_TABLE:
        return HEALTH_SCHEMA
    if table == EXPORT_TABLE:
        return union_schema()
    return full_schema(table)


def _table_option(options: Any) -> str:
    table = str(options.get("table", "rows")).lower()
    if table not in _TABLES:
        raise BinlogSourceError(f"table {table!r}: expected one of "
                                f"{', '.join(READ_TABLES)}")
    return table


def _option_paths(options: Any) -> list[str]:
    raw = options.get("paths")
    paths: list[str] = []
    if raw:
        value = json.loads(raw)
        paths += [str(p) for p in (value if isinstance(value, list) else [value])]
    if options.get("path"):
        paths.append(str(options["path"]))
    return paths


def expand_paths(paths: Sequence[str], endpoint: str | None = None) -> list[str]:
    """Every input the paths name, in order: files, directories (their binlog files), globs,
    ``file:`` URIs (read as local paths) and other filesystems' URIs (``s3a://``, ``hdfs://``,
    ...: :func:`_list_remote`). A missing path stays (its task reports it in ``errors``)."""
    out: list[str] = []
    for raw in paths:
        if _remote(raw):
            out += _list_remote(raw, endpoint)
            continue
        local = _local_path(raw)
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


def _scheme(source: str) -> str | None:
    """A URI's scheme (lower case), None for a local path (``C:\\...`` included)."""
    m = _URI.match(source)
    return m.group(1).lower() if m and len(m.group(1)) > 1 else None


def _remote(source: str) -> bool:
    return _scheme(source) not in (None, "file")


def _local_path(source: str) -> str:
    """A local path or a ``file:`` URI's path (``file:/x``, ``file:///x``, ``file://localhost/x``)."""
    if _scheme(source) != "file":
        return source
    parsed = urlparse(source)
    return unquote(parsed.path) if parsed.path else source[5:]


def remote_filesystem(uri: str, endpoint: str | None = None) -> tuple[Any, str]:
    """pyarrow's filesystem for a URI and the path in it. A Python data source's planning and
    tasks run in Spark's Python workers, which have no JVM gateway, so the JVM's Hadoop
    FileSystem cannot be reached from them: other filesystems are read through pyarrow's
    (S3 for ``s3a://``/``s3n://``/``s3://``, GCS, Azure, and HDFS through libhdfs, which is
    Hadoop's own client in a JVM of its own). docs/spark.md says what each needs.
    ``endpoint``: an S3 endpoint URL (``option("s3Endpoint", ...)``; ``export --spark`` passes
    the session's ``fs.s3a.endpoint``)."""
    import pyarrow.fs as pafs

    scheme = _scheme(uri) or ""
    if scheme in ("s3a", "s3n"):
        uri = "s3" + uri[len(scheme):]
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        if endpoint and isinstance(fs, pafs.S3FileSystem):
            parsed = urlparse(endpoint if "://" in endpoint else "https://" + endpoint)
            fs = pafs.S3FileSystem(endpoint_override=parsed.netloc,
                                   scheme=parsed.scheme or "https")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError) as exc:
        raise BinlogSourceError(f"{uri}: cannot open its filesystem ({exc})") from None
    return fs, path


def _list_remote(raw: str, endpoint: str | None = None) -> list[str]:
    """The files a remote URI names (a file, a directory's files, or a glob over the names in
    one directory), as URIs with the caller's scheme, in name order."""
    import pyarrow.fs as pafs

    fs, path = remote_filesystem(raw, endpoint)
    head = raw[:len(raw) - len(path)] if raw.endswith(path) else raw.split(path, 1)[0]
    base, pattern = path, None
    if glob.has_magic(path):
        base, pattern = path.rsplit("/", 1)
        if glob.has_magic(base):
            raise BinlogSourceError(f"{raw}: a glob only in the last part of a remote path")
    info = fs.get_file_info(base)
    if info.type == pafs.FileType.NotFound:
        raise BinlogSourceError(f"{raw}: no such file or directory")
    if info.type == pafs.FileType.File and pattern is None:
        return [raw]
    found = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(base))
                   if i.type == pafs.FileType.File)
    names = [f for f in found if not f.rsplit("/", 1)[-1].startswith((".", "_"))
             and (pattern is None or fnmatch.fnmatchcase(f.rsplit("/", 1)[-1], pattern))]
    if not names:
        raise BinlogSourceError(f"{raw}: no file matches")
    return [head + n for n in names]


def read_bytes(source: str, endpoint: str | None = None) -> bytes | None:
    """The bytes of an input named by a URI (``file:`` read locally, others through
    :func:`remote_filesystem`), None for a local path (its task opens it). An input that
    cannot be read gives None too: its task then reports it as missing/unreadable."""
    if _scheme(source) is None:
        return None
    try:
        if not _remote(source):
            return Path(_local_path(source)).read_bytes()
        fs, path = remote_filesystem(source, endpoint)
        with fs.open_input_stream(path) as f:
            return bytes(f.read())
    except (OSError, BinlogSourceError, pa.ArrowException):
        return None


def input_size(source: str, endpoint: str | None = None) -> int:
    """An input's size in bytes (0 when it cannot be found)."""
    try:
        if not _remote(source):
            return Path(_local_path(source)).stat().st_size
        fs, path = remote_filesystem(source, endpoint)
        return max(0, int(fs.get_file_info(path).size or 0))
    except (OSError, BinlogSourceError, pa.ArrowException):
        return 0


def _kind_of(path: str, data: bytes | None = None) -> str | None:
    """``file`` (a binlog), ``pcap`` (a capture) or None, by the first bytes."""
    if data is not None:
        head = data[:4]
    else:
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


def _seconds(value: Any) -> float | None:
    """A pushed timestamp value as seconds since the epoch (a naive one is Spark's
    TIMESTAMP_NTZ: UTC wall time)."""
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return float(value.timestamp())


def pushed_window(filters: Sequence[Any]) -> tuple[int | None, list[set[str]]]:
    """What of the pushed filters the catalog can use: the earliest header time a kept row may
    have (``timestamp``/``commit_timestamp`` ``>``/``>=``: every later bound tightens it) and
    the GTID sets a kept row's ``gtid`` must be in (``=``/``IN``; each one must hold). An upper
    time bound is not used: the catalog keeps a file's latest header time, not its earliest
    (header times in a file are not in order)."""
    start: int | None = None
    gtids: list[set[str]] = []
    for f in filters:
        name = f.attribute[0] if len(f.attribute) == 1 else None
        if name in ("timestamp", "commit_timestamp") and isinstance(
                f, (GreaterThan, GreaterThanOrEqual)):
            secs = _seconds(f.value)
            if secs is None:
                continue
            t = math.floor(secs) + 1 if isinstance(f, GreaterThan) else math.ceil(secs)
            start = t if start is None else max(start, t)
        elif name == "gtid" and isinstance(f, (EqualTo, In)):
            values = [f.value] if isinstance(f, EqualTo) else list(f.value)
            gtids.append({str(v) for v in values if v is not None})
    return start, gtids


def catalog_skip(inputs: list[str], filters: Sequence[Any], catalog: str = ""
                 ) -> tuple[list[str], list[str]]:
    """(the inputs to read, the inputs left out) for the pushed filters: a local binlog file is
    left out only when its cached catalog entry (:mod:`binlogscope.diagnose.catalog`, still the
    file's: same size and mtime; ``binlogscope locate --catalog FILES`` builds them) proves no
    row of it can pass: every header time before the filters' earliest, or none of the
    filters' GTIDs in its ranges. Damaged files, captures, URIs and files without an entry are
    read. ``catalog``: the entries' directory ("" the default cache, "false" none). The catalog
    is read on the driver, never the binlogs."""
    if not filters or catalog.lower() == "false":
        return inputs, []
    start, gtids = pushed_window(filters)
    if start is None and not gtids:
        return inputs, []
    from binlogscope.diagnose.catalog import files_covering, files_for_gtid

    directory = Path(catalog) if catalog else None
    local = [s for s in inputs if _scheme(s) is None]
    out: set[str] = set()
    if start is not None:
        by_path = {Path(s): s for s in local}
        _, skipped = files_covering(list(by_path), start, None, directory=directory)
        out |= {by_path[p] for p in skipped}
    for wanted in gtids:
        may = [False] * len(local)
        for g in wanted:
            for i, ok in enumerate(files_for_gtid([Path(s) for s in local], g,
                                                  directory=directory)):
                may[i] = may[i] or ok
        out |= {s for s, ok in zip(local, may, strict=True) if not ok}
    return [s for s in inputs if s not in out], [s for s in inputs if s in out]


class BinlogReader(DataSourceReader):  # type: ignore[misc]
    """The batch reader: one partition per input, Arrow batches of the chosen table."""

    #: rows per batch at most (see :data:`BATCH_ROWS`)
    batch_rows: int | None = BATCH_ROWS

    def __init__(self, options: Any) -> None:
        table = _table_option(options)
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
        # export --spark: the paths are its inputs as it named them (no directory or glob
        # expansion), numbered from firstIndex, and with writeDir each task writes its parts
        self.listed = str(options.get("listed", "false")).lower() == "true"
        self.first_index = int(options.get("firstIndex", 0) or 0)
        self.write_dir = options.get("writeDir") or None
        self.endpoint = options.get("s3Endpoint") or None
        #: the catalog directory (``locate --catalog`` builds it), "false": no catalog
        self.catalog = str(options.get("catalog", "") or "")
        #: the inputs the catalog ruled out for the pushed filters (set by partitions())
        self.skipped: list[str] = []
        self.filters: list[Filter] = []

    def partitions(self) -> list[BinlogInput]:
        inputs = list(self.paths) if self.listed else expand_paths(self.paths, self.endpoint)
        if not inputs:
            raise BinlogSourceError(f"{', '.join(self.paths)}: no inputs")
        inputs, self.skipped = catalog_skip(inputs, self.filters, self.catalog)
        parts = []
        for i, source in enumerate(inputs):
            size = input_size(source, self.endpoint)
            parts.append(BinlogInput(self.first_index + i, source, size))
        return sorted(parts, key=lambda p: (-p.size, p.index))  # the long tasks start early

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, BinlogInput)
        data = read_bytes(partition.source, self.endpoint)  # None: a local path, opened by the task
        kind = self.kind
        if kind == "auto":
            kind = _kind_of(partition.source, data) or "file"
        if self.table == EXPORT_TABLE:
            opts = TaskOptions(kind, self.no_raw, self.ports, write_dir=self.write_dir)
            yield from decode_to_union(partition.index, partition.source, partition.size,
                                       data, opts)
            return
        tables = (self.table,) if self.table in TABLES else ()
        opts = TaskOptions(kind, self.no_raw, self.ports, tables=tables,
                           batch_rows=self.batch_rows)
        for item in decode_input(partition.index, partition.source, partition.size, data,
                                 opts):
            if isinstance(item, InputReport):
                if self.fail_fast and item.failed:
                    rows = item.error_rows()
                    raise RuntimeError(rows[0]["message"] if rows else item.path)
                rows = (item.error_rows() if self.table == ERRORS_TABLE else
                        item.health if self.table == HEALTH_TABLE else [])
                if rows:
                    for batch in report_table(rows, self.table).to_batches():
                        yield self._filtered(batch)
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

        table = _table_option(self.options)
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


__all__ = ["EXPORT_TABLE", "NAME", "BinlogDataSource", "BinlogInput", "BinlogReader",
           "BinlogSourceError", "FilteringBinlogReader", "catalog_skip", "expand_paths",
           "input_size", "pushed_window", "read_bytes", "read_schema", "remote_filesystem"]
