"""Compiled row-image readers for the fast path (``record=False``).

For one TABLE_MAP and columns-present bitmap, :func:`compile_image` generates the source of a
function ``image(b, p) -> (row dict, new p)`` and compiles it once. The function reads the
NULL bitmap and then:

* when no column is NULL (the common case): straight-line code, one ``struct`` unpack per run of
  consecutive fixed-width numeric columns, inline length-prefixed strings, the shared cached
  temporal formatters of ``values.py``, and the column reader closures for everything else;
* otherwise: the same per-column code, each guarded by its NULL bit.

The pieces that turn bytes into values are the very functions the recording path uses
(``values.make_reader`` and the formatters it is built from), or trivially equal to them (a
struct field, a slice, a ``decode``), so both paths give identical values;
``tests/wire/test_fixtures.py::test_fast_path_equals_tree_path`` checks that on every fixture.

Like the readers, generated code does not check the end of the buffer value by value: a short
image raises (struct/index errors) or returns a position beyond the end, which the caller turns
into a ``ShortRead``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import (
    BLOB_TYPES,
    DAY_TEXT,
    HMS_TEXT,
    TOD_TEXT,
    YMD_TEXT,
    codec_for,
    decimal_layout,
    effective_type,
    frac_table,
    frac_texts,
    make_reader,
    string_max_length,
    timestamp2_formatter,
)

try:
    from binlogscope.wire.binlog import _crows
except ImportError:  # not built (no compiler when installed): the generated Python readers
    _crows = None  # type: ignore[assignment]

ImageFn = Callable[[bytes, int], tuple[dict[str, Any], int]]

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


class _Gen:
    def __init__(self) -> None:
        self.ns: dict[str, Any] = {"_from_bytes": int.from_bytes}
        self.k = 0

    def const(self, value: Any) -> str:
        name = f"_c{self.k}"
        self.k += 1
        self.ns[name] = value
        return name


def _at(o: int) -> str:
    """The position ``o`` bytes after ``p``."""
    return f"p + {o}" if o else "p"


#: one column's code: (statements, static size or None when the code sets ``p`` itself)
Code = tuple[list[str], int | None]


def _prefixed(v: str, o: int, prefix: int, codec: str | None) -> Code:
    """A length-prefixed value (VARCHAR, BLOB/TEXT, CHAR) read inline."""
    if prefix == 1:
        length = f"b[{_at(o)}]"
    elif prefix == 2:
        length = f"(b[{_at(o)}] | b[{_at(o + 1)}] << 8)"
    else:
        length = f"_from_bytes(b[{_at(o)}:{_at(o + prefix)}], 'little')"
    value = f"b[{_at(o + prefix)}:e]"
    if codec is not None:
        value += f".decode({codec!r}, 'surrogateescape')"
    return [f"e = {_at(o + prefix)} + {length}", f"{v} = {value}", "p = e"], None


#: how one column is read, for both readers (generated Python and C): ("struct", struct
#: code), ("prefixed", (length prefix bytes, codec or None)), ("enum1", 256-tuple byte ->
#: value: a one-byte ENUM or SET), ("temporal2", None) for DATETIME2/TIMESTAMP2,
#: ("decimal", (size, integer groups, fraction groups)) for a DECIMAL of one group each,
#: ("time2", reader) for TIME2 and ("set", reader) for a SET of 2-8 bytes with its member
#: names (the C reader has its own code for those, generated Python calls the reader), or
#: ("reader", the column's reader)
ColumnPlan = tuple[str, Any]


def _set1_table(members: list[str]) -> tuple[Any, ...]:
    """A one-byte SET's value for each mask byte: what ``values``' SET reader returns (the
    member names joined with ",", or the mask itself when it has bits beyond the members)."""
    n = len(members)
    return tuple(",".join(m for i, m in enumerate(members) if mask >> i & 1)
                 if mask < (1 << n) else mask for mask in range(256))


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
        real = effective_type(col)
        if real == T.MYSQL_TYPE_ENUM and (col.meta & 0xFF) == 1 and col.enum_values is not None:
            names = col.enum_values
            return "enum1", ("", *names[:255], *range(len(names) + 1, 256))
        if real == T.MYSQL_TYPE_SET and (col.meta & 0xFF) == 1 and col.set_values is not None:
            return "enum1", _set1_table(col.set_values)
        if real == T.MYSQL_TYPE_SET and 2 <= (col.meta & 0xFF) <= 8 and \
                col.set_values is not None and len(col.set_values) <= 64 and \
                all(isinstance(m, str) for m in col.set_values):
            return "set", make_reader(col, mariadb=mariadb)
        if real not in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            codec = codec_for(col.charset)
            max_len = string_max_length(col)
            if not (codec is None and col.charset == 63 and max_len):  # BINARY pads: reader
                return "prefixed", (2 if max_len > 255 else 1, codec)
    if t in (T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2) and 0 <= col.meta <= 6:
        return "temporal2", None
    if t == T.MYSQL_TYPE_TIME2 and 0 <= col.meta <= 6:
        return "time2", make_reader(col, mariadb=mariadb)
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        # at most 9 integer and 9 fraction digits: two shifts and a format (else the reader)
        precision, scale = col.meta >> 8, col.meta & 0xFF
        if 0 < precision <= 65 and scale <= precision:
            size, gi, gf = decimal_layout(precision, scale)
            if len(gi) <= 1 and len(gf) <= 1 and size:
                return "decimal", (size, gi, gf)
    return "reader", make_reader(col, mariadb=mariadb)


def _column_code(gen: _Gen, col: ColumnInfo, v: str, mariadb: bool, o: int = 0) -> Code:
    """Statements that read one non-NULL column at ``p + o`` into ``v``."""
    kind, arg = column_plan(col, mariadb)
    if kind == "struct":
        s = struct.Struct("<" + arg)
        return [f"{v} = {gen.const(s.unpack_from)}(b, {_at(o)})[0]"], s.size
    if kind == "prefixed":
        return _prefixed(v, o, *arg)
    if kind == "enum1":
        return [f"{v} = {gen.const(arg)}[b[{_at(o)}]]"], 1
    if kind == "temporal2":
        return _temporal2(gen, col, v, o)
    if kind == "decimal":
        return _decimal(v, o, *arg)
    return [f"{v}, p = {gen.const(arg)}(b, {_at(o)})"], None


def _frac_expr(gen: _Gen, fsp: int, raw: str) -> str:
    """An f-string piece giving the fraction text (same as ``values.frac_texts``)."""
    if fsp == 0:
        return ""
    if fsp == 6:
        return f".{{{raw}:06d}}"
    table = frac_table(fsp)
    if table is not None:
        return f"{{{gen.const(table)}[{raw}]}}"
    return f"{{{gen.const(frac_texts(fsp))}({raw})}}"


def _temporal2(gen: _Gen, col: ColumnInfo, v: str, o: int) -> Code:
    """DATETIME2 / TIMESTAMP2 with the cached pieces of ``values.py`` inlined."""
    fsp = col.meta
    nf = (fsp + 1) // 2
    if col.type == T.MYSQL_TYPE_DATETIME2:
        lines = [f"x = _from_bytes(b[{_at(o)}:{_at(o + 5)}], 'big') - 0x8000000000"]
        if nf:
            lines.append(f"f = _from_bytes(b[{_at(o + 5)}:{_at(o + 5 + nf)}], 'big')")
        frac = _frac_expr(gen, fsp, "f")
        lines.append(f'{v} = f"{{{gen.const(YMD_TEXT)}[x >> 17]}} '
                     f'{{{gen.const(HMS_TEXT)}[x & 0x1FFFF]}}{frac}"')
        return lines, 5 + nf
    lines = [f"x = _from_bytes(b[{_at(o)}:{_at(o + 4)}], 'big')"]
    lines.append(f"f = _from_bytes(b[{_at(o + 4)}:{_at(o + 4 + nf)}], 'big')" if nf else "f = 0")
    frac = _frac_expr(gen, fsp, "f")
    zero = gen.const(timestamp2_formatter(fsp)(0, 0))
    lines.append(f'{v} = {zero} if not x and not f else '
                 f'f"{{{gen.const(DAY_TEXT)}[x // 86400]}} '
                 f'{{{gen.const(TOD_TEXT)}[x % 86400]}}{frac}"')
    return lines, 4 + nf


def _decimal(v: str, o: int, size: int, gi: list[tuple[int, int]],
             gf: list[tuple[int, int, int]]) -> Code:
    """DECIMAL with at most one group of integer and of fraction digits.

    A value cut short by the end of the image gives a wrong text here, but the position then
    ends past the image, which the caller reports as a ShortRead.
    """
    sign = 1 << (size * 8 - 1)
    full = (1 << (size * 8)) - 1

    def part(shift: int, mask: int) -> str:
        return f"(x >> {shift}) & {mask}" if shift else f"x & {mask}"

    ip = part(*gi[0]) if gi else "0"
    fr = f".{{{part(gf[0][0], gf[0][1])}:0{gf[0][2]}d}}" if gf else ""
    return [
        f"x = _from_bytes(b[{_at(o)}:{_at(o + size)}], 'big')",
        f"if x & {sign}:",
        f"    x ^= {sign}",
        f'    {v} = f"{{{ip}}}{fr}"',
        "else:",
        f"    x ^= {full ^ sign}",
        f'    {v} = f"-{{{ip}}}{fr}"',
    ], size


# ----------------------------------------------------------------------------- the C reader
# Column kinds of ``_crows.c`` (keep in step with its enum).
_K_PY, _K_PREFIXED, _K_ENUM1, _K_DT2, _K_TS2, _K_DEC, _K_TIME2, _K_SET = (
    0, 11, 12, 13, 14, 15, 16, 17)
_K_STRUCT = {"b": 1, "B": 2, "h": 3, "H": 4, "i": 5, "I": 6, "q": 7, "Q": 8, "f": 9, "d": 10}
_F_NONE, _F_SIX, _F_ITEM, _F_CALL = 0, 1, 2, 3

CSpec = tuple[int, int, int, int, int, int, int, Any]


def _spec(kind: int, obj: Any = None, a: int = 0, b: int = 0, c: int = 0, d: int = 0,
          e: int = 0, f: int = 0) -> CSpec:
    return (kind, a, b, c, d, e, f, obj)


def _frac_spec(fsp: int) -> tuple[int, Any]:
    """(fraction mode, object) of ``_crows.c`` for DATETIME2/TIMESTAMP2 (as ``_frac_expr``)."""
    if fsp == 0:
        return _F_NONE, None
    if fsp == 6:
        return _F_SIX, None
    table = frac_table(fsp)
    if table is not None:
        return _F_ITEM, table
    return _F_CALL, frac_texts(fsp)


def column_spec(col: ColumnInfo, mariadb: bool) -> CSpec:
    """How ``_crows.c`` reads one column (from the same :func:`column_plan`)."""
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
    return _spec(_K_PY, arg)


def c_module() -> ModuleType | None:
    """The C reader module when it is built and not turned off by BINLOGSCOPE_PURE_PYTHON."""
    return _crows if _use_c() else None


def _use_c() -> bool:
    return _crows is not None and not os.environ.get("BINLOGSCOPE_PURE_PYTHON")


def compile_image(columns: list[ColumnInfo], mariadb: bool, *, pure: bool = False) -> ImageFn:
    """The fast reader of one row image whose present columns are ``columns``: the C reader
    of ``_crows`` when it is built (and neither ``pure`` nor ``BINLOGSCOPE_PURE_PYTHON`` asks
    for Python), else generated Python."""
    if not pure and _use_c():
        assert _crows is not None
        specs = tuple(column_spec(c, mariadb) for c in columns)
        reader: ImageFn = _crows.ImageReader(specs, tuple(c.label for c in columns))
        return reader
    return compile_python_image(columns, mariadb)


def compile_python_image(columns: list[ColumnInfo], mariadb: bool) -> ImageFn:
    """The generated-Python reader of one row image whose present columns are ``columns``."""
    gen = _Gen()
    nb = (len(columns) + 7) // 8
    names = [f"v{i}" for i in range(len(columns))]
    out = ["def image(b, p):"]
    mask = (1 << len(columns)) - 1  # the unused high bits of the last byte may be set
    if nb == 1:
        out.append(f"    nulls = b[p] & {mask}")
    else:
        out.append(f"    nulls = _from_bytes(b[p:p + {nb}], 'little') & {mask}")
    out.append(f"    p += {nb}")
    out.append("    if not nulls:")
    # straight line: static offsets from p until a variable-length value moves p; runs of
    # struct-able columns share one unpack
    body: list[str] = []
    o = 0
    i = 0
    while i < len(columns):
        j = i
        codes = ""
        while j < len(columns) and (c := _struct_code(columns[j])) is not None:
            codes += c
            j += 1
        if j - i >= 2:
            st = struct.Struct("<" + codes)
            body.append(f"{', '.join(names[i:j])} = {gen.const(st.unpack_from)}(b, {_at(o)})")
            o += st.size
            i = j
            continue
        lines, size = _column_code(gen, columns[i], names[i], mariadb, o)
        body.extend(lines)
        o = 0 if size is None else o + size
        i += 1
    if o:
        body.append(f"p += {o}")
    out.extend("        " + line for line in body or ["pass"])
    out.append("    else:")
    for i, col in enumerate(columns):
        out.append(f"        if nulls & {1 << i}:")
        out.append(f"            {names[i]} = None")
        out.append("        else:")
        lines, size = _column_code(gen, col, names[i], mariadb)
        if size is not None:
            lines = [*lines, f"p += {size}"]
        out.extend("            " + line for line in lines)
    if not columns:
        out.append("        pass")
    items = ", ".join(f"{col.label!r}: {names[i]}" for i, col in enumerate(columns))
    out.append(f"    return {{{items}}}, p")
    src = "\n".join(out) + "\n"
    ns = gen.ns
    exec(compile(src, f"<row image of {len(columns)} columns>", "exec"), ns)
    fn: ImageFn = ns["image"]
    return fn
