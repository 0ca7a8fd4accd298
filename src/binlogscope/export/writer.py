"""The streaming, crash-safe, memory-bounded Parquet writer of the export dataset.

:class:`DatasetWriter` buffers rows per (table, partition) and writes them as row groups of
part files (the layout, the schema and the crash-safety contract are in
:mod:`binlogscope.export.arrow`). Row groups are cut by rows and by the memory the rows hold;
a huge row (a 17 MB BLOB) is written alone, at once, and the memory it took goes back to the
system (:func:`release_memory`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from binlogscope import _native
from binlogscope.export.arrow import TABLES, data_schema, escape_partition, partition_columns
from binlogscope.export.valid_text import is_valid, string_safe_array
from binlogscope.pipeline.state import fsync_dir


class _Part:
    """One open part file: buffered rows for one (table, partition), flushed as row groups."""

    __slots__ = ("buffer", "bytes", "final", "rows", "temp", "writer")

    def __init__(self, temp: Path, final: Path) -> None:
        self.temp = temp
        self.final = final
        self.writer: pq.ParquetWriter | None = None  # used on the writer thread only
        self.buffer: list[list[Any]] = []  # rows as lists of values in schema order
        self.bytes = 0  # what the buffered rows stand for (their weights)
        self.rows = 0


class DatasetWriter:
    """Append rows to the three tables; row groups are written as the buffers fill.

    ``add_values(table, partition_values, values)`` takes the data columns' values in schema
    order (:func:`data_schema`); ``add(table, partition_values, row)`` a dict of them. A full
    buffer becomes one Arrow array per column (``pa.array`` over the column's values, or the
    table's column builders for the lazy row images) and one row group. Parquet encoding and
    compression run on one background thread (``background=True``; pyarrow releases the GIL
    there), in order, while the caller decodes on. Part files are hidden until
    :meth:`checkpoint` (which waits for the writes) renames them; :meth:`abort` removes
    unfinished ones.
    """

    def __init__(self, root: str | Path, *, checkpoint_no: int = 1, row_group_size: int = 65536,
                 row_group_bytes: int = 24 << 20, buffer_bytes: int = 48 << 20,
                 huge_row_bytes: int = 4 << 20,
                 max_open: int = 32, compression: str = "zstd",
                 background: bool = True, directories: bool = True,
                 builders: dict[str, list[tuple[str, tuple[str, ...],
                                                Callable[[list[list[Any]], int],
                                                         tuple[pa.Array, ...]]]]]
                 | None = None) -> None:
        self.root = Path(root)
        self.checkpoint_no = checkpoint_no
        self.row_group_size = row_group_size
        #: a row group is also cut when its rows' weights (their memory, estimated) reach
        #: this: a few huge rows (a 17 MB BLOB) are written on their own instead of waiting
        #: in memory for more
        self.row_group_bytes = row_group_bytes
        #: and the weights buffered in all open parts together stay under this (the biggest
        #: part is written when they reach it)
        self.buffer_bytes = buffer_bytes
        #: a row holding this much (a 17 MB BLOB, a 35 MB statement) is written at once, in a
        #: row group of its own, alone (see :meth:`_flush_huge`)
        self.huge_row_bytes = huge_row_bytes
        self._buffered = 0
        self.max_open = max_open
        self.compression = compression
        self._open: OrderedDict[tuple[str, tuple[str, ...]], _Part] = OrderedDict()
        self._closed: list[_Part] = []
        self._seq = 0
        self._schemas = {t: data_schema(t) for t in TABLES}
        self._names = {t: tuple(self._schemas[t].names) for t in TABLES}
        #: per table: (input column, output columns, builder): ``builder(rows, index)`` makes
        #: the output columns from a row group's rows and the input column's index (the
        #: mapper's lazy row images); other columns are ``pa.array(values, type)``
        self._builders = builders or {}
        self.rows_written: dict[str, int] = dict.fromkeys(TABLES, 0)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet-writer") \
            if background else None
        self._writes: deque[Future[None]] = deque()
        for t in TABLES if directories else ():  # (False: a subclass keeps its row groups)
            (self.root / t).mkdir(parents=True, exist_ok=True)

    def add(self, table: str, partition: tuple[str, ...], row: dict[str, Any]) -> None:
        self.add_values(table, partition, [row.get(n) for n in self._names[table]])

    def add_values(self, table: str, partition: tuple[str, ...], values: list[Any],
                   weight: int = 0) -> None:
        """Buffer one row (``weight``: the memory it holds, estimated; see
        ``row_group_bytes``, ``buffer_bytes`` and ``huge_row_bytes``)."""
        self._add_one(table, self._part_for(table, partition), values, weight)

    def _flush_huge(self, table: str, part: _Part, values: list[Any], weight: int) -> None:
        """Write a huge row in a row group of its own, alone: converting and encoding it takes
        a few times its size, which must not add up with the row groups queued for the writer
        thread, and the memory goes back to the system after it."""
        self._flush(table, part)
        self._wait()
        release_memory()
        part.buffer.append(values)
        del values
        self._buffered += weight
        part.bytes += weight
        self._flush(table, part, release=True)
        self._wait()
        release_memory()

    def _flush_biggest(self) -> None:
        """Write the open part holding the most (the buffers together reached buffer_bytes)."""
        (table, _), part = max(self._open.items(), key=lambda kv: kv[1].bytes)
        self._flush(table, part)

    def _part_for(self, table: str, partition: tuple[str, ...]) -> _Part:
        """The open part of (table, partition), made the most recently used (or a new one)."""
        key = (table, partition)
        part = self._open.get(key)
        if part is None:
            return self._new_part(table, partition)
        if len(self._open) > 1:
            self._open.move_to_end(key)
        return part

    def add_rows(self, table: str, partition: tuple[str, ...], rows: list[list[Any]],
                 weights: list[int]) -> None:
        """``add_values(table, partition, rows[i], weights[i])`` of each row in order, cut
        into row groups exactly where those calls would cut them, with one part lookup: the
        rows before the next cut (by count, by a part's bytes or by all buffered bytes) are
        appended at once, the row that makes the cut is added as ``add_values`` adds it (a
        huge row's run goes row by row). Consumes ``rows`` and ``weights`` (empty
        afterwards): a row written out is no longer held here."""
        part = self._part_for(table, partition)
        size = self.row_group_size
        at, n = 0, len(rows)
        while at < n:
            buf = part.buffer  # (a new list after each row group written)
            stop = min(n, at + size - len(buf))
            chunk = weights[at:stop]
            if max(chunk) >= self.huge_row_bytes:  # (this run row by row)
                last = stop
            else:
                room = min(self.row_group_bytes - part.bytes, self.buffer_bytes - self._buffered)
                total = sum(chunk)
                if total < room:
                    cut = stop
                else:  # the first row whose weight reaches a limit of bytes
                    cut = at + next(k for k, acc in enumerate(accumulate(chunk)) if acc >= room)
                    total = sum(weights[at:cut])
                buf += rows[at:cut]
                part.bytes += total
                self._buffered += total
                if cut == stop:
                    at = stop
                    if len(buf) >= size:
                        self._flush(table, part)
                    continue
                at, last = cut, cut + 1  # (the row that makes the cut)
            for k in range(at, last):
                values = rows[k]
                rows[k] = None  # type: ignore[call-overload]  # (no longer held here)
                self._add_one(table, part, values, weights[k])
                del values
            at = last
        rows.clear()
        weights.clear()

    def _add_one(self, table: str, part: _Part, values: list[Any], weight: int) -> None:
        """:meth:`add_values` of one row to its part ``part``."""
        if weight >= self.huge_row_bytes:
            self._flush_huge(table, part, values, weight)
            return
        buf = part.buffer
        buf.append(values)
        if weight:
            part.bytes += weight
            self._buffered += weight
            if part.bytes >= self.row_group_bytes:
                self._flush(table, part)
                return
            if self._buffered >= self.buffer_bytes:
                self._flush_biggest()
                return
        if len(buf) >= self.row_group_size:
            self._flush(table, part)

    def _new_part(self, table: str, partition: tuple[str, ...]) -> _Part:
        if len(self._open) >= self.max_open:
            (old_table, _), old = self._open.popitem(last=False)
            self._close(old_table, old)
        d = self.root / table
        for name, value in zip(partition_columns(table), partition, strict=True):
            d = d / f"{name}={escape_partition(value)}"
        self._seq += 1
        stem = f"part-{self.checkpoint_no:06d}-{self._seq:04d}"
        part = _Part(d / f".{stem}.parquet.inprogress", d / f"{stem}.parquet")
        self._open[(table, partition)] = part
        return part

    def _flush(self, table: str, part: _Part, *, release: bool = False) -> None:
        """Write the buffered rows of ``part`` as a row group (``release``: give the memory
        the conversion used back before the write)."""
        rows = part.buffer
        n = len(rows)
        if not n:
            return
        part.buffer = []
        self._buffered -= part.bytes
        part.bytes = 0
        schema = self._schemas[table]
        names = self._names[table]
        built: dict[str, pa.Array] = {}
        for source, outputs, build in self._builders.get(table, ()):
            built.update(zip(outputs, build(rows, names.index(source)), strict=True))
        plain = tuple(j for j, f in enumerate(schema) if f.name not in built)
        values = dict(zip(plain, columns_of_rows(rows, plain), strict=True))
        del rows
        arrays = []
        for j, f in enumerate(schema):
            arr = built.pop(f.name, None)
            if arr is None:
                arr = _column(values.pop(j), f.type)
            elif arr.type != f.type:
                arr = arr.cast(f.type)
            arrays.append(arr)
        batch = pa.Table.from_arrays(arrays, schema=schema)
        del arrays
        self.rows_written[table] += n
        part.rows += n
        if release:
            release_memory()  # what building the arrays left behind
        self._submit(self._write, part, batch)

    def _write(self, part: _Part, batch: pa.Table) -> None:
        if part.writer is None:
            part.temp.parent.mkdir(parents=True, exist_ok=True)
            small = _small_value_columns(batch.schema)
            part.writer = pq.ParquetWriter(part.temp, batch.schema, compression=self.compression,
                                           use_dictionary=_repeated_value_columns(
                                               batch.schema, small),
                                           write_statistics=_statistics_columns(small))
        part.writer.write_table(batch)

    @staticmethod
    def _finish_part(part: _Part) -> None:
        if part.writer is not None:
            part.writer.close()
            part.writer = None

    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._pool is None:
            fn(*args)
            return
        writes = self._writes
        while writes and writes[0].done():
            writes.popleft().result()  # a failed write raises here
        while len(writes) >= 3:  # bounded: at most a few row groups wait in memory
            writes.popleft().result()
        writes.append(self._pool.submit(fn, *args))

    def _wait(self) -> None:
        """Every submitted write is done (re-raising the first failure)."""
        writes = self._writes
        while writes:
            writes.popleft().result()

    def _close(self, table: str, part: _Part) -> None:
        self._flush(table, part)
        if part.rows:
            self._submit(self._finish_part, part)
            self._closed.append(part)

    def checkpoint(self) -> list[Path]:
        """Finish every open part, make the parts of this checkpoint visible; next number."""
        for (table, _), part in list(self._open.items()):
            self._close(table, part)
        self._open.clear()
        self._wait()
        done = []
        for part in self._closed:  # on disk before they become visible (and the state)
            _fsync_path(part.temp)
        for part in self._closed:
            os.replace(part.temp, part.final)
            done.append(part.final)
        for d in {p.parent for p in done}:
            fsync_dir(d)
        self._closed.clear()
        self.checkpoint_no += 1
        self._seq = 0
        return done

    def abort(self) -> None:
        """Drop everything since the last checkpoint (unfinished hidden files are removed)."""
        while self._writes:
            try:
                self._writes.popleft().result()
            except Exception:
                pass
        for part in list(self._open.values()) + self._closed:
            if part.writer is not None:
                try:
                    part.writer.close()
                except Exception:
                    pass
                part.writer = None
            try:
                part.temp.unlink()
            except OSError:
                pass
        self._open.clear()
        self._closed.clear()
        self._buffered = 0

    def close(self) -> None:
        """Stop the writer thread (after :meth:`checkpoint` or :meth:`abort`)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


#: columns whose values are rarely repeated and may be huge (a statement, an image, a
#: payload): no dictionary encoding and no min/max statistics (each would copy a 34 MB value
#: a few times: writing one such value took ~300 MB with them, ~60 MB without)
_PLAIN = frozenset({"query", "payload", "before_json", "after_json"})


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _small_value_columns(schema: pa.Schema) -> list[str]:
    """The Parquet column paths to dictionary-encode and keep statistics for: the small
    values (names, types, offsets, times) and the image maps' keys (column names), not the
    texts in :data:`_PLAIN` nor the maps' values."""
    out: list[str] = []
    for f in schema:
        if f.name in _PLAIN:
            continue
        if pa.types.is_map(f.type):
            out.append(f"{f.name}.key_value.key")
        elif pa.types.is_list(f.type):
            out.append(f"{f.name}.list.element")
        else:
            out.append(f.name)
    return out


def _statistics_columns(small: list[str]) -> list[str]:
    """The small-value columns to keep min/max statistics for: the top-level ones (offsets,
    times, names a reader filters on), not the image maps' keys nor the ``pk`` lists'
    elements (column names: no reader prunes a row group by the least and greatest column
    name; computing them for every image value took ~1 % of the export's instructions)."""
    return [c for c in small if "." not in c]


#: small-value columns whose values rarely repeat (one per transaction): no dictionary
_UNIQUE_TEXT = frozenset({"gtid"})


def _repeated_value_columns(schema: pa.Schema, small: list[str]) -> list[str]:
    """The small-value columns to dictionary-encode: names, kinds and flags (few distinct
    values), not the numbers and times (offsets, positions, timestamps: mostly distinct), whose
    dictionaries fill up and fall back to plain pages after being built - measured on the
    bench set's export (0.1 scale): the files 30.9 -> 28.8 MB, the writes' CPU the same
    within the noise (0.61-0.62 s, best of 5)."""
    numeric = {f.name for f in schema
               if pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type)}
    return [c for c in small if c not in numeric and c not in _UNIQUE_TEXT]


def columns_of_rows(rows: list[list[Any]], wanted: tuple[int, ...]) -> list[list[Any]]:
    """The columns ``wanted`` (indices into each row) of a row group's rows, as lists.

    ``[list(map(itemgetter(j), rows)) for j in wanted]`` is the definition; the native kernel
    (``_native/_columns.c``) gives the same lists reading each row once instead of once per
    column (25 passes over a 160,000-row group's lists took 2.2 s of the bench set's export,
    the one pass ~0.2 s)."""
    kernel = _native.kernel
    if kernel is not None:
        got: list[list[Any]] = kernel.columns(rows, wanted)
        return got
    return [list(map(itemgetter(j), rows)) for j in wanted]


def _column(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``; a column holding one value throughout (the source, the
    file name, a NULL column...) is built without converting every row."""
    first = values[0]
    # (the last value first: a column that varies usually differs there, without a count)
    if values[-1] == first and values.count(first) == len(values) \
            and (first is None or type(first) in _SCALARS) \
            and (type(first) is not str or is_valid(first)):
        return pa.repeat(pa.scalar(first, typ), len(values))
    kernel = _native.kernel
    kind = _BUFFER_KINDS.get(typ)
    if kernel is not None and kind is not None and type(values) is list:
        got = kernel.column_buffers(values, kind)
        if got is not None:  # else: a value the kernel does not take; pa.array decides
            nulls, valid, data, offsets = got
            buf = pa.py_buffer
            return pa.Array.from_buffers(
                typ, len(values), [None if valid is None else buf(valid), buf(data)]
                if offsets is None else [None if valid is None else buf(valid), buf(offsets),
                                         buf(data)], null_count=nulls)
    return string_safe_array(values, typ)


#: the column types the kernel's ``column_buffers`` writes (``_native/_columns.c``: exact
#: ints, bools, str and bytes, and None), by its kind number; other types take ``pa.array``
_BUFFER_KINDS: dict[pa.DataType, int] = {
    pa.int16(): 1, pa.int32(): 2, pa.int64(): 3, pa.timestamp("us", tz="UTC"): 3,
    pa.bool_(): 4, pa.string(): 5, pa.binary(): 6}


#: value types whose equality (``tuple.count``) is also sameness of the converted value
_SCALARS = frozenset({str, int, bytes})


def release_memory() -> None:
    """Give freed memory back to the system after a huge value: Arrow's pool and the C heap
    keep it otherwise (a 17 MB row left the process ~130 MB bigger for good)."""
    pa.default_memory_pool().release_unused()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _libc_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_malloc_trim = _libc_malloc_trim()
