"""The filter language and the filtered view (no Textual involved)."""

from __future__ import annotations

import pytest

from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.view import RowFilter, View
from tests.tui.conftest import CRC


@pytest.fixture(scope="module")
def source() -> BinlogFileSource:
    s = BinlogFileSource(CRC)
    s.run(lambda: False)
    return s


def test_parse_terms() -> None:
    f = RowFilter.parse(r"type:write,Update table:shop\.orders errors Begin  x")
    assert f.types == ("WRITE", "UPDATE")
    assert f.table is not None and f.table.pattern == r"shop\.orders"
    assert f.errors and f.text == "begin x" and f.active
    assert RowFilter.parse(f.spec()) == f
    assert not RowFilter.parse("  ").active
    with pytest.raises(ValueError, match="bad regular expression"):
        RowFilter.parse("table:(")


def test_view_filters_and_maps_indices(source: BinlogFileSource) -> None:
    every = View(source)
    assert len(every) == 303 and every.row_index(7) == 7 and every.view_index(7) == 7
    v = View(source, RowFilter.parse("type:TABLE_MAP table:folder$"))
    v.sync()
    rows = [v.row_index(i) for i in range(len(v))]
    assert rows and rows[0] == 4
    assert all(source.row(r).event_type == "TABLE_MAP_EVENT" for r in rows)
    assert all(source.row(r).table == "simu_file_dev.folder" for r in rows)
    assert v.view_index(4) == 0 and v.view_index(5) is None
    assert v.row_index(v.nearest(5)) == rows[1]


def test_view_grows_with_limit(source: BinlogFileSource) -> None:
    v = View(source, RowFilter.parse("xid"))
    assert v.sync(limit=10)  # rows 0..9 hold one XID (row 6)
    assert v.scanned == 10 and [v.row_index(i) for i in range(len(v))] == [6]
    v.sync()
    assert v.scanned == 303 and len(v) == sum(
        source.row(i).event_type == "XID_EVENT" for i in range(303))
