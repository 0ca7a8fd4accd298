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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from binlogscope.drivers.binlog_file import BinlogFileError, looks_like_binlog, read_binlog_file
from binlogscope.export import native
from binlogscope.export.arrow import SCHEMA_VERSION, data_schema
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.types import event_type_name
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
# plain ints for the per-event checks (an IntEnum member lookup costs more than the check)
_QUERY_TYPES = frozenset({int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)})
_XID = int(E.XID_EVENT)
_XA_PREPARE = int(E.XA_PREPARE_LOG_EVENT)
_MARIADB_GTID = int(E.GTID_EVENT)
_TYPE_NAMES: dict[int, str] = {}


def _type_name(code: int) -> str:
    name = _TYPE_NAMES.get(code)
    if name is None:
        name = _TYPE_NAMES[code] = event_type_name(code)
    return name

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


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps(v, ensure_ascii=False, default=json_value)`` for the row images.

    ``JSONEncoder.encode`` builds a new C encoder on every call; this builds it once (without
    the circular-reference check, which plain row images never need). Same text."""
    encoder = json.JSONEncoder(ensure_ascii=False, default=json_value)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return encoder.encode
    it = make(None, json_value, json.encoder.encode_basestring, None, ": ", ", ", False,
              False, True)
    join = "".join

    def encode(value: Any) -> str:
        return join(it(value, 0))

    return encode


#: one encoder for every row
_JSON = _json_encoder()
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
    #: labels of DOUBLE columns (their floats print as repr in MySQL's fixed-notation range)
    doubles: frozenset[str] = frozenset()


def _image_map(image: dict[str, Any], cols: _Columns | None) -> list[tuple[str, str | None]]:
    """A row image as (column, text) pairs; the common str/int/None/bytes cases inline (the
    same text :func:`_text` gives: value_to_text returns str and bytes values unchanged)."""
    if cols is None:
        return [(k, _text(v, None)) for k, v in image.items()]
    out: list[tuple[str, str | None]] = []
    add = out.append
    special = cols.special
    get = cols.by_label.get
    for k, v in image.items():
        tv = type(v)
        if tv is str or v is None:
            add((k, v))
        elif tv is int and k not in special:
            add((k, str(v)))
        elif tv is bytes:
            add((k, "0x" + v.hex()))
        else:
            add((k, _text(v, get(k))))
    return out


def _value_text(v: Any, k: str, cols: _Columns | None) -> str | None:
    """One value of an image as :func:`_image_map` gives it."""
    if cols is None:
        return _text(v, None)
    tv = type(v)
    if tv is str or v is None:
        return v  # type: ignore[no-any-return]
    if tv is int and k not in cols.special:
        return str(v)
    if tv is bytes:
        return "0x" + v.hex()  # type: ignore[no-any-return]
    return _text(v, cols.by_label.get(k))


# ----------------------------------------------------------------------------- columnar images
#
# The writer hands the builders below a whole row group's column of ``(image, columns)`` pairs
# (or None). Rows whose images have the same columns (one TABLE_MAP, one column bitmap) are
# built together, one Arrow array per table column: the text of str values is the value
# itself, ints become text in one cast, and only floats, bytes and rarer types take a Python
# call per value. The results equal :func:`_image_map` and ``_JSON`` row by row (a test checks
# this on every fixture).

ImageRef = tuple[dict[str, Any], _Columns | None]
_STR = pa.string()
_MAP_TYPE = pa.map_(pa.string(), pa.string())
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_QUOTE = pa.scalar('"')
_NULL_TEXT = pa.scalar("null")
_HEX_PREFIX = pa.scalar("0x")


def _groups(col: Sequence[ImageRef | None]
            ) -> tuple[list[tuple[tuple[str, ...], _Columns | None, list[int]]], list[int]]:
    """Row indices grouped by (columns, image keys); the indices of the null rows."""
    groups: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, ...], _Columns | None,
                                                    list[int]]] = {}
    nulls: list[int] = []
    for i, ref in enumerate(col):
        if ref is None:
            nulls.append(i)
            continue
        image, cols = ref
        keys = tuple(image)
        g = groups.get((id(cols), keys))
        if g is None:
            g = groups[(id(cols), keys)] = (keys, cols, [])
        g[2].append(i)
    return list(groups.values()), nulls


def _int_text(values: Sequence[Any]) -> pa.Array | None:
    for typ in (pa.int64(), pa.uint64()):
        try:
            return pa.array(values, typ).cast(_STR)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            continue
    return None


def _hex(values: Sequence[bytes | None], none: bool) -> pa.Array:
    hexes = [None if v is None else v.hex() for v in values] if none \
        else list(map(bytes.hex, values))  # type: ignore[arg-type]
    return pa.array(hexes, _STR)


def _column_arrays(values: Sequence[Any], key: str, cols: _Columns | None
                   ) -> tuple[pa.Array, pa.Array]:
    """One image column of a group: its map items (the text :func:`_image_map` writes) and
    its JSON literals (never null: None is ``null``; what ``_JSON`` writes inside an object).
    A column of one Python type (plus None) is converted to Arrow once for both."""
    types = set(map(type, values))
    none = type(None) in types
    types.discard(type(None))
    texts: pa.Array | None = None
    lits: pa.Array | None = None
    if len(types) == 1:
        typ = next(iter(types))
        try:
            if typ is str:
                arr = pa.array(values, _STR)
                if cols is not None:
                    texts = arr
                if not pc.any(pc.match_substring_regex(arr, _NEEDS_ESCAPE)).as_py():
                    lits = pc.fill_null(pc.binary_join_element_wise(_QUOTE, arr, _QUOTE, ""),
                                        _NULL_TEXT)
            elif typ is int:
                arr = _int_text(values)
                if arr is not None:
                    if cols is not None and key not in cols.special:
                        texts = arr
                    lits = pc.fill_null(arr, _NULL_TEXT)
            elif typ is bytes:  # map: 0x + hex; JSON (json_value): the hex digits, quoted
                hexes = _hex(values, none)
                if cols is not None:
                    texts = pc.binary_join_element_wise(_HEX_PREFIX, hexes, "")
                lits = pc.fill_null(pc.binary_join_element_wise(_QUOTE, hexes, _QUOTE, ""),
                                    _NULL_TEXT)
            elif typ is float:
                nums = pa.array(values, pa.float64())
                reprs: pa.Array | None = None
                if pc.all(pc.fill_null(pc.is_finite(nums), True)).as_py():
                    # JSON: float.__repr__, as the encoder writes finite floats
                    reprs = pa.array(list(map(repr, values)), _STR)
                    lits = pc.if_else(pc.is_null(nums), _NULL_TEXT, reprs)
                col = cols.by_label.get(key) if cols is not None else None
                if reprs is not None and col is not None and col.type == T.MYSQL_TYPE_DOUBLE:
                    # _float_text: repr without a trailing ".0" where MySQL prints fixed
                    # notation too (1e-4 <= |v| < 1e15); other magnitudes: per value below
                    mag = pc.abs(nums)
                    fixed = pc.and_(pc.greater_equal(mag, 1e-4), pc.less(mag, 1e15))
                    if pc.all(pc.fill_null(fixed, True)).as_py():
                        texts = pc.if_else(pc.is_null(nums), pa.scalar(None, _STR),
                                           pc.replace_substring_regex(reprs, r"\.0$", ""))
        except (OverflowError, UnicodeError, pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    if texts is None:
        texts = pa.array([_value_text(v, key, cols) for v in values], _STR)
    if lits is None:
        lits = pa.array(["null" if v is None else _JSON(v) for v in values], _STR)
    return texts, lits


def _row_major(k: int, n: int) -> tuple[pa.Array, pa.Array]:
    """Take indices that turn k column-major blocks of n values into n rows of k values, and
    the column index (0..k-1, repeated n times) of each value in that row-major order."""
    i = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n * k)), 1)
    row = pc.divide(i, k)
    col = pc.subtract(i, pc.multiply(row, k))
    return pc.add(pc.multiply(col, n), row), col


def _assemble(parts: list[tuple[pa.Array, list[int]]], nulls: list[int], total: int,
              typ: pa.DataType) -> pa.Array:
    """Put each group's rows back at their indices (null rows as nulls)."""
    if len(parts) == 1 and not nulls:
        return parts[0][0]
    arrays = [a for a, _ in parts]
    where: list[int] = []
    for _, idx in parts:
        where.extend(idx)
    if nulls:
        arrays.append(pa.nulls(len(nulls), typ))
        where.extend(nulls)
    order = [0] * total
    for pos, i in enumerate(where):
        order[i] = pos
    return pa.concat_arrays(arrays).take(pa.array(order, pa.int64()))


def image_columns(col: Sequence[ImageRef | None]) -> tuple[pa.Array, pa.Array]:
    """The text-map column (``before``/``after``, map<string,string>) and the typed-JSON
    column (``before_json``/``after_json``) of one image slot of a row group."""
    groups, nulls = _groups(col)
    maps: list[tuple[pa.Array, list[int]]] = []
    jsons: list[tuple[pa.Array, list[int]]] = []
    for keys, cols, idx in groups:
        n, k = len(idx), len(keys)
        if not k:
            maps.append((pa.MapArray.from_arrays(pa.array([0] * (n + 1), pa.int32()),
                                                 pa.array([], _STR), pa.array([], _STR)), idx))
            jsons.append((pa.array(["{}"] * n, _STR), idx))
            continue
        columns = zip(*(col[i][0].values() for i in idx), strict=True)  # type: ignore[index]
        converted = [_column_arrays(c, key, cols) for c, key in zip(columns, keys, strict=True)]
        # the map: offsets k apart, keys repeated, items taken row by row
        items = pa.concat_arrays([texts for texts, _ in converted])
        if n > 1:
            order, column = _row_major(k, n)
            if k > 1:
                items = items.take(order)
            names = pa.array(keys, _STR).take(column)
        else:
            names = pa.array(keys, _STR)
        offsets = pa.array(range(0, n * k + 1, k), pa.int32())
        maps.append((pa.MapArray.from_arrays(offsets, names, items), idx))
        # the JSON object '{"k1": lit1, "k2": lit2}' in one join: the constant pieces between
        # the literals are scalars
        pieces: list[Any] = []
        for j, ((_, lits), key) in enumerate(zip(converted, keys, strict=True)):
            lead = "{" if j == 0 else ", "
            pieces += [pa.scalar(lead + json.encoder.encode_basestring(key) + ": "), lits]
        pieces.append(pa.scalar("}"))
        jsons.append((pc.binary_join_element_wise(*pieces, ""), idx))
    if not maps:
        return pa.nulls(len(col), _MAP_TYPE), pa.nulls(len(col), _STR)
    return (_assemble(maps, nulls, len(col), _MAP_TYPE),
            _assemble(jsons, nulls, len(col), _STR))


def image_columns_of(rows: list[list[Any]], index: int) -> tuple[pa.Array, pa.Array]:
    """:func:`image_columns` of the image slot ``index`` of a row group's buffered rows: built
    by the C column builder when it is there and takes the column (same arrays), else here."""
    built = native.image_arrays(rows, index, _value_text, _JSON)
    if built is not None:
        return built
    return image_columns([row[index] for row in rows])


def _pk_pairs(before: ImageRef | None, after: ImageRef | None
              ) -> list[tuple[str, str | None]] | None:
    """The ``pk`` value of a row: the key columns' text from the after image, else the
    before image (what the eager mapper writes)."""
    ref = after if after is not None else before
    if ref is None:
        return None
    src, cols = ref
    if cols is None or not cols.pk or not src:
        return None
    return [(k, _value_text(src[k], k, cols)) for k in cols.pk if k in src] or None


_ROW_BEFORE = data_schema("rows").names.index("before")
_ROW_AFTER = data_schema("rows").names.index("after")


def pk_column_of(rows: list[list[Any]], index: int) -> tuple[pa.Array]:
    """The ``pk`` column of a row group, from its lazy before/after image pairs (``index``:
    the pk slot, which the lazy mapper leaves empty): C when it takes the column, else here."""
    built = native.pk_array(rows, _ROW_BEFORE, _ROW_AFTER, _value_text, _JSON)
    if built is None:
        built = pa.array([_pk_pairs(row[_ROW_BEFORE], row[_ROW_AFTER]) for row in rows],
                         _MAP_TYPE)
    return (built,)


#: per table: (the mapper's lazy input column, the columns built from it, the builder): the
#: writer calls ``builder(rows, index)`` once per row group with its buffered rows and the
#: input column's index
COLUMN_BUILDERS: dict[str, list[tuple[str, tuple[str, ...],
                                      Callable[[list[list[Any]], int],
                                               tuple[pa.Array, ...]]]]] = {
    "rows": [("before", ("before", "before_json"), image_columns_of),
             ("after", ("after", "after_json"), image_columns_of),
             ("pk", ("pk",), pk_column_of)],
}


@dataclass(slots=True)
class _Trx:
    offset: int
    binlog_file: str
    gtid: str | None
    open: bool  # BEGIN seen (or a MariaDB GTID that opens a group): statements stay inside
    pending: list[tuple[str, tuple[str, ...], list[Any]]] = field(default_factory=list)
    rows: int = 0


Emit = Callable[[str, tuple[str, ...], dict[str, Any]], None]
#: ``emit_values(table, partition, values)``: ``values`` in :data:`COLUMNS` order
EmitValues = Callable[[str, tuple[str, ...], list[Any]], None]

#: ``emit_many([(table, partition, values), ...])``
EmitMany = Callable[[list[tuple[str, tuple[str, ...], list[Any]]]], None]

#: the data columns of each table, in the order rows are built (the writer's schema order)
COLUMNS: dict[str, tuple[str, ...]] = {
    t: tuple(data_schema(t).names) for t in ("packets", "events", "rows")}
_EV_XID = COLUMNS["events"].index("xid")
_ROW_XID = COLUMNS["rows"].index("xid")
_ROW_COMMIT = COLUMNS["rows"].index("commit_timestamp")


class TableMapper:
    """Records -> rows of ``packets``/``events``/``rows``.

    Rows go to ``emit(table, partition, row_dict)``, or, cheaper, as lists of values in
    :data:`COLUMNS` order to ``emit_values(table, partition, values)`` when that is given (the
    exporter's path: no dict per row, the writer builds columns straight from the lists).
    """

    def __init__(self, emit: Emit | None = None, *, no_raw: bool = False,
                 max_pending_rows: int = 200_000, emit_values: EmitValues | None = None,
                 lazy_images: bool = False, emit_many: EmitMany | None = None) -> None:
        if emit_values is None:
            if emit is None:
                raise TypeError("TableMapper needs emit or emit_values")
            emit_values = _as_dicts(emit)
            lazy_images = False
        self.emit = emit_values
        #: a transaction's held rows go out in one call when this is given (the writer's
        #: ``add_many``: same rows, in the same order, as one ``emit_values`` call each)
        self.emit_many = emit_many
        #: ``rows`` values carry each image as an ``(image, columns)`` pair in the before/after
        #: and *_json slots; the writer builds those columns for a whole row group at once
        #: (:data:`COLUMN_BUILDERS`) instead of one text map and one JSON text per row here
        self.lazy_images = lazy_images
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
        row = [  # COLUMNS["packets"] order
            SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id, rec.flow,
            rec.direction, rec.frame, None if t is None else round(t * 1_000_000), rec.seq,
            rec.payload_length, rec.semi_sync, rec.ack_request, rec.kind, rec.command,
            rec.binlog_file, rec.log_pos, None if self.no_raw else redact_payload(rec),
        ]
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
        is_rows = _is_rows(body)

        if code in _GTID_TYPES:
            if trx is not None:
                self._finish(None, None)
            gtid = getattr(body, "gtid", None)
            gtid = gtid if isinstance(gtid, str) and gtid.upper() != "ANONYMOUS" else None
            opens = code == _MARIADB_GTID and not _mariadb_standalone(body)
            trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, gtid, opens)
        elif code in _QUERY_TYPES:
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
        elif code == _XID:
            if trx is None:
                trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
            xid = _i64(getattr(body, "xid", None))
            ends = True
        elif code == _XA_PREPARE:
            if trx is not None:
                ends = True
        elif trx is not None and not trx.open and (code in _INSIDE_TYPES or is_rows):
            trx.open = True  # MariaDB: a GTID without BEGIN opens a group of row events

        if is_rows and trx is None:
            # rows outside any transaction (damaged or partial input): a transaction of its own
            trx = self.trx = _Trx(rec.event.offset, rec.binlog_file, None, True)
        self._add_event(rec, ev, inner_index, trx, is_rows)
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
                   trx: _Trx | None, is_rows: bool) -> None:
        outer = rec.event
        h = ev.header
        oh = outer.header
        body = ev.body
        schema = getattr(body, "schema", None)
        schema = schema if isinstance(schema, str) and schema else None
        table = getattr(body, "table", None)
        query = getattr(body, "query", None)
        rows = getattr(body, "rows", None) if is_rows else None
        ts = h.timestamp if h is not None else 0
        date = _date(ts)
        cap = rec.capture_time
        row: list[Any] = [  # COLUMNS["events"] order
            SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id, rec.binlog_file,
            outer.offset, oh.log_pos if oh else None, h.event_size if h else ev.size,
            inner_index, ts * 1_000_000 if h else None, h.server_id if h else None,
            _type_name(h.type_code) if h else ev.type_name, h.type_code if h else None,
            h.flags if h else None,
            ev.checksum_ok, ev.error, trx.gtid if trx else None, None,
            trx.offset if trx else None, table if isinstance(table, str) else None,
            query if isinstance(query, str) else None,
            len(rows) if isinstance(rows, list) else None,
            None if cap is None else round(cap * 1_000_000),
        ]
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
                  ev_row: list[Any], part: tuple[str, str], trx: _Trx) -> None:
        op = getattr(body, "kind", None)
        if op not in _OPS:
            op = _op_from_type(ev.type_name)
        cols = self._columns_for(rec.ctx, body)
        pk_labels = cols.pk if cols else None
        # COLUMNS["rows"] order; row_index, images, json and pk are set per row
        base: list[Any] = [
            SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id, rec.binlog_file,
            ev_row[5], ev_row[6], ev_row[8], None, ev_row[11], ev_row[19], op, ev_row[9],
            None, ev_row[10], trx.gtid, None, trx.offset, None, None, None, None, pk_labels,
            None, ev_row[22],
        ]
        pending = trx.pending
        if self.lazy_images:
            for i, change in enumerate(rows):
                if isinstance(change, dict):
                    before = change.get("before")
                    after = change.get("after")
                else:
                    before = after = None
                row = base.copy()
                row[8] = i
                if before is not None:
                    row[18] = (before, cols)  # before_json (20) is built from it too
                if after is not None:
                    row[19] = (after, cols)  # and after_json (21), and pk (23)
                pending.append(("rows", part, row))
            trx.rows += len(rows)
            self.rows += len(rows)
            return
        dumps = _JSON
        image_map = _image_map
        for i, change in enumerate(rows):
            if isinstance(change, dict):
                before = change.get("before")
                after = change.get("after")
            else:
                before = after = None
            row = base.copy()
            row[8] = i
            if before is None:
                bmap = None
            else:
                bmap = row[18] = image_map(before, cols)
                row[20] = dumps(before)
            if after is None:
                amap = None
            else:
                amap = row[19] = image_map(after, cols)
                row[21] = dumps(after)
            if pk_labels:
                src = dict(amap if amap is not None else (bmap or []))
                row[23] = [(k, src.get(k)) for k in pk_labels if k in src] or None
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
        doubles = frozenset(label for label, c in by_label.items()
                            if c.type == T.MYSQL_TYPE_DOUBLE)
        cols = _Columns(by_label, pk if named else None, special, doubles)
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
        for table, _, row in trx.pending:
            if table == "rows":
                row[_ROW_XID] = xid
                row[_ROW_COMMIT] = cts
            else:
                row[_EV_XID] = xid
        self._emit_pending(trx.pending)

    def _emit_pending(self, pending: list[tuple[str, tuple[str, ...], list[Any]]]) -> None:
        """Hand a transaction's held rows to the writer, in order, and forget them."""
        if self.emit_many is not None:
            self.emit_many(pending)
        else:
            emit = self.emit
            for table, part, row in pending:
                emit(table, part, row)
        pending.clear()

    def _flush_pending(self) -> None:
        """A huge transaction: emit what is held (without XID/commit time) to keep memory flat."""
        trx = self.trx
        assert trx is not None
        self._emit_pending(trx.pending)
        trx.rows = 0


def _as_dicts(emit: Emit) -> EmitValues:
    """Adapt a dict-taking ``emit`` to the mapper's lists of values."""
    def emit_values(table: str, part: tuple[str, ...], values: list[Any]) -> None:
        emit(table, part, dict(zip(COLUMNS[table], values, strict=True)))

    return emit_values


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
