"""Typed reads of a decoded event's body: what the stream-level code (coordinates, restart
points, the re-decoder) asks of an event - its statement text, GTID, the file a ROTATE names,
the table it refers to - answered by the body's type instead of ``getattr(body, ...)`` on an
``Any``. A body of another type (or a damaged event's ``None``) answers None."""

from __future__ import annotations

from binlogscope.wire.binlog.context import TableMap
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, RotateEvent, RowsQueryEvent
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent


def statement(ev: DecodedEvent) -> str | None:
    """A QUERY event's statement text (``BEGIN``, ``COMMIT``, DDL...)."""
    body = ev.body
    return body.query if isinstance(body, QueryEvent) and type(body.query) is str else None


def query_text(ev: DecodedEvent) -> str | None:
    """The statement text an event carries: a QUERY's, or the one MariaDB's ANNOTATE_ROWS and
    MySQL's ROWS_QUERY write before a transaction's row events."""
    body = ev.body
    return (body.query if isinstance(body, QueryEvent | RowsQueryEvent | AnnotateRowsEvent)
            else None)


def gtid(ev: DecodedEvent) -> str | None:
    """A GTID event's GTID (MySQL ``uuid[:tag]:n`` or ``ANONYMOUS``, MariaDB ``d-s-n``)."""
    body = ev.body
    return body.gtid if isinstance(body, GtidEvent | MariadbGtidEvent) else None


def mariadb_gtid_flags(ev: DecodedEvent) -> int | None:
    """A MariaDB GTID event's flags2 (FL_STANDALONE...)."""
    body = ev.body
    return body.flags2 if isinstance(body, MariadbGtidEvent) else None


def rotate(ev: DecodedEvent) -> RotateEvent | None:
    """A ROTATE's body: the file it names and the position there."""
    body = ev.body
    return body if isinstance(body, RotateEvent) else None


def table_id(ev: DecodedEvent) -> int | None:
    """The table id a TABLE_MAP defines or a rows event refers to."""
    body = ev.body
    return body.table_id if isinstance(body, TableMapEvent | RowsEvent) else None


def table_map(ev: DecodedEvent) -> TableMap | None:
    """The table map a TABLE_MAP event defines."""
    body = ev.body
    return body.table_map if isinstance(body, TableMapEvent) else None


__all__ = ["gtid", "mariadb_gtid_flags", "query_text", "rotate", "statement", "table_id",
           "table_map"]
