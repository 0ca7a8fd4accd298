"""Text result sets: column count, ColumnDefinition41, rows with NULLs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from binlogscope.wire import results as rs
from binlogscope.wire.constants import CapabilityFlag as C
from binlogscope.wire.constants import ColumnFlag
from binlogscope.wire.node import check_tiling
from binlogscope.wire.packet import run_decoder


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def test_column_count() -> None:
    d = run_decoder("column_count", rs.decode_column_count, hexbytes("02  # column_count 2"),
                    caps=0, base=4)
    assert d.value == rs.ColumnCount(2)
    assert d.node is not None and d.node.find("column_count").wire == "int<lenenc>"
    payload = hexbytes("01  # metadata_follows\n 03  # column_count 3")
    d = run_decoder("column_count", rs.decode_column_count, payload,
                    caps=C.CLIENT_OPTIONAL_RESULTSET_METADATA)
    assert d.value == rs.ColumnCount(3, 1)
    assert rs.encode_column_count(d.value, C.CLIENT_OPTIONAL_RESULTSET_METADATA) == payload


COLUMN_DEF = hexbytes("""
    03 64 65 66             # catalog "def"
    05 6d 79 73 71 6c       # schema "mysql"
    01 75                   # table "u" (alias)
    04 75 73 65 72          # org_table "user"
    01 68                   # name "h" (alias)
    04 48 6f 73 74          # org_name "Host"
    0c                      # length_of_fixed_length_fields 12
    21 00                   # character_set 33 utf8mb3_general_ci
    ff 00 00 00             # column_length 255
    fe                      # type MYSQL_TYPE_STRING
    83 10                   # flags NOT_NULL|PRI_KEY|BINARY|NO_DEFAULT_VALUE
    00                      # decimals 0
    00 00                   # reserved
""")


def test_column_definition41() -> None:
    d = run_decoder("column_definition41", rs.decode_column_definition41, COLUMN_DEF, caps=0,
                    base=4)
    v = d.value
    assert d.error is None and d.node is not None and check_tiling(d.node) == []
    assert (v.catalog, v.schema, v.table, v.org_table, v.name, v.org_name) == (
        "def", "mysql", "u", "user", "h", "Host")
    assert (v.character_set, v.column_length, v.type, v.decimals) == (33, 255, 254, 0)
    assert v.flags == ColumnFlag.NOT_NULL_FLAG | ColumnFlag.PRI_KEY_FLAG | \
        ColumnFlag.BINARY_FLAG | ColumnFlag.NO_DEFAULT_VALUE_FLAG
    node = d.node
    assert (node.find("org_name").offset, node.find("org_name").length) == (23, 5)
    t = node.find("type")
    assert (t.offset, t.display) == (35, "MYSQL_TYPE_STRING (254)")
    assert node.find("flags.PRI_KEY_FLAG").value is True
    assert node.find("character_set").display == "33 utf8mb3_general_ci"
    assert rs.encode_column_definition41(v) == COLUMN_DEF


ROW = hexbytes("""
    01 31           # id "1"
    fb              # name NULL
    00              # note "" (empty string, not NULL)
""")


def test_text_row_with_null() -> None:
    d = run_decoder("text_row", lambda r, c: rs.decode_text_row(r, c, ("id", "name", "note")),
                    ROW, caps=0, base=4)
    assert d.value == rs.TextRow((b"1", None, b""))
    assert d.value.text() == ("1", None, "")
    node = d.node
    assert node is not None and check_tiling(node) == []
    assert (node.find("id").offset, node.find("id").length, node.find("id").display) == (
        4, 2, "'1'")
    assert (node.find("name").offset, node.find("name").display) == (6, "NULL")
    assert rs.encode_text_row(d.value) == ROW


def test_text_row_wrong_column_count_is_an_error() -> None:
    d = run_decoder("text_row", lambda r, c: rs.decode_text_row(r, c, ("a", "b", "c", "d")),
                    ROW, caps=0)
    assert d.value is None and d.error is not None and "3 values" in d.error


@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=8))
def test_row_roundtrip(values: list[bytes | None]) -> None:
    row = rs.TextRow(tuple(values))
    payload = rs.encode_text_row(row)
    for record in (True, False):
        d = run_decoder("text_row", rs.decode_text_row, payload, caps=0, record=record)
        assert d.value == row


@given(st.text(max_size=30), st.text(max_size=30), st.integers(0, 255), st.integers(0, 0xFFFF),
       st.integers(0, 2**32 - 1))
def test_column_definition_roundtrip(name: str, table: str, t: int, flags: int,
                                     length: int) -> None:
    v = rs.ColumnDefinition41(name, t, "s", table, table, name, "def", 45, length, flags, 2)
    d = run_decoder("c", rs.decode_column_definition41, rs.encode_column_definition41(v), caps=0)
    assert d.value == v
