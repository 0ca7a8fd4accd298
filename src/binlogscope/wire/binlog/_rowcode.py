"""Row images: the one Python/native contract (column plans) and the rows loop.

A row image is a NULL bitmap over the present columns, then the non-NULL values in column
order. For one TABLE_MAP and columns-present bitmap, :class:`ImagePlan` holds:

* per column its :data:`ColumnPlan` (:func:`column_plan`): how the column is read, as plain
  values (a struct code, a length prefix and codec, an ENUM table, a DECIMAL layout...);
* the Python readers of ``values.make_reader`` - the definition, the very functions the
  recording path calls;
* when the native kernel is loaded (``binlogscope._native``), its ``ImageReader`` built from the
  same column plans turned into plain tuples (:func:`column_spec`).

:func:`read_rows` and :func:`count_rows` read all rows of a rows event body with the kernel
when it is there, else with the Python readers; both give the same values and raise on a short
or damaged image (the caller then runs the per-field path, which names the exact offset).
"""

from __future__ import annotations

import codecs
import functools
from typing import Any

from binlogscope import _native
from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import (
    BLOB_TYPES,
    DAY_TEXT,
    HMS_TEXT,
    TOD_TEXT,
    YMD_TEXT,
    Reader,
    codec_for,
    decimal_layout,
    effective_type,
    frac_table,
    frac_texts,
    make_reader,
    string_max_length,
    timestamp2_formatter,
)
from binlogscope.wire.reader import DecodeError, ShortRead

INSERT, UPDATE, DELETE = "INSERT", "UPDATE", "DELETE"
#: the kernel's kind codes
_KIND_CODE = {INSERT: 0, UPDATE: 1, DELETE: 2}

_STRUCT_CODES: dict[tuple[int, bool], str] = {
    (T.MYSQL_TYPE_TINY, False): "b", (T.MYSQL_TYPE_TINY, True): "B",
    (T.MYSQL_TYPE_SHORT, False): "h", (T.MYSQL_TYPE_SHORT, True): "H",
    (T.MYSQL_TYPE_LONG, False): "i", (T.MYSQL_TYPE_LONG, True): "I",
    (T.MYSQL_TYPE_LONGLONG, False): "q", (T.MYSQL_TYPE_LONGLONG, True): "Q",
    (T.MYSQL_TYPE_FLOAT, False): "f", (T.MYSQL_TYPE_FLOAT, True): "f",
    (T.MYSQL_TYPE_DOUBLE, False): "d", (T.MYSQL_TYPE_DOUBLE, True): "d",
}


def _struct_code(col: ColumnInfo) -> str | None:
    return _STRUCT_CODES.get((col.type, col.unsigned))


#: how one column is read (the Python/native contract), as plain values:
#:
#: ===================  ===========================================================
#: ("struct", code)     a fixed-size number (struct code ``b``/``B``/.../``d``)
#: ("prefixed", (n,     length prefix of n bytes, then text in codec (None: bytes)
#: codec))              (VARCHAR, CHAR, BLOB/TEXT, MariaDB's JSON, GEOMETRY)
#: ("binary", (n, len)) BINARY(len): prefixed bytes padded with 0x00 to len
#: ("enum1", table)     a one-byte ENUM or SET: a 256-tuple byte -> value
#: ("enum", (size,      an ENUM of 2+ bytes with its member names
#: names))
#: ("uint_le", size)    ENUM/SET without member names: the index or mask
#: ("uint_be", size)    BIT: a big-endian unsigned integer of 1-8 bytes
#: ("set", reader)      a SET of 2-8 bytes with at most 64 member names
#: ("int24", unsigned)  MEDIUMINT
#: ("year"|"date"|      YEAR, DATE, the pre-5.6 TIME/DATETIME/TIMESTAMP, the NULL
#: "time_old"|...)      type: no parameters
#: ("temporal2", None)  DATETIME2/TIMESTAMP2 of fsp 0-6
#: ("time2", reader)    TIME2 of fsp 0-6
#: ("decimal", (size,   a DECIMAL of one integer and one fraction group
#: gi, gf))
#: ("decimaln", (size,  any other DECIMAL; the reader takes a value whose groups are
#: intg, scale, rd))    not digit groups (the kernel declines it)
#: ("reader", reader)   anything else: the column's Python reader (MySQL's binary
#:                      JSON, VECTOR, MariaDB's hi-res temporals, unusual metadata)
#: ===================  ===========================================================
#:
#: The Python readers (``values.make_reader``) stay the definition: each plan names how the
#: kernel gives the same value, and ``tests/wire/test_rowcode.py`` holds them equal.
ColumnPlan = tuple[str, Any]

_OLD_TEMPORAL: dict[int, str] = {
    T.MYSQL_TYPE_TIME: "time_old", T.MYSQL_TYPE_DATETIME: "datetime_old",
    T.MYSQL_TYPE_TIMESTAMP: "timestamp_old"}


def _set1_table(members: list[str]) -> tuple[Any, ...]:
    """A one-byte SET's value for each mask byte: what ``values``' SET reader returns (the
    member names joined with ",", or the mask itself when it has bits beyond the members)."""
    n = len(members)
    return tuple(",".join(m for i, m in enumerate(members) if mask >> i & 1)
                 if mask < (1 << n) else mask for mask in range(256))


def _string_plan(col: ColumnInfo, mariadb: bool) -> ColumnPlan | None:
    """The plan of a STRING column (CHAR, BINARY, ENUM, SET), None: the reader."""
    real = effective_type(col)
    size = col.meta & 0xFF
    if real == T.MYSQL_TYPE_ENUM:
        if not 1 <= size <= 8:
            return None
        names = col.enum_values
        if names is None:
            return "uint_le", size
        if size == 1:
            return "enum1", ("", *names[:255], *range(len(names) + 1, 256))
        return "enum", (size, tuple(names))
    if real == T.MYSQL_TYPE_SET:
        if not 1 <= size <= 8:
            return None
        members = col.set_values
        if members is None:
            return "uint_le", size
        if size == 1:
            return "enum1", _set1_table(members)
        if len(members) <= 64 and all(isinstance(m, str) for m in members):
            return "set", make_reader(col, mariadb=mariadb)
        return None
    codec = codec_for(col.charset)
    max_len = string_max_length(col)
    prefix = 2 if max_len > 255 else 1
    if codec is None and col.charset == 63 and max_len:  # BINARY pads with 0x00
        return "binary", (prefix, max_len)
    return "prefixed", (prefix, codec)


def column_plan(col: ColumnInfo, mariadb: bool) -> ColumnPlan:
    t = col.type
    st = _struct_code(col)
    if st is not None:
        return "struct", st
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return "prefixed", (2 if col.meta > 255 else 1, codec_for(col.charset))
    if t in BLOB_TYPES:
        size = col.meta or 2
        if size in (1, 2, 3, 4):
            return "prefixed", (size, codec_for(col.charset) if col.charset is not None else None)
    if t == T.MYSQL_TYPE_STRING:
        plan = _string_plan(col, mariadb)
        if plan is not None:
            return plan
    if t in (T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2) and 0 <= col.meta <= 6:
        return "temporal2", None
    if t == T.MYSQL_TYPE_TIME2 and 0 <= col.meta <= 6:
        return "time2", make_reader(col, mariadb=mariadb)
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = col.meta >> 8, col.meta & 0xFF
        if 0 < precision <= 65 and scale <= precision:
            size, gi, gf = decimal_layout(precision, scale)
            if len(gi) <= 1 and len(gf) <= 1 and size:
                # at most 9 integer and 9 fraction digits: two shifts and a format
                return "decimal", (size, gi, gf)
            if size:
                return "decimaln", (size, precision - scale, scale,
                                    make_reader(col, mariadb=mariadb))
    if t == T.MYSQL_TYPE_INT24:
        return "int24", col.unsigned
    if t == T.MYSQL_TYPE_YEAR:
        return "year", None
    if t in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        return "date", None
    if t in _OLD_TEMPORAL and not col.hires_dec:
        return _OLD_TEMPORAL[t], None
    if t == T.MYSQL_TYPE_BIT:
        n = (col.meta >> 8) + (1 if col.meta & 0xFF else 0)
        if 1 <= n <= 8:
            return "uint_be", n
    if t == T.MYSQL_TYPE_NULL:
        return "null", None
    if t in (T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_GEOMETRY) and col.meta in (0, 1, 2, 3, 4):
        if t == T.MYSQL_TYPE_GEOMETRY:
            return "prefixed", (col.meta or 4, None)
        if mariadb:  # MariaDB's JSON is the text (MySQL's is binary JSON: the reader)
            return "prefixed", (col.meta or 4, "utf-8")
    return "reader", make_reader(col, mariadb=mariadb)


# ----------------------------------------------------------------------------- kernel specs
# Column kinds of ``_native/_kernel.c`` (keep in step with its enum).
_K_PY, _K_PREFIXED, _K_ENUM1, _K_DT2, _K_TS2, _K_DEC, _K_TIME2, _K_SET = (
    0, 11, 12, 13, 14, 15, 16, 17)
_K_INT24, _K_YEAR, _K_DATE, _K_UINT_BE, _K_UINT_LE, _K_ENUM, _K_DECN, _K_BINARY = range(18, 26)
_K_SIMPLE = {"year": _K_YEAR, "date": _K_DATE, "time_old": 26, "datetime_old": 27,
             "timestamp_old": 28, "null": 29}
_K_STRUCT = {"b": 1, "B": 2, "h": 3, "H": 4, "i": 5, "I": 6, "q": 7, "Q": 8, "f": 9, "d": 10}
_F_NONE, _F_SIX, _F_ITEM, _F_CALL = 0, 1, 2, 3

CSpec = tuple[int, int, int, int, int, int, int, Any]


def _spec(kind: int, obj: Any = None, a: int = 0, b: int = 0, c: int = 0, d: int = 0,
          e: int = 0, f: int = 0) -> CSpec:
    return (kind, a, b, c, d, e, f, obj)


def _frac_spec(fsp: int) -> tuple[int, Any]:
    """(fraction mode, object) of the kernel for DATETIME2/TIMESTAMP2 (as ``values.frac_texts``)."""
    if fsp == 0:
        return _F_NONE, None
    if fsp == 6:
        return _F_SIX, None
    table = frac_table(fsp)
    if table is not None:
        return _F_ITEM, table
    return _F_CALL, frac_texts(fsp)


def column_spec(col: ColumnInfo, mariadb: bool) -> CSpec:
    """How the kernel reads one column: its :func:`column_plan` as a tuple of plain values."""
    kind, arg = column_plan(col, mariadb)
    if kind == "struct":
        return _spec(_K_STRUCT[arg])
    if kind == "prefixed":
        prefix, codec = arg
        return _spec(_K_PREFIXED, codec, prefix)
    if kind == "enum1":
        return _spec(_K_ENUM1, arg)
    if kind == "temporal2":
        mode, frac = _frac_spec(col.meta)
        if col.type == T.MYSQL_TYPE_DATETIME2:
            return _spec(_K_DT2, (YMD_TEXT, HMS_TEXT, frac), col.meta, mode)
        zero = timestamp2_formatter(col.meta)(0, 0)
        return _spec(_K_TS2, (DAY_TEXT, TOD_TEXT, frac, zero), col.meta, mode)
    if kind == "decimal":
        size, gi, gf = arg
        ishift, imask = gi[0] if gi else (0, 0)
        fshift, fmask, fdigits = gf[0] if gf else (0, 0, -1)
        return _spec(_K_DEC, None, size, ishift, imask, fshift, fmask, fdigits)
    if kind == "time2":
        return _spec(_K_TIME2, None, col.meta)
    if kind == "set":
        assert col.set_values is not None
        return _spec(_K_SET, tuple(col.set_values), col.meta & 0xFF)
    if kind == "decimaln":
        size, intg, scale, rd = arg
        return _spec(_K_DECN, rd, size, intg, scale)
    if kind == "int24":
        return _spec(_K_INT24, None, int(arg))
    if kind in ("uint_le", "uint_be"):
        return _spec(_K_UINT_LE if kind == "uint_le" else _K_UINT_BE, None, arg)
    if kind == "enum":
        size, names = arg
        return _spec(_K_ENUM, names, size)
    if kind == "binary":
        prefix, length = arg
        return _spec(_K_BINARY, None, prefix, length)
    if kind in _K_SIMPLE:
        return _spec(_K_SIMPLE[kind])
    return _spec(_K_PY, arg)




# ----------------------------------------------------------------------------- image plans
class ImagePlan:
    """How to read one image: the present columns, their labels and readers, in order, and
    the kernel's reader of the same columns (None without the kernel)."""

    __slots__ = ("columns", "image", "json_positions", "labels", "nbytes", "readers",
                 "recorded", "skips_exactly")

    def __init__(self, columns: list[ColumnInfo], mariadb: bool) -> None:
        self.columns = columns
        self.labels = [c.label for c in columns]
        self.readers: list[Reader] = [make_reader(c, mariadb=mariadb) for c in columns]
        self.nbytes = (len(columns) + 7) // 8
        self.json_positions = [i for i, c in enumerate(columns) if c.type == T.MYSQL_TYPE_JSON]
        kernel = _native.kernel
        #: the kernel's ImageReader (``image(b, p) -> (row, p)``), None without the kernel
        self.image: Any = None if kernel is None else kernel.ImageReader(
            tuple(column_spec(c, mariadb) for c in columns), tuple(self.labels))
        #: the kernel's count walks these images exactly: every error reading them raises
        #: is raised by the walk too (no text column whose decoding can fail on its own)
        self.skips_exactly = not any(_decode_can_fail(column_plan(c, mariadb))
                                     for c in columns)
        #: the recording path's per-column (column, label, reader, wire type, doc), built by
        #: ``rows.py`` when first needed
        self.recorded: list[tuple[ColumnInfo, str, Reader, str, str]] | None = None

    def read(self, b: bytes, p: int, end: int) -> tuple[dict[str, Any], int]:
        """One image at ``b[p]`` with the Python readers (the definition)."""
        nb = self.nbytes
        if p + nb > end:
            raise ShortRead(p, nb, end - p, "null_bitmap")
        nulls = int.from_bytes(b[p : p + nb], "little")
        p += nb
        row: dict[str, Any] = {}
        for i, (label, rd) in enumerate(zip(self.labels, self.readers, strict=True)):
            if nulls >> i & 1:
                row[label] = None
            else:
                row[label], p = rd(b, p)
        if p > end:
            raise ShortRead(p, p - end, 0, "row image")
        return row, p


def table_plan(tm: TableMap, present: int, mariadb: bool) -> ImagePlan:
    """The plan of ``tm``'s columns present in ``present``, made once and cached in
    ``tm.compiled``."""
    cache: dict[int, ImagePlan] | None = tm.compiled
    if cache is None:
        cache = tm.compiled = {}
    plan = cache.get(present)
    if plan is None:
        cols = [c for c in tm.columns if present >> c.index & 1]
        plan = cache[present] = ImagePlan(cols, mariadb)
    return plan


@functools.lru_cache(maxsize=64)
def _codec_can_fail(codec: str) -> bool:
    """True when decoding with ``surrogateescape`` can still raise: that handler takes only
    undecodable bytes of 0x80 and above, which ASCII-compatible codecs are the only ones to
    give (UTF-16 and UTF-32 fail on any byte: an odd length, a lone surrogate)."""
    return codecs.lookup(codec).name.startswith(("utf-16", "utf-32"))


def _decode_can_fail(plan: ColumnPlan) -> bool:
    """True for a length-prefixed text column whose kernel walk (which skips the bytes
    without decoding them) would miss a decoding error."""
    if plan[0] != "prefixed":
        return False
    codec = plan[1][1]
    return codec is not None and _codec_can_fail(codec)


def no_progress(offset: int) -> None:
    raise DecodeError(offset, "a row of no columns (empty columns-present bitmap) reads no "
                      "bytes, yet rows data follows: the row images cannot be read")


def read_rows(data: bytes, kind: str, plan_b: ImagePlan, plan_a: ImagePlan | None,
              start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """All rows of ``data[start:end]`` (a non-partial rows event's images), no Nodes: each row
    ``{"before": image or None, "after": image or None}``. Raises on a short image."""
    if end is None:
        end = len(data)
    kernel = _native.kernel
    if (kernel is not None and plan_b.image is not None and type(data) is bytes
            and (plan_a is None or plan_a.image is not None)):
        rows: list[dict[str, Any]] = kernel.decode_rows(
            data, _KIND_CODE[kind], plan_b.image, plan_a.image if plan_a is not None else None,
            start, end)
        return rows
    rows = []
    append = rows.append
    p = start
    if p < end and not plan_b.labels and (plan_a is None or not plan_a.labels):
        no_progress(p)  # images of no columns are 0 bytes: the loop could not advance
    read_b = plan_b.read
    if kind == UPDATE:
        assert plan_a is not None
        read_a = plan_a.read
        while p < end:
            before, p = read_b(data, p, end)
            after, p = read_a(data, p, end)
            append({"before": before, "after": after})
    elif kind == INSERT:
        while p < end:
            after, p = read_b(data, p, end)
            append({"before": None, "after": after})
    else:
        while p < end:
            before, p = read_b(data, p, end)
            append({"before": before, "after": None})
    return rows


def rows_json(data: bytes, kind: str, plan_b: ImagePlan, plan_a: ImagePlan | None,
              start: int, end: int) -> bytes | None:
    """The JSON text the serializer writes for :func:`read_rows`' list (UTF-8 bytes), written
    by the kernel from the same plans; None without the kernel, or where it declines (text
    that is not valid UTF-8, a value it does not write, a damaged image: the caller then
    reads the rows, which raises or repairs as it always does)."""
    kernel = _native.kernel
    if (kernel is None or plan_b.image is None or type(data) is not bytes
            or (plan_a is not None and plan_a.image is None)):
        return None
    try:
        text: bytes | None = kernel.rows_json(
            data, _KIND_CODE[kind], plan_b.image, plan_a.image if plan_a is not None else None,
            start, end)
    except ValueError:
        return None
    return text


def count_rows(data: bytes, kind: str, plan_b: ImagePlan, plan_a: ImagePlan | None,
               start: int, end: int) -> tuple[int, list[dict[str, Any]] | None]:
    """(number of rows, the rows or None): the kernel walks the images without building their
    values (they are read later, on demand); without it, or when a plan has a column whose
    decoding can fail without the walk noticing, the rows are read here. Raises on a short or
    damaged image, as :func:`read_rows`, so that a damaged image is an error of the event
    whether its values are read now or later."""
    kernel = _native.kernel
    if (kernel is not None and plan_b.image is not None and type(data) is bytes
            and plan_b.skips_exactly
            and (plan_a is None or (plan_a.image is not None and plan_a.skips_exactly))):
        n: int = kernel.count_rows(
            data, _KIND_CODE[kind], plan_b.image, plan_a.image if plan_a is not None else None,
            start, end)
        return n, None
    rows = read_rows(data, kind, plan_b, plan_a, start, end)
    return len(rows), rows
