"""Source-agnostic records and their mapping to the three export tables.

A source (binlog files now; pcap and live captures later) is an iterator of records:

* :class:`EventRecord` - one decoded binlog event with where it came from;
* :class:`PacketRecord` - one wire packet (pcap/live);
* :class:`InputDone` - an input (file, capture, connection) has ended: a place to checkpoint.

:class:`TableMapper` turns records into ``events``/``rows``/``packets`` rows. Rows and events of a
transaction are held until the transaction commits (XID, COMMIT, or the single statement after a
GTID) so that every one of them carries the transaction's GTID, XID and commit timestamp, as
Canal entries do. Pure: no files; the exporter hands the rows to a writer.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from binlogscope.drivers.binlog_file import BinlogFileError, looks_like_binlog, read_binlog_file
from binlogscope.export.arrow import SCHEMA_VERSION
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.values import effective_type, value_to_text
from binlogscope.wire.node import json_value

# ----------------------------------------------------------------------------- records


@dataclass(slots=True)
class EventRecord:
    """One decoded binlog event and where it was seen."""

    event: DecodedEvent
    ctx: DecodeContext  # the decoding context (TABLE_MAP metadata for column names and types)
    input_index: int  # which input of the source (for resume)
    source: str
    binlog_file: str
    source_kind: str = "file"
    session_id: str | None = None
    capture_time: float | None = None  # seconds since the epoch (pcap/live)


@dataclass(slots=True)
class PacketRecord:
    """One wire packet (the pcap and live sources produce these)."""

    input_index: int
    source: str
    source_kind: str
    direction: str  # "server" | "client"
    seq: int
    payload_length: int
    kind: str
    session_id: str | None = None
    flow: str | None = None
    frame: int | None = None
    time: float | None = None
    semi_sync: bool = False
    ack_request: bool = False
    command: str | None = None
    binlog_file: str | None = None
    log_pos: int | None = None
    payload: bytes | None = None


@dataclass(slots=True)
class InputDone:
    """The input ``input_index`` is finished (a checkpoint is possible here)."""

    input_index: int
    source: str
    error: str | None = None


Record = EventRecord | PacketRecord | InputDone


@dataclass(slots=True)
class ResumePoint:
    """Where a resumed export continues: input index and byte offset (None: its start)."""

    input_index: int
    offset: int | None = None


class RecordSource(Protocol):
    """What the exporter needs from a source."""

    kind: str

    def inputs(self) -> list[str]:
        """The inputs in order (recorded in the resume note)."""
        ...

    def total_bytes(self) -> int | None:
        """Input size for a progress percentage, None when unknown (live)."""
        ...

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        ...


class SourceError(Exception):
    """The source cannot be opened (one line for the CLI)."""


class BinlogFileSource:
    """Binlog files: files and directories (every binlog file inside, by name) in order."""

    kind = "file"

    def __init__(self, paths: list[str]) -> None:
        files: list[Path] = []
        for raw in paths:
            p = Path(raw)
            if p.is_dir():
                found = sorted(q for q in p.iterdir() if q.is_file() and looks_like_binlog(q))
                if not found:
                    raise SourceError(f"{p}: no binlog files in this directory")
                files += found
            elif p.is_file():
                files.append(p)
            else:
                raise SourceError(f"{p}: no such file or directory")
        self.files = files

    def inputs(self) -> list[str]:
        return [str(p) for p in self.files]

    def total_bytes(self) -> int | None:
        return sum(p.stat().st_size for p in self.files)

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        for i, path in enumerate(self.files):
            start: int | None = None
            if resume is not None:
                if i < resume.input_index:
                    continue
                if i == resume.input_index:
                    start = resume.offset
            ctx = DecodeContext()
            name = path.name
            source = str(path)
            try:
                for ev in read_binlog_file(path, record=False, ctx=ctx, start_position=start):
                    yield EventRecord(ev, ctx, i, source, name)
            except BinlogFileError as exc:
                yield InputDone(i, source, str(exc))
                continue
            yield InputDone(i, source)


# ----------------------------------------------------------------------------- redaction

_SECRET_KINDS = ("HANDSHAKE", "AUTH")
_SECRET_COMMANDS = frozenset({"COM_CHANGE_USER", "COM_REGISTER_SLAVE"})
_SECRET_TEXT = re.compile(rb"(?i)password|identified")


def redact_payload(rec: PacketRecord) -> bytes | None:
    """The payload bytes that may be exported for a packet (None: never export them).

    The redaction hook: the server greeting carries the auth scramble, the handshake response
    and auth-switch/more-data packets carry the password proof, COM_CHANGE_USER does too, and a
    statement mentioning PASSWORD/IDENTIFIED may carry a password in clear text.
    """
    kind = rec.kind.upper()
    if kind.startswith(_SECRET_KINDS) or (rec.command or "") in _SECRET_COMMANDS:
        return None
    payload = rec.payload
    if payload is not None and rec.command == "COM_QUERY" and _SECRET_TEXT.search(payload):
        return None
    return payload


# ----------------------------------------------------------------------------- mapping

_GTID_TYPES = frozenset({E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT,
                         E.GTID_EVENT})
_INSIDE_TYPES = frozenset({E.TABLE_MAP_EVENT, E.ANNOTATE_ROWS_EVENT, E.ROWS_QUERY_LOG_EVENT,
                           E.INTVAR_EVENT, E.USER_VAR_EVENT, E.RAND_EVENT,
                           E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT})
_OPS = {"INSERT", "UPDATE", "DELETE"}
_MAX_INT64 = (1 << 63) - 1
_DAYS: dict[int, str] = {}
_EPOCH = _dt.date(1970, 1, 1)


def _date(ts: int) -> str:
    day = ts // 86400
    s = _DAYS.get(day)
    if s is None:
        s = (_EPOCH + _dt.timedelta(days=day)).isoformat()
        _DAYS[day] = s
    return s


def _i64(v: Any) -> int | None:
    return v if isinstance(v, int) and -_MAX_INT64 - 1 <= v <= _MAX_INT64 else None


#: one encoder for every row (json.dumps with options builds a new one per call)
_JSON = json.JSONEncoder(ensure_ascii=False, default=json_value).encode
#: column types whose int values do not print as plain decimal (BIT: bytes, YEAR: 0000)
_INT_SPECIAL = frozenset({T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_YEAR})
_FLOAT_TYPES = frozenset({T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE})


_F32 = struct.Struct("<f").pack


def _float_text(v: float, col: ColumnInfo) -> str:
    """value_to_text for FLOAT/DOUBLE, fast where Python's text already is MySQL's.

    Both print fixed notation for 1e-4 <= |v| < 1e15 and the shortest round-trip digits; only
    outside that range (exponent notation differs) the general formatter is needed.
    """
    a = abs(v)
    if 1e-4 <= a < 1e15:
        if col.type == T.MYSQL_TYPE_FLOAT:
            target = _F32(v)
            for digits in range(1, 10):
                s = f"{v:.{digits}g}"
                if _F32(float(s)) == target:
                    if "e" not in s:
                        return s
                    break
        else:
            s = repr(v)
            if "e" not in s:
                return s[:-2] if s.endswith(".0") else s
    t = value_to_text(v, col)
    assert isinstance(t, str)
    return t


def _text(value: Any, col: ColumnInfo | None) -> str | None:
    if value is None:
        return None
    if type(value) is float and col is not None and col.type in _FLOAT_TYPES:
        return _float_text(value, col)
    t = value_to_text(value, col) if col is not None else (
        value if isinstance(value, str | bytes) else str(value))
    if isinstance(t, bytes):
        return "0x" + t.hex()
    return t


@dataclass(slots=True)
class _Columns:
    """Per-TABLE_MAP lookups: label -> ColumnInfo and the primary key labels."""

    by_label: dict[str, ColumnInfo]
    pk: list[str] | None
    #: labels whose int values need value_to_text (BIT, YEAR)
    special: frozenset[str] = frozenset()


def _image_map(image: dict[str, Any], cols: _Columns | None) -> list[tuple[str, str | None]]:
    """A row image as (column, text) pairs; the common str/int/None cases inline."""
    out: list[tuple[str, str | None]] = []
    add = out.append
    if cols is None:
        for k, v in image.items():
            add((k, _text(v, None)))
        return out
    special = cols.special
    get = cols.by_label.get
    for k, v in image.items():
        tv = type(v)
        if tv is str:
            add((k, v))
        elif v is None:
            add((k, None))
        elif tv is int and k not in special:
            add((k, str(v)))
        else:
            add((k, _text(v, get(k))))
    return out


@dataclass(slots=True)
class _Trx:
    offset: int
    binlog_file: str
    gtid: str | None
    open: bool  # BEGIN seen (or a MariaDB GTID that opens a group): statements stay inside
    pending: list[tuple[str, tuple[str, ...], dict[str, Any]]] = field(default_factory=list)
    rows: int = 0


Emit = Callable[[str, tuple[str, ...], dict[str, Any]], None]


class TableMapper:
    """Records -> rows of ``packets``/``events``/``rows``; ``emit(table, partition, row)``."""

    def __init__(self, emit: Emit, *, no_raw: bool = False,
                 max_pending_rows: int = 200_000) -> None:
        self.emit = emit
        self.no_raw = no_raw
        self.max_pending_rows = max_pending_rows
        self.trx: _Trx | None = None
        self._columns: dict[int, tuple[TableMap, _Columns]] = {}
        self.events = 0
        self.rows = 0
        self.packets = 0

    @property
    def at_boundary(self) -> bool:
        """No transaction is open: everything seen so far has been emitted."""
        return self.trx is None

    # ---- packets
    def packet(self, rec: PacketRecord) -> None:
        t = rec.time
        row = {
            "schema_version": SCHEMA_VERSION, "source_kind": rec.source_kind,
            "source": rec.source, "session_id": rec.session_id, "flow": rec.flow,
            "direction": rec.direction, "frame": rec.frame,
            "time": None if t is None else round(t * 1_000_000), "seq": rec.seq,
            "payload_length": rec.payload_length, "semi_sync": rec.semi_sync,
            "ack_request": rec.ack_request, "kind": rec.kind, "command": rec.command,
            "binlog_file": rec.binlog_file, "log_pos": rec.log_pos,
            "payload": None if self.no_raw else redact_payload(rec),
        }
        self.packets += 1
        self.emit("packets", (_date(int(t)) if t is not None else "",), row)

    # ---- events
    def event(self, rec: EventRecord) -> None:
        self._event(rec, rec.event, None)
        inner = getattr(rec.event.body, "events", None)
        if rec.event.header is not None and rec.event.header.type_code == \
                E.TRANSACTION_PAYLOAD_EVENT and isinstance(inner, list):
            for i, iev in enumerate(inner):
                if isinstance(iev, DecodedEvent):
                    self._event(rec, iev, i)

    def _event(self, rec: EventRecord, ev: DecodedEvent, inner_index: int | None) -> None:
        h = ev.header
        body = ev.body
        code = h.type_code if h is not None else -1
        trx = self.trx
        ends = False
        xid: int | None = None

        if code in _GTID_TYPES:
            if trx is not None:
                self._finish(None, None)
            gtid = getattr(body, "gtid", None)
            gtid = gtid if isinstance(gtid, str) and gtid.upper() != "ANONYMOUS" else None
            opens = code == E.GTID_EVENT and not _mariadb_standalone(body)
            trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, gtid, opens)
        elif code in (E.QUERY_EVENT, E.QUERY_COMPRESSED_EVENT):
            q = _statement_kind(getattr(body, "query", None))
            if q == "BEGIN":
                if trx is None:
                    trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
                trx.open = True
            elif q == "END":
                if trx is None:
                    trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
                ends = True
            elif trx is None:  # an autocommitted statement (DDL): its own transaction
                trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, False)
                ends = True
            elif not trx.open:  # the single statement after a GTID
                ends = True
        elif code == E.XID_EVENT:
            if trx is None:
                trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
            xid = _i64(getattr(body, "xid", None))
            ends = True
        elif code == E.XA_PREPARE_LOG_EVENT:
            if trx is not None:
                ends = True
        elif trx is not None and not trx.open and (code in _INSIDE_TYPES or _is_rows(body)):
            trx.open = True  # MariaDB: a GTID without BEGIN opens a group of row events

        if _is_rows(body) and trx is None:
            # rows outside any transaction (damaged or partial input): a transaction of its own
            trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
        self._add_event(rec, ev, inner_index, trx)
        if ends:
            ts = h.timestamp if h is not None else None
            self._finish(xid, ts)
        elif trx is not None and trx.rows > self.max_pending_rows:
            self._flush_pending()

    def input_done(self) -> None:
        """An input ended: a transaction still open will never commit here; emit it as is."""
        if self.trx is not None:
            self._finish(None, None)

    # ---- internals
    def _add_event(self, rec: EventRecord, ev: DecodedEvent, inner_index: int | None,
                   trx: _Trx | None) -> None:
        outer = rec.event
        h = ev.header
        oh = outer.header
        body = ev.body
        schema = getattr(body, "schema", None)
        schema = schema if isinstance(schema, str) and schema else None
        table = getattr(body, "table", None)
        query = getattr(body, "query", None)
        rows = getattr(body, "rows", None) if _is_rows(body) else None
        ts = h.timestamp if h is not None else 0
        date = _date(ts)
        cap = rec.capture_time
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "source_kind": rec.source_kind,
            "source": rec.source, "session_id": rec.session_id,
            "binlog_file": rec.binlog_file, "offset": outer.offset,
            "log_pos": oh.log_pos if oh else None, "event_size": h.event_size if h else ev.size,
            "inner_index": inner_index,
            "timestamp": ts * 1_000_000 if h else None,
            "server_id": h.server_id if h else None, "event_type": ev.type_name,
            "type_code": h.type_code if h else None, "flags": h.flags if h else None,
            "checksum_ok": ev.checksum_ok, "error": ev.error,
            "gtid": trx.gtid if trx else None, "xid": None,
            "trx_offset": trx.offset if trx else None,
            "table": table if isinstance(table, str) else None,
            "query": query if isinstance(query, str) else None,
            "rows": len(rows) if isinstance(rows, list) else None,
            "capture_time": None if cap is None else round(cap * 1_000_000),
        }
        self.events += 1
        part = (date, schema or "")
        if trx is None:
            self.emit("events", part, row)
        else:
            trx.pending.append(("events", part, row))
        if isinstance(rows, list) and rows:
            assert trx is not None
            self._add_rows(rec, ev, body, rows, row, part, trx)

    def _add_rows(self, rec: EventRecord, ev: DecodedEvent, body: Any, rows: list[Any],
                  ev_row: dict[str, Any], part: tuple[str, str], trx: _Trx) -> None:
        op = getattr(body, "kind", None)
        if op not in _OPS:
            op = _op_from_type(ev.type_name)
        cols = self._columns_for(rec.ctx, body)
        pk_labels = cols.pk if cols else None
        base = {
            "schema_version": SCHEMA_VERSION, "source_kind": rec.source_kind,
            "source": rec.source, "session_id": rec.session_id,
            "binlog_file": rec.binlog_file, "offset": ev_row["offset"],
            "log_pos": ev_row["log_pos"], "inner_index": ev_row["inner_index"],
            "event_type": ev_row["event_type"],
            "table": ev_row["table"], "operation": op, "timestamp": ev_row["timestamp"],
            "commit_timestamp": None, "server_id": ev_row["server_id"], "gtid": trx.gtid,
            "xid": None, "trx_offset": trx.offset, "pk_columns": pk_labels,
            "capture_time": ev_row["capture_time"],
        }
        dumps = _JSON
        pending = trx.pending
        for i, change in enumerate(rows):
            before = change.get("before") if isinstance(change, dict) else None
            after = change.get("after") if isinstance(change, dict) else None
            row = base.copy()
            row["row_index"] = i
            bmap = None if before is None else _image_map(before, cols)
            amap = None if after is None else _image_map(after, cols)
            row["before"] = bmap
            row["after"] = amap
            row["before_json"] = None if before is None else dumps(before)
            row["after_json"] = None if after is None else dumps(after)
            if pk_labels:
                src = dict(amap if amap is not None else (bmap or []))
                row["pk"] = [(k, src.get(k)) for k in pk_labels if k in src] or None
            else:
                row["pk"] = None
            pending.append(("rows", part, row))
        trx.rows += len(rows)
        self.rows += len(rows)

    def _columns_for(self, ctx: DecodeContext, body: Any) -> _Columns | None:
        tm = getattr(body, "table_map", None)
        if not isinstance(tm, TableMap):
            table_id = getattr(body, "table_id", None)
            tm = ctx.tables.get(table_id) if isinstance(table_id, int) else None
        if tm is None:
            return None
        cached = self._columns.get(id(tm))
        if cached is not None and cached[0] is tm:
            return cached[1]
        by_label = {c.label: c for c in tm.columns}
        pk = [tm.columns[i].label for i in tm.primary_key if 0 <= i < len(tm.columns)]
        named = pk and all(tm.columns[i].name is not None for i in tm.primary_key
                           if 0 <= i < len(tm.columns))
        special = frozenset(c.label for c in tm.columns if effective_type(c) in _INT_SPECIAL)
        cols = _Columns(by_label, pk if named else None, special)
        if len(self._columns) > 4096:
            self._columns.clear()
        self._columns[id(tm)] = (tm, cols)
        return cols

    def _finish(self, xid: int | None, commit_ts: int | None) -> None:
        trx = self.trx
        self.trx = None
        if trx is None:
            return
        cts = None if commit_ts is None else commit_ts * 1_000_000
        emit = self.emit
        for table, part, row in trx.pending:
            row["xid"] = xid
            if table == "rows":
                row["commit_timestamp"] = cts
            emit(table, part, row)
        trx.pending.clear()

    def _flush_pending(self) -> None:
        """A huge transaction: emit what is held (without XID/commit time) to keep memory flat."""
        trx = self.trx
        assert trx is not None
        for table, part, row in trx.pending:
            self.emit(table, part, row)
        trx.pending.clear()
        trx.rows = 0


def _is_rows(body: Any) -> bool:
    return body is not None and getattr(body, "kind", None) in _OPS and hasattr(body, "rows")


def _op_from_type(name: str) -> str:
    if "WRITE" in name:
        return "INSERT"
    if "DELETE" in name:
        return "DELETE"
    return "UPDATE"


def _mariadb_standalone(body: Any) -> bool:
    """MariaDB GTID_EVENT flag FL_STANDALONE (0x01): a single statement, no BEGIN/COMMIT."""
    v = getattr(body, "standalone", None)
    if isinstance(v, bool):
        return v
    flags = getattr(body, "flags2", getattr(body, "flags", None))
    return isinstance(flags, int) and bool(flags & 0x01)


_WORD = re.compile(r"\s*(?:/\*.*?\*/\s*)*([A-Za-z]+)(?:\s+([A-Za-z]+))?", re.S)


def _statement_kind(query: Any) -> str:
    """BEGIN (opens a transaction), END (commits/rolls back one) or OTHER."""
    if not isinstance(query, str):
        return "OTHER"
    m = _WORD.match(query)
    if not m:
        return "OTHER"
    w1 = m.group(1).upper()
    w2 = (m.group(2) or "").upper()
    if w1 == "BEGIN" or (w1 == "START" and w2 == "TRANSACTION") or (w1 == "XA" and w2 in (
            "START", "BEGIN")):
        return "BEGIN"
    if w1 == "COMMIT" or (w1 == "ROLLBACK" and w2 != "TO") or (
            w1 == "XA" and w2 in ("COMMIT", "ROLLBACK", "PREPARE")):
        return "END"
    return "OTHER"
