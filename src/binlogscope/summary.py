"""Flat, JSON-ready summaries of decoded events (the ``--json`` shape shared by every source).

Pure: reads a :class:`DecodedEvent` and its typed body, never the bytes again.
"""

from __future__ import annotations

from typing import Any

from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.node import json_value


def event_table(ev: DecodedEvent) -> tuple[str | None, str | None]:
    """(schema, table) of an event that names one (TABLE_MAP, row events), else the schema only."""
    body = ev.body
    if body is None:
        return None, None
    schema = getattr(body, "schema", None)
    table = getattr(body, "table", None)
    return (schema if isinstance(schema, str) else None,
            table if isinstance(table, str) else None)


def rows_json(body: Any) -> list[dict[str, Any]] | None:
    rows = getattr(body, "rows", None)
    if rows is None:
        return None
    out: list[dict[str, Any]] = []
    for row in rows:
        before = row.get("before") if isinstance(row, dict) else None
        after = row.get("after") if isinstance(row, dict) else None
        out.append({
            "before": None if before is None else {k: json_value(v) for k, v in before.items()},
            "after": None if after is None else {k: json_value(v) for k, v in after.items()},
        })
    return out


def event_summary(ev: DecodedEvent, *, file: str | None = None) -> dict[str, Any]:
    """The ``binlogscope file --json`` object for one event."""
    h = ev.header
    schema, table = event_table(ev)
    body = ev.body
    gtid = getattr(body, "gtid", None) if body is not None else None
    query = getattr(body, "query", None) if body is not None else None
    return {
        "file": file,
        "offset": ev.offset,
        "event_type": ev.type_name,
        "type_code": h.type_code if h else None,
        "timestamp": h.timestamp if h else None,
        "server_id": h.server_id if h else None,
        "event_size": h.event_size if h else None,
        "log_pos": h.log_pos if h else None,
        "flags": h.flags if h else None,
        "checksum_ok": ev.checksum_ok,
        "schema": schema,
        "table": table,
        "rows": rows_json(body),
        "gtid": gtid if isinstance(gtid, str) else None,
        "query": query if isinstance(query, str) else None,
        "error": ev.error,
    }


def short_summary(ev: DecodedEvent) -> str:
    """One line for lists: ``WRITE_ROWS_EVENT db.t 3 rows`` / ``ROTATE mysql-bin.000002:4``."""
    body = ev.body
    parts = [ev.type_name]
    schema, table = event_table(ev)
    if table:
        parts.append(f"{schema}.{table}")
    rows = getattr(body, "rows", None)
    if rows is not None:
        parts.append(f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
    gtid = getattr(body, "gtid", None)
    if isinstance(gtid, str):
        parts.append(gtid)
    query = getattr(body, "query", None)
    if isinstance(query, str):
        q = " ".join(query.split())
        parts.append(q if len(q) <= 80 else q[:77] + "...")
    name = getattr(body, "next_log_name", None)
    if isinstance(name, str):
        parts.append(f"{name}:{getattr(body, 'position', '')}")
    if ev.error:
        parts.append(f"ERROR {ev.error}")
    return " ".join(parts)
