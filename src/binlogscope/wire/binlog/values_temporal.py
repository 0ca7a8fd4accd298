"""Temporal values of row images: DATE, TIME, DATETIME, TIMESTAMP in every on-disk format
(MySQL 5.6+ TIME2/DATETIME2/TIMESTAMP2 with fractions, the old integer formats, and MariaDB's
hi-res format) as the text a SELECT shows.

The texts are cached in bounded dicts (dates, times of day, fractions repeat); the C row reader
shares those tables (``YMD_TEXT`` ...). Re-exported by :mod:`binlogscope.wire.binlog.values`.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values_numeric import Reader


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
