"""Every MariaDB column type, written by a real server and decoded from its binlog files.

The workload (tests/mariadb_workload.py) runs against the throw-away server, remembering for
every logged statement the rows the server holds before and after it, as text-protocol SELECT
output. Then the binlog files are decoded from disk with BinlogStreamDecoder in both modes and
every row image must equal the server's text, via ``values.value_to_text``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ColumnType
from binlogscope.wire.binlog.values import value_to_text
from binlogscope.wire.node import check_tiling
from tests.helpers import body_of
from tests.mariadb_workload import OLD_TEMPORAL_TABLE, Expected, Workload

pytestmark = pytest.mark.mysql

DB = "workload"
CHUNK = 1 << 20

_WRITE = {"PRE_GA_WRITE_ROWS_EVENT", "WRITE_ROWS_EVENT_V1", "WRITE_ROWS_EVENT",
          "WRITE_ROWS_COMPRESSED_EVENT_V1", "WRITE_ROWS_COMPRESSED_EVENT"}
_UPDATE = {"PRE_GA_UPDATE_ROWS_EVENT", "UPDATE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT",
           "UPDATE_ROWS_COMPRESSED_EVENT_V1", "UPDATE_ROWS_COMPRESSED_EVENT",
           "PARTIAL_UPDATE_ROWS_EVENT"}
_DELETE = {"PRE_GA_DELETE_ROWS_EVENT", "DELETE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT",
           "DELETE_ROWS_COMPRESSED_EVENT_V1", "DELETE_ROWS_COMPRESSED_EVENT"}


def _kind(type_name: str) -> str | None:
    if type_name in _WRITE:
        return "insert"
    if type_name in _UPDATE:
        return "update"
    if type_name in _DELETE:
        return "delete"
    return None


# --------------------------------------------------------------------------- running the workload


@dataclass
class Run:
    workload: Workload = field(repr=False)
    files: list[Path]
    version: str


@pytest.fixture(scope="module")
def run(mariadb: Any) -> Iterator[Run]:
    admin = mariadb.connect()
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DB}")
        cur.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
        cur.execute("FLUSH BINARY LOGS")  # the workload starts in a file of its own
        cur.execute("SHOW MASTER STATUS")
        first_file = cur.fetchone()[0]
    conn = mariadb.connect(database=DB, conv={})
    try:
        w = Workload(conn)
        w.run_full(version=mariadb.version)
        with admin.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")  # close the last workload file
        files = [p for p in mariadb.binlog_files() if p.name >= first_file][:-1]
        yield Run(w, files, mariadb.version)
    finally:
        conn.close()
        admin.close()


# --------------------------------------------------------------------------- decoding the files


@dataclass
class Change:
    kind: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass
class Statement:
    """Row events between two ANNOTATE_ROWS events (one SQL statement)."""

    sql: str | None
    changes: list[Change] = field(default_factory=list)
    tables: dict[str, TableMap] = field(default_factory=dict)


@dataclass
class Decoded:
    events: list[DecodedEvent] = field(repr=False)
    statements: list[Statement] = field(repr=False)
    table_maps: dict[str, TableMap] = field(repr=False)


def _table_of(body: TableMapEvent | RowsEvent, ctx: DecodeContext) -> TableMap:
    tm = body.table_map if isinstance(body, TableMapEvent) else None
    return tm if tm is not None else ctx.tables[body.table_id]


def _row_pairs(body: RowsEvent) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """(before, after) images of every row of a RowsEvent (``rows``: before/after dicts)."""
    out: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    for row in body.rows:
        before, after = row["before"], row["after"]
        out.append((None if before is None else dict(before),
                    None if after is None else dict(after)))
    return out


def decode_files(files: list[Path], *, record: bool) -> Decoded:
    events: list[DecodedEvent] = []
    statements: list[Statement] = []
    table_maps: dict[str, TableMap] = {}
    current: Statement | None = None
    for path in files:
        dec = BinlogStreamDecoder(record=record)
        with path.open("rb") as f:
            while True:
                chunk = f.read(CHUNK)
                dec.receive_data(chunk)
                for ev in dec.events():
                    events.append(ev)
                    name = ev.type_name
                    if name == "ANNOTATE_ROWS_EVENT":
                        current = Statement(body_of(ev, AnnotateRowsEvent).query)
                        statements.append(current)
                        continue
                    if name == "TABLE_MAP_EVENT" and ev.body is not None:
                        tm = _table_of(body_of(ev, TableMapEvent), dec.ctx)
                        if tm.schema == DB:
                            table_maps[tm.table] = tm
                        continue
                    kind = _kind(name)
                    if kind is None or ev.body is None:
                        continue
                    rows = body_of(ev, RowsEvent)
                    tm = _table_of(rows, dec.ctx)
                    if tm.schema != DB:
                        continue
                    assert current is not None, f"row event without ANNOTATE_ROWS at {ev.offset}"
                    current.tables[tm.table] = tm
                    for before, after in _row_pairs(rows):
                        current.changes.append(Change(kind, tm.table, before, after))
                if not chunk:
                    break
        assert dec.fatal is None, dec.fatal
    statements = [s for s in statements if s.changes]
    return Decoded(events, statements, table_maps)


@pytest.fixture(scope="module")
def decoded_tree(run: Run) -> Decoded:
    return decode_files(run.files, record=True)


@pytest.fixture(scope="module")
def decoded_fast(run: Run) -> Decoded:
    return decode_files(run.files, record=False)


# --------------------------------------------------------------------------- comparing values

#: MariaDB-only types logged as BINARY(n): the server prints text, the binlog holds the bytes
def _mariadb_bytes(column: str, text: str) -> bytes:
    if column == "i6":
        return ipaddress.IPv6Address(text).packed
    if column == "i4":
        return ipaddress.IPv4Address(text).packed
    if column == "u":
        return bytes.fromhex(text.replace("-", ""))  # MariaDB 10.11 stores UUIDs as written
    raise KeyError(column)


def _text_equal(value: Any, col: ColumnInfo, server: Any, table: str, name: str) -> str | None:
    """None when equal, else a description of the difference."""
    if server is None or value is None:
        return None if server is value else f"decoded {value!r}, server {server!r}"
    if table == "t_mariadb" and name in ("i6", "i4", "u"):
        want: Any = _mariadb_bytes(name, server)
        return None if value == want else f"decoded {value!r}, server {server!r} = {want!r}"
    got = value_to_text(value, col)
    if got == server:
        return None
    return f"decoded {value!r} -> text {got!r}, server {server!r}"


def _compare_image(image: dict[str, Any], snapshot: dict[str, Any], tm: TableMap,
                   table: str, where: str) -> list[str]:
    problems: list[str] = []
    cols = {c.label: c for c in tm.columns}
    if set(image) != set(snapshot):
        problems.append(f"{where}: columns {sorted(image)} != server {sorted(snapshot)}")
    for name, server in snapshot.items():
        if name not in image:
            continue
        diff = _text_equal(image[name], cols[name], server, table, name)
        if diff:
            problems.append(f"{where} column {name} ({_type_label(cols[name])}): {diff}")
    return problems


def _type_label(col: ColumnInfo) -> str:
    try:
        return ColumnType(col.type).name
    except ValueError:
        return str(col.type)


def _row_id(image: dict[str, Any] | None) -> int:
    assert image is not None
    return int(image["id"])


def _align(expected: list[Expected], statements: list[Statement],
           problems: list[str]) -> list[tuple[Expected, Statement]]:
    """Pair logged statements with decoded ones by their ANNOTATE_ROWS text (so one lost
    statement is reported once instead of shifting every later comparison)."""
    pairs: list[tuple[Expected, Statement]] = []
    j = 0
    for k, e in enumerate(expected):
        m = next((i for i in range(j, len(statements))
                  if statements[i].sql is None or statements[i].sql == e.sql), None)
        if m is None:
            problems.append(f"statement {k} ({e.sql[:60]!r}): no row events decoded for it")
            continue
        for extra in statements[j:m]:
            problems.append(f"decoded rows of an unexpected statement {(extra.sql or '')[:60]!r}")
        pairs.append((e, statements[m]))
        j = m + 1
    for extra in statements[j:]:
        problems.append(f"decoded rows of an unexpected statement {(extra.sql or '')[:60]!r}")
    return pairs


def compare(expected: list[Expected], statements: list[Statement]) -> list[str]:
    problems: list[str] = []
    for e, s in _align(expected, statements, problems):
        where = f"{e.sql[:60]!r}"
        tables = {c.table for c in s.changes}
        kinds = {c.kind for c in s.changes}
        if tables != {e.table} or kinds != {e.kind}:
            problems.append(f"{where}: decoded {kinds} on {tables}")
            continue
        tm = s.tables[e.table]
        if e.kind == "insert":
            got = {_row_id(c.after): c.after for c in s.changes}
            snap_after, snap_before = e.after, {}
        elif e.kind == "delete":
            got = {_row_id(c.before): c.before for c in s.changes}
            snap_after, snap_before = {}, e.before
        else:
            got = {_row_id(c.before): c.before for c in s.changes}
            snap_before, snap_after = e.before, e.after
        want_ids = set(e.after) | set(e.before)
        if set(got) != want_ids or len(s.changes) != len(want_ids):
            problems.append(f"{where}: decoded ids {sorted(got)[:10]}..., "
                            f"expected {sorted(want_ids)[:10]}...")
            continue
        for c in s.changes:
            if c.before is not None:
                rid = _row_id(c.before)
                problems += _compare_image(c.before, snap_before[rid], tm, e.table,
                                           f"{where} id {rid} before")
            if c.after is not None:
                rid = _row_id(c.after)
                problems += _compare_image(c.after, snap_after[rid], tm, e.table,
                                           f"{where} id {rid} after")
    return problems


# --------------------------------------------------------------------------- the tests


def test_workload_spans_rotation(run: Run, decoded_fast: Decoded) -> None:
    assert len(run.files) >= 2, run.files
    names = [ev.type_name for ev in decoded_fast.events]
    assert names.count("ROTATE_EVENT") >= len(run.files) - 1
    assert names.count("FORMAT_DESCRIPTION_EVENT") == len(run.files)
    assert "GTID_EVENT" in names
    assert "XID_EVENT" in names


@pytest.mark.parametrize("mode", ["tree", "fast"])
def test_no_errors_and_checksums_ok(mode: str, decoded_tree: Decoded,
                                    decoded_fast: Decoded) -> None:
    d = decoded_tree if mode == "tree" else decoded_fast
    errors = [f"{ev.offset} {ev.type_name}: {ev.error}" for ev in d.events if ev.error]
    assert not errors, errors[:20]
    bad = [f"{ev.offset} {ev.type_name}" for ev in d.events if ev.checksum_ok is not True]
    assert not bad, bad[:20]
    if mode == "tree":
        for ev in d.events:
            assert ev.node is not None
            assert ev.node.length == ev.size
            problems = check_tiling(ev.node)
            assert not problems, (ev.offset, ev.type_name, problems[:5])
            errs = [n for _, n in ev.node.walk() if n.name == "error"]
            assert not errs, (ev.offset, ev.type_name, errs[:3])
    else:
        assert all(ev.node is None for ev in d.events)


def test_modes_agree(decoded_tree: Decoded, decoded_fast: Decoded) -> None:
    assert len(decoded_tree.events) == len(decoded_fast.events)
    for a, b in zip(decoded_tree.events, decoded_fast.events, strict=True):
        assert (a.offset, a.type_name, a.size) == (b.offset, b.type_name, b.size)
    assert len(decoded_tree.statements) == len(decoded_fast.statements)
    for sa, sb in zip(decoded_tree.statements, decoded_fast.statements, strict=True):
        assert sa.sql == sb.sql
        assert [(c.kind, c.table, c.before, c.after) for c in sa.changes] == [
            (c.kind, c.table, c.before, c.after) for c in sb.changes]


@pytest.mark.parametrize("mode", ["tree", "fast"])
def test_row_images_equal_server_text(mode: str, run: Run, decoded_tree: Decoded,
                                      decoded_fast: Decoded) -> None:
    d = decoded_tree if mode == "tree" else decoded_fast
    problems = compare(run.workload.expected, d.statements)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])


def test_rolled_back_rows_are_absent(run: Run, decoded_fast: Decoded) -> None:
    rolled = run.workload.rolled_back_ids
    assert rolled.get("t_int"), "the workload should roll back inserts into t_int"
    for s in decoded_fast.statements:
        for c in s.changes:
            image = c.after or c.before
            assert image is not None
            assert int(image["id"]) not in rolled.get(c.table, set()) or c.table != "t_int", (
                f"rolled back row {image['id']} of {c.table} is in the binlog")


def test_every_column_type_was_covered(decoded_fast: Decoded, run: Run) -> None:
    seen = {c.type for tm in decoded_fast.table_maps.values() for c in tm.columns}
    want = {
        ColumnType.MYSQL_TYPE_TINY, ColumnType.MYSQL_TYPE_SHORT, ColumnType.MYSQL_TYPE_INT24,
        ColumnType.MYSQL_TYPE_LONG, ColumnType.MYSQL_TYPE_LONGLONG,
        ColumnType.MYSQL_TYPE_NEWDECIMAL, ColumnType.MYSQL_TYPE_FLOAT,
        ColumnType.MYSQL_TYPE_DOUBLE, ColumnType.MYSQL_TYPE_BIT, ColumnType.MYSQL_TYPE_YEAR,
        ColumnType.MYSQL_TYPE_DATE, ColumnType.MYSQL_TYPE_TIME2,
        ColumnType.MYSQL_TYPE_DATETIME2, ColumnType.MYSQL_TYPE_TIMESTAMP2,
        ColumnType.MYSQL_TYPE_TIME, ColumnType.MYSQL_TYPE_DATETIME,
        ColumnType.MYSQL_TYPE_TIMESTAMP, ColumnType.MYSQL_TYPE_VARCHAR,
        ColumnType.MYSQL_TYPE_STRING, ColumnType.MYSQL_TYPE_BLOB,
        ColumnType.MYSQL_TYPE_GEOMETRY,
    }
    assert want <= seen, sorted(ColumnType(t).name for t in want - seen)
    old = decoded_fast.table_maps[OLD_TEMPORAL_TABLE]
    old_types = {c.type for c in old.columns}
    assert not old_types & {ColumnType.MYSQL_TYPE_TIME2, ColumnType.MYSQL_TYPE_DATETIME2,
                            ColumnType.MYSQL_TYPE_TIMESTAMP2}, old_types
    # ENUM and SET travel as MYSQL_TYPE_STRING with the real type in the metadata
    enum = decoded_fast.table_maps["t_enum"]
    assert all(c.enum_values or c.set_values for c in enum.columns[2:])
    assert len(enum.columns[3].enum_values or []) == 300
    assert len(enum.columns[4].set_values or []) == 64
    # every column of every typed table had a NULL row
    nulls = {c.table for s in decoded_fast.statements for c in s.changes
             if c.after and all(v is None for k, v in c.after.items() if k not in ("id", "rev"))}
    typed = set(decoded_fast.table_maps) - {"t_bulk", "t_ddl"}
    assert typed <= nulls, typed - nulls


def test_big_transaction_and_blob(decoded_fast: Decoded) -> None:
    bulk = [c for s in decoded_fast.statements for c in s.changes if c.table == "t_bulk"]
    assert sum(c.kind == "insert" for c in bulk) == 10_000
    assert sum(c.kind == "update" for c in bulk) == 10_000
    blobs = [c.after["mb"] for s in decoded_fast.statements for c in s.changes
             if c.table == "t_bin" and c.after and isinstance(c.after.get("mb"), bytes)]
    assert max(len(b) for b in blobs) == 1 << 20
    # the 1 MB blob row is one event bigger than 1 MB (plus the UPDATE with 1 MB before image)
    big = [ev for ev in decoded_fast.events if ev.size > 1 << 20]
    assert len(big) >= 2, [(ev.offset, ev.type_name, ev.size) for ev in big]
