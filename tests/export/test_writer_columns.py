"""The writer's columns of a row group (``writer.columns_of_rows``): the kernel's one pass over
the rows gives the same lists - the same objects, in order - as the per-column definition."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlogscope.export.writer import columns_of_rows
from tests.native_switch import NativeSwitch

_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.binary(max_size=8),
                    st.floats(allow_nan=False), st.tuples(st.text(max_size=3)))


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
