"""Prepared statements: COM_STMT_PREPARE's reply, COM_STMT_EXECUTE's request, binary rows.

Sans-IO payload encoders and decoders (no framing):

- ``COM_STMT_PREPARE_OK``: ``0x00, stmt_id<4>, num_columns<2>, num_params<2>, 0x00,
  warnings<2>``, then (sent by the caller) ``num_params`` parameter definitions, EOF,
  ``num_columns`` column definitions, EOF (the EOFs absent with CLIENT_DEPRECATE_EOF).
- ``COM_STMT_EXECUTE``: ``stmt_id<4>, flags<1>, iterations<4>``, then with parameters the NULL
  bitmap, ``new_params_bound<1>``, the types (2 bytes each, unsigned in bit 15) when bound, and
  the values in the binary protocol.
- A binary result-set row: ``0x00``, a NULL bitmap with an offset of 2 bits, then each non-NULL
  value in the binary protocol of its column type.
"""

from __future__ import annotations

import datetime as _dt
import struct
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.fields import lenenc_bytes
from binlogscope.wire.results import ColumnDefinition41

# MYSQL_TYPE_* codes used here
_TINY, _SHORT, _LONG, _FLOAT, _DOUBLE, _NULL, _TIMESTAMP, _LONGLONG, _INT24 = \
    1, 2, 3, 4, 5, 6, 7, 8, 9
_DATE, _TIME, _DATETIME, _YEAR, _NEWDATE = 10, 11, 12, 13, 14
UNSIGNED_FLAG = 0x20
#: the definition MariaDB sends for each ``?`` parameter (type NULL, binary)
PARAM_DEFINITION = ColumnDefinition41("?", _NULL, "", "", "", "", "def", 63, 0, 0x80, 0)


@dataclass(frozen=True, slots=True)
class StmtPrepareOk:
    statement_id: int
    num_columns: int
    num_params: int
    warnings: int = 0


def encode_stmt_prepare_ok(v: StmtPrepareOk) -> bytes:
    return struct.pack("<BIHHBH", 0, v.statement_id, v.num_columns, v.num_params, 0,
                       v.warnings)


@dataclass(frozen=True, slots=True)
class StmtExecute:
    statement_id: int
    flags: int
    iterations: int
    #: the parameter values (None for NULL), decoded by their bound types
    params: tuple[Any, ...]
    #: the (type, unsigned) of each parameter as bound (repeated from the previous EXECUTE
    #: when ``new_params_bound`` is 0)
    types: tuple[tuple[int, bool], ...]


def decode_stmt_execute(payload: bytes, num_params: int,
                        previous_types: tuple[tuple[int, bool], ...] = ()) -> StmtExecute:
    """COM_STMT_EXECUTE without its command byte; ``num_params`` from the PREPARE."""
    if len(payload) < 9:
        raise ValueError(f"COM_STMT_EXECUTE of {len(payload)} bytes: shorter than 9")
    stmt_id, flags, iterations = struct.unpack_from("<IBI", payload, 0)
    pos = 9
    if num_params == 0:
        return StmtExecute(stmt_id, flags, iterations, (), ())
    nb = (num_params + 7) // 8
    nulls = payload[pos:pos + nb]
    pos += nb
    if pos >= len(payload):
        raise ValueError("COM_STMT_EXECUTE ends before new_params_bound")
    bound = payload[pos]
    pos += 1
    if bound:
        types = []
        for i in range(num_params):
            code, fl = payload[pos + 2 * i], payload[pos + 2 * i + 1]
            types.append((code, bool(fl & 0x80)))
        pos += 2 * num_params
        types_t = tuple(types)
    else:
        if len(previous_types) != num_params:
            raise ValueError("COM_STMT_EXECUTE without parameter types and none bound before")
        types_t = previous_types
    values: list[Any] = []
    for i, (code, unsigned) in enumerate(types_t):
        if nulls[i // 8] >> (i % 8) & 1 or code == _NULL:
            values.append(None)
            continue
        v, pos = read_binary_value(payload, pos, code, unsigned)
        values.append(v)
    return StmtExecute(stmt_id, flags, iterations, tuple(values), types_t)


def _lenenc(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 0xFB:
        return first, pos + 1
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if size is None:
        raise ValueError(f"bad length-encoded integer 0x{first:02x}")
    return int.from_bytes(buf[pos + 1:pos + 1 + size], "little"), pos + 1 + size


_INT_SIZES = {_TINY: 1, _SHORT: 2, _YEAR: 2, _LONG: 4, _INT24: 4, _LONGLONG: 8}


def read_binary_value(buf: bytes, pos: int, code: int, unsigned: bool) -> tuple[Any, int]:
    """One value of MYSQL_TYPE ``code`` in the binary protocol at ``pos``: (value, next pos)."""
    if code in _INT_SIZES:
        n = _INT_SIZES[code]
        return int.from_bytes(buf[pos:pos + n], "little", signed=not unsigned), pos + n
    if code == _FLOAT:
        return struct.unpack_from("<f", buf, pos)[0], pos + 4
    if code == _DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if code in (_DATE, _DATETIME, _TIMESTAMP, _NEWDATE):
        n = buf[pos]
        b = buf[pos + 1:pos + 1 + n]
        if n == 0:
            return "0000-00-00 00:00:00", pos + 1
        y, mo, d = struct.unpack_from("<HBB", b, 0)
        text = f"{y:04d}-{mo:02d}-{d:02d}"
        if n >= 7:
            text += f" {b[4]:02d}:{b[5]:02d}:{b[6]:02d}"
        if n >= 11:
            text += f".{int.from_bytes(b[7:11], 'little'):06d}"
        return text, pos + 1 + n
    if code == _TIME:
        n = buf[pos]
        b = buf[pos + 1:pos + 1 + n]
        if n == 0:
            return "00:00:00", pos + 1
        neg, days, h, m, s = struct.unpack_from("<BIBBB", b, 0)
        text = f"{'-' if neg else ''}{days * 24 + h:02d}:{m:02d}:{s:02d}"
        if n >= 12:
            text += f".{int.from_bytes(b[8:12], 'little'):06d}"
        return text, pos + 1 + n
    n, pos = _lenenc(buf, pos)  # strings, decimals, blobs...
    return bytes(buf[pos:pos + n]), pos + n


def encode_binary_row(columns: list[ColumnDefinition41], values: tuple[bytes | None, ...]
                      ) -> bytes:
    """One binary-protocol row from text values (what a text result set would send), each
    converted to its column's binary form."""
    bitmap = bytearray((len(columns) + 9) // 8)
    out: list[bytes] = []
    for i, (col, v) in enumerate(zip(columns, values, strict=True)):
        if v is None or col.type == _NULL:
            bit = i + 2
            bitmap[bit // 8] |= 1 << (bit % 8)
            continue
        out.append(_binary_value(col, v))
    return b"\x00" + bytes(bitmap) + b"".join(out)


def _binary_value(col: ColumnDefinition41, v: bytes) -> bytes:
    t = col.type
    unsigned = bool(col.flags & UNSIGNED_FLAG)
    if t in _INT_SIZES:
        n = _INT_SIZES[t]
        return int(v).to_bytes(n, "little", signed=not unsigned and int(v) < 0)
    if t == _FLOAT:
        return struct.pack("<f", float(v))
    if t == _DOUBLE:
        return struct.pack("<d", float(v))
    if t in (_DATE, _DATETIME, _TIMESTAMP, _NEWDATE):
        return _binary_datetime(v.decode())
    if t == _TIME:
        return _binary_time(v.decode())
    return lenenc_bytes(v)


def _binary_datetime(text: str) -> bytes:
    date, _, time = text.partition(" ")
    y, mo, d = (int(x) for x in date.split("-"))
    if not time:
        return b"\x04" + struct.pack("<HBB", y, mo, d) if (y, mo, d) != (0, 0, 0) else b"\x00"
    hms, _, frac = time.partition(".")
    h, mi, s = (int(x) for x in hms.split(":"))
    micro = int((frac + "000000")[:6]) if frac else 0
    if micro:
        return b"\x0b" + struct.pack("<HBBBBBI", y, mo, d, h, mi, s, micro)
    if (h, mi, s) == (0, 0, 0):
        return b"\x04" + struct.pack("<HBB", y, mo, d) if (y, mo, d) != (0, 0, 0) else b"\x00"
    return b"\x07" + struct.pack("<HBBBBB", y, mo, d, h, mi, s)


def _binary_time(text: str) -> bytes:
    neg = text.startswith("-")
    hms, _, frac = text.lstrip("-").partition(".")
    h, mi, s = (int(x) for x in hms.split(":"))
    micro = int((frac + "000000")[:6]) if frac else 0
    days, h = divmod(h, 24)
    if micro:
        return b"\x0c" + struct.pack("<BIBBBI", neg, days, h, mi, s, micro)
    if (days, h, mi, s) == (0, 0, 0, 0):
        return b"\x00"
    return b"\x08" + struct.pack("<BIBBB", neg, days, h, mi, s)


def sql_literal(v: Any) -> str:
    """A parameter value as an SQL literal (what the statement text gets in its place)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, _dt.date | _dt.datetime):
        return f"'{v}'"
    s = v.decode("utf-8", "surrogateescape") if isinstance(v, bytes | bytearray) else str(v)
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
