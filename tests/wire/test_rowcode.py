"""The native kernel's row-image reader gives exactly what the Python column readers give
(values, positions, and an error where they fail), and its row walk counts what they read."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog._rowcode import INSERT, UPDATE, ImagePlan, count_rows, read_rows
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import make_reader
from tests.native_switch import NativeSwitch


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
    # the kinds the kernel reads since issue 26 (each was the Python reader before)
    _col(T.MYSQL_TYPE_INT24, unsigned=True), _col(T.MYSQL_TYPE_NEWDATE),
    _col(T.MYSQL_TYPE_NEWDECIMAL, 20 << 8 | 2), _col(T.MYSQL_TYPE_NEWDECIMAL, 65 << 8 | 30),
    _col(T.MYSQL_TYPE_NEWDECIMAL, 38 << 8 | 38), _col(T.MYSQL_TYPE_NEWDECIMAL, 27 << 8 | 9),
    _col(T.MYSQL_TYPE_NEWDECIMAL, 18 << 8), _col(T.MYSQL_TYPE_NEWDECIMAL, 10 << 8 | 1),
    _col(T.MYSQL_TYPE_STRING, 0xF702, real_type=T.MYSQL_TYPE_ENUM,
         enum_values=[f"e{i}" for i in range(300)]),
    _col(T.MYSQL_TYPE_STRING, 0xF702, real_type=T.MYSQL_TYPE_ENUM),
    _col(T.MYSQL_TYPE_STRING, 0xF803, real_type=T.MYSQL_TYPE_SET),
    _col(T.MYSQL_TYPE_STRING, 0xFE08, charset=63),  # BINARY(8): padded
    _col(T.MYSQL_TYPE_STRING, 0xEE2C, charset=63),  # BINARY(300): a 2-byte length
    _col(T.MYSQL_TYPE_TIME), _col(T.MYSQL_TYPE_DATETIME), _col(T.MYSQL_TYPE_TIMESTAMP),
    _col(T.MYSQL_TYPE_BIT, 7 << 8 | 1), _col(T.MYSQL_TYPE_BIT, 8 << 8),
    _col(T.MYSQL_TYPE_BIT, 9 << 8),  # 9 bytes: the reader (beyond 64 bits)
    _col(T.MYSQL_TYPE_NULL), _col(T.MYSQL_TYPE_GEOMETRY, 4), _col(T.MYSQL_TYPE_GEOMETRY, 1),
]


def _require_c() -> None:
    NativeSwitch().require()  # (the native fixture's check, for helpers that take no fixture)


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


def _image(columns: list[ColumnInfo]) -> Any:
    """The kernel's reader of one image of ``columns``."""
    _require_c()
    return ImagePlan(columns, mariadb=False).image


def _python(columns: list[ColumnInfo]) -> Any:
    plan = ImagePlan(columns, mariadb=False)
    return lambda b, p: plan.read(b, p, len(b))


def _columns(picks: list[int]) -> list[ColumnInfo]:
    return [ColumnInfo(i, COLUMNS[k].type, COLUMNS[k].meta, unsigned=COLUMNS[k].unsigned,
                       charset=COLUMNS[k].charset, real_type=COLUMNS[k].real_type,
                       enum_values=COLUMNS[k].enum_values, set_values=COLUMNS[k].set_values)
            for i, k in enumerate(picks)]


@pytest.mark.parametrize("impl", ["python", "kernel"])
@settings(max_examples=400, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(COLUMNS))), min_size=1, max_size=12),
       data=st.binary(max_size=160))
def test_image_equals_the_readers(impl: str, picks: list[int], data: bytes) -> None:
    columns = _columns(picks)
    image = _image(columns) if impl == "kernel" else _python(columns)
    for nulls in (b"\x00" * 2, b""):  # no NULLs, random NULL bits
        b = nulls[: (len(columns) + 7) // 8] + data
        ref = _outcome(lambda buf, p: _reference(columns, buf, p), b)
        assert _outcome(image, b) == ref


@settings(max_examples=300, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(COLUMNS))), min_size=1, max_size=8),
       data=st.binary(max_size=300), update=st.booleans())
def test_kernel_rows_walk_and_read_equal_python(picks: list[int], data: bytes,
                                                 update: bool, native: NativeSwitch) -> None:
    """count_rows (the walk without values) and read_rows: kernel == Python, or both raise."""
    _require_c()
    columns = _columns(picks)
    plan = ImagePlan(columns, mariadb=False)
    kind = UPDATE if update else INSERT
    pa = plan if update else None

    def outcome(fn: Any) -> Any:
        try:
            return fn()
        except Exception:
            return "error"

    with native.off():
        py = outcome(lambda: read_rows(data, kind, plan, pa))
    # repr: a NaN read by each side is two float objects that never compare equal
    assert repr(outcome(lambda: read_rows(data, kind, plan, pa))) == repr(py)
    walked = outcome(lambda: count_rows(data, kind, plan, pa, 0, len(data)))
    assert walked == ("error" if py == "error" else (len(py), None))


def test_unused_null_bits_are_ignored() -> None:
    cols = [ColumnInfo(i, T.MYSQL_TYPE_TINY) for i in range(3)]
    for image in (_python(cols), _image(cols)):
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
    c_image = _image([col])
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
    c_image = _image([col])
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
        c_image = _image([col])
        ref = make_reader(col)
        samples = [bytes(size), b"\xff" * size] + [rnd.randbytes(size) for _ in range(500)]
        samples += [(1 << rnd.randrange(min(names, 8 * size) or 1)).to_bytes(size, "little")
                    for _ in range(100)]
        for raw in samples:
            assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + size), raw.hex()


@pytest.mark.parametrize(("precision", "scale"), [
    (1, 0), (9, 0), (10, 0), (18, 0), (19, 0), (20, 2), (27, 9), (30, 10), (38, 38),
    (40, 20), (65, 0), (65, 30), (65, 65), (12, 4), (1, 1)])
def test_c_decimal_text_equals_the_python_reader(precision: int, scale: int) -> None:
    """Every DECIMAL the kernel reads, value by value: random bytes (integer groups beyond
    999,999,999 included, which the kernel hands to the Python reader) and the edges."""
    _require_c()
    import random

    from binlogscope.wire.binlog.values import decimal_size

    rnd = random.Random(precision * 100 + scale)
    col = ColumnInfo(0, T.MYSQL_TYPE_NEWDECIMAL, precision << 8 | scale)
    c_image = _image([col])
    ref = make_reader(col)
    size = decimal_size(precision, scale)
    samples = [bytes(size), b"\xff" * size, b"\x80" + bytes(size - 1),
               b"\x7f" + b"\xff" * (size - 1)]
    samples += [rnd.randbytes(size) for _ in range(2000)]
    for raw in samples:
        assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + size), raw.hex()


@pytest.mark.parametrize("col", [
    _col(T.MYSQL_TYPE_DATE), _col(T.MYSQL_TYPE_YEAR), _col(T.MYSQL_TYPE_INT24),
    _col(T.MYSQL_TYPE_INT24, unsigned=True), _col(T.MYSQL_TYPE_TIME),
    _col(T.MYSQL_TYPE_DATETIME), _col(T.MYSQL_TYPE_TIMESTAMP), _col(T.MYSQL_TYPE_BIT, 3 << 8 | 5),
    _col(T.MYSQL_TYPE_STRING, 0xF702, real_type=T.MYSQL_TYPE_ENUM,
         enum_values=[f"e{i}" for i in range(300)]),
], ids=lambda c: f"{c.type}-{c.meta}-{c.unsigned}")
def test_c_fixed_kinds_equal_the_python_reader(col: ColumnInfo) -> None:
    _require_c()
    import random

    rnd = random.Random(col.type)
    c_image = _image([col])
    ref = make_reader(col)
    _, size = ref(bytes(16), 0)
    samples = [bytes(size), b"\xff" * size] + [rnd.randbytes(size) for _ in range(3000)]
    for raw in samples:
        assert c_image(b"\x00" + raw, 0) == ({"@1": ref(raw, 0)[0]}, 1 + size), raw.hex()


def test_mariadb_json_is_read_by_the_kernel() -> None:
    """MariaDB's JSON column holds the text: a length-prefixed UTF-8 plan the kernel reads;
    MySQL's binary JSON stays with its Python reader."""
    from binlogscope.wire.binlog._rowcode import column_plan

    col = _col(T.MYSQL_TYPE_JSON, 4)
    assert column_plan(col, mariadb=True) == ("prefixed", (4, "utf-8"))
    assert column_plan(col, mariadb=False)[0] == "reader"
    _require_c()
    plan = ImagePlan([col], mariadb=True)
    raw = b"\x00" + (11).to_bytes(4, "little") + '{"a": "ü"}'.encode()
    assert plan.image(raw, 0) == plan.read(raw, 0, len(raw)) == ({"@1": '{"a": "ü"}'}, len(raw))


def test_the_kernel_has_a_plan_for_every_common_type() -> None:
    """Only MySQL's binary JSON, VECTOR, MariaDB's hi-res temporals and unusual metadata are
    left to the Python reader: every other column of COLUMNS has a plan of its own."""
    from binlogscope.wire.binlog._rowcode import column_plan

    left = {(c.type, c.meta) for c in COLUMNS if column_plan(c, mariadb=False)[0] == "reader"}
    assert left == {(T.MYSQL_TYPE_JSON, 4), (T.MYSQL_TYPE_BIT, 9 << 8)}
