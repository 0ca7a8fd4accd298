"""The compiled fast row-image readers give exactly what the per-column readers give."""

from __future__ import annotations

from typing import Any

import pytest
from ci_support import unavailable
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog import _rowcode
from binlogscope.wire.binlog._rowcode import compile_image
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import make_reader


def _col(t: int, meta: int = 0, **kw: Any) -> ColumnInfo:
    return ColumnInfo(0, t, meta, **kw)


COLUMNS = [
    _col(T.MYSQL_TYPE_TINY), _col(T.MYSQL_TYPE_TINY, unsigned=True),
    _col(T.MYSQL_TYPE_SHORT), _col(T.MYSQL_TYPE_SHORT, unsigned=True),
    _col(T.MYSQL_TYPE_INT24), _col(T.MYSQL_TYPE_LONG), _col(T.MYSQL_TYPE_LONG, unsigned=True),
    _col(T.MYSQL_TYPE_LONGLONG), _col(T.MYSQL_TYPE_LONGLONG, unsigned=True),
    _col(T.MYSQL_TYPE_FLOAT, 4), _col(T.MYSQL_TYPE_DOUBLE, 8),
    _col(T.MYSQL_TYPE_NEWDECIMAL, 12 << 8 | 4), _col(T.MYSQL_TYPE_NEWDECIMAL, 4 << 8 | 4),
    _col(T.MYSQL_TYPE_NEWDECIMAL, 9 << 8), _col(T.MYSQL_TYPE_NEWDECIMAL, 30 << 8 | 10),
    _col(T.MYSQL_TYPE_VARCHAR, 40, charset=45), _col(T.MYSQL_TYPE_VARCHAR, 400, charset=33),
    _col(T.MYSQL_TYPE_VARCHAR, 40, charset=63), _col(T.MYSQL_TYPE_VARCHAR, 40, charset=8),
    _col(T.MYSQL_TYPE_BLOB, 1, charset=63), _col(T.MYSQL_TYPE_BLOB, 2, charset=45),
    _col(T.MYSQL_TYPE_BLOB, 3), _col(T.MYSQL_TYPE_BLOB, 4, charset=45),
    _col(T.MYSQL_TYPE_STRING, 0xFE10, charset=45), _col(T.MYSQL_TYPE_STRING, 0xFE04, charset=63),
    _col(T.MYSQL_TYPE_STRING, 0xF701, real_type=T.MYSQL_TYPE_ENUM, enum_values=["a", "b"]),
    _col(T.MYSQL_TYPE_STRING, 0xF701, real_type=T.MYSQL_TYPE_ENUM),
    _col(T.MYSQL_TYPE_STRING, 0xF801, real_type=T.MYSQL_TYPE_SET, set_values=["x", "y"]),
    _col(T.MYSQL_TYPE_STRING, 0xF801, real_type=T.MYSQL_TYPE_SET,
         set_values=[f"m{i}" for i in range(8)]),
    _col(T.MYSQL_TYPE_STRING, 0xF801, real_type=T.MYSQL_TYPE_SET),
    _col(T.MYSQL_TYPE_STRING, 0xF802, real_type=T.MYSQL_TYPE_SET,
         set_values=[f"n{i}" for i in range(11)]),
    *[_col(T.MYSQL_TYPE_DATETIME2, fsp) for fsp in range(7)],
    *[_col(T.MYSQL_TYPE_TIMESTAMP2, fsp) for fsp in range(7)],
    *[_col(T.MYSQL_TYPE_TIME2, fsp) for fsp in range(7)],
    _col(T.MYSQL_TYPE_STRING, 0xF808, real_type=T.MYSQL_TYPE_SET,
         set_values=[f"s{i:02d}" for i in range(64)]),
    _col(T.MYSQL_TYPE_STRING, 0xF803, real_type=T.MYSQL_TYPE_SET,
         set_values=[f"ü{i}" * 9 for i in range(20)]),
    _col(T.MYSQL_TYPE_STRING, 0xF808, real_type=T.MYSQL_TYPE_SET,
         set_values=[f"{i:02d}" + "x" * 40 for i in range(64)]),  # joined: over 1 KB
    _col(T.MYSQL_TYPE_DATE), _col(T.MYSQL_TYPE_YEAR),
    _col(T.MYSQL_TYPE_BIT, 1 << 8 | 3), _col(T.MYSQL_TYPE_JSON, 4),
]


def _require_c() -> None:
    if _rowcode._crows is None:
        unavailable("the C row reader (binlogscope.wire.binlog._crows) is not built")


def _reference(columns: list[ColumnInfo], b: bytes, p: int) -> tuple[dict[str, Any], int]:
    """The per-column readers, one after the other (what the recording path does)."""
    nb = (len(columns) + 7) // 8
    nulls = int.from_bytes(b[p : p + nb], "little")
    p += nb
    row: dict[str, Any] = {}
    for i, c in enumerate(columns):
        if nulls >> i & 1:
            row[c.label] = None
        else:
            row[c.label], p = make_reader(c)(b, p)
    return row, p


def _outcome(fn: Any, b: bytes) -> Any:
    try:
        row, p = fn(b, 0)
    except Exception:
        return "error"
    return "error" if p > len(b) else (row, p)


@pytest.mark.parametrize("pure", [True, False], ids=["python", "c"])
@settings(max_examples=400, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(COLUMNS))), min_size=1, max_size=12),
       data=st.binary(max_size=160))
def test_compiled_image_equals_the_readers(pure: bool, picks: list[int], data: bytes) -> None:
    columns = [ColumnInfo(i, COLUMNS[k].type, COLUMNS[k].meta, unsigned=COLUMNS[k].unsigned,
                          charset=COLUMNS[k].charset, real_type=COLUMNS[k].real_type,
                          enum_values=COLUMNS[k].enum_values, set_values=COLUMNS[k].set_values)
               for i, k in enumerate(picks)]
    if not pure:
        _require_c()
    image = compile_image(columns, mariadb=False, pure=pure)
    for nulls in (b"\x00" * 2, b""):  # no NULLs (the straight-line code), random NULL bits
        b = nulls[: (len(columns) + 7) // 8] + data
        ref = _outcome(lambda buf, p: _reference(columns, buf, p), b)
        assert _outcome(image, b) == ref


def test_unused_null_bits_are_ignored() -> None:
    cols = [ColumnInfo(i, T.MYSQL_TYPE_TINY) for i in range(3)]
    image = compile_image(cols, mariadb=False)
    assert image(bytes([0b11111000, 1, 2, 3]), 0) == ({"@1": 1, "@2": 2, "@3": 3}, 4)
    assert image(bytes([0b11111010, 1, 3]), 0) == ({"@1": 1, "@2": None, "@3": 3}, 3)


@pytest.mark.parametrize("fsp", range(7))
@pytest.mark.parametrize("t", [T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2])
def test_c_temporal_text_equals_the_python_readers(t: int, fsp: int) -> None:
    """The C reader writes DATETIME2/TIMESTAMP2 text itself: compare it value by value."""
    _require_c()
    import random

    rnd = random.Random(fsp * 100 + t)
    col = ColumnInfo(0, t, fsp)
    c_image = compile_image([col], mariadb=False)
    ref = make_reader(col)
    width = (5 if t == T.MYSQL_TYPE_DATETIME2 else 4) + (fsp + 1) // 2
    samples = [bytes(width), b"\xff" * width, b"\x80" + bytes(width - 1)]
    samples += [rnd.randbytes(width) for _ in range(3000)]
    for raw in samples:
        assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + width), raw.hex()


@pytest.mark.parametrize("fsp", range(7))
def test_c_time2_text_equals_the_python_reader(fsp: int) -> None:
    """The C reader writes TIME2 text itself: compare it value by value, negative times and
    the edges of the fraction's borrow included."""
    _require_c()
    import random

    rnd = random.Random(fsp)
    col = ColumnInfo(0, T.MYSQL_TYPE_TIME2, fsp)
    c_image = compile_image([col], mariadb=False)
    ref = make_reader(col)
    width = 3 + (fsp + 1) // 2
    samples = [bytes(width), b"\xff" * width, b"\x80" + bytes(width - 1),
               b"\x7f" + b"\xff" * (width - 1), b"\x7f\xff\xff" + bytes(width - 3)]
    samples += [rnd.randbytes(width) for _ in range(3000)]
    for raw in samples:
        assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + width), raw.hex()


@pytest.mark.parametrize("names", [0, 1, 5, 63, 64])
def test_c_set_text_equals_the_python_reader(names: int) -> None:
    _require_c()
    import random

    rnd = random.Random(names)
    for size in range(2, 9):
        col = ColumnInfo(0, T.MYSQL_TYPE_STRING, 0xF800 | size, real_type=T.MYSQL_TYPE_SET,
                         set_values=[f"v{i}" for i in range(names)])
        c_image = compile_image([col], mariadb=False)
        ref = make_reader(col)
        samples = [bytes(size), b"\xff" * size] + [rnd.randbytes(size) for _ in range(500)]
        samples += [(1 << rnd.randrange(min(names, 8 * size) or 1)).to_bytes(size, "little")
                    for _ in range(100)]
        for raw in samples:
            assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + size), raw.hex()


def _recorded(plan: Any, b: bytes, use_c: bool) -> Any:
    from binlogscope.wire.binlog import rows
    from binlogscope.wire.reader import ByteReader

    saved = rows._CReader
    if not use_c:
        rows._CReader = type(None)
    try:
        sub = ByteReader(b, base=1000, record=True)
        try:
            row = rows._image_recorded(sub, plan, "after_image", "the row")
        except Exception:
            return "error"
        return repr(row), sub.pos, sub.children()
    finally:
        rows._CReader = saved


@settings(max_examples=300, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(COLUMNS))), min_size=1, max_size=10),
       data=st.binary(max_size=400), nulls=st.binary(min_size=2, max_size=2))
def test_c_recorded_image_equals_python(picks: list[int], data: bytes, nulls: bytes) -> None:
    """Values, Nodes and display texts of a recorded row image: C == Python (random bytes:
    long BLOBs, long strings, short images)."""
    _require_c()
    from binlogscope.wire.binlog.rows import _Plan

    columns = [ColumnInfo(i, COLUMNS[k].type, COLUMNS[k].meta, unsigned=COLUMNS[k].unsigned,
                          charset=COLUMNS[k].charset, real_type=COLUMNS[k].real_type,
                          enum_values=COLUMNS[k].enum_values, set_values=COLUMNS[k].set_values)
               for i, k in enumerate(picks)]
    plan = _Plan(columns, mariadb=False)
    for head in (b"\x00\x00", nulls):
        b = head[: (len(columns) + 7) // 8] + data
        assert repr(_recorded(plan, b, True)) == repr(_recorded(plan, b, False))


@pytest.mark.parametrize("n", [0, 1, 47, 48, 49, 199, 200, 201, 250])
def test_c_recorded_display_at_the_cut_lengths(n: int) -> None:
    """Byte values are shown up to 48 bytes and strings up to 200 characters: check the edges."""
    _require_c()
    from binlogscope.wire.binlog.rows import _Plan

    columns = [ColumnInfo(0, T.MYSQL_TYPE_BLOB, 1, charset=63),
               ColumnInfo(1, T.MYSQL_TYPE_VARCHAR, 400, charset=45),
               ColumnInfo(2, T.MYSQL_TYPE_VARCHAR, 400, charset=63)]
    plan = _Plan(columns, mariadb=False)
    text = ("é" * n).encode()[: 2 * n]
    b = (b"\x00" + bytes([n]) + bytes(range(n)) + (2 * n).to_bytes(2, "little") + text
         + n.to_bytes(2, "little") + b"x" * n)
    c = _recorded(plan, b, True)
    assert c != "error"
    assert repr(c) == repr(_recorded(plan, b, False))


def test_c_double_display_equals_python() -> None:
    """The C DOUBLE display (server layout of the shortest repr) equals values.double_text."""
    _require_c()
    import random
    import struct

    from binlogscope.wire.binlog.rows import _Plan
    from binlogscope.wire.binlog.values import double_text

    plan = _Plan([ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, 8)], mariadb=False)
    rnd = random.Random(3)
    values = [0.0, -0.0, 1.0, -1.0, 0.1, 1e-5, 1e15, 1e14, 123.0, 1.5e-16, 5e-324, 1e-15,
              9.99e14, 1.7976931348623157e308, float("inf"), float("-inf"), float("nan")]
    values += [struct.unpack("<d", rnd.randbytes(8))[0] for _ in range(3000)]
    values += [rnd.uniform(-1e6, 1e6) for _ in range(3000)]
    for v in values:
        b = b"\x00" + struct.pack("<d", v)
        got = _recorded(plan, b, True)
        assert got != "error"
        leaf = got[2][0].children[1]
        assert leaf.display == double_text(v), v
        assert repr(got) == repr(_recorded(plan, b, False))
