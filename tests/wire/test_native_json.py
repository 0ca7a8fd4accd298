"""The kernel's JSON writer of row images (``rows_json``) writes exactly what the one serializer
writes for the rows the Python readers read - or declines (None) and leaves them to it."""

from __future__ import annotations

import math
import struct
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogscope.render.json_out import dumps
from binlogscope.wire.binlog._rowcode import DELETE, INSERT, UPDATE, ImagePlan, read_rows, rows_json
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from tests.native_switch import NativeSwitch
from tests.wire.test_rowcode import COLUMNS, _columns


def _python_text(native: NativeSwitch, data: bytes, kind: str, plan: ImagePlan,
                 plan_a: ImagePlan | None) -> bytes | str:
    with native.off():
        try:
            rows = read_rows(data, kind, plan, plan_a)
        except Exception:
            return "error"
    return dumps(rows)


@settings(max_examples=600, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(COLUMNS))), min_size=1, max_size=10),
       data=st.binary(max_size=300), kind=st.sampled_from([INSERT, UPDATE, DELETE]))
def test_rows_json_equals_the_serializer_on_random_images(
        picks: list[int], data: bytes, kind: str, native: NativeSwitch) -> None:
    native.require()
    plan = ImagePlan(_columns(picks), mariadb=False)
    plan_a = plan if kind == UPDATE else None
    want = _python_text(native, data, kind, plan, plan_a)
    got = rows_json(data, kind, plan, plan_a, 0, len(data))
    if got is not None:
        assert got == want


def _one(col: ColumnInfo, raw: bytes, native: NativeSwitch) -> tuple[bytes | None, Any]:
    plan = ImagePlan([col], mariadb=False)
    data = b"\x00" + raw
    return rows_json(data, INSERT, plan, None, 0, len(data)), _python_text(
        native, data, INSERT, plan, None)


def _prefixed(text: bytes) -> bytes:
    return bytes([len(text)]) + text


@pytest.mark.parametrize("text", [
    b"", b"plain", b'"quoted" and \\ back', b"\x00\x01\x1f\x7f\t\n\r\b\x0c",
    "ü € 😀 \u2028".encode(), b"x" * 200, b'0123456"', b"abcdefgh\\ijklmnop\x00"])
def test_text_is_escaped_as_the_serializer_escapes_it(text: bytes, native: NativeSwitch
                                                      ) -> None:
    native.require()
    got, want = _one(ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, 255, charset=45), _prefixed(text),
                     native)
    assert got is not None and got == want


@pytest.mark.parametrize("text", [b"\xff", b"caf\xe9", b"\xed\xa0\x80", b"\xc0\xaf",
                                  b"\xf4\x90\x80\x80", b"ok\xe2\x82"])
def test_text_that_is_not_utf8_declines(text: bytes, native: NativeSwitch) -> None:
    """The serializer repairs such text (U+FFFD for each undecodable byte): the kernel leaves
    the event to it."""
    native.require()
    got, want = _one(ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, 255, charset=45), _prefixed(text),
                     native)
    assert got is None and isinstance(want, bytes)


def test_latin1_text_is_written(native: NativeSwitch) -> None:
    native.require()
    got, want = _one(ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, 255, charset=8),
                     _prefixed(b"caf\xe9 \"x\""), native)
    assert got is not None and got == want and "café".encode() in got


@pytest.mark.parametrize("value", [
    0.0, -0.0, 1.0, 0.1, 1e-5, 1.5e-5, 1e-6, 1e-7, 1e15, 1e16, 1.2345678901234567e19, 5e-324,
    1.7976931348623157e308, math.nan, math.inf, -math.inf, 123456.789, -2.5e-300])
def test_doubles_are_written_as_the_serializer_writes_them(value: float, native: NativeSwitch
                                                           ) -> None:
    native.require()
    got, want = _one(ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, 8), struct.pack("<d", value), native)
    assert got is not None and got == want


@settings(max_examples=3000, deadline=None)
@given(raw=st.binary(min_size=8, max_size=8))
def test_any_double_or_float_is_written_as_the_serializer_writes_it(
        raw: bytes, native: NativeSwitch) -> None:
    native.require()
    for col, b in ((ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, 8), raw),
                   (ColumnInfo(0, T.MYSQL_TYPE_FLOAT, 4), raw[:4])):
        got, want = _one(col, b, native)
        assert got is not None and got == want


def test_labels_and_bytes(native: NativeSwitch) -> None:
    native.require()
    cols = [ColumnInfo(0, T.MYSQL_TYPE_LONGLONG, unsigned=True, name='a "name"\n'),
            ColumnInfo(1, T.MYSQL_TYPE_VARCHAR, 20, charset=63, name="ü"),
            ColumnInfo(2, T.MYSQL_TYPE_STRING, 0xFE08, charset=63)]
    plan = ImagePlan(cols, mariadb=False)
    data = b"\x00" + struct.pack("<Q", 2**64 - 1) + b"\x03\x00\xab\xff" + b"\x02ab"
    got = rows_json(data, DELETE, plan, None, 0, len(data))
    assert got == _python_text(native, data, DELETE, plan, None)
    assert orjson.loads(got or b"null") == [{"before": {'a "name"\n': 2**64 - 1, "ü": "00abff",
                                                        "@3": "6162000000000000"},
                                             "after": None}]


def test_a_value_the_writer_does_not_know_declines(native: NativeSwitch) -> None:
    """A VECTOR (a list of floats) and a BIT of 9 bytes (beyond 64 bits) are left to the
    serializer."""
    native.require()
    vec = ColumnInfo(0, T.MYSQL_TYPE_VECTOR, 4)
    got, _ = _one(vec, struct.pack("<I", 8) + struct.pack("<2f", 1.5, 2.5), native)
    assert got is None
    bit = ColumnInfo(0, T.MYSQL_TYPE_BIT, 9 << 8)
    got, want = _one(bit, b"\xff" * 9, native)
    assert got is None and want == b'[{"before":null,"after":{"@1":4722366482869645213695}}]'


def test_a_damaged_image_declines(native: NativeSwitch) -> None:
    native.require()
    plan = ImagePlan([ColumnInfo(0, T.MYSQL_TYPE_LONG)], mariadb=False)
    assert rows_json(b"\x00\x01\x02", INSERT, plan, None, 0, 3) is None
    with native.off():
        assert rows_json(b"\x00\x01\x02\x03\x04", INSERT, plan, None, 0, 5) is None
