"""The filtered view of a source: which rows the list shows, and the filter language.

Filter text (the filter bar): space-separated terms, all must match::

    type:WRITE,UPDATE     event type contains any of these (case-insensitive)
    table:shop\\.orders    schema.table matches the regex (re.search)
    gtid:0-1-42,uuid:7    the event belongs to one of these transactions (GTID)
    file:mysql-bin.000004 the event is in a binlog file whose name contains this
    pos:1262  pos>1000  pos<2000  pos>=N  pos<=N
                          the event's start offset in its file ("# at"); pos:N is the event
                          whose bytes hold position N
    flow:1,3              capture flow (connection) number
    seq:0                 packet sequence id
    semi:ack / semi:ask / semi:ef   the replica's semi-sync ACKs / events the source wants
                          acknowledged / every event with the semi-sync header
    time>12:30:00.25  time<=2026-11-22T00:21:26   row time (UTC): a time of day, or a date and
                          time (``T`` or ``_`` between them); microseconds allowed
    errors                only rows with a decode error
    dir:client / dir:server   packets sent by the replica (->) / by the source (<-)
    anything else         free text, searched in type, table and summary

Pure Python, no Textual: the screens drive it, tests call it directly.
"""

from __future__ import annotations

import calendar
import re
from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, replace

from binlogscope.inspector.source import Row, RowSource

_DIRECTIONS = {d: "->" for d in ("->", "client", "c", "replica", "sent", "out")}
_DIRECTIONS.update({d: "<-" for d in ("<-", "server", "s", "source", "received", "in")})
_SEMI = {"ack": "ack", "acks": "ack", "ask": "ask", "ack?": "ask", "request": "ask",
         "requested": "ask", "ef": "ef", "any": "ef", "yes": "ef"}
_COMPARE = re.compile(r"^(pos|time)(>=|<=|>|<|:|=)(.+)$", re.IGNORECASE)
_TIME = re.compile(r"^(?:(\d{4})-(\d{2})-(\d{2})[T_])?(\d{1,2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b, ":": lambda a, b: a == b, "=": lambda a, b: a == b,
}


def _ints(key: str, val: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in val.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"{key}:{val}: expected numbers, e.g. {key}:1,3") from None
    if not out:
        raise ValueError(f"{key}: expected a number")
    return out


def parse_time(text: str) -> tuple[float, bool]:
    """``HH:MM[:SS[.ffffff]]`` -> (seconds since midnight, False); with a date
    ``YYYY-MM-DDTHH:MM:SS`` -> (seconds since the epoch, True). UTC."""
    m = _TIME.match(text)
    if m is None:
        raise ValueError(f"time: {text!r}: expected HH:MM:SS[.ffffff] or "
                         "YYYY-MM-DDTHH:MM:SS[.ffffff] (UTC)")
    y, mo, d, h, mi, sec, frac = m.groups()
    secs = int(h) * 3600 + int(mi) * 60 + int(sec or 0) + float(frac or 0.0)
    if y is None:
        return secs, False
    return calendar.timegm((int(y), int(mo), int(d), 0, 0, 0)) + secs, True


@dataclass(frozen=True, slots=True)
class TimeBound:
    op: str
    value: float
    absolute: bool  # value: seconds since the epoch; else seconds since midnight
    text: str

    def matches(self, ts: float) -> bool:
        # compared in whole microseconds: the capture's resolution, no float surprises
        us = round(ts * 1_000_000)
        if not self.absolute:
            us %= 86_400_000_000
        return _OPS[self.op](us, round(self.value * 1_000_000))


@dataclass(frozen=True, slots=True)
class RowFilter:
    types: tuple[str, ...] = ()
    table: re.Pattern[str] | None = None
    errors: bool = False
    text: str = ""
    direction: str | None = None  # "->" or "<-"
    gtids: tuple[str, ...] = ()
    file: str = ""
    positions: tuple[tuple[str, int], ...] = ()  # (op, N)
    flows: tuple[int, ...] = ()
    seqs: tuple[int, ...] = ()
    semi: str = ""  # "ack" | "ask" | "ef"
    times: tuple[TimeBound, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.types or self.table is not None or self.errors or self.text
                    or self.direction or self.gtids or self.file or self.positions
                    or self.flows or self.seqs or self.semi or self.times)

    @classmethod
    def parse(cls, spec: str) -> RowFilter:
        """Parse filter-bar text; raises ValueError with a readable message."""
        types: list[str] = []
        table = None
        errors = False
        direction = None
        text: list[str] = []
        gtids: list[str] = []
        file = ""
        positions: list[tuple[str, int]] = []
        flows: list[int] = []
        seqs: list[int] = []
        semi = ""
        times: list[TimeBound] = []
        for w in spec.split():
            cmp = _COMPARE.match(w)
            if cmp is not None:
                what, op, val = cmp.group(1).lower(), cmp.group(2), cmp.group(3)
                if what == "pos":
                    try:
                        positions.append((op if op != "=" else ":", int(val)))
                    except ValueError:
                        raise ValueError(f"{w}: expected a number after pos{op}") from None
                else:
                    value, absolute = parse_time(val)
                    times.append(TimeBound(op if op != "=" else ":", value, absolute, val))
                continue
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
            elif sep and key == "gtid":
                # MySQL GTIDs hold a colon (uuid:42): split on commas only
                gtids.extend(g.strip().lower() for g in val.split(",") if g.strip())
                if not gtids:
                    raise ValueError("gtid: expected a GTID, e.g. gtid:0-1-42")
            elif sep and key == "file":
                if not val:
                    raise ValueError("file: expected a binlog file name")
                file = val.lower()
            elif sep and key in ("flow", "conn"):
                flows.extend(_ints("flow", val))
            elif sep and key == "seq":
                seqs.extend(_ints("seq", val))
            elif sep and key == "semi":
                sm = _SEMI.get(val.lower())
                if sm is None:
                    raise ValueError(f"semi:{val}: expected ack (the replica's ACKs), ask "
                                     "(events that request one) or ef (every semi-sync event)")
                semi = sm
            elif w.lower() in ("errors", "error", "err", "errors:1"):
                errors = True
            else:
                text.append(w.lower())
        return cls(tuple(types), table, errors, " ".join(text), direction, tuple(gtids), file,
                   tuple(positions), tuple(flows), tuple(seqs), semi, tuple(times))

    def spec(self) -> str:
        parts = []
        if self.types:
            parts.append("type:" + ",".join(self.types))
        if self.table is not None:
            parts.append(f"table:{self.table.pattern}")
        if self.gtids:
            parts.append("gtid:" + ",".join(self.gtids))
        if self.file:
            parts.append(f"file:{self.file}")
        parts.extend(f"pos{op}{n}" for op, n in self.positions)
        if self.flows:
            parts.append("flow:" + ",".join(map(str, self.flows)))
        if self.seqs:
            parts.append("seq:" + ",".join(map(str, self.seqs)))
        if self.semi:
            parts.append(f"semi:{self.semi}")
        parts.extend(f"time{t.op}{t.text}" for t in self.times)
        if self.errors:
            parts.append("errors")
        if self.direction:
            parts.append("dir:" + ("client" if self.direction == "->" else "server"))
        if self.text:
            parts.append(self.text)
        return " ".join(parts)

    def with_errors(self, errors: bool) -> RowFilter:
        return replace(self, errors=errors)

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
        if not self._fields_match(row):
            return False
        return not (self.text and self.text not in source.search_text(index))

    def _fields_match(self, row: Row) -> bool:
        if self.gtids and (row.gtid is None or row.gtid.lower() not in self.gtids):
            return False
        if self.file and (row.binlog_file is None or self.file not in row.binlog_file.lower()):
            return False
        if self.flows and row.flow not in self.flows:
            return False
        if self.seqs and row.seq not in self.seqs:
            return False
        if self.semi and not _semi_matches(self.semi, row.semi_sync):
            return False
        for op, n in self.positions:
            start = row.file_pos
            if start is None:
                return False
            if op == ":":
                end = row.log_pos if row.log_pos and row.log_pos > start else start + 1
                if not start <= n < end:
                    return False
            elif not _OPS[op](start, n):
                return False
        if self.times:
            ts = row.time
            if ts is None or not all(t.matches(ts) for t in self.times):
                return False
        return True


def _semi_matches(want: str, semi: str | None) -> bool:
    if semi is None:
        return False
    if want == "ack":
        return semi.startswith("ACK")
    if want == "ask":
        return semi == "ef ACK?"
    return semi.startswith("ef")


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
