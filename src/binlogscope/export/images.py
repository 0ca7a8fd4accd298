"""Row images -> the ``rows`` table's image columns: ``before``/``after`` (column -> text, as
SELECT prints it), ``before_json``/``after_json`` (typed JSON) and ``pk``.

The mapper leaves each image in its row as an ``(image, columns)`` pair (:data:`ImageRef`); the
writer hands a whole row group's column of them to :data:`COLUMN_BUILDERS`, which build the
Arrow arrays with a few pyarrow calls per table column (:func:`image_columns`).
:func:`image_map` and :func:`json_text` give the same text for one image (the definition the
tests compare the columnar path with, and what the dict-emitting mapper writes).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import pyarrow as pa

from binlogscope import _native
from binlogscope.export.columns import RowsSlot
from binlogscope.export.valid_text import is_valid, raw_hex, string_safe_array
from binlogscope.wire.binlog._rowcode import _KIND_CODE, ImagePlan
from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import effective_type, value_to_text
from binlogscope.wire.node import json_value


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps(v, ensure_ascii=False, default=json_value)`` for the row images.

    ``JSONEncoder.encode`` builds a new C encoder on every call; this builds it once (without
    the circular-reference check, which plain row images never need). Same text."""
    encoder = json.JSONEncoder(ensure_ascii=False, default=json_value)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return encoder.encode
    it = make(None, json_value, json.encoder.encode_basestring, None, ": ", ", ", False,
              False, True)
    join = "".join

    def encode(value: Any) -> str:
        return join(it(value, 0))

    return encode


#: one encoder for every row
json_text = _json_encoder()
#: column types whose int values do not print as plain decimal (BIT: bytes, YEAR: 0000)
_INT_SPECIAL = frozenset({T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_YEAR})
_FLOAT_TYPES = frozenset({T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE})


_F32 = struct.Struct("<f").pack


def _float_text(v: float, col: ColumnInfo) -> str:
    """value_to_text for FLOAT/DOUBLE, fast where Python's text already is MySQL's.

    Both print fixed notation for 1e-4 <= |v| < 1e15 and the shortest round-trip digits; only
    outside that range (exponent notation differs) the general formatter is needed.
    """
    a = abs(v)
    if 1e-4 <= a < 1e15:
        if col.type == T.MYSQL_TYPE_FLOAT:
            target = _F32(v)
            for digits in range(1, 10):
                s = f"{v:.{digits}g}"
                if _F32(float(s)) == target:
                    if "e" not in s:
                        return s
                    break
        else:
            s = repr(v)
            if "e" not in s:
                return s[:-2] if s.endswith(".0") else s
    t = value_to_text(v, col)
    assert isinstance(t, str)
    return t


def _text(value: Any, col: ColumnInfo | None) -> str | None:
    if value is None:
        return None
    if type(value) is float and col is not None and col.type in _FLOAT_TYPES:
        return _float_text(value, col)
    t = value_to_text(value, col) if col is not None else (
        value if isinstance(value, str | bytes) else str(value))
    if isinstance(t, bytes):
        return "0x" + t.hex()
    return t


@dataclass(slots=True)
class ImageColumns:
    """Per-TABLE_MAP lookups: label -> ColumnInfo and the primary key labels."""

    by_label: dict[str, ColumnInfo]
    pk: list[str] | None
    #: labels whose int values need value_to_text (BIT, YEAR)
    special: frozenset[str] = frozenset()
    #: labels of DOUBLE columns (their floats print as repr in MySQL's fixed-notation range)
    doubles: frozenset[str] = frozenset()


def columns_of(tm: TableMap) -> ImageColumns:
    """The lookups of one TABLE_MAP's images (the mapper caches them per TABLE_MAP)."""
    by_label = {c.label: c for c in tm.columns}
    pk = [tm.columns[i].label for i in tm.primary_key if 0 <= i < len(tm.columns)]
    named = pk and all(tm.columns[i].name is not None for i in tm.primary_key
                       if 0 <= i < len(tm.columns))
    special = frozenset(c.label for c in tm.columns if effective_type(c) in _INT_SPECIAL)
    doubles = frozenset(label for label, c in by_label.items()
                        if c.type == T.MYSQL_TYPE_DOUBLE)
    return ImageColumns(by_label, pk if named else None, special, doubles)


def image_map(image: dict[str, Any], cols: ImageColumns | None) -> list[tuple[str, str | None]]:
    """A row image as (column, text) pairs; the common str/int/None/bytes cases inline (the
    same text :func:`_text` gives: value_to_text returns str and bytes values unchanged)."""
    if cols is None:
        return [(k, _text(v, None)) for k, v in image.items()]
    out: list[tuple[str, str | None]] = []
    add = out.append
    special = cols.special
    get = cols.by_label.get
    for k, v in image.items():
        tv = type(v)
        if tv is str or v is None:
            add((k, v))
        elif tv is int and k not in special:
            add((k, str(v)))
        elif tv is bytes:
            add((k, "0x" + v.hex()))
        else:
            add((k, _text(v, get(k))))
    return out


def value_text(v: Any, k: str, cols: ImageColumns | None) -> str | None:
    """One value of an image as :func:`image_map` gives it."""
    if cols is None:
        return _text(v, None)
    tv = type(v)
    if tv is str or v is None:
        return v  # type: ignore[no-any-return]
    if tv is int and k not in cols.special:
        return str(v)
    if tv is bytes:
        return "0x" + v.hex()  # type: ignore[no-any-return]
    return _text(v, cols.by_label.get(k))


# ----------------------------------------------------------------------------- columnar images
#
# The writer hands the builders below a whole row group's column of ``(image, columns)`` pairs
# (or None). Rows whose images have the same columns (one TABLE_MAP, one column bitmap) are
# built together, one Arrow array per table column: the text of str values is the value
# itself, ints become text in one cast, and only floats, bytes and rarer types take a Python
# call per value. The results equal :func:`image_map` and ``json_text`` row by row (a test checks
# this on every fixture).

ImageRef = tuple[dict[str, Any], ImageColumns | None]
#: an image still in its rows event's bytes: (data, position, the plan's kernel ImageReader,
#: columns) - what the mapper leaves when the kernel is on (:func:`image_refs`); the kernel's
#: builders write its columns from the bytes, the Python paths read it (:func:`image_pair`)
BytesRef = tuple[bytes, int, Any, ImageColumns | None]


def image_pair(ref: ImageRef | BytesRef | None) -> ImageRef | None:
    """``ref`` as an ``(image, columns)`` pair: a :data:`BytesRef` read by its reader (the
    kernel's, whose values are the Python readers' - only the kernel makes such refs)."""
    if ref is None or len(ref) == 2:
        return ref  # type: ignore[return-value]
    data, pos, reader, cols = ref  # type: ignore[misc]
    image: dict[str, Any] = reader(data, pos)[0]
    return image, cols


_UNIQUE: dict[int, tuple[ImagePlan, bool]] = {}


def _unique_labels(plan: ImagePlan) -> bool:
    """The plan's labels are distinct (an image read into a dict keeps each once)."""
    got = _UNIQUE.get(id(plan))
    if got is None or got[0] is not plan:
        if len(_UNIQUE) > 4096:
            _UNIQUE.clear()
        got = _UNIQUE[id(plan)] = (plan, len(set(plan.labels)) == len(plan.labels))
    return got[1]


def image_refs(body: RowsEvent, cols: ImageColumns | None
               ) -> tuple[list[BytesRef | None], list[BytesRef | None]] | None:
    """The before and after image refs of each row of a rows event whose images are not read
    yet, left in the event's bytes (one kernel walk finds where each image starts); None
    where the images are read into dicts instead: the kernel off, the rows already read, a
    plan without the kernel's reader, labels that repeat."""
    kernel = _native.kernel
    if kernel is None:
        return None
    lazy = body.unread_rows()
    if lazy is None:
        return None
    plan_b, plan_a = lazy.plan_b, lazy.plan_a
    rb = plan_b.image
    ra = plan_a.image if plan_a is not None else None
    if rb is None or (plan_a is not None and ra is None) or not _unique_labels(plan_b) \
            or (plan_a is not None and not _unique_labels(plan_a)):
        return None
    data = lazy.data
    code = _KIND_CODE[lazy.kind]
    pos: list[int] = kernel.image_positions(data, code, rb, ra, lazy.start, lazy.end)
    return refs_at(data, pos, code, rb, ra, cols)


def refs_at(data: bytes, pos: list[int], code: int, rb: Any, ra: Any,
            cols: ImageColumns | None) -> tuple[list[BytesRef | None], list[BytesRef | None]]:
    """The before and after refs of a rows event's images that start at ``pos`` in ``data``
    (an UPDATE's alternate), read by the kernel's readers ``rb``/``ra``; ``code``: the
    event's kind (``_KIND_CODE``)."""
    if code == 1:  # UPDATE: before and after images alternate
        return ([(data, p, rb, cols) for p in pos[0::2]],
                [(data, p, ra, cols) for p in pos[1::2]])
    refs: list[BytesRef | None] = [(data, p, rb, cols) for p in pos]
    nones: list[BytesRef | None] = [None] * len(refs)
    return (nones, refs) if code == 0 else (refs, nones)  # INSERT: after images only
_STR = pa.string()
_MAP_TYPE = pa.map_(pa.string(), pa.string())
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_QUOTE = pa.scalar('"')
_NULL_TEXT = pa.scalar("null")
_HEX_PREFIX = pa.scalar("0x")


def _groups(col: Sequence[ImageRef | None]
            ) -> tuple[list[tuple[tuple[str, ...], ImageColumns | None, list[int]]], list[int]]:
    """Row indices grouped by (columns, image keys); the indices of the null rows."""
    groups: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, ...], ImageColumns | None,
                                                    list[int]]] = {}
    nulls: list[int] = []
    for i, ref in enumerate(col):
        if ref is None:
            nulls.append(i)
            continue
        image, cols = ref
        keys = tuple(image)
        g = groups.get((id(cols), keys))
        if g is None:
            g = groups[(id(cols), keys)] = (keys, cols, [])
        g[2].append(i)
    return list(groups.values()), nulls


def _int_text(values: Sequence[Any]) -> pa.Array | None:
    for typ in (pa.int64(), pa.uint64()):
        try:
            return pa.array(values, typ).cast(_STR)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            continue
    return None


def _hex(values: Sequence[bytes | None], none: bool) -> pa.Array:
    hexes = [None if v is None else v.hex() for v in values] if none \
        else list(map(bytes.hex, values))  # type: ignore[arg-type]
    return pa.array(hexes, _STR)


def _column_arrays(values: Sequence[Any], key: str, cols: ImageColumns | None
                   ) -> tuple[pa.Array, pa.Array]:
    """One image column of a group: its map items (the text :func:`image_map` writes) and
    its JSON literals (never null: None is ``null``; what ``json_text`` writes inside an object).
    A column of one Python type (plus None) is converted to Arrow once for both."""
    import pyarrow.compute as pc  # the Python path only: the kernel's never imports it
    types = set(map(type, values))
    none = type(None) in types
    types.discard(type(None))
    texts: pa.Array | None = None
    lits: pa.Array | None = None
    if len(types) == 1:
        typ = next(iter(types))
        try:
            if typ is str:
                arr = pa.array(values, _STR)
                if cols is not None:
                    texts = arr
                if not pc.any(pc.match_substring_regex(arr, _NEEDS_ESCAPE)).as_py():
                    lits = pc.fill_null(pc.binary_join_element_wise(_QUOTE, arr, _QUOTE, ""),
                                        _NULL_TEXT)
            elif typ is int:
                arr = _int_text(values)
                if arr is not None:
                    if cols is not None and key not in cols.special:
                        texts = arr
                    lits = pc.fill_null(arr, _NULL_TEXT)
            elif typ is bytes:  # map: 0x + hex; JSON (json_value): the hex digits, quoted
                hexes = _hex(values, none)
                if cols is not None:
                    texts = pc.binary_join_element_wise(_HEX_PREFIX, hexes, "")
                lits = pc.fill_null(pc.binary_join_element_wise(_QUOTE, hexes, _QUOTE, ""),
                                    _NULL_TEXT)
            elif typ is float:
                nums = pa.array(values, pa.float64())
                reprs: pa.Array | None = None
                if pc.all(pc.fill_null(pc.is_finite(nums), True)).as_py():
                    # JSON: float.__repr__, as the encoder writes finite floats
                    reprs = pa.array(list(map(repr, values)), _STR)
                    lits = pc.if_else(pc.is_null(nums), _NULL_TEXT, reprs)
                col = cols.by_label.get(key) if cols is not None else None
                if reprs is not None and col is not None and col.type == T.MYSQL_TYPE_DOUBLE:
                    # _float_text: repr without a trailing ".0" where MySQL prints fixed
                    # notation too (1e-4 <= |v| < 1e15); other magnitudes: per value below
                    mag = pc.abs(nums)
                    fixed = pc.and_(pc.greater_equal(mag, 1e-4), pc.less(mag, 1e15))
                    if pc.all(pc.fill_null(fixed, True)).as_py():
                        texts = pc.if_else(pc.is_null(nums), pa.scalar(None, _STR),
                                           pc.replace_substring_regex(reprs, r"\.0$", ""))
        except (OverflowError, UnicodeError, pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    if texts is None:
        text_values = [value_text(v, key, cols) for v in values]
        try:
            texts = pa.array(text_values, _STR)
        except UnicodeEncodeError:  # text not valid in its charset: its bytes, as hex
            col_info = cols.by_label.get(key) if cols is not None else None
            texts = pa.array([t if t is None or is_valid(t) else raw_hex(t, col_info)
                              for t in text_values], _STR)
    if lits is None:
        lits = string_safe_array(["null" if v is None else json_text(v) for v in values], _STR)
    return texts, lits


def _row_major(k: int, n: int) -> tuple[pa.Array, pa.Array]:
    """Take indices that turn k column-major blocks of n values into n rows of k values, and
    the column index (0..k-1, repeated n times) of each value in that row-major order."""
    import pyarrow.compute as pc  # the Python path only: the kernel's never imports it
    i = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n * k)), 1)
    row = pc.divide(i, k)
    col = pc.subtract(i, pc.multiply(row, k))
    return pc.add(pc.multiply(col, n), row), col


def _assemble(parts: list[tuple[pa.Array, list[int]]], nulls: list[int], total: int,
              typ: pa.DataType) -> pa.Array:
    """Put each group's rows back at their indices (null rows as nulls)."""
    if len(parts) == 1 and not nulls:
        return parts[0][0]
    arrays = [a for a, _ in parts]
    where: list[int] = []
    for _, idx in parts:
        where.extend(idx)
    if nulls:
        arrays.append(pa.nulls(len(nulls), typ))
        where.extend(nulls)
    order = [0] * total
    for pos, i in enumerate(where):
        order[i] = pos
    return pa.concat_arrays(arrays).take(pa.array(order, pa.int64()))


def image_columns(col: Sequence[ImageRef | BytesRef | None]) -> tuple[pa.Array, pa.Array]:
    """The text-map column (``before``/``after``, map<string,string>) and the typed-JSON
    column (``before_json``/``after_json``) of one image slot of a row group."""
    import pyarrow.compute as pc  # the Python path only: the kernel's never imports it
    col = pairs = [image_pair(r) for r in col]
    groups, nulls = _groups(pairs)
    maps: list[tuple[pa.Array, list[int]]] = []
    jsons: list[tuple[pa.Array, list[int]]] = []
    for keys, cols, idx in groups:
        n, k = len(idx), len(keys)
        if not k:
            maps.append((pa.MapArray.from_arrays(pa.array([0] * (n + 1), pa.int32()),
                                                 pa.array([], _STR), pa.array([], _STR)), idx))
            jsons.append((pa.array(["{}"] * n, _STR), idx))
            continue
        images = [col[i][0] for i in idx]  # type: ignore[index]
        # one pass per key with a C getter (zip(*rows) over many short rows is slower)
        converted = [_column_arrays(list(map(itemgetter(key), images)), key, cols)
                     for key in keys]
        del images
        # the JSON object '{"k1": lit1, "k2": lit2}' in one join: the constant pieces between
        # the literals are scalars (built first, so the literals go before the map is built)
        pieces: list[Any] = []
        for j, key in enumerate(keys):
            lead = "{" if j == 0 else ", "
            pieces += [pa.scalar(lead + json.encoder.encode_basestring(key) + ": "),
                       converted[j][1]]
        pieces.append(pa.scalar("}"))
        jsons.append((pc.binary_join_element_wise(*pieces, ""), idx))
        del pieces
        texts = [t for t, _ in converted]
        del converted
        # the map: offsets k apart, keys repeated, items taken row by row
        items = pa.concat_arrays(texts)
        del texts
        if n > 1:
            order, column = _row_major(k, n)
            if k > 1:
                items = items.take(order)
            names = pa.array(keys, _STR).take(column)
        else:
            names = pa.array(keys, _STR)
        offsets = pa.array(range(0, n * k + 1, k), pa.int32())
        maps.append((pa.MapArray.from_arrays(offsets, names, items), idx))
    if not maps:
        return pa.nulls(len(col), _MAP_TYPE), pa.nulls(len(col), _STR)
    return (_assemble(maps, nulls, len(col), _MAP_TYPE),
            _assemble(jsons, nulls, len(col), _STR))


def native_image_columns(col: Sequence[ImageRef | BytesRef | None]
                         ) -> tuple[pa.Array, pa.Array] | None:
    """:func:`image_columns` written by the native kernel (``_native/_arrow.c``): each image's
    map items and JSON text straight into Arrow buffers, one pass over the row group (no
    grouping, no per-column arrays); values other than None, str, int and bytes take
    :func:`value_text` and :data:`json_text`, the definition. None where the kernel is off or
    declines (text that is not valid UTF-8, ...): the caller builds them in Python."""
    kernel = _native.kernel
    write = getattr(kernel, "image_buffers", None) if kernel is not None else None
    if write is None:
        return None
    got = write(col, value_text, json_text)
    if got is None:
        return None
    (n, nulls, valid, offsets, key_off, key_data, item_nulls, item_valid, item_off, item_data,
     json_off, json_data) = got
    maps = _map_array(n, nulls, valid, offsets, key_off, key_data, item_nulls, item_valid,
                      item_off, item_data)
    buf = pa.py_buffer
    jsons = pa.Array.from_buffers(_STR, n, [buf(valid) if nulls else None, buf(json_off),
                                            buf(json_data)], null_count=nulls)
    return maps, jsons


def image_columns_of(rows: list[list[Any]], index: int) -> tuple[pa.Array, pa.Array]:
    """:func:`image_columns` of the image slot ``index`` of a row group's buffered rows (by
    the kernel where it takes them)."""
    col = [row[index] for row in rows]
    return native_image_columns(col) or image_columns(col)


def pk_pairs(before: ImageRef | BytesRef | None, after: ImageRef | BytesRef | None
             ) -> list[tuple[str, str | None]] | None:
    """The ``pk`` value of a row: the key columns' text from the after image, else the
    before image (what the eager mapper writes)."""
    ref = image_pair(after if after is not None else before)
    if ref is None:
        return None
    src, cols = ref
    if cols is None or not cols.pk or not src:
        return None
    return [(k, value_text(src[k], k, cols)) for k in cols.pk if k in src] or None


_ROW_BEFORE = RowsSlot.before
_ROW_AFTER = RowsSlot.after


def native_pk_column(rows: list[list[Any]]) -> pa.Array | None:
    """The ``pk`` column written by the native kernel (``_native/_arrow.c`` pk_buffers) as
    :func:`pk_column_of` builds it; None where the kernel is off or declines."""
    kernel = _native.kernel
    write = getattr(kernel, "pk_buffers", None) if kernel is not None else None
    if write is None:
        return None
    got = write(rows, _ROW_AFTER, _ROW_BEFORE, value_text)
    if got is None:
        return None
    n, nulls, valid, offsets, key_off, key_data, item_nulls, item_valid, item_off, item_data = got
    return _map_array(n, nulls, valid, offsets, key_off, key_data, item_nulls, item_valid,
                      item_off, item_data)


def pk_column_of(rows: list[list[Any]], index: int) -> tuple[pa.Array]:
    """The ``pk`` column of a row group, from its lazy before/after image pairs (``index``:
    the pk slot, which the lazy mapper leaves empty); by the kernel where it takes them."""
    native = native_pk_column(rows)
    if native is not None:
        return (native,)
    pairs: list[list[tuple[str, str | None]] | None] = []
    add = pairs.append
    for row in rows:
        ref = row[_ROW_AFTER]
        if ref is None:
            ref = row[_ROW_BEFORE]
        if ref is None:
            add(None)
            continue
        src, cols = image_pair(ref)  # type: ignore[misc]
        key = cols.pk if cols is not None else None
        if not key or not src:
            add(None)
        elif len(key) == 1:  # the usual one-column key, as pk_pairs gives it, inline
            k = key[0]
            if k in src:
                v = src[k]
                tv = type(v)
                add([(k, v if tv is str or v is None else str(v)
                      if tv is int and k not in cols.special  # type: ignore[union-attr]
                      else value_text(v, k, cols))])
            else:
                add(None)
        else:
            add(pk_pairs(None, ref))
    try:
        return (pa.array(pairs, _MAP_TYPE),)
    except UnicodeEncodeError:  # a key value not valid in its charset: its bytes, as hex
        return (pa.array([_raw_pairs(p, row[_ROW_AFTER] or row[_ROW_BEFORE])
                          for p, row in zip(pairs, rows, strict=True)], _MAP_TYPE),)


def _raw_pairs(pairs: list[tuple[str, str | None]] | None, ref: ImageRef | BytesRef | None
               ) -> list[tuple[str, str | None]] | None:
    if pairs is None:
        return None
    cols = ref[-1] if ref is not None else None  # (the columns: a ref's last item)
    get = cols.by_label.get if cols is not None else (lambda _k: None)
    return [(k, v if v is None or is_valid(v) else raw_hex(v, get(k))) for k, v in pairs]


#: per table: (the mapper's lazy input column, the columns built from it, the builder): the
#: writer calls ``builder(rows, index)`` once per row group with its buffered rows and the
#: input column's index
COLUMN_BUILDERS: dict[str, list[tuple[str, tuple[str, ...],
                                      Callable[[list[list[Any]], int],
                                               tuple[pa.Array, ...]]]]] = {
    "rows": [("before", ("before", "before_json"), image_columns_of),
             ("after", ("after", "after_json"), image_columns_of),
             ("pk", ("pk",), pk_column_of)],
}


def _map_array(n: int, nulls: int, valid: bytes, offsets: bytes, key_off: bytes,
               key_data: bytes, item_nulls: int, item_valid: bytes, item_off: bytes,
               item_data: bytes) -> Any:
    """A ``map<string, string>`` column of ``n`` rows from the kernel's buffers (validity and
    offsets of the rows; offsets and data of the keys; validity, offsets and data of the items)."""
    buf = pa.py_buffer
    m = len(key_off) // 4 - 1
    keys = pa.Array.from_buffers(_STR, m, [None, buf(key_off), buf(key_data)], null_count=0)
    items = pa.Array.from_buffers(_STR, m, [buf(item_valid) if item_nulls else None,
                                            buf(item_off), buf(item_data)],
                                  null_count=item_nulls)
    entries = pa.StructArray.from_arrays([keys, items],
                                         fields=[_MAP_TYPE.key_field, _MAP_TYPE.item_field])
    return pa.Array.from_buffers(_MAP_TYPE, n, [buf(valid) if nulls else None, buf(offsets)],
                                 null_count=nulls, children=[entries])
