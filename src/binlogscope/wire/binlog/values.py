"""Column values of row images: one decoder per column type (see docs/value-contract.md).

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

import functools
import struct
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.json_binary import json_binary_to_text
from binlogscope.wire.binlog.types import ColumnType as T

Reader = Callable[[bytes, int], tuple[Any, int]]

# ----------------------------------------------------------------------------- charsets
#: collation id -> Python codec (None: the binary charset, values stay bytes)
_CODEC_RANGES: list[tuple[tuple[int, ...], str | None]] = [
    ((1, 84), "big5"),
    ((3, 69), "latin1"),  # dec8
    ((4, 80), "cp850"),
    ((6, 72), "latin1"),  # hp8
    ((7, 74), "koi8_r"),
    ((5, 8, 15, 31, 47, 48, 49, 94), "cp1252"),  # MySQL latin1 is cp1252
    ((2, 9, 21, 27, 77), "iso8859_2"),
    ((10, 82), "ascii"),  # swe7
    ((11, 65), "ascii"),
    ((12, 91), "euc_jp"),
    ((13, 88), "shift_jis"),
    ((16, 71), "iso8859_8"),
    ((18, 89), "tis_620"),
    ((19, 85), "euc_kr"),
    ((22, 75), "koi8_u"),
    ((24, 86), "gb2312"),
    ((25, 70), "iso8859_7"),
    ((26, 34, 44, 66, 99), "cp1250"),
    ((28, 87), "gbk"),
    ((30, 78), "iso8859_9"),
    ((32, 64), "latin1"),  # armscii8: no Python codec
    ((33, 83, 76), "utf-8"),
    ((35, 90, 159), "utf-16-be"),  # ucs2
    ((36, 68), "cp866"),
    ((37, 73), "latin1"),  # keybcs2
    ((38, 43), "mac_latin2"),
    ((39, 53), "mac_roman"),
    ((40, 81), "cp852"),
    ((20, 41, 42, 79), "iso8859_13"),
    ((45, 46), "utf-8"),
    ((14, 23, 50, 51, 52), "cp1251"),
    ((54, 55), "utf-16-be"),
    ((56, 62), "utf-16-le"),
    ((57, 67), "cp1256"),
    ((29, 58, 59), "cp1257"),
    ((60, 61), "utf-32-be"),
    ((63,), None),
    ((92, 93), "latin1"),  # geostd8
    ((95, 96), "cp932"),
    ((97, 98), "euc_jp"),  # eucjpms
    ((248, 249, 250), "gb18030"),
]
CHARSET_CODECS: dict[int, str | None] = {}
for _ids, _codec in _CODEC_RANGES:
    for _i in _ids:
        CHARSET_CODECS[_i] = _codec
for _i in range(101, 125):
    CHARSET_CODECS[_i] = "utf-16-be"  # utf16_*_ci
for _i in range(128, 152):
    CHARSET_CODECS[_i] = "utf-16-be"  # ucs2_*_ci
for _i in range(160, 184):
    CHARSET_CODECS[_i] = "utf-32-be"  # utf32_*_ci
for _i in [*range(192, 216), 223]:
    CHARSET_CODECS[_i] = "utf-8"  # utf8mb3_*_ci
for _i in [*range(224, 248), *range(255, 324)]:
    CHARSET_CODECS[_i] = "utf-8"  # utf8mb4_*

DEFAULT_CODEC = "utf-8"


def codec_for(collation: int | None) -> str | None:
    """Python codec for a collation id; None for the binary charset (63)."""
    if collation is None:
        return DEFAULT_CODEC
    return CHARSET_CODECS.get(collation, DEFAULT_CODEC)


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


# ----------------------------------------------------------------------------- decimal
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


def decimal_layout(precision: int, scale: int) -> tuple[int, list[tuple[int, int]], list[
        tuple[int, int, int]]]:
    """(size, integer groups, fraction groups) as (shift, mask[, digits]) over the big int."""
    intg = precision - scale
    sizes_int = ([_DIG2BYTES[intg % 9]] if intg % 9 else []) + [4] * (intg // 9)
    sizes_frac = [(4, 9)] * (scale // 9) + ([(_DIG2BYTES[scale % 9], scale % 9)]
                                             if scale % 9 else [])
    size = sum(sizes_int) + sum(s for s, _ in sizes_frac)
    groups_int: list[tuple[int, int]] = []
    left = size
    for s in sizes_int:
        left -= s
        groups_int.append((left * 8, (1 << (s * 8)) - 1))
    groups_frac: list[tuple[int, int, int]] = []
    for s, digits in sizes_frac:
        left -= s
        groups_frac.append((left * 8, (1 << (s * 8)) - 1, digits))
    return size, groups_int, groups_frac


def decode_decimal(data: bytes, precision: int, scale: int) -> str:
    """MySQL packed DECIMAL(precision, scale) -> exact text (``"-1234.5600"``)."""
    return _decimal_reader(precision, scale)(data, 0)[0]  # type: ignore[no-any-return]


def _decimal_reader(precision: int, scale: int) -> Reader:
    size, gi, gf = decimal_layout(precision, scale)
    sign_bit = 1 << (size * 8 - 1)
    full = (1 << (size * 8)) - 1
    from_bytes = int.from_bytes
    if len(gi) <= 1 and len(gf) <= 1:
        # the common case (up to 9 integer and 9 fraction digits): two shifts and a format
        ishift, imask = gi[0] if gi else (0, 0)
        if gf:
            fshift, fmask, fdigits = gf[0]
            pos_fmt = f"{{}}.{{:0{fdigits}d}}"
            neg_fmt = "-" + pos_fmt

            def rd_small(b: bytes, p: int) -> tuple[Any, int]:
                e = p + size
                if e > len(b):
                    raise ValueError(f"DECIMAL({precision},{scale}) needs {size} bytes")
                v = from_bytes(b[p:e], "big")
                if v & sign_bit:
                    v ^= sign_bit
                    return pos_fmt.format((v >> ishift) & imask, (v >> fshift) & fmask), e
                v ^= full ^ sign_bit
                return neg_fmt.format((v >> ishift) & imask, (v >> fshift) & fmask), e

            return rd_small

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        e = p + size
        if e > len(b):
            raise ValueError(f"DECIMAL({precision},{scale}) needs {size} bytes")
        v = from_bytes(b[p:e], "big")
        neg = not (v & sign_bit)
        v ^= sign_bit
        if neg:
            v ^= full
        ip = 0
        for shift, mask in gi:
            ip = ip * 1_000_000_000 + ((v >> shift) & mask)
        text = str(ip)
        if gf:
            text += "." + "".join(
                str((v >> shift) & mask).zfill(digits) for shift, mask, digits in gf)
        return ("-" + text if neg else text), e

    return rd


# ----------------------------------------------------------------------------- temporal
def _frac(us: int, fsp: int) -> str:
    return "." + f"{us:06d}"[:fsp] if fsp else ""


def _fsp_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


def _read_frac_us(b: bytes, p: int, fsp: int) -> int:
    """Fraction of TIMESTAMP2/DATETIME2 (big-endian, ceil(fsp/2) bytes) in microseconds."""
    if fsp <= 0:
        return 0
    n = _fsp_bytes(fsp)
    v = int.from_bytes(b[p : p + n], "big")
    return v * (10_000, 100, 1)[n - 1]


# Formatting temporal values is the costly part of row decoding; the pieces repeat (dates,
# times of day, fractions), so they are cached in bounded dicts keyed by the raw integers.
_CACHE_LIMIT = 1 << 17  # > 86,400 seconds of a day and 2^17 packed h:m:s


class _Cache(dict[int, str]):
    """A dict that forgets everything when it grows past ``_CACHE_LIMIT`` (bounded memory)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[int], str]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: int) -> str:
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        v = self[key] = self.make(key)
        return v


def _ymd_text(ymd: int) -> str:
    ym = ymd >> 5
    return f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d}"


def _hms_text(hms: int) -> str:
    return f"{hms >> 12:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}"


_YMD = YMD_TEXT = _Cache(_ymd_text)
_HMS = HMS_TEXT = _Cache(_hms_text)


def _day_text(day: int) -> str:
    t = time.gmtime(day * 86400)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"


def _tod_text(secs: int) -> str:
    return f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"


_DAY = DAY_TEXT = _Cache(_day_text)
_TOD = TOD_TEXT = _Cache(_tod_text)


@functools.cache
def frac_table(fsp: int) -> _Cache | None:
    """For fsp 1-4: the cache raw fraction -> ``".12"`` text (None for other fsp)."""
    if not 1 <= fsp <= 4:
        return None
    scale = (10_000, 100, 1)[_fsp_bytes(fsp) - 1]

    def make(raw: int) -> str:
        return _frac(raw * scale, fsp)

    return _Cache(make)


@functools.cache
def frac_texts(fsp: int) -> Callable[[int], str]:
    """Raw DATETIME2/TIMESTAMP2/TIME2 fraction integer -> ``".123"`` (``""`` for fsp 0)."""
    if fsp <= 0:
        return lambda raw: ""
    if fsp == 6:
        return ".{:06d}".format
    table = frac_table(fsp)
    if table is not None:
        return table.__getitem__

    def frac5(raw: int) -> str:
        return _frac(raw, 5)

    return frac5


@functools.cache
def datetime2_formatter(fsp: int) -> Callable[[int, int], str]:
    """(5-byte big-endian int part, raw fraction) of DATETIME2 -> text."""
    frac = frac_texts(fsp)
    ymd_text = _YMD
    hms_text = _HMS

    def fmt(x: int, fr: int) -> str:
        x -= 0x8000000000
        return f"{ymd_text[x >> 17]} {hms_text[x & 0x1FFFF]}{frac(fr)}"

    return fmt


@functools.cache
def timestamp2_formatter(fsp: int) -> Callable[[int, int], str]:
    """(4-byte big-endian seconds, raw fraction) of TIMESTAMP2 -> text (UTC)."""
    frac = frac_texts(fsp)
    zero = "0000-00-00 00:00:00" + _frac(0, fsp)
    day_text = _DAY
    tod_text = _TOD

    def fmt(secs: int, fr: int) -> str:
        if not secs and not fr:
            return zero
        return f"{day_text[secs // 86400]} {tod_text[secs % 86400]}{frac(fr)}"

    return fmt


def decode_datetime2(data: bytes, fsp: int) -> str:
    return _datetime2_reader(fsp)(data, 0)[0]  # type: ignore[no-any-return]


def _split_temporal_reader(width: int, fsp: int, fmt: Callable[[int, int], str]) -> Reader:
    """DATETIME2/TIMESTAMP2: a big-endian ``width``-byte integer part, then the fraction
    (0-3 big-endian bytes by fsp), formatted by ``fmt(int_part, fraction)``."""
    n = width + _fsp_bytes(fsp)
    from_bytes = int.from_bytes

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        e = p + n
        m = p + width
        return fmt(from_bytes(b[p:m], "big"), from_bytes(b[m:e], "big")), e

    return rd


def _datetime2_reader(fsp: int) -> Reader:
    return _split_temporal_reader(5, fsp, datetime2_formatter(fsp))


def _gmt(secs: int) -> str:
    return f"{_DAY[secs // 86400]} {_TOD[secs % 86400]}"


def decode_timestamp2(data: bytes, fsp: int) -> str:
    return _timestamp2_reader(fsp)(data, 0)[0]  # type: ignore[no-any-return]


def _timestamp2_reader(fsp: int) -> Reader:
    return _split_temporal_reader(4, fsp, timestamp2_formatter(fsp))


def _format_time_packed(packed: int, fsp: int) -> str:
    """MySQL's packed TIME longlong (int part << 24 | microseconds, signed) -> text."""
    sign = ""
    if packed < 0:
        sign = "-"
        packed = -packed
    hms = packed >> 24
    us = packed % (1 << 24)
    return (f"{sign}{(hms >> 12) % (1 << 10):02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}"
            f"{_frac(us, fsp)}")


def decode_time2(data: bytes, fsp: int) -> str:
    return _time2_reader(fsp)(data, 0)[0]  # type: ignore[no-any-return]


def _time2_reader(fsp: int) -> Reader:
    nf = _fsp_bytes(fsp)
    n = 3 + nf

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        if nf == 3:
            packed = int.from_bytes(b[p : p + 6], "big") - 0x800000000000
        else:
            intpart = int.from_bytes(b[p : p + 3], "big") - 0x800000
            if nf == 0:
                packed = intpart << 24
            else:
                frac = int.from_bytes(b[p + 3 : p + 3 + nf], "big")  # unsigned
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x100 if nf == 1 else 0x10000
                packed = (intpart << 24) + frac * (10_000 if nf == 1 else 100)
        return _format_time_packed(packed, fsp), p + n

    return rd


def decode_date(v: int) -> str:
    return f"{v >> 9:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}"


def _date_rd(b: bytes, p: int) -> tuple[Any, int]:
    v = b[p] | b[p + 1] << 8 | b[p + 2] << 16
    return f"{v >> 9:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}", p + 3


def decode_time_old(v: int) -> str:
    """Pre-5.6 TIME: signed 3-byte integer HHMMSS."""
    sign = "-" if v < 0 else ""
    v = abs(v)
    return f"{sign}{v // 10000:02d}:{v // 100 % 100:02d}:{v % 100:02d}"


def _time_old_rd(b: bytes, p: int) -> tuple[Any, int]:
    return decode_time_old(int.from_bytes(b[p : p + 3], "little", signed=True)), p + 3


def decode_datetime_old(v: int) -> str:
    """Pre-5.6 DATETIME: 8-byte integer YYYYMMDDhhmmss."""
    d, t = divmod(v, 1_000_000)
    return (f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} "
            f"{t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}")


_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def _datetime_old_rd(b: bytes, p: int) -> tuple[Any, int]:
    return decode_datetime_old(_U64.unpack_from(b, p)[0]), p + 8


def _timestamp_rd(b: bytes, p: int) -> tuple[Any, int]:
    secs = _U32.unpack_from(b, p)[0]
    return ("0000-00-00 00:00:00" if secs == 0 else _gmt(secs)), p + 4


# MariaDB's pre-10.3 hi-res temporal formats (mysql56_temporal_format=OFF, decimals > 0): no
# metadata in TABLE_MAP, big-endian, fraction scaled to the column's decimals.
_TIME_HIRES_BYTES = (3, 4, 4, 5, 5, 5, 6)
_DATETIME_HIRES_BYTES = (5, 6, 6, 7, 7, 7, 8)
_TIME_MAX_SECONDS = 838 * 3600 + 59 * 60 + 59


def hires_size(col_type: int, dec: int) -> int:
    if col_type == T.MYSQL_TYPE_TIME:
        return _TIME_HIRES_BYTES[dec]
    if col_type == T.MYSQL_TYPE_DATETIME:
        return _DATETIME_HIRES_BYTES[dec]
    return 4 + _fsp_bytes(dec)  # TIMESTAMP


def decode_mariadb_hires(col_type: int, data: bytes, dec: int) -> str:
    """MariaDB hi-res TIME/DATETIME/TIMESTAMP (``Field_*_hires``) with ``dec`` decimals."""
    scale = 10 ** (6 - dec)
    if col_type == T.MYSQL_TYPE_TIMESTAMP:
        secs = int.from_bytes(data[:4], "big")
        us = int.from_bytes(data[4:], "big") * scale
        if us >= 1_000_000:
            raise ValueError(f"TIMESTAMP({dec}) fraction {us} us is not below one second")
        if secs == 0 and us == 0:
            return "0000-00-00 00:00:00" + _frac(0, dec)
        return _gmt(secs) + _frac(us, dec)
    v = int.from_bytes(data, "big")
    if col_type == T.MYSQL_TYPE_TIME:
        zero = (_TIME_MAX_SECONDS + 1) * 10**dec
        packed = (v - zero) * scale
        sign = "-" if packed < 0 else ""
        packed = abs(packed)
        secs, us = divmod(packed, 1_000_000)
        return (f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
                f"{_frac(us, dec)}")
    packed = v * scale
    secs, us = divmod(packed, 1_000_000)
    rest, sec = divmod(secs, 60)
    rest, minute = divmod(rest, 60)
    rest, hour = divmod(rest, 24)
    ym, day = divmod(rest, 32)
    year, month = divmod(ym, 13)
    return (f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{sec:02d}"
            f"{_frac(us, dec)}")


def hires_plausible(col_type: int, text: str, *, lenient: bool = False) -> bool:
    """Whether a hi-res decode with a guessed ``dec`` gives a value the server could store.

    Strict: DATETIME years 1000-9999 (or the zero date), the documented range; lenient: any
    year up to 9999 (non-strict sql_mode stores such dates too).
    """
    try:
        if col_type == T.MYSQL_TYPE_TIME:
            h, m, s = text.lstrip("-").split(".")[0].split(":")
            return int(h) <= 838 and int(m) < 60 and int(s) < 60
        d, t = text.split(" ")
        y, mo, dd = (int(x) for x in d.split("-"))
        hh, mi, ss = (int(x) for x in t.split(".")[0].split(":"))
        if (y, mo, dd) == (0, 0, 0):
            return hh == mi == ss == 0 or lenient
        low = 0 if lenient else 1000
        return low <= y <= 9999 and mo <= 12 and dd <= 31 and hh < 24 and mi < 60 and ss < 60
    except ValueError:
        return False


def _hires_reader(col_type: int, dec: int) -> Reader:
    n = hires_size(col_type, dec)

    def rd(b: bytes, p: int) -> tuple[Any, int]:
        return decode_mariadb_hires(col_type, b[p : p + n], dec), p + n

    return rd


# ----------------------------------------------------------------------------- float text
#: decimal exponents printed in fixed notation by the server; outside it is ``1.5e-16``/``1e15``
_FIXED_EXPONENTS = range(-15, 15)


def float32_text(v: float) -> str:
    """FLOAT as the server prints it: 6 significant digits (``3.14159``, ``1.4013e-45``)."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if v == 0:
        return "-0" if str(v)[0] == "-" else "0"
    return _server_float_text(f"{v:.5e}")


def float32_shortest(v: float) -> str:
    """Shortest decimal text that reads back as the same float32 (VECTOR display)."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    pack = _F32.pack
    target = pack(v)
    for digits in range(1, 10):
        s = f"{v:.{digits}g}"
        if pack(float(s)) == target:
            return s
    return repr(v)


def double_text(v: float) -> str:
    """DOUBLE as the server prints it: the shortest round-trip digits, fixed notation for
    decimal exponents -15..14 (``0.0000123456789``), else ``1.5e-16`` / ``1e15``."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if v == 0:
        return "-0" if str(v)[0] == "-" else "0"
    return _server_float_text(repr(v))


def _server_float_text(s: str) -> str:
    """Digits + exponent (from ``%e`` text or ``repr`` of a finite non-zero float) in the
    server's layout. Plain string work: this runs for every DOUBLE/FLOAT shown in a tree."""
    neg = ""
    if s[0] == "-":
        neg = "-"
        s = s[1:]
    mant, _, exp_text = s.partition("e")
    ip, _, fp = mant.partition(".")
    all_digits = ip + fp
    stripped = all_digits.lstrip("0")
    # decimal exponent of the first significant digit
    e = len(ip) - 1 - (len(all_digits) - len(stripped)) + (int(exp_text) if exp_text else 0)
    return _float_layout(neg, stripped.rstrip("0") or "0", e)


def _server_float_text_reference(s: str) -> str:
    """The same by :class:`decimal.Decimal` (the tests compare the two)."""
    sign, digs, exp = Decimal(s).as_tuple()
    assert isinstance(exp, int)
    n = len(digs)
    while n > 1 and digs[n - 1] == 0:
        n -= 1
        exp += 1
    digits = "".join(map(str, digs[:n]))
    return _float_layout("-" if sign else "", digits, n - 1 + exp)


def _float_layout(neg: str, digits: str, e: int) -> str:
    """Significant ``digits`` whose first has decimal exponent ``e``, as the server writes
    them: fixed notation for exponents -15..14, else ``d.ddde<e>``."""
    n = len(digits)
    if e in _FIXED_EXPONENTS:
        if e < 0:
            return f"{neg}0.{'0' * (-e - 1)}{digits}"
        if n <= e + 1:
            return f"{neg}{digits}{'0' * (e + 1 - n)}"
        return f"{neg}{digits[: e + 1]}.{digits[e + 1:]}"
    mant = digits[0] + ("." + digits[1:] if n > 1 else "")
    return f"{neg}{mant}e{e}"


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
