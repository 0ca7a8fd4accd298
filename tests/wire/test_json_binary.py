"""MySQL binary JSON -> text (json_binary.py), on hand-built documents and real fixture rows."""

from __future__ import annotations

import struct

import pytest

from binlogscope.wire.binlog.json_binary import (
    json_binary_to_text,
    json_double_text,
    read_varlen,
    render_json_diff,
)
from binlogscope.wire.binlog.rows import RowsEvent
from tests.helpers import body_of
from tests.wire._binlog_fixtures import BLACKBEAM, decode_file, fixture


def test_literals_and_scalars() -> None:
    assert json_binary_to_text(b"") == "null"
    assert json_binary_to_text(bytes.fromhex("04" "00")) == "null"
    assert json_binary_to_text(bytes.fromhex("04" "01")) == "true"
    assert json_binary_to_text(bytes.fromhex("04" "02")) == "false"
    assert json_binary_to_text(bytes.fromhex("05" "ffff")) == "-1"  # int16
    assert json_binary_to_text(bytes.fromhex("06" "ffff")) == "65535"  # uint16
    assert json_binary_to_text(bytes.fromhex("07" "00000080")) == "-2147483648"  # int32
    assert json_binary_to_text(bytes.fromhex("08" "ffffffff")) == "4294967295"  # uint32
    assert json_binary_to_text(b"\x09" + struct.pack("<q", -(2**63))) == str(-(2**63))
    assert json_binary_to_text(b"\x0a" + struct.pack("<Q", 2**64 - 1)) == str(2**64 - 1)
    assert json_binary_to_text(b"\x0b" + struct.pack("<d", 3.5)) == "3.5"
    assert json_binary_to_text(b"\x0b" + struct.pack("<d", 1.0)) == "1.0"
    assert json_binary_to_text(b"\x0b" + struct.pack("<d", 1e20)) == "1e20"


def test_string_escapes_and_varlen() -> None:
    s = 'a"b\\c\n\x01é'.encode()
    assert json_binary_to_text(b"\x0c" + bytes([len(s)]) + s) == '"a\\"b\\\\c\\n\\u0001é"'
    assert read_varlen(bytes.fromhex("8001"), 0) == (128, 2)  # 7 bits per byte, low first
    long = b"x" * 200
    assert json_binary_to_text(b"\x0c" + bytes.fromhex("c801") + long) == '"' + "x" * 200 + '"'
    with pytest.raises(ValueError, match="variable-length"):
        read_varlen(b"\xff" * 6, 0)


def test_small_object_with_inlined_and_offset_values() -> None:
    doc = bytes.fromhex(
        "00"      # small object
        "0200"    # 2 members
        "1a00"    # 26 bytes (after the type byte)
        "1200" "0100"  # key 0 at offset 18, length 1
        "1300" "0100"  # key 1 at offset 19, length 1
        "05" "2a00"    # value 0: int16 42 inlined in the entry
        "0c" "1400"    # value 1: string at offset 20
        "61" "62"      # keys "a", "b"
        "05" "68656c6c6f"  # "hello"
    )
    assert json_binary_to_text(doc) == '{"a": 42, "b": "hello"}'


def test_small_array_nested_and_empty() -> None:
    inner = bytes.fromhex("0000" "0400")  # empty object: count 0, size 4
    # build precisely: header 4 + 3 entries * 3 = 13, then the nested object at offset 13
    doc = (b"\x02" + struct.pack("<HH", 3, 13 + len(inner) + 4)
           + b"\x04" + struct.pack("<H", 1)           # true
           + b"\x00" + struct.pack("<H", 13)          # small object at offset 13
           + b"\x02" + struct.pack("<H", 13 + len(inner))  # small array at offset 17
           + inner + bytes.fromhex("0000" "0400"))    # empty array
    assert json_binary_to_text(doc) == "[true, {}, []]"


def test_large_object_and_array_inline_int32() -> None:
    # large containers use 4-byte counts/offsets and inline int32 values
    body = (struct.pack("<II", 1, 4 + 4 + 6 + 5 + 1)
            + struct.pack("<IH", 19, 1)              # key at offset 19, length 1
            + b"\x07" + struct.pack("<i", -70000)    # int32 inlined in a large object
            + b"k")
    assert json_binary_to_text(b"\x01" + body) == '{"k": -70000}'
    arr = (struct.pack("<II", 2, 8 + 10 + 8)
           + b"\x08" + struct.pack("<I", 4000000000)  # uint32 inline
           + b"\x0b" + struct.pack("<I", 18)          # double at offset 18
           + struct.pack("<d", -0.25))
    assert json_binary_to_text(b"\x03" + arr) == "[4000000000, -0.25]"


def test_opaque_values() -> None:
    # DECIMAL(5,2) 123.45: opaque type 246, precision, scale, packed decimal
    dec = bytes([5, 2]) + bytes.fromhex("807b2d")
    assert json_binary_to_text(b"\x0f\xf6" + bytes([len(dec)]) + dec) == "123.45"
    # DATETIME opaque: 8-byte packed longlong (ymdhms << 24 | microseconds)
    ymd = ((2012 * 13 + 3) << 5) | 18
    hms = (11 << 12) | (30 << 6) | 45
    packed = ((ymd << 17) | hms) << 24
    raw = struct.pack("<q", packed)
    assert json_binary_to_text(b"\x0f\x0c\x08" + raw) == '"2012-03-18 11:30:45.000000"'
    assert json_binary_to_text(b"\x0f\x0a\x08" + raw) == '"2012-03-18"'
    t = -(((87 << 12) | (31 << 6) | 46) << 24 | 654321)
    assert json_binary_to_text(b"\x0f\x0b\x08" + struct.pack("<q", t)) == '"-87:31:46.654321"'
    assert json_binary_to_text(b"\x0f\x0f\x01U") == '"base64:type15:VQ=="'


def test_malformed_documents_raise() -> None:
    with pytest.raises(ValueError):
        json_binary_to_text(b"\x0e")
    with pytest.raises(ValueError):
        json_binary_to_text(bytes.fromhex("00" "0100" "ff00"))  # size beyond the document
    with pytest.raises(ValueError):
        json_binary_to_text(b"\x04\x07")  # literal 7 does not exist


def test_double_text_never_nan() -> None:
    assert json_double_text(2.5) == "2.5"
    with pytest.raises(ValueError):
        json_double_text(float("nan"))


def test_render_diff() -> None:
    text = render_json_diff("@2", [(0, "$.a", "1"), (2, "$.b", None)])
    assert text == "JSON_REMOVE(JSON_REPLACE(@2, '$.a', CAST('1' AS JSON)), '$.b')"


def test_fixture_json_opaque_values() -> None:
    events = decode_file(fixture(BLACKBEAM / "json-opaque.binlog"))
    values = [body_of(ev, RowsEvent).rows[0]["after"]["a"] for ev in events
              if ev.type_name == "WRITE_ROWS_EVENT"]
    assert values == [
        '{"a": "base64:type15:VQ=="}',
        '{"b": "2012-03-18"}',
        '{"c": "2012-03-18 11:30:45.000000"}',
        '{"c": "87:31:46.654321"}',
        '{"d": 123.456}',
        '{"e": 9.00}',
        '{"e": [0, 1, true, false]}',
        '{"e": null}',
    ]
