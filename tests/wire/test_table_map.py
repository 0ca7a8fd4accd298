"""TABLE_MAP_EVENT decoding (table_map.py) on real fixture events."""

from __future__ import annotations

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.table_map import TableMapEvent, decode_table_map
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.node import check_tiling
from binlogscope.wire.reader import ByteReader
from tests.helpers import body_of
from tests.wire._binlog_fixtures import BLACKBEAM, decode_file, fixture


def table_maps(name: str, *, record: bool = True) -> list[TableMapEvent]:
    events = decode_file(fixture(BLACKBEAM / name), record=record)
    out = [body_of(ev, TableMapEvent) for ev in events if ev.type_name == "TABLE_MAP_EVENT"]
    assert out, f"{name} has no TABLE_MAP"
    for ev in events:
        if ev.type_name == "TABLE_MAP_EVENT":
            assert ev.error is None
            if record:
                assert ev.node is not None
                assert check_tiling(ev.node) == []
    return out


def test_vector_table_full_metadata_and_spans() -> None:
    events = decode_file(fixture(BLACKBEAM / "vector.binlog"))
    ev = next(e for e in events if e.type_name == "TABLE_MAP_EVENT")
    tm = body_of(ev, TableMapEvent)
    assert (tm.table_id, tm.schema, tm.table, tm.flags) == (0x55, "dtb", "foo", 1)
    ident, vec = tm.columns
    assert (ident.name, ident.type, ident.unsigned, ident.nullable) == ("id", 8, True, False)
    assert (vec.name, vec.type, vec.meta, vec.vector_dimensionality) == (
        "vector_column", T.MYSQL_TYPE_VECTOR, 4, 3)
    assert ident.visible and vec.visible
    assert tm.table_map is not None and tm.table_map.primary_key == [0]
    assert ev.node is not None
    body = ev.node.find("body")
    assert body.offset == ev.offset + 19
    tid = body.find("table_id")
    assert (tid.offset, tid.length, tid.value) == (ev.offset + 19, 6, 0x55)
    names = body.find("optional_metadata.column_name")
    assert [(n.name, n.value, n.length) for n in names.children[2:]] == [
        ("@1", "id", 3), ("@2", "vector_column", 14)]
    assert body.find("optional_metadata.signedness.bitmap").value == b"\x80"
    assert body.find("optional_metadata.vector_dimensionality.dimensions[0]").value == 3
    assert body.find("column_types.@2").display == "MYSQL_TYPE_VECTOR (242)"
    assert body.find("metadata.@2").value == 4


def test_enum_set_strings_and_long_char() -> None:
    tm = table_maps("mysql-enum-string-set.000001")[0]
    f1, f2, f3, f4, f5 = tm.columns
    # CHAR(128) utf8mb4: 512 bytes, length bits 8-9 hidden in the real-type byte (0xde)
    assert (f1.type, f1.meta, f1.real_type) == (T.MYSQL_TYPE_STRING, 0xDE00, T.MYSQL_TYPE_STRING)
    assert (f2.type, f2.meta) == (T.MYSQL_TYPE_VARCHAR, 1200)
    assert f3.real_type == T.MYSQL_TYPE_ENUM
    assert f3.enum_values == ["var1", "variant2", "foo"]
    assert f4.real_type == T.MYSQL_TYPE_SET
    assert f4.set_values == ["one", "two", "three", "four"]
    assert f5.type == T.MYSQL_TYPE_BLOB
    # DEFAULT_CHARSET covers the character columns, ENUM_AND_SET_DEFAULT_CHARSET the others
    assert [c.charset for c in tm.columns] == [255, 255, 255, 255, 255]
    assert [c.name for c in tm.columns] == ["f1", "f2", "f3", "f4", "f5"]


def test_signedness_only_numeric_charset_only_character_columns() -> None:
    tm = table_maps("json.binlog.000001")[0]
    ident, js, name, age = tm.columns
    assert [c.type for c in tm.columns] == [3, 245, 15, 3]
    assert (js.charset, name.charset, ident.charset, age.charset) == (None, 255, None, None)
    assert [c.label for c in tm.columns] == ["@1", "@2", "@3", "@4"]  # no COLUMN_NAME
    assert (js.meta, name.meta) == (4, 400)


def test_invisible_columns_and_binary_blob() -> None:
    tm = table_maps("binlog-invisible-columns.000001")[0]
    assert [(c.name, c.visible) for c in tm.columns] == [
        ("f1", False), ("f2", False), ("f3", True), ("f4", True), ("f5", True), ("f6", False)]
    assert [c.unsigned for c in tm.columns] == [True, True, False, False, False, True]
    assert (tm.columns[3].charset, tm.columns[4].charset) == (255, 63)


def test_mariadb_optional_metadata() -> None:
    tm = table_maps("mariadb-bin.000001")[0]
    assert [c.name for c in tm.columns] == ["id", "topic", "event_type", "event", "created"]
    assert tm.columns[2].enum_values == ["BLOB", "JSON", "PROTOBUF"]
    assert tm.columns[1].charset == 45
    assert tm.table_map is not None and tm.table_map.primary_key == [0]


def _first_table_map_body(name: str) -> tuple[bytes, DecodeContext]:
    data = fixture(BLACKBEAM / name)
    events = decode_file(data, record=False)
    ev = next(e for e in events if e.type_name == "TABLE_MAP_EVENT")
    ctx = DecodeContext()
    fde = body_of(next(e for e in events if e.type_name == "FORMAT_DESCRIPTION_EVENT"),
                  FormatDescriptionEvent)
    ctx.post_header_len = fde.post_header_len
    ctx.server_version = fde.server_version
    body = data[ev.offset + 19 : ev.offset + ev.size - 4]  # without header and CRC32
    return body, ctx


def _decode_body(body: bytes, ctx: DecodeContext, record: bool = True
                 ) -> tuple[TableMapEvent, ByteReader]:
    r = ByteReader(body, record=record)
    h = EventHeader(0, 19, 1, 19 + len(body), 0, 0)
    return decode_table_map(r, ctx, h), r


def test_four_byte_table_id_when_post_header_is_6() -> None:
    body, ctx = _first_table_map_body("mysql_type_bit.000001")
    lens = list(ctx.post_header_len)
    lens[18] = 6  # TABLE_MAP post-header of 6 bytes: 4-byte table id + 2-byte flags (5.1.x)
    ctx.post_header_len = tuple(lens)
    short = body[:4] + body[6:]  # drop the two high table-id bytes (zero here)
    ev, r = _decode_body(short, ctx)
    assert ev.table == "foo"
    assert [c.name for c in ev.columns] == ["a", "b", "c"]
    node = r.finish("body")
    assert node.find("table_id").length == 4
    assert check_tiling(node) == []


def test_unknown_optional_metadata_kept_raw() -> None:
    body, ctx = _first_table_map_body("mysql_type_bit.000001")
    ev, r = _decode_body(body + bytes([99, 2]) + b"ab", ctx)
    assert ev.table_map is not None
    assert ev.table_map.unknown_metadata == [(99, b"ab")]
    node = r.finish("body")
    raw = node.find("optional_metadata.unknown_type_99.value")
    assert (raw.value, raw.offset, raw.length) == (b"ab", len(body) + 2, 2)
    assert check_tiling(node) == []


def test_bit_metadata() -> None:
    tm = table_maps("mysql_type_bit.000001")[0]
    a, _b, c = tm.columns
    assert (a.type, a.meta) == (T.MYSQL_TYPE_BIT, 3)  # BIT(3): 3 bits, 0 whole bytes
    assert (c.type, c.meta) == (T.MYSQL_TYPE_BIT, 0x100)  # BIT(8): 0 bits, 1 whole byte


def test_identical_table_map_reused_in_fast_mode() -> None:
    data = fixture(BLACKBEAM / "json.binlog.000001")
    maps = table_maps("json.binlog.000001", record=False)
    assert len(maps) == 6
    assert all(m.table_map is maps[0].table_map for m in maps)
    del data


def test_truncated_table_map_raises() -> None:
    body, ctx = _first_table_map_body("mysql_type_bit.000001")
    with pytest.raises(Exception, match="truncated"):
        _decode_body(body[:12], ctx)
