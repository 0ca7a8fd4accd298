"""MariaDB hi-res TIME/DATETIME/TIMESTAMP columns: finding their decimals.

Tables created with ``mysql56_temporal_format=OFF`` store TIME(n)/DATETIME(n)/TIMESTAMP(n) in
MariaDB's hi-res formats under the old type codes, with no metadata saying n. ``rows.py`` calls
:func:`resolve_mariadb_hires` before reading the first rows of such a table: the decimals come
from the table's CREATE TABLE (when the binlog held it) or are inferred from the row bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from binlogscope.wire.binlog._rowcode import UPDATE, read_rows, table_plan
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import Reader, hires_plausible, make_reader

_OLD_TEMPORAL = {T.MYSQL_TYPE_TIME: "TIME", T.MYSQL_TYPE_DATETIME: "DATETIME",
                 T.MYSQL_TYPE_TIMESTAMP: "TIMESTAMP"}
#: column reads the decimals search may spend on one event before giving up
_BUDGET = 200_000


def resolve_mariadb_hires(tm: TableMap, data: bytes, kind: str, present: int,
                           present_after: int, ctx: DecodeContext | None = None) -> None:
    """Find the decimals of MariaDB hi-res TIME/DATETIME/TIMESTAMP columns.

    Tables created with ``mysql56_temporal_format=OFF`` store TIME(n)/DATETIME(n)/TIMESTAMP(n)
    with n > 0 in MariaDB's hi-res formats under the old type codes, with no metadata. The
    decimals come from the table's CREATE TABLE when the binlog held it (``ctx.declared``),
    checked against this event's rows; otherwise they are inferred from the row bytes: the
    candidates (old format, then 1..6 decimals, smallest first) are followed image by image
    and the first assignment that consumes every row exactly with plausible values wins.
    Columns that were NULL in every row stay unknown until a later event shows them.
    """
    temporal = [c for c in tm.columns if c.type in _OLD_TEMPORAL]
    unknown = [c for c in temporal if not c.hires_source]
    if not unknown:
        tm.hires_resolved = True
        return
    if ctx is not None and _from_ddl(tm, ctx, unknown, data, kind, present, present_after):
        tm.hires_resolved = True
        return
    if not data:
        return
    for strict in (True, False):
        found = _infer(tm, unknown, data, kind, present, present_after, strict)
        if found is not None:
            for c in unknown:
                if c.index in found:
                    c.hires_dec = found[c.index]
                    c.hires_source = "row bytes"
            break
    tm.compiled = None
    if all(c.hires_source for c in temporal):
        tm.hires_resolved = True


def _from_ddl(tm: TableMap, ctx: DecodeContext, unknown: list[ColumnInfo], data: bytes,
              kind: str, present: int, present_after: int) -> bool:
    declared = ctx.declared.get((tm.schema.lower(), tm.table.lower()))
    if declared is None or len(declared) != len(tm.columns):
        return False
    for c in unknown:
        name, typ, _dec = declared[c.index]
        if typ != _OLD_TEMPORAL[T(c.type)] or (c.name is not None and c.name.lower() != name):
            return False
    saved = [(c.hires_dec, c.hires_source) for c in unknown]
    for c in unknown:
        c.hires_dec = declared[c.index][2]
        c.hires_source = "CREATE TABLE"
    tm.compiled = None
    try:
        plan_b = table_plan(tm, present, True)
        plan_a = table_plan(tm, present_after, True) if kind == UPDATE else None
        read_rows(data, kind, plan_b, plan_a)
        return True
    except Exception:
        for c, (d, src) in zip(unknown, saved, strict=True):
            c.hires_dec, c.hires_source = d, src
        tm.compiled = None
        return False


def _candidate_readers(c: ColumnInfo) -> list[tuple[int, Reader]]:
    out: list[tuple[int, Reader]] = []
    for d in range(7):
        probe = ColumnInfo(c.index, c.type, c.meta, hires_dec=d)
        out.append((d, make_reader(probe, mariadb=True)))
    return out


def _infer(tm: TableMap, unknown: list[ColumnInfo], data: bytes, kind: str, present: int,
           present_after: int, strict: bool) -> dict[int, int] | None:
    """Depth-first search over the images of one event; returns {column index: decimals}.

    Each image is read column by column; an unknown column that is not NULL branches over its
    candidate formats (smallest decimals first) whose value is plausible. The first assignment
    that reads every image to exactly the end of the rows wins. ``_BUDGET`` bounds the work.
    """
    open_cols = {c.index for c in unknown}
    candidates = {c.index: _candidate_readers(c) for c in unknown}
    fixed: dict[int, Reader] = {c.index: make_reader(c, mariadb=True) for c in tm.columns
                                if c.index not in open_cols}
    layouts = [[c for c in tm.columns if present >> c.index & 1]]
    if kind == UPDATE:
        layouts.append([c for c in tm.columns if present_after >> c.index & 1])
    n = len(data)
    budget = [_BUDGET]

    def image(cols: list[ColumnInfo], assign: dict[int, int], p: int
              ) -> Iterator[tuple[dict[int, int], int]]:
        nb = (len(cols) + 7) // 8
        if p + nb > n:
            return
        nulls = int.from_bytes(data[p : p + nb], "little")

        def walk(i: int, a: dict[int, int], q: int) -> Iterator[tuple[dict[int, int], int]]:
            while i < len(cols):
                budget[0] -= 1
                if budget[0] < 0:
                    return
                c = cols[i]
                if nulls >> i & 1:
                    i += 1
                    continue
                idx = c.index
                if idx in fixed or idx in a:
                    rd = fixed.get(idx)
                    if rd is None:
                        rd = candidates[idx][a[idx]][1]
                    try:
                        v, q = rd(data, q)
                    except Exception:
                        return
                    if q > n or (idx in open_cols and not _plausible_value(c, v, strict)):
                        return
                    i += 1
                    continue
                for d, rd in candidates[idx]:
                    try:
                        v, q2 = rd(data, q)
                    except Exception:
                        continue
                    if q2 <= n and _plausible_value(c, v, strict):
                        yield from walk(i + 1, {**a, idx: d}, q2)
                return
            yield a, q

        yield from walk(0, assign, p + nb)

    nl = len(layouts)
    stack = [image(layouts[0], {}, 0)]
    while stack and budget[0] >= 0:
        found = next(stack[-1], None)
        if found is None:
            stack.pop()
            continue
        a, q = found
        if q == n and len(stack) % nl == 0:
            return a
        if q < n:
            stack.append(image(layouts[len(stack) % nl], a, q))
    return None


def _plausible_value(c: ColumnInfo, v: Any, strict: bool) -> bool:
    if c.type == T.MYSQL_TYPE_TIMESTAMP:
        return True  # seconds always decode; a fraction too big already raised
    if strict:
        return hires_plausible(c.type, v)
    return hires_plausible(c.type, v, lenient=True)
