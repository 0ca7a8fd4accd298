"""Arrow arrays of a row group from the C column builder (``_ccolumns``), when it is built.

The writer buffers rows as lists of values in schema order. :func:`arrays` turns each column
of them into the Arrow array ``pa.array(values, type)`` gives (all columns in one pass over the
rows), and :func:`image_arrays` one lazy image slot into the ``before``/``after`` map and its
``*_json`` text, as :func:`binlogscope.export.records.image_columns` builds them; both write
the buffers in C and wrap them with ``pa.Array.from_buffers``. A column comes back None when
the C module is missing (or ``BINLOGSCOPE_PURE_PYTHON`` is set) or declines the column (a
value type it has no fast case for, text that is not valid UTF-8, a column too big for int32
offsets, an int out of the column's range): the caller then takes the Python path, which stays
the definition (``tests/export/test_native_columns.py`` compares the two).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

try:
    from binlogscope.export import _ccolumns  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built by setup.py when a compiler is there
    _ccolumns = None
if os.environ.get("BINLOGSCOPE_PURE_PYTHON"):  # every C path off, as elsewhere
    _ccolumns = None

_STR = pa.string()
_MAP = pa.map_(pa.string(), pa.string())
_STR_LIST = pa.list_(pa.string())

#: kind codes of _ccolumns.columns (0: not asked for), by Arrow type (a timestamp is its
#: int64 microseconds)
_KINDS: dict[pa.DataType, int] = {
    pa.int16(): 1, pa.int32(): 2, pa.int64(): 3, pa.timestamp("us", tz="UTC"): 3,
    pa.bool_(): 4, _STR: 5, pa.binary(): 6, _STR_LIST: 7, _MAP: 8,
}


def available() -> bool:
    """The C builder is importable (it is optional: setup.py builds it when it can)."""
    return _ccolumns is not None


def _buf(b: bytes | None) -> pa.Buffer | None:
    return None if b is None else pa.py_buffer(b)


def _strings(n: int, parts: tuple[Any, ...], typ: pa.DataType = _STR) -> pa.Array:
    nulls, valid, offsets, data = parts
    return pa.Array.from_buffers(typ, n, [_buf(valid), pa.py_buffer(offsets),
                                          pa.py_buffer(data)], null_count=nulls)


def _map(n: int, parts: tuple[Any, ...]) -> pa.Array:
    nulls, valid, offsets, keys, items = parts
    count = int.from_bytes(offsets[-4:], "little")  # entries in all the maps
    k = _strings(count, keys)
    v = _strings(count, items)
    struct = pa.StructArray.from_arrays([k, v], fields=[_MAP.key_field, _MAP.item_field])
    return pa.Array.from_buffers(_MAP, n, [_buf(valid), pa.py_buffer(offsets)],
                                 null_count=nulls, children=[struct])


def _array(n: int, typ: pa.DataType, kind: int, parts: tuple[Any, ...]) -> pa.Array:
    if kind <= 4:  # ints, timestamps, bools: validity + one data buffer
        nulls, valid, data = parts
        return pa.Array.from_buffers(typ, n, [_buf(valid), pa.py_buffer(data)],
                                     null_count=nulls)
    if kind in (5, 6):
        return _strings(n, parts, typ)
    if kind == 7:
        nulls, valid, offsets, child = parts
        count = int.from_bytes(offsets[-4:], "little")
        return pa.Array.from_buffers(typ, n, [_buf(valid), pa.py_buffer(offsets)],
                                     null_count=nulls, children=[_strings(count, child)])
    return _map(n, parts)


def arrays(rows: list[list[Any]], types: Sequence[pa.DataType | None]
           ) -> list[pa.Array | None]:
    """``pa.array([row[j] for row in rows], types[j])`` for every column j, built in C in one
    pass over the rows; None for a column whose type is None (not asked for), that C declines
    (see the module doc), or for all of them without the C module."""
    kinds = tuple(0 if t is None else _KINDS.get(t, 0) for t in types)
    if _ccolumns is None or not any(kinds):
        return [None] * len(kinds)
    n = len(rows)
    out: list[pa.Array | None] = []
    for typ, kind, parts in zip(types, kinds, _ccolumns.columns(rows, kinds), strict=True):
        out.append(None if parts is None else _array(n, typ, kind, parts))
    return out


def image_arrays(rows: list[list[Any]], index: int,
                 value_text: Callable[[Any, str, Any], str | None],
                 json_text: Callable[[Any], str]) -> tuple[pa.Array, pa.Array] | None:
    """The map and JSON columns of the lazy ``(image, columns)`` pairs at ``row[index]``,
    built in C, or None. ``value_text(v, key, columns)`` and ``json_text(v)`` give the text
    of the values C has no fast case for (the Python path's own functions)."""
    if _ccolumns is None:
        return None
    parts = _ccolumns.images(rows, index, value_text, json_text)
    if parts is None:
        return None
    n = len(rows)
    return _map(n, parts[0]), _strings(n, parts[1])


def pk_array(rows: list[list[Any]], before: int, after: int,
             value_text: Callable[[Any, str, Any], str | None],
             json_text: Callable[[Any], str]) -> pa.Array | None:
    """The ``pk`` map column of the lazy image pairs at ``row[before]``/``row[after]`` (the key
    columns' text from the after image, else the before image), built in C, or None."""
    if _ccolumns is None:
        return None
    parts = _ccolumns.pk(rows, before, after, value_text, json_text)
    return None if parts is None else _map(len(rows), parts)
