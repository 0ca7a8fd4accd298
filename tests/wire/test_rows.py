"""Row events (rows.py) on real fixtures: values, spans, both decode modes, damage."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.header import HEADER, crc32
from binlogscope.wire.binlog.rows import (
    INSERT,
    RowsEvent,
    decode_rows_fast,
    resolve_mariadb_hires,
)
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.node import check_tiling
from tests.helpers import body_of
from tests.wire._binlog_fixtures import (
    BLACKBEAM,
    FIXTURES,
    ROW_TYPES,
    RUST_US,
    all_binlogs,
    decode_file,
    fixture,
)


def rows_events(data: bytes, *, record: bool = True) -> list[RowsEvent]:
    out = []
    for ev in decode_file(data, record=record):
        assert ev.error is None, ev.error
        if isinstance(ev.body, RowsEvent):
            out.append(ev.body)
    return out


# ----------------------------------------------------------------------------- dump.txt oracle
_DUMP_LINE = re.compile(r"^###   @(\d+)=(.*?) /\* (\w+)")
_DUMP_STMT = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `(\w+)`\.`(\w+)`")


def _read_dump(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16")
    if raw[1:2] == b"\x00":
        return raw.decode("utf-16-le")
    return raw.decode("utf-8", "replace")


def _dump_values(text: str) -> list[tuple[str, str, str, int, str]]:
    """(statement, schema, table, column number, value text) per ``### @N=`` line."""
    out = []
    stmt = ("", "", "")
    for line in text.splitlines():
        m = _DUMP_STMT.match(line)
        if m:
            stmt = (m.group(1).split()[0], m.group(2), m.group(3))
            continue
        m = _DUMP_LINE.match(line)
        if m:
            out.append((*stmt, int(m.group(1)), m.group(2)))
    return out


def _our_values(events: list[RowsEvent]) -> list[tuple[str, str, str, int, str]]:
    out = []
    for ev in events:
        for row in ev.rows:
            for image in (row["before"], row["after"]):
                if image is None:
                    continue
                for label, value in image.items():
                    n = int(label[1:])
                    text = f"'{value}'" if isinstance(value, str) else str(value)
                    out.append(({"INSERT": "INSERT", "UPDATE": "UPDATE",
                                 "DELETE": "DELETE"}[ev.kind], ev.schema, ev.table, n, text))
    return out


def _dirs_with_row_dumps() -> list[Path]:
    """rust-us cases whose dump.txt shows row values (``mysqlbinlog -vv``)."""
    if not RUST_US.exists():
        return []
    return [p.parent for p in sorted(RUST_US.glob("*/*/dump.txt"))
            if _dump_values(_read_dump(p))]


@pytest.mark.parametrize("case", _dirs_with_row_dumps(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rust_us_fixtures_match_mysqlbinlog_dump(case: Path) -> None:
    binlog = next(p for p in case.iterdir() if p.name.startswith(("log.bin", "binlog.")))
    expected = _dump_values(_read_dump(case / "dump.txt"))
    assert len(expected) >= 2
    assert _our_values(rows_events(fixture(binlog))) == expected


def test_rust_us_update_values() -> None:
    events = rows_events(fixture(RUST_US / "8.0/31_update_rows_v2/binlog.000001"))
    upd = next(e for e in events if e.kind == "UPDATE")
    assert (upd.schema, upd.table) == ("test", "int_table")
    assert upd.rows == [{
        "before": {"@1": 1, "@2": 11, "@3": 111, "@4": 1111, "@5": 11111, "@6": 1},
        "after": {"@1": 1, "@2": 22, "@3": 222, "@4": 1111, "@5": 11111, "@6": 1},
    }]


# ----------------------------------------------------------------------------- concrete values
def test_enum_string_set_rows() -> None:
    events = rows_events(fixture(BLACKBEAM / "mysql-enum-string-set.000001"))
    assert [e.kind for e in events] == ["INSERT", "UPDATE", "DELETE"]
    after = events[0].rows[0]["after"]
    assert after["f1"] == "0123456789" * 10
    assert after["f3"] == "var1"
    assert after["f4"] == "one,three"
    assert after["f5"] == "0123456789"
    upd = events[1].rows[0]
    assert (upd["after"]["f1"], upd["after"]["f2"]) == ("field1", "field_2")
    assert (upd["after"]["f3"], upd["after"]["f4"]) == ("variant2", "two,four")
    assert events[2].rows[0]["before"] == upd["after"]
    assert events[2].rows[0]["after"] is None


def test_minimal_row_image_leaves_columns_out() -> None:
    ev = rows_events(fixture(BLACKBEAM / "minimal_row_metadata.000001"))[0]
    assert ev.columns == ["@1", "@3", "@5"]
    assert ev.rows == [{"before": None, "after": {"@1": 1, "@3": "a", "@5": 3230202323}}]


def test_invisible_columns_nulls_and_binary() -> None:
    events = rows_events(fixture(BLACKBEAM / "binlog-invisible-columns.000001"))
    assert events[0].rows[0]["after"] == {
        "f1": 1, "f2": 2, "f3": -3, "f4": "4", "f5": b"\x05", "f6": 6000000000}
    assert events[1].rows[0]["after"] == {
        "f1": None, "f2": None, "f3": -33, "f4": "44", "f5": b"U", "f6": None}
    assert events[2].rows[0]["after"] == {
        "f1": 111, "f2": 222, "f3": -333, "f4": "444", "f5": b"U", "f6": None}


def test_time_bit_vector_mariadb() -> None:
    ev = rows_events(fixture(BLACKBEAM / "time_issue.000001"))[0]
    assert ev.rows[0]["after"] == {"@1": "-507:48:27"}
    ev = rows_events(fixture(BLACKBEAM / "mysql_type_bit.000001"))[0]
    assert ev.rows[0]["after"] == {"a": 4, "b": "foo", "c": 32}
    ev = rows_events(fixture(BLACKBEAM / "vector.binlog"))[1]
    f32 = [struct.unpack("<f", struct.pack("<f", x))[0] for x in (1.1, 2.2, 3.3, 4.4)]
    assert ev.rows[0]["after"] == {"id": 1, "vector_column": f32[:2], "foo": None,
                                   "vector_column2": f32}
    assert ev.rows[1]["after"]["foo"] == b"bar"
    events = rows_events(fixture(BLACKBEAM / "mariadb-bin.000001"))
    assert [e.rows[0]["after"] for e in events] == [
        {"id": 62, "topic": "foo", "event_type": "JSON", "event": b'{"foo":1}',
         "created": "2022-04-20 22:18:04"},
        {"id": 63, "topic": "foo", "event_type": "JSON", "event": b'{"foo":1}',
         "created": "2022-04-20 22:19:55"},
    ]
    assert events[0].version == 1


def test_json_rows_and_partial_update() -> None:
    data = fixture(BLACKBEAM / "json.binlog.000001")
    events = rows_events(data)
    assert events[0].rows[0]["after"] == {
        "@1": 1, "@2": '{"age": 24, "data": "xxxxxxxxxx", "name": "Joe"}', "@3": "Joe", "@4": 24}
    partial = events[-1]
    assert partial.partial and partial.kind == "UPDATE"
    assert partial.columns == ["@1"] and partial.columns_after == ["@2", "@3", "@4"]
    assert partial.rows[0] == {
        "before": {"@1": 1},
        "after": {"@2": "JSON_REPLACE(@2, '$.age', CAST('26' AS JSON))", "@3": "Joe", "@4": 26},
    }
    # spans of the diff
    ev = next(e for e in decode_file(data) if e.type_name == "PARTIAL_UPDATE_ROWS_EVENT")
    assert ev.node is not None
    row = ev.node.find("body.row[0]")
    opts = row.find("value_options")
    assert (opts.value, opts.length) == (1, 1)
    diff = row.find("after_image.@2")
    assert diff.find("length").value == 11
    assert diff.find("length").length == 4
    assert diff.find("diff[0].path").value == "$.age"
    assert diff.find("diff[0].value").value == "26"
    assert diff.length == 4 + 11
    assert check_tiling(ev.node) == []


def test_v1_rows_of_old_servers() -> None:
    events = rows_events(fixture(BLACKBEAM / "write-full-row.binlog"))
    assert [e.kind for e in events] == ["INSERT", "INSERT", "DELETE"]
    assert all(e.version == 1 for e in events)
    # values as mariadb-binlog -vv prints them for this 5.1 NDB file
    assert (events[0].schema, events[0].table) == ("mysql", "ndb_apply_status")
    assert events[0].rows[0]["after"] == {"@1": 2, "@2": 25769803786, "@3": "", "@4": 0, "@5": 0}
    assert [r["after"] for r in events[1].rows] == [
        {"@1": a, "@2": b, "@3": c}
        for a, b, c in [(3, 3, 3), (1, 1, 1), (2, 2, 2), (4, 4, 4), (4, 4, 40)]]
    assert events[2].rows == [{"before": {"@1": 2}, "after": None}]  # only the key column


def test_value_spans_and_docs() -> None:
    data = fixture(BLACKBEAM / "mysql-enum-string-set.000001")
    ev = next(e for e in decode_file(data) if e.type_name == "UPDATE_ROWS_EVENT")
    assert ev.node is not None
    body = ev.node.find("body")
    before = body.find("row[0].before_image")
    f3 = before.find("f3")
    assert (f3.length, f3.value) == (1, "var1")
    assert "ENUM" in f3.doc
    f2 = before.find("f2")
    assert f2.length == 2 + len(f2.value)  # 2-byte length prefix (max 1200) + bytes
    assert f2.offset == before.find("f1").end
    assert before.find("null_bitmap").offset == before.offset
    after_bits = body.find("columns_present_bitmap_after")
    assert after_bits.value & 0x1F == 0x1F  # 5 columns, all present (unused high bits are set)
    assert after_bits.display.startswith("11111 ")
    assert check_tiling(ev.node) == []


def test_null_value_nodes_are_empty() -> None:
    data = fixture(BLACKBEAM / "binlog-invisible-columns.000001")
    ev = [e for e in decode_file(data) if e.type_name == "WRITE_ROWS_EVENT"][1]
    assert ev.node is not None
    f1 = ev.node.find("body.row[0].after_image.f1")
    assert (f1.length, f1.value, f1.display) == (0, None, "NULL")


# ----------------------------------------------------------------------------- all fixtures
def _row_values(data: bytes, record: bool) -> list[Any]:
    return [(ev.offset, ev.error, ev.body.rows if isinstance(ev.body, RowsEvent) else None)
            for ev in decode_file(data, record=record)
            if ev.header is not None and ev.header.type_code in ROW_TYPES]


@pytest.mark.parametrize("path", all_binlogs(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_rows_identical_in_both_modes_without_errors(path: Path) -> None:
    data = fixture(path)
    slow = _row_values(data, True)
    fast = _row_values(data, False)
    assert slow == fast
    assert [e for _, e, _ in slow if e is not None] == []
    for ev in decode_file(data):
        if ev.header is not None and ev.header.type_code in ROW_TYPES and ev.node is not None:
            assert check_tiling(ev.node) == [], ev.offset


def test_sakila_row_count() -> None:
    path = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila.gz"
    events = rows_events(fixture(path), record=False)
    assert sum(len(e.rows) for e in events) == 47273
    actor = next(e for e in events if e.table == "actor")
    # the TIMESTAMP 1139974473 shown in UTC
    assert actor.rows[0]["after"] == {
        "@1": 1, "@2": "PENELOPE", "@3": "GUINESS", "@4": "2006-02-15 03:34:33"}


# ----------------------------------------------------------------------------- damage
def _events_raw(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    p = 4
    while p + 19 <= len(data):
        size = struct.unpack_from("<I", data, p + 9)[0]
        out.append((data[p + 4], data[p : p + size]))
        p += size
    return out


def _with_crc(event: bytes) -> bytes:
    return event[:-4] + struct.pack("<I", crc32(event[:-4]))


def test_rows_without_table_map_is_an_error() -> None:
    data = fixture(BLACKBEAM / "mysql_type_bit.000001")
    raw = _events_raw(data)
    fde = next(e for t, e in raw if t == 15)
    rows = next(e for t, e in raw if t == 30)
    ctx = DecodeContext()
    decode_event(fde, ctx)
    for record in (True, False):
        ev = decode_event(rows, ctx, record=record)
        assert ev.error is not None
        assert "no TABLE_MAP for table_id" in ev.error
        if record:
            assert ev.node is not None
            assert check_tiling(ev.node) == []
            assert ev.node.find("body.table_id").value == int.from_bytes(rows[19:25], "little")


def _compressed_copy(event: bytes, type_code: int, rows_start: int) -> bytes:
    """A MariaDB *_ROWS_COMPRESSED_EVENT_V1 made from a real v1 row event: same header fields,
    rows zlib-compressed behind MariaDB's header byte and big-endian length."""
    rows = event[rows_start:-4]
    payload = bytes([0x80 | 1]) + bytes([len(rows)]) + zlib.compress(rows)
    body = event[19:rows_start] + payload
    header = bytearray(event[:19])
    header[4] = type_code
    struct.pack_into("<I", header, 9, 19 + len(body) + 4)
    return _with_crc(bytes(header) + body + b"\0\0\0\0")


def test_mariadb_compressed_rows() -> None:
    data = fixture(BLACKBEAM / "mariadb-bin.000001")
    raw = _events_raw(data)
    fde = next(e for t, e in raw if t == 15)
    tmap = next(e for t, e in raw if t == 19)
    rows = next(e for t, e in raw if t == 23)
    # v1 body: table_id 6, flags 2, column_count 1 (5 columns), bitmap 1
    comp = _compressed_copy(rows, 166, 19 + 6 + 2 + 1 + 1)
    results = {}
    for record in (True, False):
        ctx = DecodeContext()
        decode_event(fde, ctx)
        decode_event(tmap, ctx)
        plain = decode_event(rows, ctx, record=record)
        ev = decode_event(comp, ctx, record=record)
        assert ev.error is None, ev.error
        assert ev.checksum_ok
        assert body_of(ev, RowsEvent).rows == body_of(plain, RowsEvent).rows
        assert body_of(ev, RowsEvent).compressed and body_of(ev, RowsEvent).kind == "INSERT"
        results[record] = ev
    ev = results[True]
    assert ev.node is not None
    assert check_tiling(ev.node) == []
    assert ev.node.find("body.compression_header").value == 0x81
    b = body_of(ev, RowsEvent)
    assert ev.node.find("body.uncompressed_length").value == b.uncompressed_size
    assert ev.node.find("body.compressed_rows").display.endswith("bytes of row images")
    dec = body_of(ev, RowsEvent).decompressed
    assert dec is not None and check_tiling(dec) == []
    assert dec.find("row[0].after_image.id").value == 62
    # a corrupt zlib stream is an error node, not an exception
    bad = bytearray(comp)
    bad[-8] ^= 0xFF
    ctx = DecodeContext()
    decode_event(fde, ctx)
    decode_event(tmap, ctx)
    broken = decode_event(_with_crc(bytes(bad)), ctx)
    assert broken.error is not None and "zlib" in broken.error


def test_mariadb_hires_inference() -> None:
    cols = [ColumnInfo(0, T.MYSQL_TYPE_LONG), ColumnInfo(1, T.MYSQL_TYPE_DATETIME)]
    tm = TableMap(1, "db", "t", cols)
    secs = ((((2024 * 13 + 2) * 32 + 29) * 24 + 12) * 60 + 34) * 60 + 56
    dt3 = ((secs * 1_000_000 + 123_000) // 1000).to_bytes(7, "big")  # DATETIME(3)
    data = b"\x00" + struct.pack("<i", 7) + dt3
    resolve_mariadb_hires(tm, data, INSERT, 0b11, 0b11)
    assert cols[1].hires_dec == 3
    rows = decode_rows_fast(data, INSERT, *_plans(tm))
    assert rows == [{"before": None, "after": {"@1": 7, "@2": "2024-02-29 12:34:56.123"}}]


def _plans(tm: TableMap) -> tuple[Any, None]:
    from binlogscope.wire.binlog._rowcode import table_plan

    return table_plan(tm, 0b11, True), None


@settings(max_examples=300, deadline=None)
@given(type_code=st.sampled_from(sorted(ROW_TYPES)), body=st.binary(max_size=120),
       record=st.booleans())
def test_random_row_bodies_never_raise(type_code: int, body: bytes, record: bool) -> None:
    data = fixture(BLACKBEAM / "mysql-enum-string-set.000001")
    raw = _events_raw(data)
    ctx = DecodeContext()
    decode_event(next(e for t, e in raw if t == 15), ctx)
    decode_event(next(e for t, e in raw if t == 19), ctx)
    # keep the real table id in front half of the time, so the row decoder gets deep
    if body[:1] and body[0] & 1:
        body = raw[2][1][19:25] + body
    header = HEADER.pack(0, type_code, 1, 19 + len(body) + 4, 0, 0)
    ev = decode_event(_with_crc(header + body + b"\0\0\0\0"), ctx, record=record)
    if record:
        assert ev.node is not None
        assert check_tiling(ev.node) == []
