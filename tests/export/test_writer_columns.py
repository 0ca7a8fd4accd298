"""The writer's columns of a row group (``writer.columns_of_rows``): the kernel's one pass over
the rows gives the same lists - the same objects, in order - as the per-column definition."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope import _native
from binlogscope.export.writer import _column, columns_of_rows
from tests.native_switch import NativeSwitch

_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.binary(max_size=8),
                    st.floats(allow_nan=False), st.tuples(st.text(max_size=3)))


@settings(deadline=None)  # a shared 2-core machine: timing is not what is tested
@given(st.integers(1, 8).flatmap(
    lambda k: st.tuples(st.just(k), st.lists(st.lists(_VALUES, min_size=k, max_size=k),
                                              max_size=30),
                        st.lists(st.integers(0, k - 1), max_size=k + 2))))
def test_the_kernel_gives_the_definitions_columns(native: NativeSwitch,
                                                  case: tuple[int, list[list[Any]], list[int]]
                                                  ) -> None:
    native.require()
    _, rows, wanted = case
    got = columns_of_rows(rows, tuple(wanted))
    with native.off():
        want = columns_of_rows(rows, tuple(wanted))
    assert got == want
    for g, w in zip(got, want, strict=True):  # the same objects, not equal copies
        assert all(a is b for a, b in zip(g, w, strict=True))


def test_a_short_row_raises_on_both_paths(native: NativeSwitch) -> None:
    native.require()
    rows: list[list[Any]] = [[1, 2, 3], [4, 5]]
    with pytest.raises(ValueError, match="row 1"):
        columns_of_rows(rows, (0, 2))
    with native.off(), pytest.raises(IndexError):
        columns_of_rows(rows, (0, 2))


def test_the_columns_hold_their_values_after_the_rows_are_gone(native: NativeSwitch) -> None:
    native.require()
    rows = [[f"v{i}-{j}" for j in range(4)] for i in range(1000)]
    cols = columns_of_rows(rows, (3, 1))
    del rows
    assert cols[0][999] == "v999-3" and cols[1][0] == "v0-1"


_TYPES = [pa.int16(), pa.int32(), pa.int64(), pa.timestamp("us", tz="UTC"), pa.bool_(),
          pa.string(), pa.binary()]
#: what a column may hold: its own kind of value mostly, now and then another (which the
#: kernel declines and pa.array takes or refuses)
_ANY = st.one_of(st.none(), st.integers(-(1 << 70), 1 << 70), st.integers(-40000, 40000),
                 st.booleans(), st.text(max_size=6), st.binary(max_size=6),
                 st.floats(allow_nan=False), st.just("\ud800"))


def _built(values: list[Any], typ: pa.DataType) -> pa.Array | str:
    try:
        arr = _column(values, typ)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        return type(exc).__name__
    arr.validate(full=True)
    return arr


#: values of each type's own kind that fit it (what the mapper puts in such a column)
_FITTING = {
    pa.int16(): st.integers(-(1 << 15), (1 << 15) - 1),
    pa.int32(): st.integers(-(1 << 31), (1 << 31) - 1),
    pa.int64(): st.integers(-(1 << 63), (1 << 63) - 1),
    pa.timestamp("us", tz="UTC"): st.integers(0, 253402300799999999),
    pa.bool_(): st.booleans(),
    pa.string(): st.text(max_size=8),
    pa.binary(): st.binary(max_size=8),
}


@st.composite
def _typed_column(draw: st.DrawFn) -> tuple[pa.DataType, list[Any]]:
    typ = draw(st.sampled_from(_TYPES))
    own = st.one_of(st.none(), _FITTING[typ])
    # mostly a column of its own kind, as the mapper fills them; now and then anything
    values = draw(st.lists(st.one_of(own, _ANY) if draw(st.booleans()) and draw(st.booleans())
                           else own, min_size=1, max_size=40))
    return typ, values


@settings(deadline=None)
@given(_typed_column())
def test_a_plain_column_by_the_kernel_is_pa_arrays(native: NativeSwitch,
                                                   case: tuple[pa.DataType, list[Any]]) -> None:
    """``_column`` with the kernel's buffers equals ``pa.array`` (the Python path): values,
    nulls, type - or the same refusal."""
    native.require()
    typ, values = case
    got = _built(values, typ)
    with native.off():
        want = _built(values, typ)
    if isinstance(want, str):
        assert got == want
    else:
        assert isinstance(got, pa.Array) and got.type == want.type
        assert got.null_count == want.null_count
        assert got.equals(want), (got, want)


def test_column_buffers_declines_what_pa_array_must_decide(native: NativeSwitch) -> None:
    native.require()
    kernel = _native.kernel
    assert kernel is not None
    assert kernel.column_buffers([1, 1 << 40], 2) is None  # out of int32: pa.array refuses
    assert kernel.column_buffers([1, True], 3) is None  # a bool in an int column
    assert kernel.column_buffers(["a", "\ud800"], 5) is None  # not UTF-8: cleaned in Python
    assert kernel.column_buffers([1.5], 3) is None
    nulls, valid, data, offsets = kernel.column_buffers(["ab", None, "c"], 5) or (0, b"", b"",
                                                                                   None)
    assert (nulls, valid, data, offsets) == (1, b"\x05", b"abc",
                                             bytes([0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,
                                                    3, 0, 0, 0]))
