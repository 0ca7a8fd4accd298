"""MySQL's binary JSON format (JSON columns in row images) -> JSON text as MySQL prints it.

Layout (MySQL ``json_binary.h``): a type byte, then the value. Objects and arrays come in a
*small* (2-byte counts/offsets) and a *large* (4-byte) variant: element count, total size, then
for objects the key entries (offset, 2-byte length), then one value entry per element (type byte
+ offset, or the value itself when it fits: literals and 16-bit integers, plus 32-bit integers in
large containers). Offsets count from the first byte after the container's type byte. Scalars:
literal (null/true/false), int16/uint16/int32/uint32/int64/uint64, double, string (variable-
length length prefix, 7 bits per byte), opaque (MySQL column type + data: DECIMAL, DATE, TIME,
DATETIME... or any other blob, printed ``base64:typeNN:...``).

Malformed input raises ``ValueError``; the row decoder turns that into an error node.
"""

from __future__ import annotations

import base64
import json
import struct

from binlogscope.wire.binlog.values_numeric import decimal_size, decode_decimal

SMALL_OBJECT = 0x00
LARGE_OBJECT = 0x01
SMALL_ARRAY = 0x02
LARGE_ARRAY = 0x03
LITERAL = 0x04
INT16 = 0x05
UINT16 = 0x06
INT32 = 0x07
UINT32 = 0x08
INT64 = 0x09
UINT64 = 0x0A
DOUBLE = 0x0B
STRING = 0x0C
OPAQUE = 0x0F

TYPE_NAMES = {
    SMALL_OBJECT: "small object", LARGE_OBJECT: "large object", SMALL_ARRAY: "small array",
    LARGE_ARRAY: "large array", LITERAL: "literal", INT16: "int16", UINT16: "uint16",
    INT32: "int32", UINT32: "uint32", INT64: "int64", UINT64: "uint64", DOUBLE: "double",
    STRING: "string", OPAQUE: "opaque",
}

_SCALARS: dict[int, struct.Struct] = {
    INT16: struct.Struct("<h"), UINT16: struct.Struct("<H"), INT32: struct.Struct("<i"),
    UINT32: struct.Struct("<I"), INT64: struct.Struct("<q"), UINT64: struct.Struct("<Q"),
}
_F64 = struct.Struct("<d")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")

#: MySQL column types that appear inside opaque values
_OPAQUE_DECIMAL = 246
_OPAQUE_DATE = 10
_OPAQUE_TIME = 11
_OPAQUE_DATETIME = 12
_OPAQUE_TIMESTAMP = 7


def json_binary_to_text(data: bytes) -> str:
    """A whole binary JSON document -> text (``{"a": [1, 2.5, "x"]}``). Empty input is ``null``."""
    if not data:
        return "null"
    out: list[str] = []
    _value(data, data[0], 1, out, 0)
    return "".join(out)


def read_varlen(b: bytes, p: int) -> tuple[int, int]:
    """MySQL's variable-length length: 7 bits per byte, low first, high bit = more (<= 5 bytes)."""
    n = 0
    for i in range(5):
        if p + i >= len(b):
            raise ValueError("JSON: truncated variable-length length")
        byte = b[p + i]
        n |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return n, p + i + 1
    raise ValueError("JSON: variable-length length longer than 5 bytes")


def _need(b: bytes, p: int, n: int) -> None:
    if p < 0 or p + n > len(b):
        raise ValueError(f"JSON: value at {p} needs {n} bytes, document has {len(b)}")


def _value(b: bytes, t: int, p: int, out: list[str], depth: int) -> None:
    if depth > 150:
        raise ValueError("JSON: nesting deeper than 150 levels")
    if t in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
        _container(b, t, p, out, depth)
    elif t == LITERAL:
        _need(b, p, 1)
        out.append(_literal(b[p]))
    elif t in _SCALARS:
        st = _SCALARS[t]
        _need(b, p, st.size)
        out.append(str(st.unpack_from(b, p)[0]))
    elif t == DOUBLE:
        _need(b, p, 8)
        out.append(json_double_text(_F64.unpack_from(b, p)[0]))
    elif t == STRING:
        n, q = read_varlen(b, p)
        _need(b, q, n)
        out.append(_quote(b[q : q + n].decode("utf-8", "replace")))
    elif t == OPAQUE:
        _need(b, p, 1)
        ftype = b[p]
        n, q = read_varlen(b, p + 1)
        _need(b, q, n)
        out.append(opaque_text(ftype, b[q : q + n]))
    else:
        raise ValueError(f"JSON: unknown value type 0x{t:02x}")


def _literal(v: int) -> str:
    if v == 0:
        return "null"
    if v == 1:
        return "true"
    if v == 2:
        return "false"
    raise ValueError(f"JSON: unknown literal {v}")


def _container(b: bytes, t: int, p: int, out: list[str], depth: int) -> None:
    large = t in (LARGE_OBJECT, LARGE_ARRAY)
    is_obj = t in (SMALL_OBJECT, LARGE_OBJECT)
    w = 4 if large else 2
    u = _U32 if large else _U16
    _need(b, p, 2 * w)
    count = u.unpack_from(b, p)[0]
    size = u.unpack_from(b, p + w)[0]
    if size > len(b) - p:
        raise ValueError(f"JSON: container size {size} exceeds the document")
    entries = p + 2 * w
    key_entry = w + 2
    value_entry = 1 + w
    values = entries + (count * key_entry if is_obj else 0)
    _need(b, values, count * value_entry)
    inline = (LITERAL, INT16, UINT16, INT32, UINT32) if large else (LITERAL, INT16, UINT16)
    out.append("{" if is_obj else "[")
    for i in range(count):
        if i:
            out.append(", ")
        if is_obj:
            ke = entries + i * key_entry
            koff = u.unpack_from(b, ke)[0]
            klen = _U16.unpack_from(b, ke + w)[0]
            if koff + klen > size:
                raise ValueError("JSON: key outside its object")
            out.append(_quote(b[p + koff : p + koff + klen].decode("utf-8", "replace")))
            out.append(": ")
        ve = values + i * value_entry
        vt = b[ve]
        if vt in inline:
            _value(b, vt, ve + 1, out, depth + 1)
        else:
            off = u.unpack_from(b, ve + 1)[0]
            if off >= size:
                raise ValueError("JSON: value offset outside its container")
            _value(b, vt, p + off, out, depth + 1)
    out.append("}" if is_obj else "]")


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def json_double_text(v: float) -> str:
    """A JSON double as MySQL prints it: shortest digits, ``1.0`` for integral values, ``1e20``."""
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError("JSON: NaN/infinity is not a JSON number")
    s = repr(v)
    if "e" in s:
        mant, _, exp = s.partition("e")
        e = int(exp)
        return f"{mant.removesuffix('.0')}e{e}"
    return s


def _packed_datetime(v: int) -> tuple[str, int, int, int, int, int, int, int]:
    sign = ""
    if v < 0:
        sign = "-"
        v = -v
    us = v % (1 << 24)
    ymdhms = v >> 24
    ymd = ymdhms >> 17
    ym = ymd >> 5
    hms = ymdhms % (1 << 17)
    return (sign, ym // 13, ym % 13, ymd % 32, hms >> 12, (hms >> 6) % 64, hms % 64, us)


def opaque_text(ftype: int, data: bytes) -> str:
    """An opaque JSON value: DECIMAL as a number, temporal values as strings, else base64."""
    if ftype == _OPAQUE_DECIMAL and len(data) >= 2:
        precision, scale = data[0], data[1]
        if scale > precision or decimal_size(precision, scale) > len(data) - 2:
            raise ValueError("JSON: malformed DECIMAL opaque value")
        return decode_decimal(data[2:], precision, scale)
    if ftype in (_OPAQUE_DATE, _OPAQUE_TIME, _OPAQUE_DATETIME, _OPAQUE_TIMESTAMP) and len(
            data) >= 8:
        sign, y, mo, d, h, mi, s, us = _packed_datetime(_I64.unpack_from(data, 0)[0])
        if ftype == _OPAQUE_DATE:
            return f'"{y:04d}-{mo:02d}-{d:02d}"'
        if ftype == _OPAQUE_TIME:
            hms = abs(_I64.unpack_from(data, 0)[0]) >> 24
            hours = (hms >> 12) % (1 << 10)
            return f'"{sign}{hours:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}.{us:06d}"'
        return f'"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}.{us:06d}"'
    return '"base64:type' + str(ftype) + ":" + base64.b64encode(data).decode("ascii") + '"'


# ----------------------------------------------------------------------------- partial updates
#: Json_diff operations in PARTIAL_UPDATE_ROWS_EVENT
DIFF_OPERATIONS = {0: "REPLACE", 1: "INSERT", 2: "REMOVE"}


def render_json_diff(column: str, diffs: list[tuple[int, str, str | None]]) -> str:
    """A list of (operation, path, value text) as mysqlbinlog writes it:
    ``JSON_INSERT(JSON_REPLACE(@2, '$.a', 1), '$.b', 2)``."""
    expr = column
    for op, path, value in diffs:
        name = DIFF_OPERATIONS.get(op, f"OP{op}")
        qpath = "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"
        if value is None:
            expr = f"JSON_{name}({expr}, {qpath})"
        else:
            expr = f"JSON_{name}({expr}, {qpath}, CAST({_sql_quote(value)} AS JSON))"
    return expr


def _sql_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
