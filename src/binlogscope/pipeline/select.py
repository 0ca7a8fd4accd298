"""mysqlbinlog's event selections for decoded binlog events: time range and database.

* :func:`parse_datetime` reads a ``--start-datetime``/``--stop-datetime`` argument. As in
  mysqlbinlog, a time without a zone is in the local time zone (``TZ`` applies); an ISO-8601
  zone (``Z``, ``+02:00``) is honoured too.
* :func:`time_range` follows mysqlbinlog: output starts at the first event whose header
  timestamp is at or after the start, and stops before the first event at or after the stop
  (a later event with an older timestamp is not skipped or shown on its own).
* :func:`only_database` follows mysqlbinlog ``--database``: a QUERY event is kept when its
  default database is the one asked for, or when it is a transaction keyword (BEGIN, COMMIT,
  ROLLBACK, XA ...); TABLE_MAP and rows events when their table is in that database; a
  MariaDB ANNOTATE_ROWS (MySQL's ROWS_QUERY) when the TABLE_MAP after it is kept; every other
  event (FORMAT_DESCRIPTION, GTID, XID, ROTATE ...) is kept. Names compare exactly, as
  mysqlbinlog's ``strcmp``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.gtid_events import (
    GtidEvent,
    GtidListEvent,
    MariadbGtid,
    MariadbGtidEvent,
)
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent


class SelectionError(ValueError):
    """A selection argument that cannot be read (one clear line)."""


def parse_datetime(text: str) -> int:
    """Seconds since the epoch of ``YYYY-MM-DD hh:mm:ss`` (local time) or an ISO-8601 time."""
    value = text.strip()
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise SelectionError(
            f"cannot read the time {text!r}: expected 'YYYY-MM-DD hh:mm:ss' (local time) or "
            "ISO-8601 with a zone, e.g. '2026-11-25T14:00:00Z'") from None
    if dt.tzinfo is None:
        return int(time.mktime(dt.timetuple()))
    return int(dt.timestamp())


def time_range(events: Iterable[DecodedEvent], start: int | None, stop: int | None
               ) -> Iterator[DecodedEvent]:
    """The events from the first at or after ``start`` to before the first at/after ``stop``."""
    started = start is None
    for ev in events:
        h = ev.header
        ts = h.timestamp if h is not None else None
        if stop is not None and ts is not None and ts >= stop:
            return
        if not started:
            if ts is None or ts < start:  # type: ignore[operator]
                continue
            started = True
        yield ev


#: the first word of a QUERY event that makes it a transaction keyword
_TRX_WORDS = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "XA", "SAVEPOINT", "START"})


def _is_trx_keyword(query: object) -> bool:
    if not isinstance(query, str):
        return False
    words = query.split(None, 1)
    return bool(words) and words[0].upper().rstrip(";") in _TRX_WORDS


#: the events that carry the statement of the row events after them
_ROW_QUERIES = frozenset({"ANNOTATE_ROWS_EVENT", "ROWS_QUERY_LOG_EVENT"})


def only_database(events: Iterable[DecodedEvent], database: str) -> Iterator[DecodedEvent]:
    """The events of ``database`` as mysqlbinlog ``--database`` keeps them (module docs)."""
    annotate: DecodedEvent | None = None
    for ev in events:
        name = ev.type_name
        body = ev.body
        if name in _ROW_QUERIES:
            annotate = ev  # shown only if the TABLE_MAP after it is
            continue
        if name == "TABLE_MAP_EVENT":
            keep = isinstance(body, TableMapEvent) and body.schema == database
            if annotate is not None and keep:
                yield annotate
            annotate = None
            if keep:
                yield ev
            continue
        annotate = None
        if isinstance(body, RowsEvent):
            if body.schema == database:
                yield ev
            continue
        if isinstance(body, QueryEvent):  # QUERY, QUERY_COMPRESSED, EXECUTE_LOAD_QUERY
            if _is_trx_keyword(body.query) or body.schema == database:
                yield ev
            continue
        yield ev


# ------------------------------------------------------------------------------- GTID windows
_GTID_ITEM = re.compile(r"(\d+)-(\d+)-(\d+)")


def parse_gtid_position(text: str) -> dict[int, int] | None:
    """``--start-position``/``--stop-position`` as mariadb-binlog reads a GTID list
    (``0-1-40,1-2-7``: one per domain): {domain: seq_no}; None when ``text`` is not a GTID
    list (a byte position); :class:`SelectionError` for a list with a domain twice."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items or not all(_GTID_ITEM.fullmatch(t) for t in items):
        return None
    out: dict[int, int] = {}
    for t in items:
        m = _GTID_ITEM.fullmatch(t)
        assert m is not None
        domain = int(m.group(1))
        if domain in out:
            raise SelectionError(f"GTID position {text!r}: domain {domain} is given twice "
                                 "(one GTID per domain)")
        out[domain] = int(m.group(3))
    return out


_XID = "XID_EVENT"
_GTID = "GTID_EVENT"  # MariaDB's (type 162)
_FL_STANDALONE = 0x01


class GtidWindow:
    """The events mariadb-binlog prints for ``--start-position``/``--stop-position`` GTID
    lists (client/mysqlbinlog.cc's GTID event filters, MariaDB 10.8+), as measured against
    mariadb-binlog 10.11 on multi-domain binlogs (tests/test_cli_file_gtid_positions.py):

    - a transaction (a MariaDB GTID event up to its XID, its COMMIT/ROLLBACK query, or - a
      standalone GTID - its one statement) of domain D is shown when D's start is below its
      sequence number (no start for D: from the first) and, when stop positions are given, D
      has one and the sequence number does not pass it (a domain without a stop position is
      left out entirely then);
    - events outside transactions (FORMAT_DESCRIPTION, GTID_LIST, BINLOG_CHECKPOINT, ROTATE)
      go with the transaction before them: shown before the first GTID and after a shown
      transaction, left out after one left out (a BINLOG_CHECKPOINT the server wrote between
      two groups, where timing put it);
    - once every domain's stop transaction has been shown (or passed), the output ends at the
      next GTID event (the events between, a BINLOG_CHECKPOINT, a ROTATE, are shown).

    One window spans every file given (the GTID lists apply to all of them; byte positions
    only to the first and the last).

    A start list that leaves out a domain the first GTID_LIST names (the binlog state the
    file begins with) is refused as mariadb-binlog refuses it (its --gtid-strict-mode, on by
    default): where that domain's output would begin is not known. The events before that
    GTID_LIST are shown, then :class:`SelectionError`. Not modelled: mariadb-binlog's error
    for a start GTID never seen ("Binary logs never reached expected GTID state") and its
    other --gtid-strict-mode checks."""

    def __init__(self, start: dict[int, int] | None, stop: dict[int, int] | None) -> None:
        self.start = start or {}
        self.check_state = start is not None
        self.stop = stop
        self.done: set[int] = set()
        self.finished = False

    def _check_state(self, body: GtidListEvent) -> None:
        """The first GTID_LIST against the start list (see the class)."""
        self.check_state = False
        last: dict[int, MariadbGtid] = {}
        for g in body.gtids:
            last[g.domain_id] = g
        missing = [g for d, g in last.items() if d not in self.start]
        if missing:
            g = missing[0]
            raise SelectionError(
                f"the start GTID list gives no position for domain {g.domain_id}, whose "
                f"events may be in the file(s) (the binlog state they begin with has {g}); "
                f"add one, e.g. {g} to start after it")

    def _all_done(self) -> bool:
        return self.stop is not None and self.done >= set(self.stop)

    def filter(self, events: Iterable[DecodedEvent]) -> Iterator[DecodedEvent]:
        start, stop = self.start, self.stop
        current: bool | None = None  # inside a transaction: is it shown?
        shown = True  # outside one: was the transaction before shown (or none seen yet)?
        standalone = False
        for ev in events:
            if self.finished:
                return
            name = ev.type_name
            body = ev.body
            if self.check_state and isinstance(body, GtidListEvent):
                self._check_state(body)
            if name == _GTID and isinstance(body, MariadbGtidEvent):
                if self._all_done():  # (the events between the last one and this were shown)
                    self.finished = True
                    return
                d, s = body.domain_id, body.seq_no
                current = (d not in start or s > start[d]) and (
                    stop is None or (d in stop and s <= stop[d]))
                if stop is not None and d in stop and s > stop[d]:
                    self.done.add(d)
                standalone = bool(body.flags2 & _FL_STANDALONE)
                if current:
                    yield ev
                    if stop is not None and s == stop[d]:
                        self.done.add(d)
                continue
            if current is None:
                if shown:
                    yield ev
                continue
            if current:
                yield ev
            if name == _XID or standalone or (
                    isinstance(body, QueryEvent) and isinstance(body.query, str)
                    and body.query.strip().upper() in ("COMMIT", "ROLLBACK")):
                shown, current = current, None


# ------------------------------------------------------------------------------- MySQL GTID sets
_MYSQL_GTIDS = frozenset({"GTID_LOG_EVENT", "ANONYMOUS_GTID_LOG_EVENT", "GTID_TAGGED_LOG_EVENT"})
#: never filtered (mysqlbinlog: they may sit inside a filtered transaction of a relay log)
_NEVER_SKIPPED = frozenset({"SLAVE_EVENT", "STOP_EVENT", "FORMAT_DESCRIPTION_EVENT",
                            "ROTATE_EVENT", "IGNORABLE_LOG_EVENT", "INCIDENT_EVENT"})


def _ends_group(query: object) -> bool:
    """Query_log_event::ends_group: COMMIT, or ROLLBACK but not ROLLBACK TO."""
    if not isinstance(query, str):
        return False
    q = query.strip().upper()
    return q.startswith("COMMIT") or (q.startswith("ROLLBACK") and
                                      not q.startswith("ROLLBACK TO "))


class MysqlGtidFilter:
    """mysqlbinlog's ``--include-gtids`` / ``--exclude-gtids`` (MySQL
    ``client/mysqlbinlog.cc`` ``shall_skip_gtids``, read at the 8.0 copy the index holds):
    a GTID (or ANONYMOUS_GTID; GTID_TAGGED from 8.3, a (uuid, tag) member of the sets) starts
    a group that is filtered when it is not in the include set or is in the exclude set (an
    anonymous one is in neither); the group's events follow the flag, which an XID or a
    COMMIT/ROLLBACK query ends; FORMAT_DESCRIPTION, ROTATE, STOP, INCIDENT and IGNORABLE
    events are never filtered; PREVIOUS_GTIDS is kept (``--skip-gtids`` is not offered)."""

    def __init__(self, include: str | None, exclude: str | None) -> None:
        from binlogscope.wire.gtid_sets import parse_gtid_set

        try:
            self.include = parse_gtid_set(include) if include is not None else None
            self.exclude = parse_gtid_set(exclude) if exclude is not None else None
        except ValueError as exc:
            raise SelectionError(str(exc)) from None
        self.filtering = False

    @staticmethod
    def _contains(gtids: Any, sid: str, tag: str, gno: int) -> bool:
        import uuid

        try:
            key = (uuid.UUID(sid), tag.lower())
        except ValueError:
            return False
        return any(a <= gno < b for a, b in gtids.get(key, ()))

    def filter(self, events: Iterable[DecodedEvent]) -> Iterator[DecodedEvent]:
        for ev in events:
            name = ev.type_name
            body = ev.body
            if name in _MYSQL_GTIDS and isinstance(body, GtidEvent):
                anonymous = name == "ANONYMOUS_GTID_LOG_EVENT"
                out = False
                if self.include is not None:
                    out = anonymous or not self._contains(self.include, body.sid, body.tag,
                                                          body.gno)
                if self.exclude is not None and not anonymous:
                    out = out or self._contains(self.exclude, body.sid, body.tag, body.gno)
                self.filtering = out
                if not out:
                    yield ev
                continue
            if name in _NEVER_SKIPPED or name == "PREVIOUS_GTIDS_LOG_EVENT":
                yield ev
                continue
            skip = self.filtering
            if name == _XID or (isinstance(body, QueryEvent) and _ends_group(body.query)):
                self.filtering = False
            if not skip:
                yield ev
