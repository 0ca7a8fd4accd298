"""Row events: WRITE/UPDATE/DELETE_ROWS v0 (20-22), v1 (23-25), v2 (30-32), PARTIAL_UPDATE_ROWS
(39) and MariaDB's compressed row events (166-171).

Body: table_id (6 bytes; 4 with a 6-byte post-header), flags, [v2: extra_data_length (counting
itself) + TLVs: NDB info, partition info], column_count (packed), the columns-present bitmap
(and for UPDATE a second one for the after image), then the rows until the end of the body:
per image a null bitmap over the *present* columns, then the non-NULL values in column order.
UPDATE rows are a before image followed by an after image. PARTIAL_UPDATE_ROWS puts
``value_options`` (packed) between them, and when its PARTIAL_JSON bit is set a bitmap over the
after image's JSON columns: those columns then carry a JSON diff instead of a whole document.

MariaDB's compressed row events keep the header fields and compress only the rows: one byte
(0x80 | algorithm << 4 | bytes of length), the uncompressed length (big-endian), zlib data.

Row values are read with an :class:`ImagePlan` (``_rowcode.py``) made once per (TABLE_MAP,
columns-present bitmap): the column readers of ``values.py``, and the native kernel's reader of
the same column plans when it is loaded. Without a tree (``record=False``) the images are only
walked at decode time (damage is still an error of the event); their values are read on the
first access to :attr:`RowsEvent.rows`, from the event's own bytes and the plans captured at
decode time. The recording path reads every value with its Node, with the same readers.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog._rowcode import (
    DELETE,
    INSERT,
    UPDATE,
    ImagePlan,
    count_rows,
    no_progress,
    read_rows,
)
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.json_binary import (
    DIFF_OPERATIONS,
    json_binary_to_text,
    render_json_diff,
)
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.values import (
    Reader,
    column_doc,
    display_value,
    hires_plausible,
    make_reader,
    type_name,
)
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader, ShortRead

__all__ = ["DELETE", "INSERT", "UPDATE", "RowsEvent", "decode_rows_event"]

_KIND: dict[int, str] = {
    E.PRE_GA_WRITE_ROWS_EVENT: INSERT, E.PRE_GA_UPDATE_ROWS_EVENT: UPDATE,
    E.PRE_GA_DELETE_ROWS_EVENT: DELETE,
    E.WRITE_ROWS_EVENT_V1: INSERT, E.UPDATE_ROWS_EVENT_V1: UPDATE, E.DELETE_ROWS_EVENT_V1: DELETE,
    E.WRITE_ROWS_EVENT: INSERT, E.UPDATE_ROWS_EVENT: UPDATE, E.DELETE_ROWS_EVENT: DELETE,
    E.PARTIAL_UPDATE_ROWS_EVENT: UPDATE,
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: INSERT, E.UPDATE_ROWS_COMPRESSED_EVENT_V1: UPDATE,
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: DELETE,
    E.WRITE_ROWS_COMPRESSED_EVENT: INSERT, E.UPDATE_ROWS_COMPRESSED_EVENT: UPDATE,
    E.DELETE_ROWS_COMPRESSED_EVENT: DELETE,
}
_V0 = {E.PRE_GA_WRITE_ROWS_EVENT, E.PRE_GA_UPDATE_ROWS_EVENT, E.PRE_GA_DELETE_ROWS_EVENT}
_V2 = {E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT, E.DELETE_ROWS_EVENT, E.PARTIAL_UPDATE_ROWS_EVENT}
_COMPRESSED = {
    E.WRITE_ROWS_COMPRESSED_EVENT_V1, E.UPDATE_ROWS_COMPRESSED_EVENT_V1,
    E.DELETE_ROWS_COMPRESSED_EVENT_V1, E.WRITE_ROWS_COMPRESSED_EVENT,
    E.UPDATE_ROWS_COMPRESSED_EVENT, E.DELETE_ROWS_COMPRESSED_EVENT,
}
_COMPRESSED_V2 = {E.WRITE_ROWS_COMPRESSED_EVENT, E.UPDATE_ROWS_COMPRESSED_EVENT,
                  E.DELETE_ROWS_COMPRESSED_EVENT}
_PARTIAL = E.PARTIAL_UPDATE_ROWS_EVENT

#: docs of the rows-event fields table_id, flags, extra_data_length, column_count,
#: columns_present_bitmap, columns_present_bitmap_after
ROWS_DOCS = (
    "the TABLE_MAP this event's rows belong to",
    "STMT_END_F marks the last row event of a statement (table maps can be freed)",
    "bytes of extra row info including these 2 (2 = none)",
    "number of columns of the table (packed integer)",
    "one bit per column: set = the column is in the (before) image "
    "(binlog_row_image FULL sets all; MINIMAL/NOBLOB leave some out)",
    "one bit per column: set = the column is in the after image",
)
#: rows-event flags
STMT_END_F = 0x1
_FLAG_NAMES = {0x1: "STMT_END_F", 0x2: "NO_FOREIGN_KEY_CHECKS_F",
               0x4: "RELAXED_UNIQUE_CHECKS_F", 0x8: "COMPLETE_ROWS_F"}
#: value_options bit of PARTIAL_UPDATE_ROWS
PARTIAL_JSON_UPDATES = 0x1
#: MySQL's dummy table id for an empty statement-end row event
_DUMMY_TABLE_ID = 0x00FFFFFF


class LazyRows:
    """The row images of one event, read on demand: the bytes holding them (the event's raw
    bytes, or its decompressed rows), where they are, and the plans of the event's TABLE_MAP
    captured at decode time."""

    __slots__ = ("data", "end", "kind", "plan_a", "plan_b", "start")

    def __init__(self, data: bytes, start: int, end: int, kind: str, plan_b: ImagePlan,
                 plan_a: ImagePlan | None) -> None:
        self.data = data
        self.start = start
        self.end = end
        self.kind = kind
        self.plan_b = plan_b
        self.plan_a = plan_a

    def read(self) -> list[dict[str, Any]]:
        return read_rows(self.data, self.kind, self.plan_b, self.plan_a, self.start, self.end)


@dataclass(slots=True, eq=False)
class RowsEvent:
    """A decoded row event. ``rows``: one ``{"before": {...} | None, "after": {...} | None}``
    per row, read from the kept bytes on first access when the event was decoded without a
    tree (``row_count`` does not read them)."""

    table_id: int
    schema: str
    table: str
    kind: str
    _rows: list[dict[str, Any]] | None = field(repr=False)
    flags: int = 0
    version: int = 2
    columns: list[str] = field(default_factory=list)
    columns_after: list[str] | None = None
    extra_data: list[tuple[int, bytes]] = field(default_factory=list)
    partition_id: int | None = None
    source_partition_id: int | None = None
    partial: bool = False
    compressed: bool = False
    compressed_size: int | None = None
    uncompressed_size: int | None = None
    #: the decoded tree of the decompressed rows (offsets inside the decompressed bytes)
    decompressed: Node | None = field(default=None, repr=False)
    raw_rows: bytes | None = field(default=None, repr=False)
    #: the images not read yet (None once read, or when they were read at decode time)
    _lazy: LazyRows | None = field(default=None, repr=False)
    _count: int = field(default=0, repr=False)

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows = self._rows
        if rows is None:
            lazy = self._lazy
            rows = self._rows = [] if lazy is None else lazy.read()
            self._lazy = None
        return rows

    @rows.setter
    def rows(self, value: list[dict[str, Any]]) -> None:
        self._rows = value
        self._lazy = None

    @property
    def row_count(self) -> int:
        """The number of rows, without reading their values."""
        return self._count if self._rows is None else len(self._rows)

    def _key(self) -> tuple[Any, ...]:
        return (self.table_id, self.schema, self.table, self.kind, self.rows, self.flags,
                self.version, self.columns, self.columns_after, self.extra_data,
                self.partition_id, self.source_partition_id, self.partial, self.compressed,
                self.compressed_size, self.uncompressed_size, self.decompressed, self.raw_rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowsEvent):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


def _plan(tm: TableMap, present: int, mariadb: bool) -> ImagePlan:
    cache: dict[int, ImagePlan] | None = tm.compiled
    if cache is None:
        cache = tm.compiled = {}
    plan = cache.get(present)
    if plan is None:
        cols = [c for c in tm.columns if present >> c.index & 1]
        plan = cache[present] = ImagePlan(cols, mariadb)
    return plan


def decode_rows_fast(data: bytes, kind: str, plan_b: ImagePlan, plan_a: ImagePlan | None
                     ) -> list[dict[str, Any]]:
    """All rows of a (non-partial) rows event body, no Nodes."""
    return read_rows(data, kind, plan_b, plan_a)


# ----------------------------------------------------------------------------- event decoder
@decodes(*[code for code, kind in _KIND.items() if kind == INSERT],
         doc="WRITE_ROWS: rows inserted into the table of the preceding TABLE_MAP (after images)")
def _decode_write(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RowsEvent | None:
    return decode_rows_event(r, ctx, h)


@decodes(*[code for code, kind in _KIND.items() if kind == UPDATE],
         doc="UPDATE_ROWS: updated rows as pairs of before and after images")
def _decode_update(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RowsEvent | None:
    return decode_rows_event(r, ctx, h)


@decodes(*[code for code, kind in _KIND.items() if kind == DELETE],
         doc="DELETE_ROWS: rows deleted from the table (before images)")
def _decode_delete(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RowsEvent | None:
    return decode_rows_event(r, ctx, h)


def decode_rows_event(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RowsEvent | None:
    code = h.type_code
    kind = _KIND[code]
    version = 0 if code in _V0 else 2 if code in _V2 or code in _COMPRESSED_V2 else 1
    phl = ctx.post_header(code)
    if phl is not None and phl not in (6, 8, 10) and ctx.fde_seen:
        # e.g. a 5.2 pre-release server numbered XID/LOAD events 20-22 (post-headers 0, 4, 26)
        r.rest("raw_body", doc=f"the FORMAT_DESCRIPTION gives type {code} a {phl}-byte "
               "post-header, which no row event has (6, 8 or 10): this server version used the "
               "code for another event; body kept raw")
        return None
    if code in _COMPRESSED_V2 and phl is not None:
        version = 2 if phl >= 10 else 1
    id_len = 4 if phl == 6 else 6
    rec = r.record

    # ---- post-header
    table_id = r.uint("table_id", id_len, doc=ROWS_DOCS[0])
    if rec:
        p = r.pos
        flags = int.from_bytes(r.take(2, "flags"), "little")
        r.leaf("flags", p, flags, wire="int<2>", display=_flags_text(flags), doc=ROWS_DOCS[1])
    else:
        flags = r.u16("flags")
    ev = RowsEvent(table_id, "", "", kind, [], flags=flags, version=version,
                   compressed=code in _COMPRESSED, partial=code == _PARTIAL)
    if version == 2:
        _extra_data(r, ev)

    # ---- column count and bitmaps
    ncols = r.packed_int("column_count", doc=ROWS_DOCS[3])
    nb = (ncols + 7) // 8
    present = _bitmap(r, "columns_present_bitmap", nb, ncols, ROWS_DOCS[4])
    present_after = present
    if kind == UPDATE and version != 0:
        present_after = _bitmap(r, "columns_present_bitmap_after", nb, ncols, ROWS_DOCS[5])

    tm = ctx.tables.get(table_id)
    if tm is None:
        if r.remaining == 0 and table_id == _DUMMY_TABLE_ID:
            return ev  # an empty statement-end marker with the dummy table id
        raise ValueError(f"no TABLE_MAP for table_id {table_id}")
    ev.schema, ev.table = tm.schema, tm.table
    if ncols != len(tm.columns):
        raise ValueError(f"column_count {ncols} differs from the TABLE_MAP's "
                         f"{len(tm.columns)} columns of {tm.schema}.{tm.table}")

    # ---- the rows
    if version == 0 or not ctx.decode_rows:
        ev.columns = [c.label for c in tm.columns if present >> c.index & 1]
        if kind == UPDATE:
            ev.columns_after = [c.label for c in tm.columns if present_after >> c.index & 1]
    if version == 0:
        # pre-GA 5.1 row events carry each row in the storage engine's internal record format
        # (Old_rows_log_event: a memcpy of table->record[0]); its layout depends on the engine
        # and the table definition, which the binlog does not carry
        r.rest("rows", doc="row images in the pre-GA 5.1 engine record format (a raw copy of the "
               "server's internal row buffer); binlogscope shows them undecoded")
        return ev
    if ev.compressed:
        data = _decompress(r, ev)
        start, end = 0, len(data)
    else:
        # the rows are read from the event's own bytes (``DecodedEvent.raw``): no copy
        data = r.buf if type(r.buf) is bytes else bytes(r.buf)
        start, end = r.pos, r.end
    if not ctx.decode_rows:
        ev.raw_rows = data[start:end]
        if not ev.compressed:
            r.rest("rows", doc="row images (not decoded: decode_rows is off)")
        return ev
    if tm.hires_resolved is None and ctx.is_mariadb:
        _resolve_mariadb_hires(tm, data[start:end], kind, present, present_after, ctx)
    plans = tm.compiled
    plan_b = plans.get(present) if plans is not None else None
    if plan_b is None:
        plan_b = _plan(tm, present, ctx.is_mariadb)
    plan_a = None
    if kind == UPDATE:
        plan_a = tm.compiled.get(present_after)
        if plan_a is None:
            plan_a = _plan(tm, present_after, ctx.is_mariadb)
    ev.columns = plan_b.labels  # the plan's list, shared by every event of the plan
    if plan_a is not None:
        ev.columns_after = plan_a.labels

    if not rec and not ev.partial:
        try:
            ev._count, ev._rows = count_rows(data, kind, plan_b, plan_a, start, end)
        except Exception:
            ev._rows = []  # damaged: the per-field path below finds the exact offset
        else:
            if ev._rows is None:
                ev._lazy = LazyRows(data, start, end, kind, plan_b, plan_a)
            if not ev.compressed:
                r.pos = r.end
            return ev

    # recording path (and PARTIAL_UPDATE_ROWS): the same readers, a Node per value
    ev._rows = []
    sub = ByteReader(data, base=r.base if not ev.compressed else 0, record=rec, start=start,
                     end=end)
    try:
        _rows_recorded(sub, ev, tm, plan_b, plan_a)
    except Exception:
        if not ev.compressed:  # the error's offset: where the image reading stopped
            if rec:
                for node in sub.finish("rows").children:
                    r.add_node(node)
            r.pos = sub.pos
        raise
    if ev.compressed:
        if rec:
            ev.decompressed = sub.finish(
                "decompressed_rows", doc="the row images after zlib decompression (offsets are "
                "inside the decompressed bytes)")
    else:
        if rec:
            for node in sub.children():
                r.add_node(node)
        r.pos = r.end
    return ev


@functools.lru_cache(maxsize=4096)
def _bits_text(bits: int, n: int) -> str:
    """``bits`` as n characters 0/1, bit 0 first."""
    return format(bits & ((1 << n) - 1), f"0{n}b")[::-1] if n else ""


@functools.lru_cache(maxsize=1024)
def _flags_text(flags: int) -> str:
    names = [n for bit, n in _FLAG_NAMES.items() if flags & bit]
    return f"0x{flags:04x} {'|'.join(names) or '0'}"


def _bitmap(r: ByteReader, name: str, nb: int, ncols: int, doc: str) -> int:
    p = r.pos
    bits = int.from_bytes(r.take(nb, name), "little")
    if r.record:
        r.leaf(name, p, bits, wire=f"bitmap<{nb}>", doc=doc,
               display=_bits_text(bits, ncols) + " (column 1 first)")
    return bits


def _extra_data(r: ByteReader, ev: RowsEvent) -> None:
    length = r.u16("extra_data_length", doc=ROWS_DOCS[2])
    if length < 2:
        raise ValueError(f"extra_data_length {length} is less than 2")
    if length == 2:
        return
    r.begin("extra_data", doc="TLVs: 0 = NDB info, 1 = partition info (MySQL 8)")
    with r.bounded(length - 2, "extra_data"):
        while r.remaining:
            tag = r.u8("type", display={0: "NDB (0)", 1: "PART (1)"}.get(r.buf[r.pos],
                                                                       str(r.buf[r.pos])),
                       doc="extra row info type")
            if tag == 0:
                n = r.u8("ndb_info_length", doc="length of the NDB info incl. length and format")
                fmt = r.u8("ndb_info_format", doc="format of the NDB info payload")
                data = r.raw("ndb_info", max(n - 2, 0), doc="NDB cluster's extra row info")
                ev.extra_data.append((0, bytes([n, fmt]) + data))
            elif tag == 1:
                ev.partition_id = r.u16("partition_id",
                                        doc="partition the row(s) are written to")
                if ev.kind == UPDATE:
                    ev.source_partition_id = r.u16(
                        "source_partition_id", doc="partition the row(s) came from")
            else:
                data = r.rest("value", doc="extra row info of an unknown type")
                ev.extra_data.append((tag, data))
    r.end_group()


def _decompress(r: ByteReader, ev: RowsEvent) -> bytes:
    p = r.pos
    head = r.u8("compression_header",
                display=(f"algorithm {(r.buf[p] >> 4) & 7} (zlib), "
                         f"{r.buf[p] & 7}-byte length" if r.pos < r.end else ""),
                doc="MariaDB compressed event header: 0x80 | algorithm << 4 | bytes of the "
                "uncompressed length")
    lenlen = head & 0x07
    alg = (head >> 4) & 0x07
    if not head & 0x80 or not 1 <= lenlen <= 4:
        raise ValueError(f"bad compression header byte 0x{head:02x}")
    if alg != 0:
        raise ValueError(f"unknown compression algorithm {alg} (only 0 = zlib exists)")
    size = r.uint_be("uncompressed_length", lenlen,
                     doc="length of the row images after decompression (big-endian)")
    q = r.pos
    comp = r.take(r.remaining, "compressed_rows")
    try:
        data = zlib.decompress(comp)
    except zlib.error as exc:
        raise ValueError(f"zlib: {exc}") from None
    if len(data) != size:
        raise ValueError(f"decompressed {len(data)} bytes, header says {size}")
    ev.compressed_size = len(comp)
    ev.uncompressed_size = size
    r.leaf("compressed_rows", q, data, wire="zlib",
           display=f"{len(comp)} bytes zlib -> {size} bytes of row images",
           doc="the row images, zlib-compressed (decoded under decompressed_rows)")
    return data


# ----------------------------------------------------------------------------- recording path
#: per kind: (before image name, its doc, after image name, its doc)
_IMAGE_NAMES = {
    INSERT: ("", "", "after_image", "the inserted row"),
    UPDATE: ("before_image", "the row as it was (identifies the row to change)",
             "after_image", "the row as it is now"),
    DELETE: ("before_image", "the deleted row", "", ""),
}


def _recorded(plan: ImagePlan) -> list[tuple[ColumnInfo, str, Reader, str, str]]:
    """Per column (column, label, reader, wire type, doc) for the recording path."""
    if plan.recorded is None:
        plan.recorded = [(c, label, rd, type_name(c), column_doc(c)) for c, label, rd
                         in zip(plan.columns, plan.labels, plan.readers, strict=True)]
    return plan.recorded


def _rows_recorded(sub: ByteReader, ev: RowsEvent, tm: TableMap, plan_b: ImagePlan,
                   plan_a: ImagePlan | None) -> None:
    kind = ev.kind
    rows = ev.rows
    i = 0
    while not sub.at_end():
        start = sub.pos
        sub.begin(f"row[{i}]", doc=f"row {i + 1} of the event")
        if kind == UPDATE:
            assert plan_a is not None
            before = _image_recorded(sub, plan_b, *_IMAGE_NAMES[UPDATE][:2])
            partial_cols: set[int] = set()
            if ev.partial:
                partial_cols = _partial_header(sub, plan_a)
            after = _image_recorded(sub, plan_a, *_IMAGE_NAMES[UPDATE][2:], partial_cols)
            rows.append({"before": before, "after": after})
        elif kind == INSERT:
            after = _image_recorded(sub, plan_b, *_IMAGE_NAMES[INSERT][2:])
            rows.append({"before": None, "after": after})
        else:
            before = _image_recorded(sub, plan_b, *_IMAGE_NAMES[DELETE][:2])
            rows.append({"before": before, "after": None})
        sub.end_group()
        if sub.pos == start:
            no_progress(sub.base + start)
        i += 1


def _partial_header(sub: ByteReader, plan_a: ImagePlan) -> set[int]:
    opts = sub.packed_int("value_options",
                          doc="binlog_row_value_options bits: 1 = PARTIAL_JSON (some JSON "
                          "columns of the after image hold diffs)")
    if not opts & PARTIAL_JSON_UPDATES:
        return set()
    jpos = plan_a.json_positions
    nb = (len(jpos) + 7) // 8
    p = sub.pos
    bits = int.from_bytes(sub.take(nb, "partial_bits"), "little")
    sub.leaf("partial_bits", p, bits, wire=f"bitmap<{nb}>",
             display=", ".join(f"{plan_a.labels[j]}={'diff' if bits >> k & 1 else 'full'}"
                               for k, j in enumerate(jpos)),
             doc="one bit per JSON column of the after image: set = the value is a JSON diff")
    return {j for k, j in enumerate(jpos) if bits >> k & 1}


_NULL_BITMAP_DOC = "one bit per column present in this image: set = NULL (no bytes follow)"


def _image_recorded(sub: ByteReader, plan: ImagePlan, name: str, doc: str,
                    partial_cols: set[int] | None = None) -> dict[str, Any]:
    sub.begin(name, doc=doc)
    nb = plan.nbytes
    p = sub.pos
    nulls = int.from_bytes(sub.take(nb, "null_bitmap"), "little")
    sub.leaf("null_bitmap", p, nulls, wire=f"bitmap<{nb}>",
             display=_bits_text(nulls, len(plan.columns)) + " (first present column first)",
             doc=_NULL_BITMAP_DOC)
    row: dict[str, Any] = {}
    buf = sub.buf
    leaf = sub.leaf
    for i, (col, label, rd, wire, cdoc) in enumerate(_recorded(plan)):
        start = sub.pos
        if nulls >> i & 1:
            row[label] = None
            leaf(label, start, None, wire=wire, display="NULL",
                 doc=f"{cdoc}; NULL (bit set in null_bitmap, no bytes)")
            continue
        if partial_cols and i in partial_cols:
            row[label] = _json_diff(sub, col)
            continue
        value, end = rd(buf, start)  # type: ignore[arg-type]
        if end > sub.end:
            raise ShortRead(sub.base + start, end - start, sub.end - start, label)
        sub.pos = end
        row[label] = value
        leaf(label, start, value, wire=wire, display=display_value(value, col), doc=cdoc)
    sub.end_group()
    return row


def _json_diff(sub: ByteReader, col: ColumnInfo) -> str:
    """A JSON column of a PARTIAL_UPDATE_ROWS after image holding a diff vector."""
    label = col.label
    sub.begin(label, doc=f"{label}: JSON diff (partial update): length, then per diff "
              "operation, path, value")
    size = sub.uint("length", col.meta or 4, doc="bytes of the diff vector")
    diffs: list[tuple[int, str, str | None]] = []
    with sub.bounded(size, "json_diff"):
        k = 0
        while sub.remaining:
            sub.begin(f"diff[{k}]")
            op = sub.u8("operation", display=DIFF_OPERATIONS.get(sub.buf[sub.pos], "?"),
                        doc="0 REPLACE, 1 INSERT, 2 REMOVE")
            if op not in DIFF_OPERATIONS:
                raise ValueError(f"unknown JSON diff operation {op}")
            n = sub.packed_int("path_length")
            path = sub.fixed_str("path", n, doc="JSON path the operation applies to")
            value: str | None = None
            if op != 2:
                m = sub.packed_int("value_length")
                p = sub.pos
                doc_bytes = sub.take(m, "value")
                value = json_binary_to_text(doc_bytes)
                sub.leaf("value", p, value, wire="json_binary", display=value,
                         doc="the new value as binary JSON")
            diffs.append((op, path, value))
            sub.end_group()
            k += 1
    text = render_json_diff(label, diffs)
    sub.end_group(value=text, display=text)
    return text


# ----------------------------------------------------------------------------- MariaDB hi-res
_OLD_TEMPORAL = {T.MYSQL_TYPE_TIME: "TIME", T.MYSQL_TYPE_DATETIME: "DATETIME",
                 T.MYSQL_TYPE_TIMESTAMP: "TIMESTAMP"}
#: column reads the decimals search may spend on one event before giving up
_BUDGET = 200_000


def _resolve_mariadb_hires(tm: TableMap, data: bytes, kind: str, present: int,
                           present_after: int, ctx: DecodeContext | None = None) -> None:
    """Find the decimals of MariaDB hi-res TIME/DATETIME/TIMESTAMP columns.

    Tables created with ``mysql56_temporal_format=OFF`` store TIME(n)/DATETIME(n)/TIMESTAMP(n)
    with n > 0 in MariaDB's hi-res formats under the old type codes, with no metadata. The
    decimals come from the table's CREATE TABLE when the binlog held it (``ctx.declared``),
    checked against this event's rows; otherwise they are inferred from the row bytes: the
    candidates (old format, then 1..6 decimals, smallest first) are followed image by image
    and the first assignment that consumes every row exactly with plausible values wins.
    Columns that were NULL in every row stay unknown until a later event shows them.
    """
    temporal = [c for c in tm.columns if c.type in _OLD_TEMPORAL]
    unknown = [c for c in temporal if not c.hires_source]
    if not unknown:
        tm.hires_resolved = True
        return
    if ctx is not None and _from_ddl(tm, ctx, unknown, data, kind, present, present_after):
        tm.hires_resolved = True
        return
    if not data:
        return
    for strict in (True, False):
        found = _infer(tm, unknown, data, kind, present, present_after, strict)
        if found is not None:
            for c in unknown:
                if c.index in found:
                    c.hires_dec = found[c.index]
                    c.hires_source = "row bytes"
            break
    tm.compiled = None
    if all(c.hires_source for c in temporal):
        tm.hires_resolved = True


def _from_ddl(tm: TableMap, ctx: DecodeContext, unknown: list[ColumnInfo], data: bytes,
              kind: str, present: int, present_after: int) -> bool:
    declared = ctx.declared.get((tm.schema.lower(), tm.table.lower()))
    if declared is None or len(declared) != len(tm.columns):
        return False
    for c in unknown:
        name, typ, _dec = declared[c.index]
        if typ != _OLD_TEMPORAL[T(c.type)] or (c.name is not None and c.name.lower() != name):
            return False
    saved = [(c.hires_dec, c.hires_source) for c in unknown]
    for c in unknown:
        c.hires_dec = declared[c.index][2]
        c.hires_source = "CREATE TABLE"
    tm.compiled = None
    try:
        plan_b = _plan(tm, present, True)
        plan_a = _plan(tm, present_after, True) if kind == UPDATE else None
        decode_rows_fast(data, kind, plan_b, plan_a)
        return True
    except Exception:
        for c, (d, src) in zip(unknown, saved, strict=True):
            c.hires_dec, c.hires_source = d, src
        tm.compiled = None
        return False


def _candidate_readers(c: ColumnInfo) -> list[tuple[int, Reader]]:
    out: list[tuple[int, Reader]] = []
    for d in range(7):
        probe = ColumnInfo(c.index, c.type, c.meta, hires_dec=d)
        out.append((d, make_reader(probe, mariadb=True)))
    return out


def _infer(tm: TableMap, unknown: list[ColumnInfo], data: bytes, kind: str, present: int,
           present_after: int, strict: bool) -> dict[int, int] | None:
    """Depth-first search over the images of one event; returns {column index: decimals}.

    Each image is read column by column; an unknown column that is not NULL branches over its
    candidate formats (smallest decimals first) whose value is plausible. The first assignment
    that reads every image to exactly the end of the rows wins. ``_BUDGET`` bounds the work.
    """
    open_cols = {c.index for c in unknown}
    candidates = {c.index: _candidate_readers(c) for c in unknown}
    fixed: dict[int, Reader] = {c.index: make_reader(c, mariadb=True) for c in tm.columns
                                if c.index not in open_cols}
    layouts = [[c for c in tm.columns if present >> c.index & 1]]
    if kind == UPDATE:
        layouts.append([c for c in tm.columns if present_after >> c.index & 1])
    n = len(data)
    budget = [_BUDGET]

    def image(cols: list[ColumnInfo], assign: dict[int, int], p: int
              ) -> Iterator[tuple[dict[int, int], int]]:
        nb = (len(cols) + 7) // 8
        if p + nb > n:
            return
        nulls = int.from_bytes(data[p : p + nb], "little")

        def walk(i: int, a: dict[int, int], q: int) -> Iterator[tuple[dict[int, int], int]]:
            while i < len(cols):
                budget[0] -= 1
                if budget[0] < 0:
                    return
                c = cols[i]
                if nulls >> i & 1:
                    i += 1
                    continue
                idx = c.index
                if idx in fixed or idx in a:
                    rd = fixed.get(idx)
                    if rd is None:
                        rd = candidates[idx][a[idx]][1]
                    try:
                        v, q = rd(data, q)
                    except Exception:
                        return
                    if q > n or (idx in open_cols and not _plausible_value(c, v, strict)):
                        return
                    i += 1
                    continue
                for d, rd in candidates[idx]:
                    try:
                        v, q2 = rd(data, q)
                    except Exception:
                        continue
                    if q2 <= n and _plausible_value(c, v, strict):
                        yield from walk(i + 1, {**a, idx: d}, q2)
                return
            yield a, q

        yield from walk(0, assign, p + nb)

    nl = len(layouts)
    stack = [image(layouts[0], {}, 0)]
    while stack and budget[0] >= 0:
        found = next(stack[-1], None)
        if found is None:
            stack.pop()
            continue
        a, q = found
        if q == n and len(stack) % nl == 0:
            return a
        if q < n:
            stack.append(image(layouts[len(stack) % nl], a, q))
    return None


def _plausible_value(c: ColumnInfo, v: Any, strict: bool) -> bool:
    if c.type == T.MYSQL_TYPE_TIMESTAMP:
        return True  # seconds always decode; a fraction too big already raised
    if strict:
        return hires_plausible(c.type, v)
    return hires_plausible(c.type, v, lenient=True)
