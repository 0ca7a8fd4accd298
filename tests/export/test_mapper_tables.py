"""A one-table task maps only its table (the Spark source's ``rows`` read builds no ``events``
rows) and gives that table's rows exactly as the all-tables mapping does.

Every binlog of ../shared/fixtures (MANIFEST.md) and captures/, and the shipped captures, are
decoded by :func:`binlogscope.export.task.decode_input` once for every table and once per table:
the same rows in each partition (same columns, same values, same order; where a row group ends
may differ, as the writer bounds the memory all its tables' buffers hold together). The mapper's
transaction limits (a transaction written as it goes, without its XID) hold the same way on
both paths.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from binlogscope.export.arrow import SCHEMA_VERSION
from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import BinlogFileSource, EventRecord, WrittenRun
from binlogscope.export.task import InputReport, TaskOptions, decode_input
from binlogscope.pipeline.filter import event_table
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.types import event_type_name
from tests.helpers import binlog_fixtures

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
TABLES = ("packets", "events", "rows")


def _inputs() -> list[tuple[str, Path]]:
    local = sorted(p for p in CAPTURES.iterdir() if p.is_file()) if CAPTURES.is_dir() else []
    binlogs = [p for p in local if p.read_bytes()[:4] == b"\xfebin"]
    caps = [p for p in local if p.suffix in (".pcap", ".pcapng")]
    return ([("file", p) for p in [*binlog_fixtures(), *binlogs]]
            + [("pcap", p) for p in caps])


def _batches(kind: str, path: Path, data: bytes, tables: tuple[str, ...] | None
             ) -> dict[str, dict[tuple[str, ...], pa.Table]]:
    """Each table's rows by partition, in the order the task gave them."""
    got: dict[str, dict[tuple[str, ...], list[pa.Table]]] = {t: {} for t in TABLES}
    for item in decode_input(0, str(path), len(data), data, TaskOptions(kind, tables=tables)):
        if not isinstance(item, InputReport):
            got[item[0]].setdefault(item[1], []).append(item[2])
    return {t: {p: pa.concat_tables(b).combine_chunks() for p, b in parts.items()}
            for t, parts in got.items()}


def test_one_table_tasks_give_the_rows_of_the_all_tables_mapping() -> None:
    inputs = _inputs()
    assert inputs
    compared = dict.fromkeys(TABLES, 0)
    for kind, path in inputs:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        every = _batches(kind, path, data, None)
        for table in TABLES:
            one = _batches(kind, path, data, (table,))
            assert all(not one[t] for t in TABLES if t != table), (path, table)
            got, want = one[table], every[table]
            assert list(got) == list(want), (path, table)
            for part, a in got.items():
                b = want[part]
                assert a.schema == b.schema, (path, table, part)
                assert a.equals(b), (path, table, part)
                compared[table] += a.num_rows
    # the comparison covered every table of real inputs
    assert compared["rows"] > 1_000 and compared["events"] > 4_000
    assert compared["packets"] > 1_000


def _mapped(tables: tuple[str, ...] | None, limits: dict[str, int]
            ) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    mapper = TableMapper(lambda t, p, r: out.append((t, p, r)), tables=tables,
                         max_pending_rows=limits.get("max_pending_rows", 200_000),
                         max_pending_bytes=limits.get("max_pending_bytes", 128 << 20))
    for rec in BinlogFileSource([str(CAPTURES / "mariadb-10.11-workload.000001")]).records():
        if isinstance(rec, WrittenRun):  # (the native kernel read it)
            mapper.written(rec)
        elif isinstance(rec, EventRecord):
            mapper.event(rec)
    mapper.input_done()
    return out


def test_the_rows_only_mapping_writes_big_transactions_as_the_full_one() -> None:
    """A transaction over the limits goes out as it is (rows without XID and commit time) at
    the same event whichever tables are mapped: what it holds is counted the same way."""
    limit_sets: list[dict[str, int]] = [
        {"max_pending_rows": 3}, {"max_pending_bytes": 5_000}, {}]
    for limits in limit_sets:
        every = _mapped(None, limits)
        rows = _mapped(("rows",), limits)
        events = _mapped(("events",), limits)
        assert rows == [r for r in every if r[0] == "rows"], limits
        assert events == [r for r in every if r[0] == "events"], limits
        assert any(r[2]["xid"] is None for r in rows) == bool(limits), limits
        assert any(r[2]["xid"] is not None for r in rows), limits


def _map(records: list[EventRecord]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    mapper = TableMapper(lambda t, p, r: out.append((t, p, r)))
    for rec in records:
        mapper.event(rec)
    mapper.input_done()
    return out


def _top_level_rows(table: str) -> Iterator[tuple[Path, dict[str, Any], EventRecord]]:
    """Every ``table`` row the mapper makes of the top-level events of real binlogs, each with
    its binlog and the record of its event (every event decoded: the kernel's WrittenRun is
    held to this path by test_export_native_switch.py)."""
    for path in [CAPTURES / "mariadb-10.11-workload.000001", *binlog_fixtures()]:
        if path.suffix == ".gz":
            continue
        records = [r for r in BinlogFileSource([str(path)], kernel=False).records()
                   if isinstance(r, EventRecord)]
        outer = {r.event.file_pos: r for r in records}
        for t, _, row in _map(records):
            rec = outer.get(row["offset"])
            if t == table and row["inner_index"] is None and rec is not None \
                    and rec.event.header is not None:
                yield path, row, rec


def test_events_rows_hold_each_value_in_its_column() -> None:
    """The mapper builds an ``events`` row as a list in the schema's order (no keywords): each
    column holds the event's own value, by name, for every event of real binlogs."""
    checked = 0
    for path, row, rec in _top_level_rows("events"):
        ev = rec.event
        h = ev.header
        assert h is not None
        body = ev.body
        assert row["source_kind"] == "file" and row["source"] == str(path)
        assert row["binlog_file"] == (ev.binlog_file or row["binlog_file"])
        assert row["event_type"] == event_type_name(h.type_code)
        assert (row["type_code"], row["flags"], row["server_id"]) == (
            h.type_code, h.flags, h.server_id)
        assert (row["event_size"], row["log_pos"]) == (h.event_size, h.log_pos)
        assert row["timestamp"] == h.timestamp * 1_000_000
        assert (row["checksum_ok"], row["error"]) == (ev.checksum_ok, ev.error)
        assert row["table"] == event_table(ev)[1]
        assert row["query"] == bodies.query_text(ev)
        assert row["rows"] == (len(body.rows) if isinstance(body, RowsEvent) else None)
        assert row["gtid"] is None or isinstance(row["gtid"], str)
        assert row["trx_offset"] is None or row["trx_offset"] <= row["offset"]
        assert row["capture_time"] is None and row["query_raw"] is None
        checked += 1
    assert checked > 3_000


def test_rows_rows_hold_each_value_in_its_column() -> None:
    """The mapper builds a ``rows`` row as a list in the schema's order (no keywords): each
    column holds its rows event's own value, by name, for every row change of real binlogs."""
    checked = 0
    for path, row, rec in _top_level_rows("rows"):
        ev, h, body = rec.event, rec.event.header, rec.event.body
        assert h is not None
        assert isinstance(body, RowsEvent)
        assert (row["schema_version"], row["source_kind"], row["source"]) == (
            SCHEMA_VERSION, "file", str(path))
        assert row["session_id"] is None and row["capture_time"] is None
        assert row["binlog_file"] == (ev.binlog_file or row["binlog_file"])
        assert (row["log_pos"], row["server_id"]) == (h.log_pos, h.server_id)
        assert row["event_type"] == event_type_name(h.type_code)
        assert (row["table"], row["operation"]) == (body.table, body.kind)
        assert row["timestamp"] == h.timestamp * 1_000_000
        assert 0 <= row["row_index"] < len(body.rows)
        assert row["gtid"] is None or isinstance(row["gtid"], str)
        # (a rows event is always inside a transaction: where it began, in this file)
        assert row["trx_offset"] is not None and row["trx_offset"] <= row["offset"]
        if row["xid"] is not None:  # (its transaction's XID event: its time too)
            assert isinstance(row["commit_timestamp"], int)
        assert row["pk_columns"] is None or all(isinstance(c, str) for c in row["pk_columns"])
        assert (row["before"] is not None) == (body.kind != "INSERT")
        assert (row["after"] is not None) == (body.kind != "DELETE")
        checked += 1
    assert checked > 1_000
