"""The filtered view of a source: which rows the list shows, and the filter language.

Filter text (the filter bar): space-separated terms, all must match::

    type:WRITE,UPDATE     event type contains any of these (case-insensitive)
    table:shop\\.orders    schema.table matches the regex (re.search)
    errors                only rows with a decode error
    dir:client / dir:server   packets sent by the replica (->) / by the source (<-)
    anything else         free text, searched in type, table and summary

Pure Python, no Textual: the screens drive it, tests call it directly.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from binlogscope.inspector.source import RowSource

_DIRECTIONS = {d: "->" for d in ("->", "client", "c", "replica", "sent", "out")}
_DIRECTIONS.update({d: "<-" for d in ("<-", "server", "s", "source", "received", "in")})


@dataclass(frozen=True, slots=True)
class RowFilter:
    types: tuple[str, ...] = ()
    table: re.Pattern[str] | None = None
    errors: bool = False
    text: str = ""
    direction: str | None = None  # "->" or "<-"

    @property
    def active(self) -> bool:
        return bool(self.types or self.table is not None or self.errors or self.text
                    or self.direction)

    @classmethod
    def parse(cls, spec: str) -> RowFilter:
        """Parse filter-bar text; raises ValueError with a readable message."""
        words = spec.split()
        types: list[str] = []
        table = None
        errors = False
        direction = None
        text: list[str] = []
        for w in words:
            key, sep, val = w.partition(":")
            key = key.lower()
            if sep and key == "type":
                types.extend(t.strip().upper() for t in val.split(",") if t.strip())
            elif sep and key == "table":
                try:
                    table = re.compile(val, re.IGNORECASE)
                except re.error as exc:
                    raise ValueError(f"table: bad regular expression: {exc}") from None
            elif sep and key in ("dir", "direction"):
                d = _DIRECTIONS.get(val.lower())
                if d is None:
                    raise ValueError(f"dir:{val}: expected client (->) or server (<-)")
                direction = d
            elif w.lower() in ("errors", "error", "err", "errors:1"):
                errors = True
            else:
                text.append(w.lower())
        return cls(tuple(types), table, errors, " ".join(text), direction)

    def spec(self) -> str:
        parts = []
        if self.types:
            parts.append("type:" + ",".join(self.types))
        if self.table is not None:
            parts.append(f"table:{self.table.pattern}")
        if self.errors:
            parts.append("errors")
        if self.direction:
            parts.append("dir:" + ("client" if self.direction == "->" else "server"))
        if self.text:
            parts.append(self.text)
        return " ".join(parts)

    def with_errors(self, errors: bool) -> RowFilter:
        return RowFilter(self.types, self.table, errors, self.text, self.direction)

    def matches(self, source: RowSource, index: int) -> bool:
        row = source.row(index)
        if self.errors and not row.error:
            return False
        if self.direction is not None and row.direction != self.direction:
            return False
        if self.types and not any(t in row.event_type for t in self.types):
            return False
        if self.table is not None and (row.table is None or not self.table.search(row.table)):
            return False
        return not (self.text and self.text not in source.search_text(index))


class View:
    """Row indices of ``source`` that pass ``flt``; grows as the source grows (:meth:`sync`)."""

    def __init__(self, source: RowSource, flt: RowFilter | None = None) -> None:
        self.source = source
        self.filter = flt or RowFilter()
        self._indices: array[int] | None = array("q") if self.filter.active else None
        self.scanned = 0 if self.filter.active else len(source)

    def __len__(self) -> int:
        if self._indices is None:
            return self.scanned
        return len(self._indices)

    def row_index(self, i: int) -> int:
        return i if self._indices is None else self._indices[i]

    def view_index(self, row_index: int) -> int | None:
        """Position of a source row in the view, None if filtered out."""
        if self._indices is None:
            return row_index if row_index < self.scanned else None
        k = bisect_left(self._indices, row_index)
        if k < len(self._indices) and self._indices[k] == row_index:
            return k
        return None

    def nearest(self, row_index: int) -> int:
        """View position of the row, or of the first row after it (clamped)."""
        if self._indices is None:
            return max(0, min(row_index, self.scanned - 1))
        k = bisect_left(self._indices, row_index)
        return max(0, min(k, len(self._indices) - 1))

    def sync(self, limit: int | None = None,
             cancelled: Callable[[], bool] = lambda: False) -> bool:
        """Take in rows the source added since the last call; True if the view grew."""
        n = len(self.source)
        if limit is not None:
            n = min(n, self.scanned + limit)
        if n <= self.scanned:
            return False
        before = len(self)
        if self._indices is None:
            self.scanned = n
            return True
        flt = self.filter
        src = self.source
        add = self._indices.append
        for i in range(self.scanned, n):
            if flt.matches(src, i):
                add(i)
            if i & 0xFFFF == 0 and cancelled():
                self.scanned = i + 1
                return len(self) != before
        self.scanned = n
        return len(self) != before
