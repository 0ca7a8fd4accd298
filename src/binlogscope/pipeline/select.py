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

import time
from collections.abc import Iterable, Iterator
from datetime import datetime

from binlogscope.wire.binlog.decode import DecodedEvent
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
