"""The C column builder (``_ccolumns`` through ``binlogscope.export.native``) builds exactly the
arrays the Python path builds: ``pa.array`` for the plain columns, ``image_columns`` for the
before/after maps and typed JSON. Edge values one by one, the cases it must decline (and leave
to Python), and whole exports of every fixture binlog and shipped capture with and without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from ci_support import unavailable
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from binlogscope.export import native
from binlogscope.export.arrow import TABLES, read_table
from binlogscope.export.records import _JSON, BinlogFileSource, _Columns, _value_text, image_columns
from binlogscope.export.run import run_export
from binlogscope.export.sources import PcapRecordSource
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from tests.export.test_columnar import COLS, _images
from tests.helpers import binlog_fixtures

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
TS = pa.timestamp("us", tz="UTC")
MAP = pa.map_(pa.string(), pa.string())


@pytest.fixture(autouse=True)
def _need_c() -> None:
    if not native.available():
        unavailable("the C column builder (binlogscope.export._ccolumns) is not built")


COLUMNS: list[tuple[pa.DataType, list[Any]]] = [
    (pa.int16(), [1, None, -32768, 32767, 0]),
    (pa.int32(), [None, None, 2**31 - 1, -(2**31), 7]),
    (pa.int64(), [2**63 - 1, -(2**63), None, 0, 1]),
    (TS, [1_700_000_000_000_000, None, 0, -1, 5]),
    (pa.bool_(), [True, False, None, True, True]),
    (pa.string(), ["a", "", None, "ünï € 😀", 'q"\\\n\x00']),
    (pa.binary(), [b"\x00\xff", b"", None, b"x" * 300, b"z"]),
    (pa.list_(pa.string()), [["id"], None, [], ["a", "b"], ["ü", None]]),
    (MAP, [[("id", "1")], None, [], [("a", None), ("b", "ü")], [("k", "")]]),
]


def _rows(columns: list[list[Any]]) -> list[list[Any]]:
    return [list(r) for r in zip(*columns, strict=True)]


def test_plain_columns_equal_pa_array() -> None:
    types = [t for t, _ in COLUMNS]
    rows = _rows([v for _, v in COLUMNS])
    built = native.arrays(rows, types)
    for (typ, values), arr in zip(COLUMNS, built, strict=True):
        assert arr is not None, typ
        arr.validate(full=True)
        want = pa.array(values, typ)
        assert arr.type == want.type
        assert arr.equals(want), typ
        assert arr.null_count == want.null_count


def test_one_value_and_all_null_columns() -> None:
    for typ, values in COLUMNS:
        for col in ([values[0]], [None, None, None]):
            (arr,) = native.arrays(_rows([col]), [typ])
            assert arr is not None and arr.equals(pa.array(col, typ)), (typ, col)


@pytest.mark.parametrize(("typ", "values"), [
    (pa.int16(), [1, 40000]),  # out of the column's range: pa.array raises, Python decides
    (pa.int32(), [1, 2**31]),
    (pa.int64(), [2**64 - 1]),
    (pa.int64(), [True]),  # a bool in an int column
    (pa.bool_(), [1]),
    (pa.string(), ["ok", b"bytes"]),
    (pa.string(), ["lone \udcff surrogate"]),
    (pa.binary(), [bytearray(b"x")]),
    (pa.list_(pa.string()), [("a",)]),
    (MAP, [[("k", 1)]]),
    (MAP, [[(None, "v")]]),
])
def test_declined_columns_are_left_to_python(typ: pa.DataType, values: list[Any]) -> None:
    built = native.arrays(_rows([values, list(range(len(values)))]), [typ, pa.int64()])
    assert built[0] is None
    assert built[1] is not None and built[1].to_pylist() == list(range(len(values)))


def test_skipped_columns_and_short_rows() -> None:
    rows = [[1, "a"], [2, "b"]]
    built = native.arrays(rows, [None, pa.string()])
    assert built[0] is None and built[1] is not None and built[1].to_pylist() == ["a", "b"]
    assert native.arrays([[1, "a"], [2]], [pa.int64(), pa.string()]) == [None, None]


def _same_images(refs: list[Any]) -> None:
    rows = [[0, ref] for ref in refs]
    got = native.image_arrays(rows, 1, _value_text, _JSON)
    assert got is not None
    maps, jsons = got
    maps.validate(full=True)
    jsons.validate(full=True)
    want_maps, want_json = image_columns(refs)
    assert maps.type == want_maps.type == MAP
    assert maps.to_pylist() == want_maps.to_pylist()
    assert jsons.to_pylist() == want_json.to_pylist()


def test_images_every_value_kind() -> None:
    _same_images([(im, COLS) for im in _images()])


def test_images_nulls_empty_and_missing_metadata() -> None:
    ims = _images()
    _same_images([(ims[0], COLS), None, ({"id": 7}, COLS), (ims[1], None), ({}, COLS), None,
                  ({"name": "only"}, COLS), (ims[3], None)])
    _same_images([None, None])


def test_images_floats_of_every_magnitude() -> None:
    floats = [float("nan"), float("inf"), -float("inf"), 1e20, 1e-7, 123.0, 1e-4, 1e15,
              -0.0, 0.0, 99999.5, 1e14 + 0.5, 2.5e-4, None]
    cols = _Columns({"d": ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, 8),
                     "f": ColumnInfo(1, T.MYSQL_TYPE_FLOAT, 4)}, None, frozenset(),
                    frozenset({"d"}))
    _same_images([({"d": x, "f": x}, cols) for x in floats])


def test_images_with_odd_values_fall_back_per_value() -> None:
    class Named:
        name = "ENUM_NAME"

    refs = [({"big": 2**70, "neg": -(2**64), "flag": True, "obj": Named(), "l": [1, b"\x01"],
              "esc": "\x1f\x7f\u2028"}, COLS)]
    _same_images(refs)


def test_images_decline_what_python_must_decide() -> None:
    for bad in ([[0, ({1: "int key"}, COLS)]], [[0, ({"s": "\udcff"}, COLS)]],
                [[0, ["not", "a pair"]]], [[0]]):
        assert native.image_arrays(bad, 1, _value_text, _JSON) is None


def _tables(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {t: read_table(root, t).to_pylist() for t in TABLES}


def _export_both(tmp_path: Path, source: Any, monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    run_export(source, tmp_path / "c", row_group_size=500)  # many row groups, some tiny
    with monkeypatch.context() as m:
        m.setattr(native, "_ccolumns", None)
        run_export(source, tmp_path / "py", row_group_size=500)
    return _tables(tmp_path / "c"), _tables(tmp_path / "py")


def test_every_fixture_binlog_exports_the_same(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    files = [p for p in binlog_fixtures() if p.suffix != ".gz"]
    files += [*sorted(CAPTURES.glob("*.binlog")), CAPTURES / "mariadb-10.11-workload.000001"]
    fast, slow = _export_both(tmp_path, BinlogFileSource([str(p) for p in files]), monkeypatch)
    print({t: len(v) for t, v in fast.items()})
    assert len(fast["events"]) > 3_000 and len(fast["rows"]) > 1_000
    for t in TABLES:
        assert fast[t] == slow[t], t


def test_captures_export_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = sorted([*CAPTURES.glob("*.pcap"), *CAPTURES.glob("*.pcapng")])
    fast, slow = _export_both(tmp_path, PcapRecordSource([str(p) for p in caps]), monkeypatch)
    print({t: len(v) for t, v in fast.items()})
    assert len(fast["packets"]) > 500 and len(fast["events"]) > 100
    for t in TABLES:
        assert fast[t] == slow[t], t


def test_pk_column_equals_the_python_pairs() -> None:
    from binlogscope.export.records import _pk_pairs

    ims = _images()
    nopk = _Columns(COLS.by_label, None, COLS.special)
    two = _Columns(COLS.by_label, ["id", "name", "absent"], COLS.special, frozenset({"d"}))
    pairs = [(None, (ims[0], COLS)), ((ims[1], COLS), None), (None, None),
             ((ims[2], COLS), ({}, COLS)), ((ims[3], None), None), ((ims[4], nopk), None),
             (None, ({"name": "x"}, COLS)), (None, (ims[5], two)), ((ims[0], two), None),
             (None, ({"id": 2**70}, two)), (None, ({"id": 1.5e20, "name": b"\x01"}, two))]
    rows = [[b, a] for b, a in pairs]
    got = native.pk_array(rows, 0, 1, _value_text, _JSON)
    assert got is not None
    got.validate(full=True)
    want = pa.array([_pk_pairs(b, a) for b, a in pairs], MAP)
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    assert native.pk_array([[None, ["bad"]]], 0, 1, _value_text, _JSON) is None


# ----------------------------------------------------------------------------- property tests

_ANY = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-40_000, max_value=40_000), st.floats(allow_nan=True),
    st.text(max_size=12), st.binary(max_size=12),
    st.lists(st.one_of(st.none(), st.text(max_size=4)), max_size=3),
    st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=3)),
                       st.one_of(st.none(), st.text(max_size=3), st.integers())), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([t for t, _ in COLUMNS]), st.lists(_ANY, min_size=1, max_size=12))
def test_any_values_built_alike_or_declined(typ: pa.DataType, values: list[Any]) -> None:
    """Whatever the values, C builds what pa.array builds or leaves the column to Python."""
    # pyarrow 26 aborts the process on a None entry in a map's list (pa.array([[None]], MAP));
    # the mapper never makes one (a pk list holds (key, text) tuples)
    assume(typ != MAP or not any(isinstance(v, list) and None in v for v in values))
    (got,) = native.arrays(_rows([values]), [typ])
    try:
        want = pa.array(values, typ)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        assert got is None  # pa.array refuses: Python must decide (and raise)
        return
    if got is not None:
        got.validate(full=True)
        assert got.equals(want)


_IMAGE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True), st.text(max_size=12), st.binary(max_size=12))
_KEYS = st.sampled_from(["id", "name", "d", "f", "b", "bit", "y", "mixed", "ü", 'q"k'])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.tuples(
    st.dictionaries(_KEYS, _IMAGE_VALUES, max_size=6),
    st.sampled_from([COLS, None, _Columns(COLS.by_label, ["id"], COLS.special,
                                          frozenset({"d"}))]))), min_size=1, max_size=8))
def test_any_images_built_alike_or_declined(refs: list[Any]) -> None:
    """Whatever the images, C builds what image_columns builds, leaves the column to Python, or
    raises where Python raises (a value no decoder makes, such as a negative BIT)."""
    rows = [[ref, None] for ref in refs]
    try:
        want_maps, want_json = image_columns(refs)
    except Exception as exc:
        try:
            declined = native.image_arrays(rows, 0, _value_text, _JSON) is None
        except type(exc):
            return
        assert declined
        return
    got = native.image_arrays(rows, 0, _value_text, _JSON)
    if got is not None:
        assert got[0].to_pylist() == want_maps.to_pylist()
        assert got[1].to_pylist() == want_json.to_pylist()
