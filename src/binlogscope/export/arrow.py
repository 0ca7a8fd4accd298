"""The export schema (defined once, here), the dataset layout and its crash-safety files.

Everything about the dataset layout lives in this module: the three tables and their columns
(:data:`TABLES`), the Hive-style partition directories, the part-file naming, and the doc page
(:func:`render_schema_doc` generates ``docs/export-schema.md``; a test checks they agree).

Crash safety: a part file is written under a hidden in-progress name (``.part-...inprogress``,
which pyarrow and Spark both skip) and renamed to ``part-<checkpoint>-<n>.parquet`` only when the
exporter reaches a checkpoint (a transaction boundary). The checkpoint note ``_export_state.json``
is written after the renames (temp file + rename); parts with a checkpoint number above the one
the note records are removed by ``--resume`` (they belong to a checkpoint that never completed).
The writer that follows this layout is :class:`binlogscope.export.writer.DatasetWriter`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from binlogscope.pipeline.state import fsync_dir


class _NoPandas:
    """A meta-path finder that makes ``import pandas`` fail (for :func:`without_pandas`)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("binlogscope export does not use pandas (export.arrow."
                              "without_pandas)")


@contextmanager
def without_pandas() -> Iterator[None]:
    """Keep pyarrow from importing pandas while an export that never uses it runs: 0.16-0.2 s
    of the command's start-up (bench/README.md, issue 26).

    pyarrow imports pandas on its first conversion of Python values, only to recognise pandas
    objects and pandas' missing-value markers (``pd.NA``, ``NaT``) among them: the
    ``_is_array_like`` check of ``pa.array`` (``pandas-shim.pxi``) and the C++ converter's
    ``InitPandasStaticData`` (which tries again on every conversion until pandas imports). An
    export converts only its own values (ints, str, bytes, None, lists), never pandas objects,
    so inside this block ``import pandas`` fails at once (a meta-path finder) and pyarrow
    converts them as it does where pandas is not installed. A process that imported pandas
    already (a notebook, a Spark worker) is left as it is; forked ``--jobs`` workers inherit
    the block."""
    if "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
    try:
        yield
    finally:
        sys.meta_path.remove(finder)  # type: ignore[arg-type]


#: bump when a column is added, removed, renamed or changes type (also in docs/export-schema.md)
SCHEMA_VERSION = 2

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
           "packet kind, the session's name for it (lower case): handshake_v10, "
           "handshake_response41, auth_switch_request, ok, err, eof, com_query, column_count, "
           "column_definition41, text_row, com_register_slave, com_binlog_dump, "
           "com_binlog_dump_gtid, binlog_event, semi_sync_ack, command (another COM_*: "
           "`command` names it), ...; in a capture's export also `TCP_GAP` (bytes the capture "
           "lost: `payload_length` is their count, `payload` the reader's message, `frame` "
           "where the gap is) and `CAPTURE_ERROR` (a capture error item): nothing lost is "
           "silent, and `export` exits 1 when there is any"),
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
    Column("offset", pa.int64(), "byte offset of the event's first byte in `binlog_file` (the "
           "same for every source: for pcap/live `log_pos - event_size`); NULL for an event "
           "that is in no file (the dump's fake ROTATE, heartbeats)"),
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
           "transaction; (`source`, `session_id`, `binlog_file`, `trx_offset`) identifies a "
           "transaction as one input or session carried it; NULL outside transactions"),
    Column("table", pa.string(), "table name (TABLE_MAP and row events)"),
    Column("query", pa.string(), "statement text (QUERY, ROWS_QUERY, ANNOTATE_ROWS)"),
    Column("query_raw", pa.binary(),
           "the statement's own bytes when its text shows U+FFFD (bytes not valid in its "
           "character set, as file --json shows them); null otherwise"),
    Column("rows", pa.int32(), "row changes in a row event, else NULL"),
    Column("capture_time", _TS, "when the event was seen on the wire (pcap: capture time, live: "
           "arrival time; the `wire_time` of `--json`); NULL for files"),
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

#: the ``errors`` table: one row per input that failed or is damaged (not one of
#: :data:`TABLES`: it is small, unpartitioned, and written by the export's driver)
ERRORS_TABLE = "errors"
ERRORS: tuple[Column, ...] = (
    Column("path", pa.string(), "the input as the dataset names it (`source` in the other "
           "tables)"),
    Column("kind", pa.string(), "`failed`: the input could not be read (to its end); "
           "`damaged`: some of its events carry a decode error (they are exported with it); "
           "`lost`: the capture lost bytes (TCP gaps: `TCP_GAP` rows in `packets`)"),
    Column("message", pa.string(), "what went wrong, one line as the command prints it"),
    Column("damaged_events", pa.int64(), "`damaged`: how many events carry an error, else NULL"),
    Column("first_offset", pa.int64(), "`damaged`: offset of the first damaged event in its "
           "binlog file, else NULL"),
)
ERRORS_SCHEMA = pa.schema([pa.field(c.name, c.type) for c in ERRORS])

#: the ``health`` table: the health timeline of each replication connection (small, written by
#: the export's driver at its checkpoints like ``errors``; drivers/health.py makes the rows)
HEALTH_TABLE = "health"
HEALTH: tuple[Column, ...] = (
    Column("source", pa.string(), "the input (as `source` in the other tables)"),
    Column("session_id", pa.string(), "the TCP session (as `session_id` in `packets`)"),
    Column("flow", pa.string(), "`client_ip:port->server_ip:port` (captures; NULL for live)"),
    Column("time", _TS, "when (capture or arrival time, microseconds)"),
    Column("kind", pa.string(),
           "`dump` (the dump request), `dump_end` (its EOF/ERR), `heartbeat`, `silence` (no "
           "byte from the server for over two heartbeat periods: stalled or half-open; `time` "
           "is when it began), `ack` (a semi-sync ACK), `lag` (a head of the server seen: "
           "heartbeat, or SHOW MASTER STATUS with `live --lag-every`), `reconnect` (a later "
           "dump from the same client host, or a live reconnect), `state` (how the connection "
           "stood at the end of the input, or before its close; `--live`: also each change as "
           "it happens: a stall when noticed, `stalled or half-open: ...`, and its end, "
           "`recovered: ...`)"),
    Column("seconds", pa.float64(), "`heartbeat`: since the previous one; `silence`: how long; "
           "`state` (`--live`): the silence so far (stalled) or its length (recovered); "
           "`ack`: the ACK latency (the event's arrival -> the ACK's, as `pcap --summary`), "
           "NULL when the event it acknowledges was not seen"),
    Column("gtid", pa.string(), "`ack`: the acknowledged transaction's GTID"),
    Column("binlog_file", pa.string(), "`ack`: the file acknowledged; `lag`: the file consumed; "
           "`heartbeat`: the file the heartbeat names"),
    Column("log_pos", pa.int64(), "`ack`: the position acknowledged; `lag`: where the last "
           "event consumed ends; `heartbeat`: its log_pos (the server's head)"),
    Column("head_file", pa.string(), "`lag`: the server's binlog file"),
    Column("head_pos", pa.int64(), "`lag`: the server's position in it"),
    Column("files_behind", pa.int64(), "`lag`: binlog files between consumed and the head "
           "(NULL: file names not comparable)"),
    Column("bytes_behind", pa.int64(), "`lag`: bytes behind the head in the same file (NULL "
           "when files behind)"),
    Column("text", pa.string(), "the sample as `--summary` says it"),
)
HEALTH_SCHEMA = pa.schema([pa.field(c.name, c.type) for c in HEALTH])

_TABLE_DOCS = {
    "packets": "one row per wire packet (pcap and live sources; empty for binlog files). "
               "Partitioned by `date`.",
    "events": "one row per binlog event. Partitioned by `date` and `schema`.",
    "rows": "one row per row change: the Canal entry model. Partitioned by `date` and `schema`.",
    HEALTH_TABLE: "one row per health sample or transition of each replication connection "
                  "(captures and `--live`): the timeline `--summary` sums up. Not "
                  "partitioned; written at checkpoints.",
    ERRORS_TABLE: "one row per input that failed or is damaged (the command prints the same "
                  "line and exits 1); the directory exists only when there is one. Not "
                  "partitioned.",
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
        "Version 2: for pcap and live sources `offset` and `trx_offset` are offsets in "
        "`binlog_file` (version 1 stored offsets in the TCP stream there), and `binlog_file` "
        "follows the stream's ROTATE events; the coordinates are those of `--json` on every "
        "source (see docs/coordinates.md).",
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
        "with `_` or `.`. With several inputs and `--jobs N` (the default: one per free core, "
        "the usable cores less the load average) each input is exported by a process of its "
        "own (a binlog file may be cut into ranges at transaction starts, each read by a "
        "process of its own and checked against the next range's start: `export/split.py`) "
        "into `DIR/_jobs_staging/` and "
        "published whole, in input order, as one checkpoint (`part-<checkpoint>-*` of input "
        "*i* is checkpoint *i + 1* of a new export); an interrupted export keeps every input "
        "published before the interruption and `--resume` goes on with the next one.",
        "",
        "Transactions: events and rows carry the GTID, XID and commit timestamp of their "
        "transaction. A transaction that is never committed in the input (the input ends, or "
        "it exceeds the in-memory limit of pending rows) is written with NULL `xid` and "
        "`commit_timestamp`. Integers above 2^63-1 (XIDs) are stored as NULL.",
        "",
        "Text that is not valid in its charset (a CHAR/VARCHAR/TEXT value, a statement): every "
        "string column holds valid UTF-8, each undecodable byte as U+FFFD (as "
        "`binlogscope file --json` writes it); in the `before`/`after`/`pk` maps such a value "
        "is written like a binary value, `0x` + the hex of its bytes, so the raw bytes are "
        "kept.",
        "",
        "Versioning: the version is bumped whenever a column is added, removed, renamed or "
        "changes type.",
        "",
        "`transactions` is not a table on disk: `binlogscope analyze` (and `--sql` queries) see "
        "it as a view derived from `events`, one row per (`source`, `session_id`, "
        "`binlog_file`, `trx_offset`) - a transaction as one input (one TCP session of a "
        "capture) carried it: a capture of two replicas holds it twice, never pooled: "
        "`gtid`, `xid`, `events`, `rows`, `bytes` (the events' sizes), "
        "`first_timestamp` and `commit_timestamp` (the last event's).",
    ]
    for name, cols in (*TABLES.items(), (HEALTH_TABLE, HEALTH), (ERRORS_TABLE, ERRORS)):
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


def clean_incomplete(root: str | Path, committed_checkpoint: int) -> int:
    """Remove in-progress files and parts newer than the last recorded checkpoint."""
    removed = 0
    pat = re.compile(r"^part-(\d{6})-\d{4}\.parquet$")
    for t in (*TABLES, HEALTH_TABLE, ERRORS_TABLE):
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
    fsync_dir(path.parent)  # the rename itself survives a crash of the machine


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


# ----------------------------------------------------------------------------- named rows

def _camel(table: str) -> str:
    return table.capitalize() + "Slot"


def render_columns_module() -> str:
    """``src/binlogscope/export/columns.py``, generated from :data:`TABLES`: the mapper's
    rows named (a test keeps them in step)."""
    out = [
        '"""The mapper\'s rows, named: generated from the export schema '
        '(:mod:`binlogscope.export.arrow`).',
        "",
        "Regenerate with ``python -m binlogscope.export.arrow --columns >",
        "src/binlogscope/export/columns.py``; do not edit by hand (a test keeps this module "
        "and the schema",
        "in step).",
        "",
        "A row is a list of one table's data column values in schema order (what the writer "
        "builds its",
        "columns from; the cheapest to make and to copy). ``<table>_row(...)`` makes one by "
        "column name,",
        "``<Table>Slot.<column>`` names a slot to read or set.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Final",
    ]
    for table, cols in TABLES.items():
        names = [c.name for c in cols if not c.partition]
        out += ["", "", f"class {_camel(table)}:",
                f'    """Slots of a ``{table}`` row."""', ""]
        out += [f"    {n}: Final = {i}" for i, n in enumerate(names)]
        out += ["    #: the row's length", f"    WIDTH: Final = {len(names)}"]
    for table, cols in TABLES.items():
        names = [c.name for c in cols if not c.partition]
        out += ["", "", f"def {table}_row(",
                "    *, " + ", ".join(f"{n}: Any" for n in names[:1]) + ","]
        out += [f"    {n}: Any," for n in names[1:]]
        out += [") -> list[Any]:", f'    """One ``{table}`` row from its values, by name."""',
                "    return ["]
        line = "       "
        for n in names:
            piece = f" {n},"
            if len(line) + len(piece) > 99:
                out.append(line)
                line = "       "
            line += piece
        out.append(line)
        out.append("    ]")
    out += ["", "", "__all__ = [" + ", ".join(
        f'"{x}"' for x in sorted([_camel(t) for t in TABLES] + [f"{t}_row" for t in TABLES]))
        + "]"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the doc page and the named rows
    import sys

    sys.stdout.write(render_columns_module() if sys.argv[1:] == ["--columns"]
                     else render_schema_doc())
