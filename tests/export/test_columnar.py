"""The exporter's columnar path builds exactly what the per-row path builds.

``image_columns`` turns a row group's images into the ``before``/``after`` text maps and the
``*_json`` texts in a few Arrow calls per table column; ``image_map`` and ``json_text`` do it one
row at a time. Every value kind the decoder produces (and the awkward ones: quotes, control
characters, non-ASCII, unsigned 64-bit, NaN/inf, magnitudes outside MySQL's fixed notation,
BIT/YEAR, mixed types in one column, missing column metadata, empty images) must come out the
same.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from binlogscope.export.images import ImageColumns, image_columns, image_map, json_text
from binlogscope.export.mapper import COLUMNS
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T

_COLS = {
    "id": ColumnInfo(0, T.MYSQL_TYPE_LONGLONG, unsigned=True),
    "name": ColumnInfo(1, T.MYSQL_TYPE_VARCHAR, 200),
    "d": ColumnInfo(2, T.MYSQL_TYPE_DOUBLE, 8),
    "f": ColumnInfo(3, T.MYSQL_TYPE_FLOAT, 4),
    "b": ColumnInfo(4, T.MYSQL_TYPE_VARCHAR, 200, charset=63),
    "bit": ColumnInfo(5, T.MYSQL_TYPE_BIT, 0x0100),
    "y": ColumnInfo(6, T.MYSQL_TYPE_YEAR),
    "mixed": ColumnInfo(7, T.MYSQL_TYPE_VARCHAR, 200),
}
COLS = ImageColumns(_COLS, ["id"], frozenset({"bit", "y"}))

VALUES: dict[str, list[Any]] = {
    "id": [1, 0, -5, 2**64 - 1, None, 2**63],
    "name": ["plain", 'quote " and \\ back', "tab\tnew\nline\x01", "ünï €", "", None],
    "d": [1.5, 100.0, 1e-05, 1e15, None, -0.0],
    "f": [1.5, 0.1, None, 3.4028234663852886e38, 2.0, -1.25],
    "b": [b"\x00\xff", b"", None, b"abc", b"\x10", b"z"],
    "bit": [5, 0, None, 255, 1, 2],
    "y": [0, 2024, None, 1999, 1901, 2155],
    "mixed": ["x", 3, None, b"\x01", 2.5, True],
}


def _images() -> list[dict[str, Any]]:
    return [{k: v[i] for k, v in VALUES.items()} for i in range(6)]


def _same(refs: list[tuple[dict[str, Any], ImageColumns | None] | None]) -> None:
    maps, jsons = image_columns(refs)
    want_maps = [None if r is None else image_map(r[0], r[1]) for r in refs]
    want_json = [None if r is None else json_text(r[0]) for r in refs]
    assert maps.to_pylist() == want_maps
    assert jsons.to_pylist() == want_json
    assert maps.type == pa.map_(pa.string(), pa.string())


def test_every_value_kind() -> None:
    _same([(im, COLS) for im in _images()])


def test_nan_infinity_and_magnitudes() -> None:
    floats = [float("nan"), float("inf"), -float("inf"), 1e20, 1e-7, 123.0]
    refs: list[Any] = [({"d": x, "id": 1}, COLS) for x in floats]
    maps, jsons = image_columns(refs)
    assert [m[0][1] for m in maps.to_pylist()] == [image_map(r[0], COLS)[0][1] for r in refs]
    assert jsons.to_pylist() == [json_text(r[0]) for r in refs]


def test_fixed_notation_doubles_and_plain_columns_take_the_vector_path() -> None:
    rows = [{"d": x, "id": i, "name": f"n{i}", "b": bytes([i])}
            for i, x in enumerate([1.5, 100.0, 0.001, None, -2.25, 99999.0, 1e14 + 0.5])]
    _same([(r, COLS) for r in rows])


def test_groups_nulls_and_order_kept() -> None:
    ims = _images()
    refs: list[Any] = [
        (ims[0], COLS), None, ({"id": 7}, COLS), (ims[1], None), ({}, COLS), (ims[2], COLS),
        None, ({"name": "only"}, COLS), (ims[3], COLS), ({"id": 8}, COLS)]
    _same(refs)
    _same([None, None])
    _same([({"id": 1}, COLS)])


def test_lazy_mapper_rows_equal_eager_rows() -> None:
    """The mapper's lazy rows, built by the writer's builder, equal its eager dict rows."""
    from binlogscope.export.arrow import data_schema

    names = COLUMNS["rows"]
    refs: list[Any] = [(im, COLS) for im in _images()]
    for slot in ("before", "after"):
        values = [r if i % 3 else None for i, r in enumerate(refs)]
        maps, jsons = image_columns(values)
        assert maps.type == data_schema("rows").field(slot).type
        assert jsons.type == data_schema("rows").field(f"{slot}_json").type
    assert names.index("before_json") == names.index("before") + 2


def test_pk_column_equals_pk_pairs_row_by_row() -> None:
    """``pk_column_of`` (one-column keys inline) gives what ``pk_pairs`` gives for each row:
    after image first, else before; no key, an empty image, a key missing from the image, a
    NULL key, BIT/YEAR keys, bytes, floats and a two-column key."""
    from binlogscope.export.columns import RowsSlot
    from binlogscope.export.images import pk_column_of, pk_pairs

    def cols(pk: list[str] | None) -> ImageColumns:
        return ImageColumns(_COLS, pk, frozenset({"bit", "y"}))

    images = _images()
    refs: list[tuple[dict[str, Any], ImageColumns | None] | None] = []
    for key in (["id"], ["name"], ["bit"], ["y"], ["b"], ["d"], ["mixed"], ["id", "name"], None):
        refs += [(im, cols(key)) for im in images]
    refs += [({}, cols(["id"])), ({"name": "x"}, cols(["id"])), (images[0], None), None]
    rows: list[list[Any]] = []
    want = []
    for i, ref in enumerate(refs):
        other = refs[-1 - i]
        for before, after in ((ref, None), (None, ref), (other, ref)):
            row: list[Any] = [None] * len(COLUMNS["rows"])
            row[RowsSlot.before], row[RowsSlot.after] = before, after
            rows.append(row)
            want.append(pk_pairs(before, after))
    (got,) = pk_column_of(rows, RowsSlot.pk)
    assert got.to_pylist() == want
