"""Column values of row images: one decoder per column type (see docs/value-contract.md).

This module holds the readers of every column type, the column classification and the value
presentation (``value_to_text``, ``display_value``). The value kinds with more to them live
beside it and are re-exported here: ``values_numeric`` (DECIMAL, FLOAT/DOUBLE text),
``values_temporal`` (every date/time format), ``json_binary`` (MySQL binary JSON) and
``_collations`` (the one collation/charset table).

Every column type has a *reader factory* ``make_reader(column)`` that returns a closure
``reader(data, pos) -> (value, new_pos)`` specialised for that column (its metadata, charset,
signedness are looked up once). Row decoding (``rows.py``) calls these readers in both the fast
and the recording path, so the two cannot produce different values.

The pure helpers (``decode_decimal``, ``decode_time2``, ...) work on plain bytes and are what the
readers call; they are also the unit-test surface.

Readers do not check bounds against the end of the event: a value that runs past the end either
raises (``IndexError``/``struct.error``) or returns a ``new_pos`` beyond the end, which the row
decoder turns into a ``ShortRead``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog._collations import (
    CHARSET_CODECS,
    DEFAULT_CODEC,
    codec_for,
)
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.json_binary import json_binary_to_text
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values_numeric import (
    Reader,
    _decimal_reader,
    _server_float_text,
    _server_float_text_reference,
    decimal_layout,
    decimal_size,
    decode_decimal,
    double_text,
    float32_shortest,
    float32_text,
)
from binlogscope.wire.binlog.values_temporal import (
    DAY_TEXT,
    HMS_TEXT,
    TOD_TEXT,
    YMD_TEXT,
    _date_rd,
    _datetime2_reader,
    _datetime_old_rd,
    _hires_reader,
    _time2_reader,
    _time_old_rd,
    _timestamp2_reader,
    _timestamp_rd,
    datetime2_formatter,
    decode_date,
    decode_datetime2,
    decode_datetime_old,
    decode_mariadb_hires,
    decode_time2,
    decode_time_old,
    decode_timestamp2,
    frac_table,
    frac_texts,
    hires_plausible,
    hires_size,
    timestamp2_formatter,
)

# ----------------------------------------------------------------------------- classification
NUMERIC_TYPES = frozenset({
    T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
    T.MYSQL_TYPE_LONGLONG, T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_DECIMAL, T.MYSQL_TYPE_FLOAT,
    T.MYSQL_TYPE_DOUBLE,
})
CHARACTER_TYPES = frozenset({
    T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_BLOB,
    T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
})
BLOB_TYPES = frozenset({
    T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
})


def effective_type(col: ColumnInfo) -> int:
    """The type that decides the row format: the real type of STRING columns (ENUM/SET/CHAR)."""
    if col.type == T.MYSQL_TYPE_STRING and col.real_type is not None:
        return col.real_type
    return col.type


def is_numeric(col: ColumnInfo) -> bool:
    return col.type in NUMERIC_TYPES


def is_character(col: ColumnInfo) -> bool:
    """Columns the DEFAULT_CHARSET/COLUMN_CHARSET metadata counts (ENUM/SET excluded)."""
    return effective_type(col) in CHARACTER_TYPES


def is_enum_or_set(col: ColumnInfo) -> bool:
    return effective_type(col) in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET)


def string_max_length(col: ColumnInfo) -> int:
    """Max byte length of a STRING (CHAR/BINARY) column, with the high-bits trick undone."""
    return col.meta & 0xFF if col.real_type is None else _string_len(col.meta)


def _string_len(meta: int) -> int:
    byte0, byte1 = meta >> 8, meta & 0xFF
    if (byte0 & 0x30) != 0x30:
        return byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte1


def split_string_meta(meta: int) -> tuple[int, int]:
    """STRING metadata (byte0 << 8 | byte1) -> (real_type, max_length).

    CHAR columns longer than 255 bytes keep bits 8-9 of the length in bits 4-5 of the real type
    byte, inverted (MySQL bug 37426): a real type whose 0x30 bits are not both set carries them.
    """
    byte0, byte1 = meta >> 8, meta & 0xFF
    if (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte0, byte1


# ----------------------------------------------------------------------------- readers
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_INTS: dict[tuple[int, bool], struct.Struct] = {
    (T.MYSQL_TYPE_TINY, False): struct.Struct("<b"),
    (T.MYSQL_TYPE_TINY, True): struct.Struct("<B"),
    (T.MYSQL_TYPE_SHORT, False): struct.Struct("<h"),
    (T.MYSQL_TYPE_SHORT, True): struct.Struct("<H"),
    (T.MYSQL_TYPE_LONG, False): struct.Struct("<i"),
    (T.MYSQL_TYPE_LONG, True): struct.Struct("<I"),
    (T.MYSQL_TYPE_LONGLONG, False): struct.Struct("<q"),
    (T.MYSQL_TYPE_LONGLONG, True): struct.Struct("<Q"),
    (T.MYSQL_TYPE_FLOAT, False): _F32,
    (T.MYSQL_TYPE_FLOAT, True): _F32,
    (T.MYSQL_TYPE_DOUBLE, False): _F64,
    (T.MYSQL_TYPE_DOUBLE, True): _F64,
}


def _fixed(st: struct.Struct) -> Reader:
    unpack = st.unpack_from
    size = st.size

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        return unpack(b, p)[0], p + size

    return rd


def _int24(unsigned: bool) -> Reader:
    def rd(b: bytes, p: int) -> tuple[Any, int]:
        v = b[p] | b[p + 1] << 8 | b[p + 2] << 16
        if not unsigned and v & 0x800000:
            v -= 0x1000000
        return v, p + 3

    return rd


def _year_rd(b: bytes, p: int) -> tuple[Any, int]:
    v = b[p]
    return (1900 + v if v else 0), p + 1


def _null_rd(b: bytes, p: int) -> tuple[Any, int]:
    return None, p


def _bit(meta: int) -> Reader:
    n = (meta >> 8) + (1 if meta & 0xFF else 0)

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        return int.from_bytes(b[p : p + n], "big"), p + n

    return rd


def _length_prefixed(prefix: int, decode: Callable[[bytes], Any]) -> Reader:
    if prefix == 1:
        def rd1(b: bytes, p: int) -> tuple[Any, int]:
            e = p + 1 + b[p]
            return decode(b[p + 1 : e]), e
        return rd1
    if prefix == 2:
        def rd2(b: bytes, p: int) -> tuple[Any, int]:
            e = p + 2 + (b[p] | b[p + 1] << 8)
            return decode(b[p + 2 : e]), e
        return rd2
    if prefix not in (3, 4):
        raise ValueError(f"unsupported length-prefix size {prefix}")

    def rdn(b: bytes, p: int) -> tuple[Any, int]:
        e = p + prefix + int.from_bytes(b[p : p + prefix], "little")
        return decode(b[p + prefix : e]), e

    return rdn


def _text_decoder(codec: str | None) -> Callable[[bytes], Any]:
    if codec is None:
        return bytes
    if codec == "utf-8":
        def dec_utf8(x: bytes) -> str:
            return x.decode("utf-8", "surrogateescape")
        return dec_utf8

    def dec(x: bytes) -> str:
        return x.decode(codec, "surrogateescape")

    return dec


def _string_reader(col: ColumnInfo) -> Reader:
    """CHAR/BINARY (real type STRING), ENUM and SET columns (type STRING)."""
    real = effective_type(col)
    if real == T.MYSQL_TYPE_ENUM:
        size = col.meta & 0xFF
        names = col.enum_values

        def rd_enum(b: bytes, p: int) -> tuple[Any, int]:
            idx = int.from_bytes(b[p : p + size], "little")
            if names is not None:
                if idx == 0:
                    return "", p + size
                if idx <= len(names):
                    return names[idx - 1], p + size
            return idx, p + size

        return rd_enum
    if real == T.MYSQL_TYPE_SET:
        size = col.meta & 0xFF
        members = col.set_values

        def rd_set(b: bytes, p: int) -> tuple[Any, int]:
            mask = int.from_bytes(b[p : p + size], "little")
            if members is not None and mask < (1 << len(members)):
                return ",".join(m for i, m in enumerate(members) if mask >> i & 1), p + size
            return mask, p + size

        return rd_set
    max_len = string_max_length(col)
    codec = codec_for(col.charset)
    base = _length_prefixed(2 if max_len > 255 else 1, _text_decoder(codec))
    if codec is None and col.charset == 63 and max_len:
        # BINARY(n): what SELECT returns is padded with 0x00 to the full length
        def rd_binary(b: bytes, p: int) -> tuple[Any, int]:
            v, e = base(b, p)
            return v.ljust(max_len, b"\0"), e
        return rd_binary
    return base


def _vector_decode(x: bytes) -> list[float]:
    n = len(x) // 4
    return list(struct.unpack(f"<{n}f", x[: n * 4]))


def _json_decode(x: bytes) -> str:
    return json_binary_to_text(x)


def make_reader(col: ColumnInfo, *, mariadb: bool = False) -> Reader:
    """The reader closure for one column (type, metadata and charset fixed at compile time)."""
    t = col.type
    if t == T.MYSQL_TYPE_STRING:
        return _string_reader(col)
    st = _INTS.get((t, col.unsigned))
    if st is not None:
        return _fixed(st)
    if t == T.MYSQL_TYPE_INT24:
        return _int24(col.unsigned)
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        return _decimal_reader(col.meta >> 8, col.meta & 0xFF)
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return _length_prefixed(2 if col.meta > 255 else 1, _text_decoder(codec_for(col.charset)))
    if t in BLOB_TYPES:
        size = col.meta or 2
        if col.charset is None:
            return _length_prefixed(size, bytes)  # BLOB/TEXT without charset metadata
        return _length_prefixed(size, _text_decoder(codec_for(col.charset)))
    if t == T.MYSQL_TYPE_JSON:
        if mariadb:
            return _length_prefixed(col.meta or 4, _text_decoder("utf-8"))
        return _length_prefixed(col.meta or 4, _json_decode)
    if t == T.MYSQL_TYPE_GEOMETRY:
        return _length_prefixed(col.meta or 4, bytes)
    if t == T.MYSQL_TYPE_VECTOR:
        return _length_prefixed(col.meta or 4, _vector_decode)
    if t == T.MYSQL_TYPE_YEAR:
        return _year_rd
    if t in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        return _date_rd
    if t == T.MYSQL_TYPE_TIME2:
        return _time2_reader(col.meta)
    if t == T.MYSQL_TYPE_DATETIME2:
        return _datetime2_reader(col.meta)
    if t == T.MYSQL_TYPE_TIMESTAMP2:
        return _timestamp2_reader(col.meta)
    if t in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIMESTAMP):
        if col.hires_dec:
            return _hires_reader(t, col.hires_dec)
        return {T.MYSQL_TYPE_TIME: _time_old_rd, T.MYSQL_TYPE_DATETIME: _datetime_old_rd,
                T.MYSQL_TYPE_TIMESTAMP: _timestamp_rd}[T(t)]
    if t == T.MYSQL_TYPE_BIT:
        return _bit(col.meta)
    if t == T.MYSQL_TYPE_NULL:
        return _null_rd
    raise ValueError(f"column {col.label}: no row decoder for column type {type_name(col)}")


# ----------------------------------------------------------------------------- presentation
def type_name(col: ColumnInfo) -> str:
    t = effective_type(col)
    try:
        return T(t).name
    except ValueError:
        return f"MYSQL_TYPE_{t}"


def column_doc(col: ColumnInfo) -> str:
    """One line naming the column's type and how its bytes are read."""
    t = effective_type(col)
    base = type_name(col)
    sign = " UNSIGNED" if col.unsigned else ""
    how = _HOW.get(t, "")
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        how = (f"DECIMAL({col.meta >> 8},{col.meta & 0xFF}): MySQL packed decimal, 9 digits per "
               "4 bytes, big-endian, sign in the top bit")
    elif t in (T.MYSQL_TYPE_TIME2, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2):
        how = f"fsp {col.meta}: " + how
    elif col.type in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME,
                      T.MYSQL_TYPE_TIMESTAMP) and col.hires_dec:
        how = (f"MariaDB hi-res format (mysql56_temporal_format=OFF), {col.hires_dec} decimals "
               f"(from the {col.hires_source or 'row bytes'}; the TABLE_MAP does not carry "
               "them): big-endian, fraction scaled to the decimals")
    elif col.charset is not None and t in CHARACTER_TYPES:
        codec = codec_for(col.charset)
        how += f"; charset {col.charset} ({codec or 'binary: kept as bytes'})"
    return f"{col.label}: {base}{sign} - {how}" if how else f"{col.label}: {base}{sign}"


_HOW: dict[int, str] = {
    T.MYSQL_TYPE_TINY: "1-byte little-endian integer",
    T.MYSQL_TYPE_SHORT: "2-byte little-endian integer",
    T.MYSQL_TYPE_INT24: "3-byte little-endian integer",
    T.MYSQL_TYPE_LONG: "4-byte little-endian integer",
    T.MYSQL_TYPE_LONGLONG: "8-byte little-endian integer",
    T.MYSQL_TYPE_FLOAT: "IEEE-754 float32, little-endian",
    T.MYSQL_TYPE_DOUBLE: "IEEE-754 float64, little-endian",
    T.MYSQL_TYPE_YEAR: "1 byte: year - 1900 (0 means YEAR 0000)",
    T.MYSQL_TYPE_DATE: "3 bytes: day | month << 5 | year << 9",
    T.MYSQL_TYPE_NEWDATE: "3 bytes: day | month << 5 | year << 9",
    T.MYSQL_TYPE_TIME: "old 3-byte signed integer HHMMSS",
    T.MYSQL_TYPE_DATETIME: "old 8-byte integer YYYYMMDDhhmmss",
    T.MYSQL_TYPE_TIMESTAMP: "4-byte seconds since the epoch (UTC)",
    T.MYSQL_TYPE_TIME2: "3 bytes big-endian (offset 0x800000) + fraction",
    T.MYSQL_TYPE_DATETIME2: "5 bytes big-endian packed year*13+month/day/h/m/s + fraction",
    T.MYSQL_TYPE_TIMESTAMP2: "4-byte big-endian seconds since the epoch + fraction",
    T.MYSQL_TYPE_VARCHAR: "length (1 or 2 bytes, by max length) + bytes",
    T.MYSQL_TYPE_VAR_STRING: "length (1 or 2 bytes, by max length) + bytes",
    T.MYSQL_TYPE_STRING: "CHAR/BINARY: length (1 or 2 bytes) + bytes, trailing pad stripped",
    T.MYSQL_TYPE_ENUM: "1 or 2 bytes: 1-based index into the ENUM members (0 = '')",
    T.MYSQL_TYPE_SET: "1-8 bytes: bitmask of SET members",
    T.MYSQL_TYPE_BLOB: "BLOB/TEXT: length (metadata says 1-4 bytes) + bytes",
    T.MYSQL_TYPE_JSON: "length + MySQL binary JSON",
    T.MYSQL_TYPE_GEOMETRY: "length + 4-byte SRID + WKB",
    T.MYSQL_TYPE_VECTOR: "length + float32 values",
    T.MYSQL_TYPE_BIT: "big-endian bit field, ceil(bits / 8) bytes",
    T.MYSQL_TYPE_NULL: "no bytes",
}


def display_value(value: Any, col: ColumnInfo) -> str:
    """Display string of a decoded value (what mysqlbinlog -v would show, roughly)."""
    if value is None:
        return "NULL"
    if type(value) is int and col.type not in (T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_YEAR):
        return str(value)
    if isinstance(value, bytes):
        if len(value) > 48:
            return value[:48].hex(" ") + f" ... ({len(value)} bytes)"
        return value.hex(" ") if value else "''"
    if isinstance(value, str):
        t = effective_type(col)
        if t in CHARACTER_TYPES or t in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            return repr(value) if len(value) <= 200 else repr(value[:200]) + "..."
        return value if len(value) <= 200 else value[:200] + "..."
    if isinstance(value, list):
        return "[" + ", ".join(float32_shortest(v) for v in value) + "]"
    text = value_to_text(value, col)
    if isinstance(text, bytes):
        return text.hex(" ")
    return text if text is not None else "NULL"


def value_to_text(value: Any, column: ColumnInfo) -> str | bytes | None:
    """The value as the server's text protocol returns it for SELECT (bytes for binary columns)."""
    if value is None:
        return None
    t = effective_type(column)
    if isinstance(value, bool):
        return str(int(value))
    if t == T.MYSQL_TYPE_BIT and isinstance(value, int):
        n = (column.meta >> 8) + (1 if column.meta & 0xFF else 0)
        return value.to_bytes(max(n, 1), "big")
    if t == T.MYSQL_TYPE_YEAR and isinstance(value, int):
        return "0000" if value == 0 else str(value)
    if isinstance(value, float):
        return float32_text(value) if t == T.MYSQL_TYPE_FLOAT else double_text(value)
    if isinstance(value, list):  # VECTOR
        return struct.pack(f"<{len(value)}f", *value)
    if isinstance(value, bytes | str):
        return value
    return str(value)


#: re-exported from the value modules split out of this one (one job each), so every name
#: stays importable from here (the names defined here are exported as usual)
__all__ = [
    "CHARSET_CODECS",
    "DAY_TEXT",
    "DEFAULT_CODEC",
    "HMS_TEXT",
    "TOD_TEXT",
    "YMD_TEXT",
    "Reader",
    "_date_rd",
    "_datetime2_reader",
    "_datetime_old_rd",
    "_decimal_reader",
    "_hires_reader",
    "_server_float_text",
    "_server_float_text_reference",
    "_time2_reader",
    "_time_old_rd",
    "_timestamp2_reader",
    "_timestamp_rd",
    "codec_for",
    "datetime2_formatter",
    "decimal_layout",
    "decimal_size",
    "decode_date",
    "decode_datetime2",
    "decode_datetime_old",
    "decode_decimal",
    "decode_mariadb_hires",
    "decode_time2",
    "decode_time_old",
    "decode_timestamp2",
    "double_text",
    "float32_shortest",
    "float32_text",
    "frac_table",
    "frac_texts",
    "hires_plausible",
    "hires_size",
    "timestamp2_formatter",
]
