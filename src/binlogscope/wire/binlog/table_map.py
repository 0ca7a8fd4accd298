"""TABLE_MAP_EVENT (19): the column layout every following row event of a table depends on.

Body: table_id (6 bytes; 4 when the FDE's TABLE_MAP post-header length is 6), flags, schema and
table names (length byte + name + NUL), column count (packed int), one type byte per column,
the metadata block (per-type widths: FLOAT/DOUBLE/BLOB/GEOMETRY/JSON/TIME2/DATETIME2/TIMESTAMP2/
VECTOR 1 byte; VARCHAR/BIT/NEWDECIMAL/STRING 2), the null bitmap, then optional metadata TLVs
(MySQL 8 ``binlog_row_metadata``; MariaDB 10.5+): type byte, packed length, value.

A decoded map is stored in ``ctx.tables[table_id]`` as a :class:`TableMap`. A map whose body
bytes equal the cached one is reused (with its row image plans) without parsing again, and in
record mode its nodes are copied at the new offsets: most transactions repeat the same
TABLE_MAP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType, column_type_name
from binlogscope.wire.binlog.values import (
    codec_for,
    is_character,
    is_enum_or_set,
    is_numeric,
    split_string_meta,
)
from binlogscope.wire.node import Node, make_node
from binlogscope.wire.reader import ByteReader


@dataclass(slots=True)
class TableMapEvent:
    table_id: int
    schema: str
    table: str
    columns: list[ColumnInfo]
    flags: int = 0
    table_map: TableMap | None = field(default=None, repr=False)


#: metadata bytes per column type in the TABLE_MAP metadata block
_META_1 = frozenset({
    T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE, T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB,
    T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_GEOMETRY, T.MYSQL_TYPE_JSON,
    T.MYSQL_TYPE_TIME2, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2, T.MYSQL_TYPE_VECTOR,
})
_META_2 = frozenset({
    T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_NEWDECIMAL,
    T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET,
})

OPTIONAL_METADATA = {
    1: "signedness",
    2: "default_charset",
    3: "column_charset",
    4: "column_name",
    5: "set_str_value",
    6: "enum_str_value",
    7: "geometry_type",
    8: "simple_primary_key",
    9: "primary_key_with_prefix",
    10: "enum_and_set_default_charset",
    11: "enum_and_set_column_charset",
    12: "column_visibility",
    13: "vector_dimensionality",
}
_OPT_DOCS = {
    1: "one bit per numeric column (most significant bit first): set = UNSIGNED",
    2: "default collation of the character columns, then (column, collation) exceptions",
    3: "collation of each character column, in column order",
    4: "name of every column (binlog_row_metadata=FULL)",
    5: "member strings of every SET column",
    6: "member strings of every ENUM column",
    7: "geometry subtype of every GEOMETRY column",
    8: "primary key column indexes",
    9: "primary key column indexes with prefix lengths (0 = whole column)",
    10: "default collation of ENUM/SET columns, then (column, collation) exceptions",
    11: "collation of each ENUM/SET column",
    12: "one bit per column (most significant bit first): set = visible (not INVISIBLE)",
    13: "number of dimensions of every VECTOR column",
}


def meta_width(col_type: int) -> int:
    if col_type in _META_1:
        return 1
    if col_type in _META_2:
        return 2
    return 0


@decodes(
    EventType.TABLE_MAP_EVENT,
    doc="TABLE_MAP: binds a table id to schema.table and its column types and metadata; every "
    "row event refers to the table id of the TABLE_MAP before it",
)
def decode_table_map(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> TableMapEvent:
    cached = _cached(r, ctx)
    if cached is not None:
        return cached
    body_start = r.pos
    first_node = r.mark()
    id_len = 4 if ctx.post_header(EventType.TABLE_MAP_EVENT) == 6 else 6
    table_id = r.uint("table_id", id_len,
                      doc="number the row events use to refer to this table; not stable across "
                      "rotations or restarts")
    flags = r.u16("flags", doc="table map flags (bit 0: NO_FLAGS / bit 1 BIT_LEN_EXACT_F)")
    schema = _name(r, "schema_name", "database of the table")
    table = _name(r, "table_name", "name of the table")
    ncols = r.packed_int("column_count", doc="number of columns in the table (packed integer)")

    # ---- column types
    if r.record:
        if ncols > r.remaining:
            r.take(ncols, "column_types")  # the error of the path without a tree
        r.begin("column_types", doc="one MYSQL_TYPE_* byte per column; how each value is stored")
        types = bytes(r.buf[r.pos : min(r.pos + ncols, r.end)])
        for i in range(ncols):
            t = r.buf[r.pos] if r.pos < r.end else 0
            r.u8(f"@{i + 1}", display=f"{column_type_name(t)} ({t})",
                 doc="column type (enum_field_types)")
        r.end_group()
    else:
        types = r.take(ncols, "column_types")
    columns = [ColumnInfo(index=i, type=t) for i, t in enumerate(types)]

    # ---- metadata block
    if r.remaining:
        meta_len = r.packed_int("metadata_length",
                                doc="bytes of per-column metadata that follow")
        r.begin("metadata", doc="per-column metadata: lengths, precision, fsp... (0-2 bytes each)")
        with r.bounded(meta_len, "metadata"):
            for col in columns:
                _column_meta(r, col)
            if r.pos < r.end:
                r.rest("unparsed", doc="metadata bytes no column claimed")
        r.end_group()
        nb = (ncols + 7) // 8
        p = r.pos
        nulls = int.from_bytes(r.take(nb, "null_bitmap"), "little")
        for col in columns:
            col.nullable = bool(nulls >> col.index & 1)
        r.leaf("null_bitmap", p, nulls, wire=f"bitmap<{nb}>",
               doc="one bit per column (least significant first): set = column is NULLable",
               display=_bits_display(nulls, ncols))

    tm = TableMap(table_id=table_id, schema=schema, table=table, columns=columns, flags=flags)
    # ---- optional metadata
    if r.remaining:
        r.begin("optional_metadata",
                doc="TLVs written with binlog_row_metadata (MySQL 8) / MariaDB 10.5+: signedness, "
                "charsets, column names, ENUM/SET strings, primary key, visibility")
        pending: dict[int, Any] = {}
        while r.remaining:
            _optional_tlv(r, tm, pending)
        r.end_group()
        _apply_enum_set_names(tm, pending)
    tm.raw = bytes(r.buf[body_start : r.end])
    old = ctx.tables.get(table_id)
    if old is not None and old.raw == tm.raw:
        tm.compiled = old.compiled  # same layout: keep the row image plans
        for a, b in zip(tm.columns, old.columns, strict=True):
            a.hires_dec = b.hires_dec
            a.hires_source = b.hires_source
        tm.hires_resolved = old.hires_resolved
    if r.record:
        # keep this map's nodes: an identical map later is shown by shifting them
        tm.nodes = r.since(first_node)
        tm.nodes_offset = r.base + body_start
    hook = ctx.table_map_hook
    if hook is not None:
        hook(tm)
    ctx.tables[table_id] = tm
    return TableMapEvent(table_id, schema, table, columns, flags, tm)


def _shifted(node: Node, delta: int) -> Node:
    return make_node(node.name, node.offset + delta, node.length, node.value, node.wire,
                     node.display, node.doc, tuple([_shifted(c, delta) for c in node.children]),
                     node.error)


def _shift_all(nodes: tuple[Node, ...], delta: int) -> tuple[Node, ...]:
    """Copies of ``nodes`` (recursively) with every offset moved by ``delta``."""
    return tuple([_shifted(n, delta) for n in nodes])


def _cached(r: ByteReader, ctx: DecodeContext) -> TableMapEvent | None:
    """The map the context already holds when these body bytes are the same as its bytes.

    Servers write a TABLE_MAP before every row event; decoding the same bytes again would give
    the same map (and, in record mode, the same nodes at other offsets: they are reused).
    """
    p = r.pos
    if r.end - p < 6:
        return None
    buf = r.buf
    table_id = buf[p] | buf[p + 1] << 8 | buf[p + 2] << 16 | buf[p + 3] << 24
    if ctx.post_header_len[18:19] != (6,):
        table_id |= buf[p + 4] << 32 | buf[p + 5] << 40
    tm = ctx.tables.get(table_id)
    if tm is None or len(tm.raw) != r.end - p or tm.raw != buf[p : r.end]:
        return None
    if r.record:
        if tm.nodes is None:
            return None
        for node in _shift_all(tm.nodes, r.base + p - tm.nodes_offset):
            r.add_node(node)
    r.pos = r.end
    return TableMapEvent(tm.table_id, tm.schema, tm.table, tm.columns, tm.flags, tm)


def _name(r: ByteReader, name: str, what: str) -> str:
    n = r.u8(f"{name}_length", doc=f"length of the {name.replace('_', ' ')}")
    s = r.fixed_str(name, n, doc=what)
    r.u8(f"{name}_nul", doc="NUL terminator (not counted in the length)")
    return s


def _column_meta(r: ByteReader, col: ColumnInfo) -> None:
    t = col.type
    w = meta_width(t)
    label = f"@{col.index + 1}"
    if w == 0:
        return
    p = r.pos
    raw = r.take(w, label)
    if t in (T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET, T.MYSQL_TYPE_NEWDECIMAL):
        meta = raw[0] << 8 | raw[1]  # big-endian pair: (real type, length) / (precision, scale)
    else:
        meta = int.from_bytes(raw, "little")
    col.meta = meta
    display = ""
    doc = ""
    if t == T.MYSQL_TYPE_STRING:
        real, length = split_string_meta(meta)
        col.real_type = real
        if real in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            display = f"{column_type_name(real)}, {length} byte(s) per value"
            doc = "real type byte (ENUM/SET travel as STRING) + bytes per value"
        else:
            display = f"CHAR/BINARY, max {length} bytes"
            doc = ("real type byte + max length; lengths > 255 keep bits 8-9 inverted in bits "
                   "4-5 of the real type byte")
    elif t in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        col.real_type = t
        display = f"{meta & 0xFF} byte(s) per value"
    elif t == T.MYSQL_TYPE_NEWDECIMAL:
        display = f"DECIMAL({meta >> 8},{meta & 0xFF})"
        doc = "precision byte + scale byte"
    elif t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        display = f"max {meta} bytes ({'2' if meta > 255 else '1'}-byte length prefix)"
        doc = "maximum length in bytes (decides 1- or 2-byte length prefix in the rows)"
    elif t == T.MYSQL_TYPE_BIT:
        display = f"BIT({(meta >> 8) * 8 + (meta & 0xFF)})"
        doc = "bits % 8, then whole bytes"
    elif t in (T.MYSQL_TYPE_TIME2, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2):
        display = f"fsp {meta}"
        doc = "fractional seconds precision (0-6): adds ceil(fsp/2) bytes to each value"
    elif t in (T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE):
        display = f"{meta} bytes"
        doc = "size of the value in bytes"
    else:
        display = f"{meta}-byte length prefix"
        doc = "bytes of the length prefix of each value (1 TINY, 2, 3 MEDIUM, 4 LONG)"
    if r.record:
        r.leaf(label, p, meta, wire=f"int<{w}>", display=display,
               doc=f"{column_type_name(t)} metadata: {doc}" if doc else "")


def _bits_display(bits: int, n: int) -> str:
    return "".join("1" if bits >> i & 1 else "0" for i in range(n)) + " (column 1 first)"


def _msb_bits(data: bytes, n: int) -> list[bool]:
    """Bitmap with the most significant bit of each byte first (signedness, visibility)."""
    return [bool(data[i // 8] >> (7 - i % 8) & 1) if i // 8 < len(data) else False
            for i in range(n)]


def _packed_list(r: ByteReader, name: str) -> list[int]:
    out: list[int] = []
    while r.remaining:
        out.append(r.packed_int(f"{name}[{len(out)}]"))
    return out


def _optional_tlv(r: ByteReader, tm: TableMap, pending: dict[int, Any]) -> None:
    p = r.pos
    typ = r.buf[p]
    name = OPTIONAL_METADATA.get(typ, f"unknown_type_{typ}")
    r.begin(name, doc=_OPT_DOCS.get(typ, "optional metadata type binlogscope does not know; "
                                   "kept as raw bytes"))
    r.u8("type", display=f"{name.upper()} ({typ})")
    length = r.packed_int("length", doc="bytes of the value")
    cols = tm.columns
    with r.bounded(length, name):
        if typ in (1, 12):
            what = [c for c in cols if is_numeric(c)] if typ == 1 else cols
            q = r.pos
            data = r.take(length, name)
            bits = _msb_bits(data, len(what))
            for c, b in zip(what, bits, strict=True):
                if typ == 1:
                    c.unsigned = b
                else:
                    c.visible = b
            if r.record:
                shown = ", ".join(
                    f"{c.label}={'UNSIGNED' if b else 'signed'}" if typ == 1 else
                    f"{c.label}={'visible' if b else 'INVISIBLE'}"
                    for c, b in zip(what, bits, strict=True))
                r.leaf("bitmap", q, data, wire=f"bitmap<{length}>", display=shown,
                       doc="most significant bit first, one bit per "
                       + ("numeric column" if typ == 1 else "column"))
        elif typ in (2, 10):
            what = [c for c in cols if (is_character(c) if typ == 2 else is_enum_or_set(c))]
            default = r.packed_int("default_collation",
                                   doc="collation id of columns not listed below")
            for c in what:
                c.charset = default
            while r.remaining:
                idx = r.packed_int("column_index",
                                   doc="index among the character (or ENUM/SET) columns")
                coll = r.packed_int("collation", doc="collation id of that column")
                if idx < len(what):
                    what[idx].charset = coll
        elif typ in (3, 11):
            what = [c for c in cols if (is_character(c) if typ == 3 else is_enum_or_set(c))]
            for i, coll in enumerate(_packed_list(r, "collation")):
                if i < len(what):
                    what[i].charset = coll
        elif typ == 4:
            i = 0
            while r.remaining:
                q = r.pos
                try:
                    s = r.take(_take_packed(r), "column_name").decode("utf-8", "replace")
                except Exception:
                    r.pos = q  # the error node covers the whole damaged name
                    raise
                if i < len(cols):
                    cols[i].name = s
                r.leaf(f"@{i + 1}", q, s, wire="string<packed>",
                       doc="packed length + column name")
                i += 1
        elif typ in (5, 6):
            lists: list[list[bytes]] = []
            while r.remaining:
                q = r.pos
                try:
                    count = _take_packed(r)
                    members = [r.take(_take_packed(r), "member") for _ in range(count)]
                except Exception:
                    r.pos = q  # the error node covers the whole damaged list
                    raise
                lists.append(members)
                if r.record:
                    texts = [m.decode("utf-8", "replace") for m in members]
                    r.leaf(f"column[{len(lists) - 1}]", q, texts,
                           wire="packed count + (packed length + string)*",
                           display=", ".join(repr(t) for t in texts),
                           doc="member strings of one column, in definition order")
            pending[typ] = lists
        elif typ == 7:
            what = [c for c in cols if c.type == T.MYSQL_TYPE_GEOMETRY]
            for c, g in zip(what, _packed_list(r, "geometry_type"), strict=False):
                c.geometry_type = g
        elif typ == 13:
            what = [c for c in cols if c.type == T.MYSQL_TYPE_VECTOR]
            for c, d in zip(what, _packed_list(r, "dimensions"), strict=False):
                c.vector_dimensionality = d
        elif typ == 8:
            tm.primary_key = _packed_list(r, "column_index")
        elif typ == 9:
            pk: list[int] = []
            while r.remaining:
                idx = r.packed_int("column_index")
                prefix = r.packed_int("prefix_length", doc="0: the whole column")
                pk.append(idx)
                if idx < len(cols):
                    cols[idx].key_prefix = prefix
            tm.primary_key = pk
        else:
            raw = r.rest("value", doc="value of an optional metadata type binlogscope does not "
                         "interpret")
            tm.unknown_metadata.append((typ, raw))
        if r.remaining:
            r.rest("unparsed", doc="bytes of this TLV binlogscope did not use")
    r.end_group()


def _apply_enum_set_names(tm: TableMap, pending: dict[int, Any]) -> None:
    for typ, real in ((5, T.MYSQL_TYPE_SET), (6, T.MYSQL_TYPE_ENUM)):
        lists = pending.get(typ)
        if lists is None:
            continue
        what = [c for c in tm.columns if c.real_type == real]
        for c, members in zip(what, lists, strict=False):
            codec = codec_for(c.charset) or "latin1"
            names = [m.decode(codec, "surrogateescape") for m in members]
            if real == T.MYSQL_TYPE_SET:
                c.set_values = names
            else:
                c.enum_values = names
    tm.compiled = None


def _take_packed(r: ByteReader) -> int:
    """A packed integer read without recording (the caller records a combined leaf)."""
    first = r.take(1, "packed_int")[0]
    if first < 0xFB:
        return first
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if size is None:
        raise ValueError(f"0x{first:02x} is not a valid packed integer")
    return int.from_bytes(r.take(size, "packed_int"), "little")
