"""TABLE_MAP and row events, encoded: the inverse of :mod:`table_map` and :mod:`rows`.

* :func:`encode_table_map` writes the body of a TABLE_MAP from a :class:`TableMap` (the value the
  decoder keeps in ``ctx.tables``): the column types, their metadata, the NULL bitmap and, with
  ``optional_metadata=True`` (the default, like ``binlog_row_metadata=FULL``), the optional
  metadata that the columns carry (signedness, charsets, names, ENUM/SET members, geometry
  types, primary key, visibility, vector dimensions).
* :func:`encode_rows_event` writes the body of a WRITE/UPDATE/DELETE rows event (v1 or v2,
  MariaDB-compressed too) from a :class:`RowsEvent` and the table's :class:`TableMap`; values
  are encoded by :func:`encode_values.encode_value`.
* :func:`rows_event_type` gives the event type code of a kind, version and compression.
* MySQL's PARTIAL_UPDATE_ROWS (``binlog_row_value_options=PARTIAL_JSON``): a
  :class:`RowsEvent` with ``partial=True`` whose after images hold :class:`JsonDiff` values for
  the JSON columns updated in place; each row then carries ``value_options`` and, when a diff
  is in it, the bitmap over the after image's JSON columns (:func:`encode_json_diff`).
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.encode_values import encode_json_binary, encode_value
from binlogscope.wire.binlog.rows import DELETE, INSERT, UPDATE, RowsEvent
from binlogscope.wire.binlog.table_map import meta_width
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.values import codec_for, is_character, is_enum_or_set, is_numeric
from binlogscope.wire.fields import lenenc_int

_BIG_ENDIAN_META = (T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET,
                    T.MYSQL_TYPE_NEWDECIMAL)
_CODES = {
    (INSERT, 1, False): E.WRITE_ROWS_EVENT_V1, (UPDATE, 1, False): E.UPDATE_ROWS_EVENT_V1,
    (DELETE, 1, False): E.DELETE_ROWS_EVENT_V1, (INSERT, 2, False): E.WRITE_ROWS_EVENT,
    (UPDATE, 2, False): E.UPDATE_ROWS_EVENT, (DELETE, 2, False): E.DELETE_ROWS_EVENT,
    (INSERT, 1, True): E.WRITE_ROWS_COMPRESSED_EVENT_V1,
    (UPDATE, 1, True): E.UPDATE_ROWS_COMPRESSED_EVENT_V1,
    (DELETE, 1, True): E.DELETE_ROWS_COMPRESSED_EVENT_V1,
    (INSERT, 2, True): E.WRITE_ROWS_COMPRESSED_EVENT,
    (UPDATE, 2, True): E.UPDATE_ROWS_COMPRESSED_EVENT,
    (DELETE, 2, True): E.DELETE_ROWS_COMPRESSED_EVENT,
}


def rows_event_type(kind: str, version: int, compressed: bool = False,
                    partial: bool = False) -> int:
    """Type code of a rows event: ``kind`` INSERT/UPDATE/DELETE, ``version`` 1 or 2;
    ``partial``: MySQL's PARTIAL_UPDATE_ROWS (an UPDATE, v2)."""
    if partial:
        if kind != UPDATE or version != 2 or compressed:
            raise ValueError("PARTIAL_UPDATE_ROWS is an uncompressed v2 UPDATE")
        return int(E.PARTIAL_UPDATE_ROWS_EVENT)
    return int(_CODES[(kind, version, compressed)])


# ----------------------------------------------------------------------------- TABLE_MAP
def _bits_lsb(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def _bits_msb(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i // 8] |= 0x80 >> (i % 8)
    return bytes(out)


def _name(s: str) -> bytes:
    b = s.encode()
    return bytes((len(b),)) + b + b"\0"


def column_meta(col: ColumnInfo) -> bytes:
    """The metadata bytes of one column in the TABLE_MAP metadata block."""
    w = meta_width(col.type)
    if w == 0:
        return b""
    if col.type in _BIG_ENDIAN_META:
        return col.meta.to_bytes(2, "big")
    return col.meta.to_bytes(w, "little")


def _tlv(code: int, value: bytes) -> bytes:
    return bytes((code,)) + lenenc_int(len(value)) + value


def _charset_tlv(code: int, cols: list[ColumnInfo]) -> bytes:
    """DEFAULT_CHARSET-style TLV: the most common collation, then (index, collation) pairs."""
    if not cols or any(c.charset is None for c in cols):
        return b""
    default = Counter(c.charset for c in cols).most_common(1)[0][0]
    assert default is not None
    out = lenenc_int(default)
    for i, c in enumerate(cols):
        if c.charset != default:
            assert c.charset is not None
            out += lenenc_int(i) + lenenc_int(c.charset)
    return _tlv(code, out)


def _members(cols: list[ColumnInfo], get: Callable[[ColumnInfo], list[str] | None]) -> bytes:
    out = b""
    for c in cols:
        names = get(c)
        assert names is not None
        codec = codec_for(c.charset) or "latin1"
        out += lenenc_int(len(names))
        for n in names:
            b = n.encode(codec, "surrogateescape")
            out += lenenc_int(len(b)) + b
    return out


def encode_optional_metadata(tm: TableMap) -> bytes:
    """The optional-metadata TLVs the columns of ``tm`` carry (what binlog_row_metadata=FULL
    writes; fields no column has are left out)."""
    cols = tm.columns
    out = b""
    numeric = [c for c in cols if is_numeric(c)]
    if numeric:
        out += _tlv(1, _bits_msb([c.unsigned for c in numeric]))
    out += _charset_tlv(2, [c for c in cols if is_character(c)])
    if cols and all(c.name is not None for c in cols):
        names = b""
        for c in cols:
            b = (c.name or "").encode()
            names += lenenc_int(len(b)) + b
        out += _tlv(4, names)
    sets = [c for c in cols if c.real_type == T.MYSQL_TYPE_SET]
    if sets and all(c.set_values is not None for c in sets):
        out += _tlv(5, _members(sets, lambda c: c.set_values))
    enums = [c for c in cols if c.real_type == T.MYSQL_TYPE_ENUM]
    if enums and all(c.enum_values is not None for c in enums):
        out += _tlv(6, _members(enums, lambda c: c.enum_values))
    geo = [c.geometry_type for c in cols if c.type == T.MYSQL_TYPE_GEOMETRY]
    if geo and all(g is not None for g in geo):
        out += _tlv(7, b"".join(lenenc_int(g or 0) for g in geo))
    if tm.primary_key:
        if any(c.key_prefix is not None for c in cols):
            out += _tlv(9, b"".join(lenenc_int(i) + lenenc_int(cols[i].key_prefix or 0)
                                    for i in tm.primary_key))
        else:
            out += _tlv(8, b"".join(lenenc_int(i) for i in tm.primary_key))
    out += _charset_tlv(10, [c for c in cols if is_enum_or_set(c)])
    if not all(c.visible for c in cols):
        out += _tlv(12, _bits_msb([c.visible for c in cols]))
    dims = [c.vector_dimensionality for c in cols if c.type == T.MYSQL_TYPE_VECTOR]
    if dims and all(d is not None for d in dims):
        out += _tlv(13, b"".join(lenenc_int(d or 0) for d in dims))
    for code, raw in tm.unknown_metadata:
        out += _tlv(code, raw)
    return out


def encode_table_map(tm: TableMap, *, optional_metadata: bool = True,
                     table_id_len: int = 6) -> bytes:
    """Body of a TABLE_MAP (``table_id_len`` 4 for a FORMAT_DESCRIPTION that gives TABLE_MAP
    a 6-byte post-header)."""
    cols = tm.columns
    meta = b"".join(column_meta(c) for c in cols)
    out = (tm.table_id.to_bytes(table_id_len, "little") + tm.flags.to_bytes(2, "little")
           + _name(tm.schema) + _name(tm.table) + lenenc_int(len(cols))
           + bytes(c.type for c in cols) + lenenc_int(len(meta)) + meta
           + _bits_lsb([c.nullable for c in cols]))
    if optional_metadata:
        out += encode_optional_metadata(tm)
    return out


# ----------------------------------------------------------------------------- row events
#: Json_diff operations (json_binary.DIFF_OPERATIONS)
JSON_REPLACE, JSON_INSERT, JSON_REMOVE = 0, 1, 2


@dataclass
class JsonDiff:
    """A JSON column's value in a PARTIAL_UPDATE_ROWS after image: (operation, path, value)
    triples, the value a Python JSON value (ignored for JSON_REMOVE)."""

    ops: list[tuple[int, str, Any]]


def encode_json_diff(d: JsonDiff, length_bytes: int = 4) -> bytes:
    """The diff vector: its length (the column's pack length, 4 for JSON), then per operation
    its byte, the path (length-encoded) and, unless REMOVE, the value as binary JSON
    (length-encoded) - what the decoder's ``_json_diff`` reads."""
    body = bytearray()
    for op, path, value in d.ops:
        p = path.encode("utf-8")
        body += bytes((op,)) + lenenc_int(len(p)) + p
        if op != JSON_REMOVE:
            v = encode_json_binary(value)
            body += lenenc_int(len(v)) + v
    return len(body).to_bytes(length_bytes, "little") + bytes(body)


def encode_row_image(columns: Sequence[ColumnInfo], row: dict[str, Any], *,
                     mariadb: bool = False) -> bytes:
    """One row image over the present ``columns``: the NULL bitmap (bit set = NULL; unused
    trailing bits set as MariaDB writes them, clear as MySQL does - the 8.0.22 fixture
    json.binlog.000001), then the non-NULL values in column order (a :class:`JsonDiff` as its
    diff vector)."""
    nbytes = (len(columns) + 7) // 8
    nulls = bytearray(b"\xff" * nbytes)
    if not mariadb:
        nulls = bytearray(nbytes)
        for i, c in enumerate(columns):
            if row.get(c.label) is None:
                nulls[i // 8] |= 1 << (i % 8)
    values = bytearray()
    for i, c in enumerate(columns):
        v = row.get(c.label)
        if v is None:
            continue
        nulls[i // 8] &= ~(1 << (i % 8)) & 0xFF
        if isinstance(v, JsonDiff):
            values += encode_json_diff(v, c.meta or 4)
        else:
            values += encode_value(c, v, mariadb=mariadb)
    return bytes(nulls) + bytes(values)


def _partial_header(cols_a: Sequence[ColumnInfo], after: dict[str, Any]) -> bytes:
    """value_options (PARTIAL_JSON) and the bitmap over the after image's JSON columns: set
    for those holding a :class:`JsonDiff`."""
    jcols = [c for c in cols_a if c.type == T.MYSQL_TYPE_JSON]
    diffs = [isinstance(after.get(c.label), JsonDiff) for c in jcols]
    if not jcols:
        return lenenc_int(0)
    return lenenc_int(1) + _bits_lsb(diffs)


def _present(tm: TableMap, labels: Sequence[str] | None) -> tuple[int, list[ColumnInfo]]:
    if labels is None:
        return (1 << len(tm.columns)) - 1, list(tm.columns)
    want = set(labels)
    cols = [c for c in tm.columns if c.label in want]
    bits = 0
    for c in cols:
        bits |= 1 << c.index
    return bits, cols


def _extra_data(ev: RowsEvent) -> bytes:
    out = b""
    for tag, data in ev.extra_data:
        if tag == 0:
            out += b"\x00" + data
    if ev.partition_id is not None:
        out += b"\x01" + ev.partition_id.to_bytes(2, "little")
        if ev.kind == UPDATE:
            out += (ev.source_partition_id or 0).to_bytes(2, "little")
    for tag, data in ev.extra_data:
        if tag != 0:
            out += bytes((tag,)) + data
    return (2 + len(out)).to_bytes(2, "little") + out


def _compress(data: bytes) -> bytes:
    n = len(data)
    lenlen = max(1, (n.bit_length() + 7) // 8)
    return bytes((0x80 | lenlen,)) + n.to_bytes(lenlen, "big") + zlib.compress(data)


def encode_rows_event(ev: RowsEvent, tm: TableMap, *, mariadb: bool = False,
                      table_id_len: int = 6) -> bytes:
    """Body of a rows event (its type code: :func:`rows_event_type` of ``ev.kind``,
    ``ev.version``, ``ev.compressed``, ``ev.partial``). The columns-present bitmaps come from
    ``ev.columns`` / ``ev.columns_after`` (labels; empty lists mean every column)."""
    ncols = len(tm.columns)
    nb = (ncols + 7) // 8
    bits_b, cols_b = _present(tm, ev.columns or None)
    bits_a, cols_a = _present(tm, ev.columns_after or ev.columns or None)
    out = ev.table_id.to_bytes(table_id_len, "little") + ev.flags.to_bytes(2, "little")
    if ev.version == 2:
        out += _extra_data(ev)
    out += lenenc_int(ncols) + bits_b.to_bytes(nb, "little")
    if ev.kind == UPDATE:
        out += bits_a.to_bytes(nb, "little")
    rows = bytearray()
    for row in ev.rows:
        if ev.kind in (UPDATE, DELETE):
            rows += encode_row_image(cols_b, row["before"], mariadb=mariadb)
        if ev.kind == UPDATE:
            if ev.partial:
                rows += _partial_header(cols_a, row["after"])
            rows += encode_row_image(cols_a, row["after"], mariadb=mariadb)
        elif ev.kind == INSERT:
            rows += encode_row_image(cols_b, row["after"], mariadb=mariadb)
    return out + (_compress(bytes(rows)) if ev.compressed else bytes(rows))


def rows_event(tm: TableMap, kind: str, rows: Sequence[Any], *, version: int = 2,
               flags: int = 1, compressed: bool = False) -> RowsEvent:
    """A :class:`RowsEvent` of every column of ``tm``. ``rows``: for INSERT/DELETE one value
    sequence (or label dict) per row, for UPDATE (before, after) pairs."""
    labels = [c.label for c in tm.columns]

    def image(r: Any) -> dict[str, Any]:
        return dict(r) if isinstance(r, dict) else dict(zip(labels, r, strict=True))

    out: list[dict[str, Any]] = []
    for r in rows:
        if kind == UPDATE:
            out.append({"before": image(r[0]), "after": image(r[1])})
        elif kind == INSERT:
            out.append({"before": None, "after": image(r)})
        else:
            out.append({"before": image(r), "after": None})
    return RowsEvent(tm.table_id, tm.schema, tm.table, kind, out, flags=flags, version=version,
                     columns=list(labels), columns_after=list(labels) if kind == UPDATE else None,
                     compressed=compressed)


__all__ = [
    "JSON_INSERT",
    "JSON_REMOVE",
    "JSON_REPLACE",
    "JsonDiff",
    "column_meta",
    "encode_json_diff",
    "encode_optional_metadata",
    "encode_row_image",
    "encode_rows_event",
    "encode_table_map",
    "rows_event",
    "rows_event_type",
]
