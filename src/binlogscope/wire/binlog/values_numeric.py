"""Numeric values of row images: MySQL's packed DECIMAL and FLOAT/DOUBLE as the server prints
them.

``decode_decimal`` and the DECIMAL reader turn the packed bytes into exact text; ``float32_text``
and ``double_text`` give the text a SELECT shows. Re-exported by
:mod:`binlogscope.wire.binlog.values`, which holds the readers of every column type.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

#: a column value reader: ``reader(data, pos) -> (value, new_pos)`` (see ``values.make_reader``)
Reader = Callable[[bytes, int], tuple[Any, int]]

_F32 = struct.Struct("<f")

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
