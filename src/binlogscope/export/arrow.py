"""The export schema (defined once, here) and the streaming, crash-safe Parquet dataset writer.

Everything about the dataset layout lives in this module: the three tables and their columns
(:data:`TABLES`), the Hive-style partition directories, the part-file naming, and the doc page
(:func:`render_schema_doc` generates ``docs/export-schema.md``; a test checks they agree).

Crash safety: a part file is written under a hidden in-progress name (``.part-...inprogress``,
which pyarrow and Spark both skip) and renamed to ``part-<checkpoint>-<n>.parquet`` only when the
exporter reaches a checkpoint (a transaction boundary). The checkpoint note ``_export_state.json``
is written after the renames (temp file + rename); parts with a checkpoint number above the one
the note records are removed by ``--resume`` (they belong to a checkpoint that never completed).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import json
import os
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: bump when a column is added, removed, renamed or changes type (also in docs/export-schema.md)
SCHEMA_VERSION = 1

#: Hive's name for a NULL partition value (pyarrow and Spark both read it back as NULL)
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
STATE_FILE = "_export_state.json"
_TS = pa.timestamp("us", tz="UTC")
_MAP = pa.map_(pa.string(), pa.string())


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    #: a Hive partition column: a directory level (``date=2024-05-01/``), not stored in the files
    partition: bool = False


_COMMON_HEAD = (
    Column("schema_version", pa.int16(), f"version of this schema ({SCHEMA_VERSION})"),
    Column("source_kind", pa.string(), "where the data came from: `file`, `pcap` or `live`"),
    Column("source", pa.string(), "the input: binlog file path, capture path or `host:port`"),
    Column("session_id", pa.string(),
           "TCP session the data was seen on (pcap/live); NULL for binlog files"),
)

PACKETS: tuple[Column, ...] = (
    *_COMMON_HEAD,
    Column("flow", pa.string(), "`client_ip:port->server_ip:port` of the TCP session"),
    Column("direction", pa.string(),
           "`server` (source to replica) or `client` (replica to source)"),
    Column("frame", pa.int64(), "frame number in the capture (1-based), or packet index live"),
    Column("time", _TS, "capture time of the packet (UTC)"),
    Column("seq", pa.int16(), "MySQL packet sequence id"),
    Column("payload_length", pa.int32(), "payload length from the 3-byte packet header"),
    Column("semi_sync", pa.bool_(), "the packet carries the semi-sync 0xef prefix"),
    Column("ack_request", pa.bool_(), "semi-sync: the source asks the replica to ACK this event"),
    Column("kind", pa.string(),
           "packet kind: HANDSHAKE, AUTH, COMMAND, OK, ERR, EOF, RESULTSET, BINLOG_EVENT, "
           "SEMI_SYNC_ACK, ..."),
    Column("command", pa.string(), "COM_* name for a command packet, else NULL"),
    Column("binlog_file", pa.string(),
           "binlog file of the event (BINLOG_EVENT) or of the acknowledged position (ACK)"),
    Column("log_pos", pa.int64(), "log_pos of the event (BINLOG_EVENT) or acknowledged position"),
    Column("payload", pa.binary(),
           "raw payload bytes; NULL with `--no-raw` and ALWAYS NULL for authentication packets "
           "(scrambles and passwords are never exported)"),
    Column("date", pa.string(), "partition: UTC date of `time` (YYYY-MM-DD)", partition=True),
)

EVENTS: tuple[Column, ...] = (
    *_COMMON_HEAD,
    Column("binlog_file", pa.string(),
           "binlog file the event is in (the file name for files, from ROTATE for streams)"),
    Column("offset", pa.int64(), "byte offset of the event's first byte in `binlog_file`"),
    Column("log_pos", pa.int64(),
           "header log_pos: offset of the byte after the event on the source"),
    Column("event_size", pa.int64(), "header event_size: header + body + checksum"),
    Column("inner_index", pa.int32(), "index of the event inside its TRANSACTION_PAYLOAD (such "
           "events share the payload's `offset` and `log_pos`); NULL for top-level events"),
    Column("timestamp", _TS, "header timestamp (UTC, second precision): statement start on the "
           "source"),
    Column("server_id", pa.int64(), "header server_id"),
    Column("event_type", pa.string(), "event type name (`WRITE_ROWS_EVENT`, `QUERY_EVENT`, ...)"),
    Column("type_code", pa.int16(), "event type code"),
    Column("flags", pa.int32(), "header flags (LOG_EVENT_*_F bits)"),
    Column("checksum_ok", pa.bool_(), "CRC32 verdict; NULL when no checksum is in force"),
    Column("error", pa.string(), "decode error (the event is damaged), else NULL"),
    Column("gtid", pa.string(), "GTID of the transaction the event belongs to (NULL if none or "
           "anonymous)"),
    Column("xid", pa.int64(), "XID of the transaction the event belongs to (NULL: not committed "
           "with an XID)"),
    Column("trx_offset", pa.int64(), "offset of the first event (GTID/BEGIN) of the event's "
           "transaction; (`source`, `binlog_file`, `trx_offset`) identifies a transaction; NULL "
           "outside transactions"),
    Column("table", pa.string(), "table name (TABLE_MAP and row events)"),
    Column("query", pa.string(), "statement text (QUERY, ROWS_QUERY, ANNOTATE_ROWS)"),
    Column("rows", pa.int32(), "row changes in a row event, else NULL"),
    Column("capture_time", _TS, "when the event was seen on the wire (pcap/live); NULL for files"),
    Column("date", pa.string(), "partition: UTC date of `timestamp` (YYYY-MM-DD)", partition=True),
    Column("schema", pa.string(), "partition: database (TABLE_MAP/row events: the table's; QUERY: "
           "the default database); NULL otherwise", partition=True),
)

ROWS: tuple[Column, ...] = (
    *_COMMON_HEAD,
    Column("binlog_file", pa.string(), "binlog file of the row event (Canal: logfileName)"),
    Column("offset", pa.int64(), "offset of the row event in `binlog_file` (Canal: logfileOffset)"),
    Column("log_pos", pa.int64(), "header log_pos of the row event"),
    Column("inner_index", pa.int32(), "index of the row event inside its TRANSACTION_PAYLOAD; "
           "NULL for top-level events"),
    Column("row_index", pa.int32(), "index of this row change inside its event (0-based)"),
    Column("event_type", pa.string(), "the row event's type name"),
    Column("table", pa.string(), "table name"),
    Column("operation", pa.string(), "`INSERT`, `UPDATE` or `DELETE` (Canal: eventType)"),
    Column("timestamp", _TS, "header timestamp of the row event (UTC)"),
    Column("commit_timestamp", _TS, "header timestamp of the event that committed the transaction "
           "(XID or COMMIT); NULL if the commit was not seen"),
    Column("server_id", pa.int64(), "header server_id"),
    Column("gtid", pa.string(), "GTID of the transaction (NULL if none or anonymous)"),
    Column("xid", pa.int64(), "XID of the transaction (NULL if not committed with an XID)"),
    Column("trx_offset", pa.int64(), "offset of the transaction's first event (see `events`)"),
    Column("before", _MAP, "before image (UPDATE/DELETE): column -> text as SELECT prints it; "
           "binary values as `0x` hex; NULL values are NULL"),
    Column("after", _MAP, "after image (INSERT/UPDATE), same form as `before`"),
    Column("before_json", pa.string(), "before image as a JSON object keeping types (numbers "
           "stay numbers; DECIMAL and temporal values are strings; binary values hex strings)"),
    Column("after_json", pa.string(), "after image as typed JSON, same form as `before_json`"),
    Column("pk_columns", pa.list_(pa.string()), "primary key columns when the TABLE_MAP "
           "metadata names them (binlog_row_metadata=FULL), else NULL"),
    Column("pk", _MAP, "primary key values (from `after`, or `before` for DELETE), else NULL"),
    Column("capture_time", _TS, "when the row event was seen on the wire; NULL for files"),
    Column("date", pa.string(), "partition: UTC date of `timestamp` (YYYY-MM-DD)", partition=True),
    Column("schema", pa.string(), "partition: database of the table", partition=True),
)

TABLES: dict[str, tuple[Column, ...]] = {"packets": PACKETS, "events": EVENTS, "rows": ROWS}

_TABLE_DOCS = {
    "packets": "one row per wire packet (pcap and live sources; empty for binlog files). "
               "Partitioned by `date`.",
    "events": "one row per binlog event. Partitioned by `date` and `schema`.",
    "rows": "one row per row change: the Canal entry model. Partitioned by `date` and `schema`.",
}


_DAYS: dict[int, str] = {}
_EPOCH = _dt.date(1970, 1, 1)


def partition_date(ts: int) -> str:
    """The ``date`` partition value (UTC, YYYY-MM-DD) of a timestamp in seconds."""
    day = ts // 86400
    s = _DAYS.get(day)
    if s is None:
        s = (_EPOCH + _dt.timedelta(days=day)).isoformat()
        _DAYS[day] = s
    return s


def partition_columns(table: str) -> list[str]:
    return [c.name for c in TABLES[table] if c.partition]


def data_schema(table: str) -> pa.Schema:
    """Columns stored in the part files (everything except the partition columns)."""
    return pa.schema([pa.field(c.name, c.type) for c in TABLES[table] if not c.partition])


def full_schema(table: str) -> pa.Schema:
    """Every column a reader sees: data columns then partition columns (all strings)."""
    cols = TABLES[table]
    return pa.schema([pa.field(c.name, c.type) for c in cols if not c.partition]
                     + [pa.field(c.name, c.type) for c in cols if c.partition])


def partitioning(table: str) -> Any:
    import pyarrow.dataset as ds

    fields = [pa.field(c.name, c.type) for c in TABLES[table] if c.partition]
    return ds.partitioning(pa.schema(fields), flavor="hive")


def read_table(root: str | Path, table: str) -> pa.Table:
    """Read one table of an export back with pyarrow (partition columns typed as documented)."""
    import pyarrow.dataset as ds

    path = Path(root) / table
    schema = full_schema(table)
    if not path.is_dir():
        return schema.empty_table()
    dataset = ds.dataset(path, format="parquet", schema=schema, partitioning=ds.HivePartitioning(
        pa.schema([schema.field(n) for n in partition_columns(table)]),
        null_fallback=NULL_PARTITION))
    return dataset.to_table()


# ----------------------------------------------------------------------------- the doc page

def _type_name(t: pa.DataType) -> str:
    if pa.types.is_map(t):
        return f"map<{_type_name(t.key_type)},{_type_name(t.item_type)}>"
    if pa.types.is_list(t):
        return f"list<{_type_name(t.value_type)}>"
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, UTC]"
    return str(t)


def render_schema_doc() -> str:
    """``docs/export-schema.md``, generated from :data:`TABLES` (a test keeps them in step)."""
    out = [
        "# Export schema",
        "",
        "<!-- generated from src/binlogscope/export/arrow.py by "
        "`python -m binlogscope.export.arrow > docs/export-schema.md`; do not edit by hand -->",
        "",
        f"Schema version: **{SCHEMA_VERSION}** (every row carries it in `schema_version`).",
        "",
        "`binlogscope export SOURCE --out DIR` writes a Parquet dataset with three tables, one "
        "directory each (`DIR/packets`, `DIR/events`, `DIR/rows`), partitioned Hive style "
        "(`date=2024-05-01/schema=shop/part-000003-0001.parquet`). Partition columns are "
        "directory levels, not stored in the files; read them as strings (pyarrow: "
        "`binlogscope.export.arrow.read_table`; Spark: a user schema, or "
        "`spark.sql.sources.partitionColumnTypeInference.enabled=false`). A NULL partition "
        f"value is the directory `{NULL_PARTITION}`. Partition values are percent-escaped "
        "as Hive does for `/ = % : ? # * \" ' \\ [ ] ^ {` and control characters.",
        "",
        "Files are written under hidden in-progress names and renamed at checkpoints "
        "(transaction boundaries, end of each input file); `_export_state.json` records the "
        "last completed checkpoint and where `--resume` continues. Readers skip names starting "
        "with `_` or `.`.",
        "",
        "Transactions: events and rows carry the GTID, XID and commit timestamp of their "
        "transaction. A transaction that is never committed in the input (the input ends, or "
        "it exceeds the in-memory limit of pending rows) is written with NULL `xid` and "
        "`commit_timestamp`. Integers above 2^63-1 (XIDs) are stored as NULL.",
        "",
        "Versioning: the version is bumped whenever a column is added, removed, renamed or "
        "changes type.",
    ]
    for name, cols in TABLES.items():
        out += ["", f"## `{name}`", "", _TABLE_DOCS[name], "",
                "| column | type | meaning |", "|---|---|---|"]
        for c in cols:
            doc = c.doc.replace("|", "\\|")
            out.append(f"| `{c.name}` | {_type_name(c.type)} | {doc} |")
    return "\n".join(out) + "\n"


_DOC_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \|")


def parse_schema_doc(text: str) -> dict[str, list[tuple[str, str]]]:
    """(column, type) per table as the doc page lists them (used by the tests)."""
    tables: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        if line.startswith("## `"):
            current = tables.setdefault(line[4:line.index("`", 4)], [])
            continue
        m = _DOC_ROW.match(line)
        if m and current is not None:
            current.append((m.group(1), m.group(2).strip()))
    return tables


# ----------------------------------------------------------------------------- writing

_ESCAPE = set('"#%\'*/:=?\\{[]^') | {chr(i) for i in range(32)} | {"\x7f"}


def escape_partition(value: str | None) -> str:
    """A partition value as a directory name, escaped as Hive does (non-ASCII kept as is)."""
    if value is None or value == "":
        return NULL_PARTITION
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPE else ch for ch in value)


class _Part:
    """One open part file: buffered rows for one (table, partition), flushed as row groups."""

    __slots__ = ("buffer", "bytes", "final", "rows", "temp", "writer")

    def __init__(self, temp: Path, final: Path) -> None:
        self.temp = temp
        self.final = final
        self.writer: pq.ParquetWriter | None = None  # used on the writer thread only
        self.buffer: list[list[Any]] = []  # rows as lists of values in schema order
        self.bytes = 0  # what the buffered rows stand for (their weights)
        self.rows = 0


class DatasetWriter:
    """Append rows to the three tables; row groups are written as the buffers fill.

    ``add_values(table, partition_values, values)`` takes the data columns' values in schema
    order (:func:`data_schema`); ``add(table, partition_values, row)`` a dict of them. A full
    buffer becomes one Arrow array per column (``pa.array`` over the column's values, or the
    table's column builders for the lazy row images) and one row group. Parquet encoding and
    compression run on one background thread (``background=True``; pyarrow releases the GIL
    there), in order, while the caller decodes on. Part files are hidden until
    :meth:`checkpoint` (which waits for the writes) renames them; :meth:`abort` removes
    unfinished ones.
    """

    def __init__(self, root: str | Path, *, checkpoint_no: int = 1, row_group_size: int = 65536,
                 row_group_bytes: int = 24 << 20, buffer_bytes: int = 48 << 20,
                 huge_row_bytes: int = 4 << 20,
                 max_open: int = 32, compression: str = "zstd",
                 background: bool = True,
                 builders: dict[str, list[tuple[str, tuple[str, ...],
                                                Callable[[list[list[Any]], int],
                                                         tuple[pa.Array, ...]]]]]
                 | None = None) -> None:
        self.root = Path(root)
        self.checkpoint_no = checkpoint_no
        self.row_group_size = row_group_size
        #: a row group is also cut when its rows' weights (their memory, estimated) reach
        #: this: a few huge rows (a 17 MB BLOB) are written on their own instead of waiting
        #: in memory for more
        self.row_group_bytes = row_group_bytes
        #: and the weights buffered in all open parts together stay under this (the biggest
        #: part is written when they reach it)
        self.buffer_bytes = buffer_bytes
        #: a row holding this much (a 17 MB BLOB, a 35 MB statement) is written at once, in a
        #: row group of its own, alone (see :meth:`_flush_huge`)
        self.huge_row_bytes = huge_row_bytes
        self._buffered = 0
        self.max_open = max_open
        self.compression = compression
        self._open: OrderedDict[tuple[str, tuple[str, ...]], _Part] = OrderedDict()
        self._closed: list[_Part] = []
        self._seq = 0
        self._schemas = {t: data_schema(t) for t in TABLES}
        self._names = {t: tuple(self._schemas[t].names) for t in TABLES}
        #: per table: (input column, output columns, builder): ``builder(rows, index)`` makes
        #: the output columns from a row group's rows and the input column's index (the
        #: mapper's lazy row images); other columns are ``pa.array(values, type)``
        self._builders = builders or {}
        self.rows_written: dict[str, int] = dict.fromkeys(TABLES, 0)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet-writer") \
            if background else None
        self._writes: deque[Future[None]] = deque()
        for t in TABLES:
            (self.root / t).mkdir(parents=True, exist_ok=True)

    def add(self, table: str, partition: tuple[str, ...], row: dict[str, Any]) -> None:
        self.add_values(table, partition, [row.get(n) for n in self._names[table]])

    def add_values(self, table: str, partition: tuple[str, ...], values: list[Any],
                   weight: int = 0) -> None:
        """Buffer one row (``weight``: the memory it holds, estimated; see
        ``row_group_bytes``, ``buffer_bytes`` and ``huge_row_bytes``)."""
        part = self._part_for(table, partition)
        if weight >= self.huge_row_bytes:
            self._flush_huge(table, part, values, weight)
            return
        buf = part.buffer
        buf.append(values)
        if weight:
            part.bytes += weight
            self._buffered += weight
            if part.bytes >= self.row_group_bytes:
                self._flush(table, part)
                return
            if self._buffered >= self.buffer_bytes:
                self._flush_biggest()
                return
        if len(buf) >= self.row_group_size:
            self._flush(table, part)

    def _flush_huge(self, table: str, part: _Part, values: list[Any], weight: int) -> None:
        """Write a huge row in a row group of its own, alone: converting and encoding it takes
        a few times its size, which must not add up with the row groups queued for the writer
        thread, and the memory goes back to the system after it."""
        self._flush(table, part)
        self._wait()
        release_memory()
        part.buffer.append(values)
        del values
        self._buffered += weight
        part.bytes += weight
        self._flush(table, part, release=True)
        self._wait()
        release_memory()

    def _flush_biggest(self) -> None:
        """Write the open part holding the most (the buffers together reached buffer_bytes)."""
        (table, _), part = max(self._open.items(), key=lambda kv: kv[1].bytes)
        self._flush(table, part)

    def _part_for(self, table: str, partition: tuple[str, ...]) -> _Part:
        """The open part of (table, partition), made the most recently used (or a new one)."""
        key = (table, partition)
        part = self._open.get(key)
        if part is None:
            return self._new_part(table, partition)
        if len(self._open) > 1:
            self._open.move_to_end(key)
        return part

    def add_many(self, items: list[tuple[str, tuple[str, ...], list[Any], int]]) -> None:
        """``add_values`` of each ``(table, partition, values, weight)`` in order, with one part
        lookup per run of items bound for the same part (a transaction's events and rows).
        Consumes ``items`` (it is empty afterwards): a row written out is no longer held
        here, so a huge value goes as soon as its row group is written."""
        last_table: str | None = None
        last_partition: tuple[str, ...] | None = None
        buf: list[list[Any]] = []
        part: _Part | None = None
        size = self.row_group_size
        max_bytes = self.row_group_bytes
        items.reverse()
        pop = items.pop
        while items:
            table, partition, values, weight = pop()
            if table is not last_table or partition is not last_partition or part is None \
                    or part.buffer is not buf:
                part = self._part_for(table, partition)
                last_table, last_partition, buf = table, partition, part.buffer
            if weight >= self.huge_row_bytes:
                self._flush_huge(table, part, values, weight)
                continue
            buf.append(values)
            del values
            if weight:
                part.bytes += weight
                self._buffered += weight
                if part.bytes >= max_bytes:
                    self._flush(table, part)
                    continue
                if self._buffered >= self.buffer_bytes:
                    self._flush_biggest()
                    continue
            if len(buf) >= size:
                self._flush(table, part)

    def _new_part(self, table: str, partition: tuple[str, ...]) -> _Part:
        if len(self._open) >= self.max_open:
            (old_table, _), old = self._open.popitem(last=False)
            self._close(old_table, old)
        d = self.root / table
        for name, value in zip(partition_columns(table), partition, strict=True):
            d = d / f"{name}={escape_partition(value)}"
        self._seq += 1
        stem = f"part-{self.checkpoint_no:06d}-{self._seq:04d}"
        part = _Part(d / f".{stem}.parquet.inprogress", d / f"{stem}.parquet")
        self._open[(table, partition)] = part
        return part

    def _flush(self, table: str, part: _Part, *, release: bool = False) -> None:
        """Write the buffered rows of ``part`` as a row group (``release``: give the memory
        the conversion used back before the write)."""
        rows = part.buffer
        n = len(rows)
        if not n:
            return
        part.buffer = []
        self._buffered -= part.bytes
        part.bytes = 0
        schema = self._schemas[table]
        names = self._names[table]
        built: dict[str, pa.Array] = {}
        for source, outputs, build in self._builders.get(table, ()):
            built.update(zip(outputs, build(rows, names.index(source)), strict=True))
        arrays = []
        for j, f in enumerate(schema):
            arr = built.pop(f.name, None)
            if arr is None:
                arr = _column(list(map(itemgetter(j), rows)), f.type)
            elif arr.type != f.type:
                arr = arr.cast(f.type)
            arrays.append(arr)
        del rows
        batch = pa.Table.from_arrays(arrays, schema=schema)
        del arrays
        self.rows_written[table] += n
        part.rows += n
        if release:
            release_memory()  # what building the arrays left behind
        self._submit(self._write, part, batch)

    def _write(self, part: _Part, batch: pa.Table) -> None:
        if part.writer is None:
            part.temp.parent.mkdir(parents=True, exist_ok=True)
            small = _small_value_columns(batch.schema)
            part.writer = pq.ParquetWriter(part.temp, batch.schema, compression=self.compression,
                                           use_dictionary=small, write_statistics=small)
        part.writer.write_table(batch)

    @staticmethod
    def _finish_part(part: _Part) -> None:
        if part.writer is not None:
            part.writer.close()
            part.writer = None

    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._pool is None:
            fn(*args)
            return
        writes = self._writes
        while writes and writes[0].done():
            writes.popleft().result()  # a failed write raises here
        while len(writes) >= 3:  # bounded: at most a few row groups wait in memory
            writes.popleft().result()
        writes.append(self._pool.submit(fn, *args))

    def _wait(self) -> None:
        """Every submitted write is done (re-raising the first failure)."""
        writes = self._writes
        while writes:
            writes.popleft().result()

    def _close(self, table: str, part: _Part) -> None:
        self._flush(table, part)
        if part.rows:
            self._submit(self._finish_part, part)
            self._closed.append(part)

    def checkpoint(self) -> list[Path]:
        """Finish every open part, make the parts of this checkpoint visible; next number."""
        for (table, _), part in list(self._open.items()):
            self._close(table, part)
        self._open.clear()
        self._wait()
        done = []
        for part in self._closed:
            os.replace(part.temp, part.final)
            done.append(part.final)
        self._closed.clear()
        self.checkpoint_no += 1
        self._seq = 0
        return done

    def abort(self) -> None:
        """Drop everything since the last checkpoint (unfinished hidden files are removed)."""
        while self._writes:
            try:
                self._writes.popleft().result()
            except Exception:
                pass
        for part in list(self._open.values()) + self._closed:
            if part.writer is not None:
                try:
                    part.writer.close()
                except Exception:
                    pass
                part.writer = None
            try:
                part.temp.unlink()
            except OSError:
                pass
        self._open.clear()
        self._closed.clear()
        self._buffered = 0

    def close(self) -> None:
        """Stop the writer thread (after :meth:`checkpoint` or :meth:`abort`)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


#: columns whose values are rarely repeated and may be huge (a statement, an image, a
#: payload): no dictionary encoding and no min/max statistics (each would copy a 34 MB value
#: a few times: writing one such value took ~300 MB with them, ~60 MB without)
_PLAIN = frozenset({"query", "payload", "before_json", "after_json"})


def _small_value_columns(schema: pa.Schema) -> list[str]:
    """The Parquet column paths to dictionary-encode and keep statistics for: the small
    values (names, types, offsets, times) and the image maps' keys (column names), not the
    texts in :data:`_PLAIN` nor the maps' values."""
    out: list[str] = []
    for f in schema:
        if f.name in _PLAIN:
            continue
        if pa.types.is_map(f.type):
            out.append(f"{f.name}.key_value.key")
        elif pa.types.is_list(f.type):
            out.append(f"{f.name}.list.element")
        else:
            out.append(f.name)
    return out


def _column(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``; a column holding one value throughout (the source, the
    file name, a NULL column...) is built without converting every row."""
    first = values[0]
    if values.count(first) == len(values) and (first is None or type(first) in _SCALARS):
        return pa.repeat(pa.scalar(first, typ), len(values))
    return pa.array(values, type=typ)


#: value types whose equality (``tuple.count``) is also sameness of the converted value
_SCALARS = frozenset({str, int, bytes})


def release_memory() -> None:
    """Give freed memory back to the system after a huge value: Arrow's pool and the C heap
    keep it otherwise (a 17 MB row left the process ~130 MB bigger for good)."""
    pa.default_memory_pool().release_unused()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _libc_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_malloc_trim = _libc_malloc_trim()


def clean_incomplete(root: str | Path, committed_checkpoint: int) -> int:
    """Remove in-progress files and parts newer than the last recorded checkpoint."""
    removed = 0
    pat = re.compile(r"^part-(\d{6})-\d{4}\.parquet$")
    for t in TABLES:
        base = Path(root) / t
        if not base.is_dir():
            continue
        for p in base.rglob("*"):
            if not p.is_file():
                continue
            m = pat.match(p.name)
            if p.name.endswith(".inprogress") or (m and int(m.group(1)) > committed_checkpoint):
                p.unlink()
                removed += 1
    return removed


def write_state(root: str | Path, state: dict[str, Any]) -> None:
    """Write ``_export_state.json`` atomically (temp name + rename)."""
    path = Path(root) / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(state, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_state(root: str | Path) -> dict[str, Any] | None:
    path = Path(root) / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def table_rows(values: Iterable[dict[str, Any]], table: str) -> pa.Table:
    """Build an in-memory table of data columns (tests and small reports)."""
    schema = data_schema(table)
    rows = list(values)
    return pa.Table.from_arrays(
        [pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema], schema=schema)


if __name__ == "__main__":  # pragma: no cover - regenerates the doc page
    import sys

    sys.stdout.write(render_schema_doc())
