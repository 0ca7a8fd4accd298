"""The mapper's rows, named: generated from the export schema (:mod:`binlogscope.export.arrow`).

Regenerate with ``python -m binlogscope.export.arrow --columns >
src/binlogscope/export/columns.py``; do not edit by hand (a test keeps this module and the schema
in step).

A row is a list of one table's data column values in schema order (what the writer builds its
columns from; the cheapest to make and to copy). ``<table>_row(...)`` makes one by column name,
``<Table>Slot.<column>`` names a slot to read or set.
"""

from __future__ import annotations

from typing import Any, Final


class PacketsSlot:
    """Slots of a ``packets`` row."""

    schema_version: Final = 0
    source_kind: Final = 1
    source: Final = 2
    session_id: Final = 3
    flow: Final = 4
    direction: Final = 5
    frame: Final = 6
    time: Final = 7
    seq: Final = 8
    payload_length: Final = 9
    semi_sync: Final = 10
    ack_request: Final = 11
    kind: Final = 12
    command: Final = 13
    binlog_file: Final = 14
    log_pos: Final = 15
    payload: Final = 16
    #: the row's length
    WIDTH: Final = 17


class EventsSlot:
    """Slots of a ``events`` row."""

    schema_version: Final = 0
    source_kind: Final = 1
    source: Final = 2
    session_id: Final = 3
    binlog_file: Final = 4
    offset: Final = 5
    log_pos: Final = 6
    event_size: Final = 7
    inner_index: Final = 8
    timestamp: Final = 9
    server_id: Final = 10
    event_type: Final = 11
    type_code: Final = 12
    flags: Final = 13
    checksum_ok: Final = 14
    error: Final = 15
    gtid: Final = 16
    xid: Final = 17
    trx_offset: Final = 18
    table: Final = 19
    query: Final = 20
    query_raw: Final = 21
    rows: Final = 22
    capture_time: Final = 23
    #: the row's length
    WIDTH: Final = 24


class RowsSlot:
    """Slots of a ``rows`` row."""

    schema_version: Final = 0
    source_kind: Final = 1
    source: Final = 2
    session_id: Final = 3
    binlog_file: Final = 4
    offset: Final = 5
    log_pos: Final = 6
    inner_index: Final = 7
    row_index: Final = 8
    event_type: Final = 9
    table: Final = 10
    operation: Final = 11
    timestamp: Final = 12
    commit_timestamp: Final = 13
    server_id: Final = 14
    gtid: Final = 15
    xid: Final = 16
    trx_offset: Final = 17
    before: Final = 18
    after: Final = 19
    before_json: Final = 20
    after_json: Final = 21
    pk_columns: Final = 22
    pk: Final = 23
    capture_time: Final = 24
    #: the row's length
    WIDTH: Final = 25


def packets_row(
    *, schema_version: Any,
    source_kind: Any,
    source: Any,
    session_id: Any,
    flow: Any,
    direction: Any,
    frame: Any,
    time: Any,
    seq: Any,
    payload_length: Any,
    semi_sync: Any,
    ack_request: Any,
    kind: Any,
    command: Any,
    binlog_file: Any,
    log_pos: Any,
    payload: Any,
) -> list[Any]:
    """One ``packets`` row from its values, by name."""
    return [
        schema_version, source_kind, source, session_id, flow, direction, frame, time, seq,
        payload_length, semi_sync, ack_request, kind, command, binlog_file, log_pos, payload,
    ]


def events_row(
    *, schema_version: Any,
    source_kind: Any,
    source: Any,
    session_id: Any,
    binlog_file: Any,
    offset: Any,
    log_pos: Any,
    event_size: Any,
    inner_index: Any,
    timestamp: Any,
    server_id: Any,
    event_type: Any,
    type_code: Any,
    flags: Any,
    checksum_ok: Any,
    error: Any,
    gtid: Any,
    xid: Any,
    trx_offset: Any,
    table: Any,
    query: Any,
    query_raw: Any,
    rows: Any,
    capture_time: Any,
) -> list[Any]:
    """One ``events`` row from its values, by name."""
    return [
        schema_version, source_kind, source, session_id, binlog_file, offset, log_pos, event_size,
        inner_index, timestamp, server_id, event_type, type_code, flags, checksum_ok, error, gtid,
        xid, trx_offset, table, query, query_raw, rows, capture_time,
    ]


def rows_row(
    *, schema_version: Any,
    source_kind: Any,
    source: Any,
    session_id: Any,
    binlog_file: Any,
    offset: Any,
    log_pos: Any,
    inner_index: Any,
    row_index: Any,
    event_type: Any,
    table: Any,
    operation: Any,
    timestamp: Any,
    commit_timestamp: Any,
    server_id: Any,
    gtid: Any,
    xid: Any,
    trx_offset: Any,
    before: Any,
    after: Any,
    before_json: Any,
    after_json: Any,
    pk_columns: Any,
    pk: Any,
    capture_time: Any,
) -> list[Any]:
    """One ``rows`` row from its values, by name."""
    return [
        schema_version, source_kind, source, session_id, binlog_file, offset, log_pos, inner_index,
        row_index, event_type, table, operation, timestamp, commit_timestamp, server_id, gtid, xid,
        trx_offset, before, after, before_json, after_json, pk_columns, pk, capture_time,
    ]


__all__ = ["EventsSlot", "PacketsSlot", "RowsSlot", "events_row", "packets_row", "rows_row"]
