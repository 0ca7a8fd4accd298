"""The kernel's image columns (``_native/_arrow.c``) equal the Python builders', or decline.

``native_image_columns`` writes a row group's ``before``/``after`` text maps and ``*_json``
texts straight into Arrow buffers; ``image_columns`` (the columnar Python path) and
``image_map``/``json_text`` (one row at a time, the definition) must give the same arrays for
every value kind the decoders produce, with NULLs, partial images (MINIMAL/NOBLOB: other
keys per row), rows without an image and tables without column metadata. What the kernel does
not take (text that is not valid UTF-8, an image that is not a dict, a failing value
function) declines to Python, and the export's columns are then the Python ones. The whole
export is compared with the kernel on and off over every fixture binlog in
``test_export_native_switch.py``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.export import images
from binlogscope.export.images import (
    ImageColumns,
    image_columns,
    image_columns_of,
    image_map,
    json_text,
    native_image_columns,
)
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from tests.export.test_columnar import COLS, _images
from tests.native_switch import NativeSwitch

Ref = tuple[dict[str, Any], ImageColumns | None] | None


def _check(refs: list[Ref]) -> None:
    got = native_image_columns(refs)
    assert got is not None, "the kernel declined"
    maps, jsons = got
    maps.validate(full=True)
    jsons.validate(full=True)
    want_maps, want_json = image_columns(refs)
    assert maps.type == want_maps.type and jsons.type == want_json.type
    assert maps.equals(want_maps)
    assert jsons.equals(want_json)
    assert maps.to_pylist() == [None if r is None else image_map(*r) for r in refs]
    assert jsons.to_pylist() == [None if r is None else json_text(r[0]) for r in refs]


@pytest.fixture(autouse=True)
def _kernel(native: NativeSwitch) -> None:
    native.require()


def test_every_value_kind_nulls_and_partial_images() -> None:
    ims = _images()
    _check([(im, COLS) for im in ims])
    _check([(ims[0], COLS), None, ({"id": 7}, COLS), (ims[1], None), ({}, COLS), (ims[2], COLS),
            None, ({"name": "only"}, COLS), (ims[3], COLS), ({"id": 8}, COLS)])
    _check([None, None])
    _check([])
    _check([({}, None)])


def test_decimal_temporal_json_bit_and_unsigned_values() -> None:
    special = ImageColumns({}, ["k"], frozenset({"bit", "year"}))
    rows: list[Ref] = [
        ({"k": 2**64 - 1, "dec": Decimal("-12345678901234567890.123456789"),
          "dt": dt.datetime(2024, 2, 29, 23, 59, 59, 123456), "d": dt.date(1000, 1, 1),
          "t": dt.timedelta(hours=-838, seconds=1), "tt": dt.time(1, 2, 3, 400000),
          "json": '{"a": [1, "\\u00e9"]}', "bit": 5, "year": 2155, "blob": b"\x00" * 70,
          "enum": "", "set": "a,b", "f": 3.4028234663852886e38, "dbl": 1e-7},
         special),
        ({"k": -(2**63), "dec": None, "dt": None, "bit": 0, "year": 0, "f": float("nan"),
          "dbl": float("-inf")}, special),
        ({"k": 2**200, "zero": "0000-00-00 00:00:00", "neg0": -0.0}, special),
    ]
    _check(rows)


_values = st.one_of(
    st.none(), st.integers(min_value=-(2**70), max_value=2**70), st.text(), st.binary(max_size=40),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=4),
    st.datetimes(), st.dates(), st.times(), st.timedeltas(),
)
_labels = st.text(min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.dictionaries(_labels, _values, max_size=6)),
                max_size=12),
       st.sets(_labels, max_size=3), st.booleans())
def test_random_images(images_: list[dict[str, Any] | None], special: set[str],
                       no_metadata: bool) -> None:
    cols = None if no_metadata else ImageColumns({}, None, frozenset(special))
    refs: list[Ref] = [None if im is None else (im, cols) for im in images_]
    got = native_image_columns(refs)
    if any(_surrogate(k) or (isinstance(v, str) and _surrogate(v))
           for im in images_ if im is not None for k, v in im.items()):
        assert got is None  # text not valid UTF-8: declined
        return
    _check(refs)


def _surrogate(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def test_declines_go_to_python() -> None:
    bad = "\udcff text that is not valid UTF-8"  # what a latin1 column's bytes decode to
    refs: list[Ref] = [({"id": 1, "name": bad}, COLS)]
    assert native_image_columns(refs) is None
    maps, jsons = image_columns_of([[None, r] for r in refs], 1)  # the Python path's answer
    assert maps.equals(image_columns(refs)[0]) and jsons.equals(image_columns(refs)[1])
    assert native_image_columns([([("id", 1)], COLS)]) is None  # type: ignore[list-item]
    assert native_image_columns([({1: 1}, COLS)]) is None  # type: ignore[list-item]
    assert native_image_columns([("not a pair",)]) is None  # type: ignore[list-item]

    class Odd:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    assert native_image_columns([({"x": Odd()}, COLS)]) is None


def test_kernel_off_builds_in_python(native: NativeSwitch) -> None:
    refs: list[Ref] = [(im, COLS) for im in _images()]
    with native.off():
        assert native_image_columns(refs) is None
        maps, jsons = image_columns_of([[r] for r in refs], 0)
    assert maps.equals(image_columns(refs)[0]) and jsons.equals(image_columns(refs)[1])


def test_builder_uses_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def python_path(col: list[Ref]) -> tuple[pa.Array, pa.Array]:
        calls.append(len(col))
        return image_columns(col)

    monkeypatch.setattr(images, "image_columns", python_path)
    refs: list[Ref] = [(im, COLS) for im in _images()]
    image_columns_of([[r] for r in refs], 0)
    assert calls == []
    image_columns_of([[({"x": "\udcff"}, COLS)]], 0)
    assert calls == [1]


def _pk_rows(refs: list[Ref]) -> list[list[Any]]:
    from binlogscope.export.columns import RowsSlot
    from binlogscope.export.mapper import COLUMNS

    rows: list[list[Any]] = []
    for i, ref in enumerate(refs):
        other = refs[-1 - i]
        for before, after in ((ref, None), (None, ref), (other, ref), (None, None)):
            row: list[Any] = [None] * len(COLUMNS["rows"])
            row[RowsSlot.before], row[RowsSlot.after] = before, after
            rows.append(row)
    return rows


def _check_pk(rows: list[list[Any]], native: NativeSwitch) -> None:
    from binlogscope.export.columns import RowsSlot
    from binlogscope.export.images import native_pk_column, pk_column_of, pk_pairs

    got = native_pk_column(rows)
    assert got is not None, "the kernel declined"
    got.validate(full=True)
    with native.off():
        (want,) = pk_column_of(rows, RowsSlot.pk)
    assert got.equals(want)
    assert got.to_pylist() == [pk_pairs(r[RowsSlot.before], r[RowsSlot.after]) for r in rows]


def test_pk_column_by_the_kernel(native: NativeSwitch) -> None:
    special = frozenset({"bit", "y"})
    ims = _images()
    refs: list[Ref] = []
    for key in (["id"], ["name"], ["bit"], ["y"], ["b"], ["d"], ["mixed"], ["id", "name"],
                ["name", "id", "absent"], [], None):
        refs += [(im, ImageColumns({}, key, special)) for im in ims]
    refs += [({}, ImageColumns({}, ["id"], special)), (ims[0], None), None,
             ({"id": Decimal("1.5"), "t": dt.datetime(2020, 1, 1)},
              ImageColumns({}, ["t", "id"], special))]
    _check_pk(_pk_rows(refs), native)
    _check_pk([], native)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.dictionaries(_labels, _values, max_size=5)),
                max_size=8),
       st.lists(_labels, max_size=3), st.sets(_labels, max_size=2))
def test_random_pk(images_: list[dict[str, Any] | None], key: list[str], special: set[str]
                   ) -> None:

    cols = ImageColumns({}, key, frozenset(special))
    refs: list[Ref] = [None if im is None else (im, cols) for im in images_]
    rows = _pk_rows(refs)
    if any(_surrogate(k) or (isinstance(v, str) and _surrogate(v))
           for im in images_ if im is not None for k, v in im.items() if k in key):
        return  # may decline (text not valid UTF-8); the declines are tested above
    _check_pk(rows, NativeSwitch())


def test_pk_declines_go_to_python(native: NativeSwitch) -> None:
    from binlogscope.export.columns import RowsSlot
    from binlogscope.export.images import native_pk_column, pk_column_of

    rows = _pk_rows([({"id": "\udcff"}, ImageColumns({}, ["id"], frozenset()))])
    assert native_pk_column(rows) is None
    (got,) = pk_column_of(rows, RowsSlot.pk)
    with native.off():
        (want,) = pk_column_of(rows, RowsSlot.pk)
    assert got.equals(want)
    assert native_pk_column([("not a row",)]) is None  # type: ignore[list-item]


_DOUBLES = ImageColumns({"d": ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, 8),
                         "f": ColumnInfo(1, T.MYSQL_TYPE_FLOAT, 4)},
                        ["d"], frozenset(), frozenset({"d"}))


def test_doubles_in_and_out_of_fixed_notation() -> None:
    """DOUBLE values in MySQL's fixed-notation range are written by the kernel (repr, the text
    without a trailing .0); the rest, and FLOAT columns, by the definition."""
    edge = [1e-4, 0.99999e-4, 1e15, 1e15 - 0.125, 999999999999999.9, 0.1, 1e14 + 0.5, 123.0,
            -2.5, 5e-324, float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e16, 2.0**52,
            -123456789.000001, 3.4028234663852886e38, None]
    _check([({"d": x, "f": x}, _DOUBLES) for x in edge])
    _check_pk(_pk_rows([({"d": x}, _DOUBLES) for x in edge]), NativeSwitch())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(), min_size=1, max_size=20))
def test_random_doubles(values: list[float]) -> None:
    _check([({"d": x, "f": x}, _DOUBLES) for x in values])


def test_fixed_notation_doubles_do_not_call_python(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    text = images.value_text

    def counting(v: Any, k: str, cols: ImageColumns | None) -> str | None:
        seen.append(v)
        return text(v, k, cols)

    monkeypatch.setattr(images, "value_text", counting)
    _check([({"d": x}, _DOUBLES) for x in (0.5, 123.0, -2.25, 1e14 + 0.5)])
    assert seen == []
    assert native_image_columns([({"d": 1e20, "f": 0.5}, _DOUBLES)]) is not None
    assert seen == [1e20, 0.5]  # exponent notation and FLOAT: the definition
