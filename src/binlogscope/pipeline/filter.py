"""Table filters like Canal's regex filter: ``schema\\.table`` patterns, include and exclude.

A pattern list is comma-separated regexes matched (full match, case-insensitive as MySQL names
usually are) against ``schema.table``. An event with no table passes (transaction boundaries,
GTIDs, rotations keep their meaning); a table event passes when it matches an include pattern
(or there are none) and no exclude pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.load_events import LoadEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent


def event_table(ev: DecodedEvent) -> tuple[str | None, str | None]:
    """(schema, table) of a decoded binlog event that names one (TABLE_MAP, row events), else
    the schema only (QUERY) or (None, None). Reads the body's names only, never its rows."""
    body = ev.body
    if isinstance(body, RowsEvent | TableMapEvent | LoadEvent):
        return body.schema, body.table
    if isinstance(body, QueryEvent):
        return body.schema, None
    return None, None


def _compile(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    out = []
    for spec in patterns:
        for part in spec.split(","):
            part = part.strip()
            if part:
                out.append(re.compile(part, re.IGNORECASE))
    return out


class TableFilter:
    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        self.include = _compile(include)
        self.exclude = _compile(exclude)

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude)

    def accepts(self, schema: str | None, table: str | None) -> bool:
        if table is None:
            return True
        name = f"{schema}.{table}"
        if self.include and not any(p.fullmatch(name) for p in self.include):
            return False
        return not any(p.fullmatch(name) for p in self.exclude)
