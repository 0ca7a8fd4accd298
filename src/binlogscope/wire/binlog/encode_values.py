"""Column values of row images, encoded: the inverse of :mod:`values` (one encoder per type).

``encode_value(column, value)`` takes a value in the form the decoder returns for that column
(``make_reader(column)(data, 0)[0]``) and gives the bytes the reader reads back to it: ints for
the integer types and BIT, ``float`` for FLOAT/DOUBLE, exact text for DECIMAL (``"-12.50"``) and
the temporal types (``"2024-01-31 12:00:00.250"``, ``"-838:59:59"``), ``str`` (or ``bytes`` for
the binary charset) for character columns, ENUM/SET member names (or the raw index/mask),
JSON text for MySQL JSON columns (stored as MySQL binary JSON), a list of floats for VECTOR.
For convenience it also takes ``datetime``/``date``/``timedelta``/``Decimal`` values for the
temporal and DECIMAL types. A value the column cannot hold raises ``ValueError``.

:func:`encode_json_binary` writes MySQL's binary JSON (the inverse of
:func:`json_binary.json_binary_to_text`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import struct
from decimal import Decimal, localcontext
from typing import Any

from binlogscope.wire.binlog import json_binary as jb
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import (
    BLOB_TYPES,
    codec_for,
    decimal_layout,
    effective_type,
    hires_size,
    string_max_length,
)

_INT_SIZES: dict[int, int] = {T.MYSQL_TYPE_TINY: 1, T.MYSQL_TYPE_SHORT: 2, T.MYSQL_TYPE_INT24: 3,
              T.MYSQL_TYPE_LONG: 4, T.MYSQL_TYPE_LONGLONG: 8}
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


# ----------------------------------------------------------------------------- helpers
def _int_le(v: int, size: int, unsigned: bool) -> bytes:
    v = int(v)
    if not unsigned and v < 0:
        v += 1 << (8 * size)
    return v.to_bytes(size, "little")


def _text_bytes(v: Any, collation: int | None) -> bytes:
    """Bytes of a character value: bytes as they are, text in the collation's charset (UTF-8
    for the binary charset)."""
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    codec = codec_for(collation) or "utf-8"
    return str(v).encode(codec, "surrogateescape")


def _length_prefixed(data: bytes, prefix: int) -> bytes:
    if len(data) >= 1 << (8 * prefix):
        raise ValueError(f"{len(data)} bytes do not fit a {prefix}-byte length prefix")
    return len(data).to_bytes(prefix, "little") + data


def _frac_raw(us: int, fsp: int) -> bytes:
    """Microseconds as the 0-3 big-endian fraction bytes of TIME2/DATETIME2/TIMESTAMP2."""
    n = (fsp + 1) // 2
    if n == 0:
        return b""
    return (us // (10_000, 100, 1)[n - 1]).to_bytes(n, "big")


def _split_frac(text: str) -> tuple[str, int]:
    """``"12:00:01.25"`` -> (``"12:00:01"``, 250000 microseconds)."""
    whole, _, frac = text.partition(".")
    return whole, int(frac.ljust(6, "0")[:6]) if frac else 0


def _date_parts(v: Any) -> tuple[int, int, int]:
    if isinstance(v, dt.date):
        return v.year, v.month, v.day
    y, m, d = (int(x) for x in str(v).split("-"))
    return y, m, d


def _datetime_parts(v: Any) -> tuple[int, int, int, int, int, int, int]:
    """(year, month, day, hour, minute, second, microsecond) of text or a datetime."""
    if isinstance(v, dt.datetime):
        return v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond
    if isinstance(v, dt.date):
        return v.year, v.month, v.day, 0, 0, 0, 0
    day, _, tod = str(v).replace("T", " ").partition(" ")
    y, m, d = _date_parts(day)
    whole, us = _split_frac(tod or "00:00:00")
    hh, mi, ss = (int(x) for x in whole.split(":"))
    return y, m, d, hh, mi, ss, us


def _time_parts(v: Any) -> tuple[bool, int, int]:
    """(negative, whole seconds, microseconds) of ``[-]HHH:MM:SS[.frac]`` or a timedelta."""
    if isinstance(v, dt.timedelta):
        total = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
        neg = total < 0
        secs, us = divmod(abs(total), 1_000_000)
        return neg, secs, us
    if isinstance(v, int | float) and not isinstance(v, bool):
        return _time_parts(dt.timedelta(seconds=v))
    text = str(v)
    neg = text.startswith("-")
    whole, us = _split_frac(text.lstrip("-"))
    hh, mi, ss = (int(x) for x in whole.split(":"))
    return neg, hh * 3600 + mi * 60 + ss, us


def _timestamp_parts(v: Any) -> tuple[int, int]:
    """(seconds since the epoch, microseconds) of UTC text, a datetime or a number."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        secs = int(v)
        us: int = round((float(v) - secs) * 1_000_000)
        return secs, us
    if isinstance(v, dt.datetime):
        aware = v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
        return calendar.timegm(aware.utctimetuple()), v.microsecond
    y, m, d, hh, mi, ss, us = _datetime_parts(v)
    if (y, m, d) == (0, 0, 0):
        return 0, us
    return calendar.timegm((y, m, d, hh, mi, ss, 0, 0, 0)), us


# ----------------------------------------------------------------------------- decimal
def encode_decimal(v: Any, precision: int, scale: int) -> bytes:
    """MySQL packed DECIMAL(precision, scale) of text/Decimal/int (rounded to ``scale``)."""
    with localcontext() as lc:
        lc.prec = 200  # 65 digits and more without rounding
        d = Decimal(str(v)) if not isinstance(v, Decimal) else v
        text = f"{abs(d):.{scale}f}"
    neg = d < 0 and Decimal(text) != 0
    ip, _, fp = text.partition(".")
    size, gi, gf = decimal_layout(precision, scale)
    intg = precision - scale
    if len(ip.lstrip("0")) > intg:
        raise ValueError(f"{v} does not fit DECIMAL({precision},{scale})")
    digits = ip.rjust(intg, "0")[-intg:] if intg else ""
    n = 0
    pos = 0
    lead = intg % 9
    for shift, _mask in gi:
        width = lead if (pos == 0 and lead) else 9
        n |= int(digits[pos : pos + width] or "0") << shift
        pos += width
    fpos = 0
    for shift, _mask, ndig in gf:
        n |= int(fp[fpos : fpos + ndig] or "0") << shift
        fpos += ndig
    n |= 1 << (size * 8 - 1)
    if neg:
        n ^= (1 << (size * 8)) - 1
    return n.to_bytes(size, "big")


# ----------------------------------------------------------------------------- temporal
def encode_datetime2(v: Any, fsp: int) -> bytes:
    y, m, d, hh, mi, ss, us = _datetime_parts(v)
    ymd = ((y * 13 + m) << 5) | d
    packed = (ymd << 17 | hh << 12 | mi << 6 | ss) + 0x8000000000
    return packed.to_bytes(5, "big") + _frac_raw(us, fsp)


def encode_timestamp2(v: Any, fsp: int) -> bytes:
    secs, us = _timestamp_parts(v)
    return secs.to_bytes(4, "big") + _frac_raw(us, fsp)


def encode_time2(v: Any, fsp: int) -> bytes:
    neg, secs, us = _time_parts(v)
    hh, rest = divmod(secs, 3600)
    mi, ss = divmod(rest, 60)
    intpart = hh << 12 | mi << 6 | ss
    nf = (fsp + 1) // 2
    if nf == 3:
        packed = (intpart << 24) + us
        if neg:
            packed = -packed
        return (packed + 0x800000000000).to_bytes(6, "big")
    frac = us // (10_000 if nf == 1 else 100) if nf else 0
    if neg:
        intpart = -intpart
        if frac:
            intpart -= 1
            frac = (0x100 if nf == 1 else 0x10000) - frac
    out = (intpart + 0x800000).to_bytes(3, "big")
    return out + (frac.to_bytes(nf, "big") if nf else b"")


def encode_date(v: Any) -> bytes:
    y, m, d = _date_parts(v)
    return (y << 9 | m << 5 | d).to_bytes(3, "little")


def encode_mariadb_hires(col_type: int, v: Any, dec: int) -> bytes:
    """MariaDB's pre-10.3 hi-res TIME/DATETIME/TIMESTAMP with ``dec`` decimals."""
    n = hires_size(col_type, dec)
    scale = int(10 ** (6 - dec))
    if col_type == T.MYSQL_TYPE_TIMESTAMP:
        secs, us = _timestamp_parts(v)
        return secs.to_bytes(4, "big") + (us // scale).to_bytes(n - 4, "big")
    if col_type == T.MYSQL_TYPE_TIME:
        neg, secs, us = _time_parts(v)
        packed = (secs * 1_000_000 + us) * (-1 if neg else 1)
        zero = (838 * 3600 + 59 * 60 + 59 + 1) * int(10**dec)
        return (packed // scale + zero).to_bytes(n, "big")
    y, m, d, hh, mi, ss, us = _datetime_parts(v)
    secs = ((((y * 13 + m) * 32 + d) * 24 + hh) * 60 + mi) * 60 + ss
    return ((secs * 1_000_000 + us) // scale).to_bytes(n, "big")


def _time_old(v: Any) -> bytes:
    neg, secs, _ = _time_parts(v)
    hh, rest = divmod(secs, 3600)
    mi, ss = divmod(rest, 60)
    n = hh * 10000 + mi * 100 + ss
    return (-n if neg else n).to_bytes(3, "little", signed=True)


def _datetime_old(v: Any) -> bytes:
    y, m, d, hh, mi, ss, _ = _datetime_parts(v)
    return struct.pack("<Q", (y * 10000 + m * 100 + d) * 1_000_000 + hh * 10000 + mi * 100 + ss)


# ----------------------------------------------------------------------------- JSON
def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _json_scalar(v: Any) -> tuple[int, bytes]:
    """(type byte, value bytes) of a JSON scalar."""
    if v is None or isinstance(v, bool):
        return jb.LITERAL, bytes((0 if v is None else 1 if v else 2,))
    if isinstance(v, int):
        for t, lo, hi, fmt in ((jb.INT16, -(1 << 15), 1 << 15, "<h"),
                               (jb.INT32, -(1 << 31), 1 << 31, "<i"),
                               (jb.INT64, -(1 << 63), 1 << 63, "<q"),
                               (jb.UINT64, 0, 1 << 64, "<Q")):
            if lo <= v < hi:
                return t, struct.pack(fmt, v)
        raise ValueError(f"JSON integer {v} does not fit 64 bits")
    if isinstance(v, float):
        return jb.DOUBLE, _F64.pack(v)
    if isinstance(v, str):
        data = v.encode("utf-8")
        return jb.STRING, _varlen(len(data)) + data
    if isinstance(v, dict | list):
        return _json_container(v)
    raise ValueError(f"{type(v).__name__} is not a JSON value")


def _json_container(v: dict[str, Any] | list[Any]) -> tuple[int, bytes]:
    is_obj = isinstance(v, dict)
    items: list[tuple[bytes, Any]]
    if isinstance(v, dict):
        # MySQL keeps object keys sorted by length, then bytes
        items = sorted(((k.encode("utf-8"), x) for k, x in v.items()),
                       key=lambda kv: (len(kv[0]), kv[0]))
    else:
        items = [(b"", x) for x in v]
    for large in (False, True):
        w = 4 if large else 2
        inline = ((jb.LITERAL, jb.INT16, jb.UINT16, jb.INT32, jb.UINT32) if large
                  else (jb.LITERAL, jb.INT16, jb.UINT16))
        count = len(items)
        head = 2 * w + count * ((w + 2) if is_obj else 0) + count * (1 + w)
        keys = b"".join(k for k, _ in items)
        entries = bytearray()
        values = bytearray()
        koff = head
        key_entries = bytearray()
        for k, _ in items if is_obj else ():
            key_entries += koff.to_bytes(w, "little") + len(k).to_bytes(2, "little")
            koff += len(k)
        voff = head + len(keys)
        for _, x in items:
            t, data = _json_scalar(x)
            if t in inline:
                entries += bytes((t,)) + data.ljust(w, b"\0")
            else:
                entries += bytes((t,)) + (voff + len(values)).to_bytes(w, "little")
                values += data
        size = voff + len(values)
        if not large and size >= 1 << 16:
            continue
        body = (count.to_bytes(w, "little") + size.to_bytes(w, "little") + key_entries
                + entries + keys + values)
        if is_obj:
            return (jb.LARGE_OBJECT if large else jb.SMALL_OBJECT), body
        return (jb.LARGE_ARRAY if large else jb.SMALL_ARRAY), body
    raise AssertionError("unreachable")


def encode_json_binary(v: Any) -> bytes:
    """MySQL binary JSON of a Python JSON value (dict, list, str, int, float, bool, None)."""
    t, data = _json_scalar(v)
    return bytes((t,)) + data


# ----------------------------------------------------------------------------- the dispatcher
def encode_value(col: ColumnInfo, v: Any, *, mariadb: bool = False) -> bytes:
    """The row-image bytes of one non-NULL value of ``col`` (see the module docstring)."""
    t = col.type
    real = effective_type(col)
    size = _INT_SIZES.get(t)
    if size is not None:
        return _int_le(v, size, col.unsigned)
    if t == T.MYSQL_TYPE_FLOAT:
        return _F32.pack(float(v))
    if t == T.MYSQL_TYPE_DOUBLE:
        return _F64.pack(float(v))
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        return encode_decimal(v, col.meta >> 8, col.meta & 0xFF)
    if t == T.MYSQL_TYPE_STRING and real in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        width = col.meta & 0xFF
        if real == T.MYSQL_TYPE_ENUM:
            idx = v if isinstance(v, int) else (
                0 if v == "" else (col.enum_values or []).index(v) + 1)
            return int(idx).to_bytes(width, "little")
        if isinstance(v, int):
            mask = v
        else:
            members = col.set_values or []
            mask = 0
            for name in (str(v).split(",") if v else []):
                mask |= 1 << members.index(name)
        return mask.to_bytes(width, "little")
    if t == T.MYSQL_TYPE_STRING:
        data = _text_bytes(v, col.charset)
        return _length_prefixed(data, 2 if string_max_length(col) > 255 else 1)
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return _length_prefixed(_text_bytes(v, col.charset), 2 if col.meta > 255 else 1)
    if t in BLOB_TYPES:
        data = _text_bytes(v, col.charset)
        return _length_prefixed(data, col.meta or 2)
    if t == T.MYSQL_TYPE_JSON:
        if mariadb:
            data = str(v).encode("utf-8", "surrogateescape")
        else:
            data = encode_json_binary(json.loads(v) if isinstance(v, str) else v)
        return _length_prefixed(data, col.meta or 4)
    if t == T.MYSQL_TYPE_GEOMETRY:
        return _length_prefixed(bytes(v), col.meta or 4)
    if t == T.MYSQL_TYPE_VECTOR:
        return _length_prefixed(struct.pack(f"<{len(v)}f", *v), col.meta or 4)
    if t == T.MYSQL_TYPE_YEAR:
        return bytes((0 if int(v) == 0 else int(v) - 1900,))
    if t in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        return encode_date(v)
    if t == T.MYSQL_TYPE_TIME2:
        return encode_time2(v, col.meta)
    if t == T.MYSQL_TYPE_DATETIME2:
        return encode_datetime2(v, col.meta)
    if t == T.MYSQL_TYPE_TIMESTAMP2:
        return encode_timestamp2(v, col.meta)
    if t in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIMESTAMP):
        if col.hires_dec:
            return encode_mariadb_hires(t, v, col.hires_dec)
        if t == T.MYSQL_TYPE_TIME:
            return _time_old(v)
        if t == T.MYSQL_TYPE_DATETIME:
            return _datetime_old(v)
        return _timestamp_parts(v)[0].to_bytes(4, "little")
    if t == T.MYSQL_TYPE_BIT:
        n = (col.meta >> 8) + (1 if col.meta & 0xFF else 0)
        return int(v).to_bytes(n, "big")
    if t == T.MYSQL_TYPE_NULL:
        return b""
    raise ValueError(f"column {col.label}: no row encoder for column type {t}")


__all__ = [
    "encode_date",
    "encode_datetime2",
    "encode_decimal",
    "encode_json_binary",
    "encode_mariadb_hires",
    "encode_time2",
    "encode_timestamp2",
    "encode_value",
]
