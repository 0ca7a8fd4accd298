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

This module holds the event: its header fields, bitmaps, extra data, decompression, and which
path reads the images. The images with a tree are read in ``rows_recorded.py``; the decimals of
MariaDB's hi-res temporal columns are found in ``rows_hires.py``.
"""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog._rowcode import (
    DELETE,
    INSERT,
    UPDATE,
    ImagePlan,
    count_rows,
    read_rows,
    rows_json,
    table_plan,
)
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.rows_hires import resolve_mariadb_hires
from binlogscope.wire.binlog.rows_recorded import PARTIAL_JSON_UPDATES, bits_text, rows_recorded
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

__all__ = ["DELETE", "INSERT", "PARTIAL_JSON_UPDATES", "UPDATE", "RowsEvent", "decode_rows_event",
           "resolve_mariadb_hires"]

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
    "STMT_END_F marks the last row event of a statement (table maps can be freed); "
    "NO_FOREIGN_KEY_CHECKS_F / RELAXED_UNIQUE_CHECKS_F: the statement ran with "
    "foreign_key_checks / unique_checks off; COMPLETE_ROWS_F: the images hold every column; "
    "USE_SQL_FOREIGN_KEY_F (MySQL 9.6+): the source ran foreign-key checks and cascades in "
    "the SQL layer, so rows a cascade changed are in the binlog as row events of their own "
    "and a replica applies them without cascading again in its storage engine (without the "
    "flag - older sources - the replica's InnoDB performs the cascade)",
    "bytes of extra row info including these 2 (2 = none)",
    "number of columns of the table (packed integer)",
    "one bit per column: set = the column is in the (before) image "
    "(binlog_row_image FULL sets all; MINIMAL/NOBLOB leave some out)",
    "one bit per column: set = the column is in the after image",
)
#: rows-event flags
STMT_END_F = 0x1
_FLAG_NAMES = {0x1: "STMT_END_F", 0x2: "NO_FOREIGN_KEY_CHECKS_F",
               0x4: "RELAXED_UNIQUE_CHECKS_F", 0x8: "COMPLETE_ROWS_F",
               0x10: "USE_SQL_FOREIGN_KEY_F"}
#: MySQL's dummy table id for an empty statement-end row event
_DUMMY_TABLE_ID = 0x00FFFFFF
#: a rows event's 6-byte table id (low 4 bytes, high 2) and its flags, read at once without a tree
_ID6_FLAGS = struct.Struct("<IHH")


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

    def json(self) -> bytes | None:
        return rows_json(self.data, self.kind, self.plan_b, self.plan_a, self.start, self.end)


#: the start of the error of a row event whose TABLE_MAP was not seen (see
#: :func:`unknown_context`: a stream that began after it lacks context, it is not damaged)
NO_TABLE_MAP = "no TABLE_MAP for table_id"
#: how such an error reads when the TABLE_MAP came before the stream began
UNKNOWN_CONTEXT = "unknown context"


def unknown_context(error: str) -> str:
    """The error of a row event without its TABLE_MAP, reworded for a stream that began inside
    the transaction (a capture, a connection or a ``--start`` position after the TABLE_MAP):
    context that is legitimately missing, not damage."""
    i = error.find(NO_TABLE_MAP)
    what = error[i:] if i >= 0 else error
    return (f"{UNKNOWN_CONTEXT}: {what} - its TABLE_MAP came before this stream began (the "
            "transaction started earlier); the rows cannot be decoded, nothing is damaged")


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

    def rows_json_bytes(self) -> bytes | None:
        """The JSON text of :attr:`rows` as the serializer writes it, written by the native
        kernel straight from the kept bytes while the rows are not read yet (they stay
        unread); None when they were read, without the kernel, or where it declines."""
        lazy = self._lazy
        return None if lazy is None or self._rows is not None else lazy.json()

    def unread_plans(self) -> tuple[ImagePlan, ImagePlan | None] | None:
        """The plans the rows not read yet will be read with (before or only image, after
        image), None when they were read: what :meth:`rows_json_bytes` writes them with."""
        lazy = self._lazy
        return None if lazy is None or self._rows is not None else (lazy.plan_b, lazy.plan_a)

    def unread_rows(self) -> LazyRows | None:
        """The rows' kept bytes and plans while they are not read yet (None once read): the
        export writes its image columns from them (export/mapper.py)."""
        return self._lazy if self._rows is None else None

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
    if not rec and id_len == 6 and r.end - r.pos >= 8:  # (the same fields in one unpack)
        lo, hi, flags = _ID6_FLAGS.unpack_from(r.buf, r.pos)
        table_id = lo | hi << 32
        r.pos += 8
    else:
        table_id = r.uint("table_id", id_len, doc=ROWS_DOCS[0])
        if rec:
            p = r.pos
            flags = int.from_bytes(r.take(2, "flags"), "little")
            r.leaf("flags", p, flags, wire="int<2>", display=_flags_text(flags),
                   doc=ROWS_DOCS[1])
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
        raise ValueError(f"{NO_TABLE_MAP} {table_id}")
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
        resolve_mariadb_hires(tm, data[start:end], kind, present, present_after, ctx)
    plans = tm.compiled
    plan_b = plans.get(present) if plans is not None else None
    if plan_b is None:
        plan_b = table_plan(tm, present, ctx.is_mariadb)
    plan_a = None
    if kind == UPDATE:
        plan_a = tm.compiled.get(present_after)
        if plan_a is None:
            plan_a = table_plan(tm, present_after, ctx.is_mariadb)
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
    rows: list[dict[str, Any]] = []
    ev._rows = rows
    sub = ByteReader(data, base=r.base if not ev.compressed else 0, record=rec, start=start,
                     end=end)
    try:
        rows_recorded(sub, ev.kind, ev.partial, rows, plan_b, plan_a)
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


@functools.lru_cache(maxsize=1024)
def _flags_text(flags: int) -> str:
    names = [n for bit, n in _FLAG_NAMES.items() if flags & bit]
    return f"0x{flags:04x} {'|'.join(names) or '0'}"


def _bitmap(r: ByteReader, name: str, nb: int, ncols: int, doc: str) -> int:
    p = r.pos
    if not r.record and p + nb <= r.end:  # (what take() reads, without its copy)
        r.pos = p + nb
        return int.from_bytes(r.buf[p : p + nb], "little")
    bits = int.from_bytes(r.take(nb, name), "little")
    if r.record:
        r.leaf(name, p, bits, wire=f"bitmap<{nb}>", doc=doc,
               display=bits_text(bits, ncols) + " (column 1 first)")
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
