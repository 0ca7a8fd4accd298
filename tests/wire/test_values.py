"""Column value decoders (values.py) on hand-built bytes, following docs/value-contract.md."""

from __future__ import annotations

import calendar
import struct

import pytest

from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import (
    codec_for,
    decimal_size,
    decode_date,
    decode_datetime2,
    decode_datetime_old,
    decode_decimal,
    decode_mariadb_hires,
    decode_time2,
    decode_time_old,
    decode_timestamp2,
    double_text,
    float32_text,
    make_reader,
    split_string_meta,
    value_to_text,
)


def read(col: ColumnInfo, data: bytes) -> object:
    value, end = make_reader(col)(data, 0)
    assert end == len(data), f"reader consumed {end} of {len(data)} bytes"
    return value


# ----------------------------------------------------------------------------- integers
@pytest.mark.parametrize(
    ("typ", "unsigned", "hexdata", "expected"),
    [
        (T.MYSQL_TYPE_TINY, False, "ff", -1),
        (T.MYSQL_TYPE_TINY, True, "ff", 255),
        (T.MYSQL_TYPE_SHORT, False, "0080", -32768),
        (T.MYSQL_TYPE_SHORT, True, "0080", 32768),
        (T.MYSQL_TYPE_INT24, False, "ffff7f", 8388607),
        (T.MYSQL_TYPE_INT24, False, "000080", -8388608),
        (T.MYSQL_TYPE_INT24, True, "000080", 8388608),
        (T.MYSQL_TYPE_LONG, False, "d3adc0c0", -1061114413),
        (T.MYSQL_TYPE_LONG, True, "d3adc0c0", 3233852883),
        (T.MYSQL_TYPE_LONGLONG, False, "ffffffffffffffff", -1),
        (T.MYSQL_TYPE_LONGLONG, True, "ffffffffffffffff", 2**64 - 1),
    ],
)
def test_integers_signed_and_unsigned(typ: int, unsigned: bool, hexdata: str,
                                      expected: int) -> None:
    assert read(ColumnInfo(0, typ, unsigned=unsigned), bytes.fromhex(hexdata)) == expected


# ----------------------------------------------------------------------------- decimal
def test_decimal_mysql_doc_example() -> None:
    # DECIMAL(14,4) 1234567890.1234: 1 digit in 1 byte, 9 digits in 4 bytes, 4 frac digits in 2
    data = bytes.fromhex(
        "81"        # '1' with the sign bit set (positive)
        "0dfb38d2"  # 234567890
        "04d2"      # 1234
    )
    assert decimal_size(14, 4) == 7
    assert decode_decimal(data, 14, 4) == "1234567890.1234"
    # negative: every byte inverted
    neg = bytes(b ^ 0xFF for b in data)
    assert neg.hex() == "7ef204c72dfb2d"
    assert decode_decimal(neg, 14, 4) == "-1234567890.1234"


def test_decimal_small_negative_keeps_scale() -> None:
    # DECIMAL(4,2): 2 integer digits in 1 byte, 2 fraction digits in 1 byte; -10.55 inverted
    assert decode_decimal(bytes.fromhex("8a37"), 4, 2) == "10.55"
    assert decode_decimal(bytes.fromhex("75c8"), 4, 2) == "-10.55"
    # DECIMAL(10,4) 3.0000: 6 integer digits in 3 bytes, 4 fraction digits in 2; zeros printed
    assert decimal_size(10, 4) == 5
    assert decode_decimal(bytes.fromhex("800003" "0000"), 10, 4) == "3.0000"


def test_decimal_65_30_max_and_zero() -> None:
    assert decimal_size(65, 30) == 30
    maximum = bytes.fromhex(
        "85f5e0ff"                  # 8 leading digits 99999999, sign bit set
        + "3b9ac9ff" * 3            # 3 x 999999999
        + "3b9ac9ff" * 3            # 27 fraction digits
        + "03e7"                    # last 3 fraction digits 999
    )
    assert decode_decimal(maximum, 65, 30) == "9" * 35 + "." + "9" * 30
    minimum = bytes(b ^ 0xFF for b in maximum)
    assert decode_decimal(minimum, 65, 30) == "-" + "9" * 35 + "." + "9" * 30
    zero = b"\x80" + b"\x00" * 29
    assert decode_decimal(zero, 65, 30) == "0." + "0" * 30


def test_decimal_38_38() -> None:
    assert decimal_size(38, 38) == 17
    half = bytes.fromhex("9dcd6500") + b"\x00" * 13  # 0.500000000 with the sign bit
    assert decode_decimal(half, 38, 38) == "0.5" + "0" * 37
    assert decode_decimal(bytes(b ^ 0xFF for b in half), 38, 38) == "-0.5" + "0" * 37


def test_decimal_reader_uses_meta_precision_scale() -> None:
    col = ColumnInfo(0, T.MYSQL_TYPE_NEWDECIMAL, meta=(4 << 8) | 2)
    assert read(col, bytes.fromhex("75c8")) == "-10.55"


# ----------------------------------------------------------------------------- float
def test_float_keeps_single_precision() -> None:
    raw = struct.pack("<f", 1.1)
    value = read(ColumnInfo(0, T.MYSQL_TYPE_FLOAT, meta=4), raw)
    assert value == struct.unpack("<f", raw)[0]
    assert value != 1.1  # the float32 value, not the double 1.1
    assert float32_text(value) == "1.1"  # type: ignore[arg-type]
    assert value_to_text(value, ColumnInfo(0, T.MYSQL_TYPE_FLOAT, meta=4)) == "1.1"


@pytest.mark.parametrize(
    ("value", "text"),
    # what MariaDB 10.11 prints for SELECT of a FLOAT column: 6 significant digits, fixed
    # notation for decimal exponents -15..14
    [(3.14159265, "3.14159"), (1e20, "1e20"), (1e-7, "0.0000001"), (100.0, "100"),
     (-2.5, "-2.5"), (0.0, "0"), (123456789.0, "123457000"), (1.4e-45, "1.4013e-45"),
     (3.4028234e38, "3.40282e38"), (999999.5, "1000000"), (9.999995e-6, "0.00001")],
)
def test_float32_text(value: float, text: str) -> None:
    assert float32_text(struct.unpack("<f", struct.pack("<f", value))[0]) == text


def test_double_text() -> None:
    assert double_text(0.1) == "0.1"
    assert double_text(1e16) == "1e16"
    assert double_text(-1.5e-7) == "-0.00000015"
    assert double_text(42.0) == "42"
    # MariaDB 10.11 SELECT output: shortest round-trip digits, fixed for exponents -15..14
    assert double_text(-1.23456789e-05) == "-0.0000123456789"
    assert double_text(1.6147530198139275e-15) == "0.0000000000000016147530198139275"
    assert double_text(1.5e-16) == "1.5e-16"
    assert double_text(999999999999999.0) == "999999999999999"
    assert double_text(5e-324) == "5e-324"
    assert double_text(-1.2458576991121367e308) == "-1.2458576991121367e308"
    assert read(ColumnInfo(0, T.MYSQL_TYPE_DOUBLE, meta=8), struct.pack("<d", 0.1)) == 0.1


# ----------------------------------------------------------------------------- bit / year
@pytest.mark.parametrize(
    ("bits", "hexdata", "expected"),
    [(1, "01", 1), (3, "04", 4), (8, "ff", 255), (9, "0100", 256), (64, "ff" * 8, 2**64 - 1),
     (17, "010000", 65536)],
)
def test_bit_widths(bits: int, hexdata: str, expected: int) -> None:
    meta = (bits // 8) << 8 | (bits % 8)  # TABLE_MAP: bits % 8, then whole bytes
    col = ColumnInfo(0, T.MYSQL_TYPE_BIT, meta=meta)
    assert read(col, bytes.fromhex(hexdata)) == expected
    assert value_to_text(expected, col) == bytes.fromhex(hexdata)


def test_year_zero_is_zero_not_1900() -> None:
    col = ColumnInfo(0, T.MYSQL_TYPE_YEAR)
    assert read(col, b"\x00") == 0
    assert value_to_text(0, col) == "0000"
    assert read(col, bytes([124])) == 2024
    assert read(col, bytes([1])) == 1901


# ----------------------------------------------------------------------------- temporal
def test_date_and_zero_date() -> None:
    v = 2024 << 9 | 2 << 5 | 29
    assert decode_date(v) == "2024-02-29"
    col = ColumnInfo(0, T.MYSQL_TYPE_DATE)
    assert read(col, v.to_bytes(3, "little")) == "2024-02-29"
    assert read(col, b"\x00\x00\x00") == "0000-00-00"


def test_old_time_and_datetime() -> None:
    assert decode_time_old(-8385959) == "-838:59:59"
    assert decode_time_old(123456) == "12:34:56"
    col = ColumnInfo(0, T.MYSQL_TYPE_TIME)
    assert read(col, (-10203).to_bytes(3, "little", signed=True)) == "-01:02:03"
    assert decode_datetime_old(20240229123456) == "2024-02-29 12:34:56"
    col = ColumnInfo(0, T.MYSQL_TYPE_DATETIME)
    assert read(col, (20240229123456).to_bytes(8, "little")) == "2024-02-29 12:34:56"
    assert read(col, bytes(8)) == "0000-00-00 00:00:00"


def test_timestamp_old_and_zero() -> None:
    secs = calendar.timegm((2024, 2, 29, 12, 34, 56))
    col = ColumnInfo(0, T.MYSQL_TYPE_TIMESTAMP)
    assert read(col, secs.to_bytes(4, "little")) == "2024-02-29 12:34:56"
    assert read(col, bytes(4)) == "0000-00-00 00:00:00"


def test_time2() -> None:
    assert decode_time2(bytes.fromhex("800000"), 0) == "00:00:00"
    # -838:59:59: 0x800000 - (838 << 12 | 59 << 6 | 59)
    assert decode_time2(bytes.fromhex("4b9105"), 0) == "-838:59:59"
    # 12:34:56.789 fsp 3: int part 0x800000 + (12 << 12 | 34 << 6 | 56), fraction 7890 (x100 us)
    assert decode_time2(bytes.fromhex("80c8b8" "1ed2"), 3) == "12:34:56.789"
    # -00:00:01.500 fsp 3: int part -2, fraction 0x10000 - 5000 (MySQL's reversed fraction)
    assert decode_time2(bytes.fromhex("7ffffe" "ec78"), 3) == "-00:00:01.500"
    # fsp 1: one fraction byte in units of 10 ms; -00:00:00.5 -> int part -1, frac 0x100 - 50
    assert decode_time2(bytes.fromhex("7fffff" "ce"), 1) == "-00:00:00.5"
    # fsp 6: one 6-byte big-endian value, packed time + 0x800000000000
    packed = -((1 << 12 | 2 << 6 | 3) << 24 | 456789)
    assert decode_time2((packed + 0x800000000000).to_bytes(6, "big"), 6) == "-01:02:03.456789"


def _datetime2_bytes(y: int, mo: int, d: int, h: int, mi: int, s: int) -> bytes:
    ymd = ((y * 13 + mo) << 5) | d
    hms = (h << 12) | (mi << 6) | s
    return ((ymd << 17 | hms) + 0x8000000000).to_bytes(5, "big")


def test_datetime2() -> None:
    raw = _datetime2_bytes(2024, 2, 29, 12, 34, 56)
    assert decode_datetime2(raw, 0) == "2024-02-29 12:34:56"
    assert decode_datetime2(raw + (1230).to_bytes(2, "big"), 3) == "2024-02-29 12:34:56.123"
    assert decode_datetime2(raw + (123456).to_bytes(3, "big"), 6) == "2024-02-29 12:34:56.123456"
    assert decode_datetime2(raw + bytes([5]), 1) == "2024-02-29 12:34:56.0"
    assert decode_datetime2(raw + bytes([50]), 1) == "2024-02-29 12:34:56.5"
    zero = (0x8000000000).to_bytes(5, "big")
    assert decode_datetime2(zero, 0) == "0000-00-00 00:00:00"


def test_timestamp2() -> None:
    secs = calendar.timegm((2024, 2, 29, 12, 34, 56))
    assert decode_timestamp2(secs.to_bytes(4, "big"), 0) == "2024-02-29 12:34:56"
    raw = secs.to_bytes(4, "big") + (123456).to_bytes(3, "big")
    assert decode_timestamp2(raw, 6) == "2024-02-29 12:34:56.123456"
    assert decode_timestamp2(bytes(4), 0) == "0000-00-00 00:00:00"
    assert decode_timestamp2(bytes(6), 3) == "0000-00-00 00:00:00.000"


def test_mariadb_hires_formats() -> None:
    # DATETIME(3): packed ((((y*13+m)*32+d)*24+h)*60+mi)*60+s)*10^6+us, divided by 10^3
    secs = ((((2024 * 13 + 2) * 32 + 29) * 24 + 12) * 60 + 34) * 60 + 56
    raw = ((secs * 1_000_000 + 123_000) // 1000).to_bytes(7, "big")
    assert decode_mariadb_hires(T.MYSQL_TYPE_DATETIME, raw, 3) == "2024-02-29 12:34:56.123"
    # TIME(2): (seconds*10^6 + us) / 10^4 + zero point (838:59:59 + 1 s) * 10^2
    t = -(1 * 3600 + 2 * 60 + 3) * 100 - 45
    raw = (t + 3020400 * 100).to_bytes(4, "big")
    assert decode_mariadb_hires(T.MYSQL_TYPE_TIME, raw, 2) == "-01:02:03.45"
    # TIMESTAMP(1): 4-byte seconds + 1 byte of tenths
    ts = calendar.timegm((2024, 2, 29, 12, 34, 56))
    raw = ts.to_bytes(4, "big") + bytes([7])
    assert decode_mariadb_hires(T.MYSQL_TYPE_TIMESTAMP, raw, 1) == "2024-02-29 12:34:56.7"
    with pytest.raises(ValueError, match="fraction"):
        decode_mariadb_hires(T.MYSQL_TYPE_TIMESTAMP, ts.to_bytes(4, "big") + bytes([99]), 1)
    col = ColumnInfo(0, T.MYSQL_TYPE_TIMESTAMP, hires_dec=1)
    assert read(col, raw) == "2024-02-29 12:34:56.7"


# ----------------------------------------------------------------------------- strings
def test_string_meta_high_bits_for_long_char() -> None:
    # CHAR(128) utf8mb4 = 512 bytes: real type 0xfe with bits 4-5 carrying length bits 8-9
    assert split_string_meta(0xDE00) == (0xFE, 512)
    assert split_string_meta(0xFE08) == (0xFE, 8)
    assert split_string_meta(0xF701) == (0xF7, 1)  # ENUM, 1 byte


def test_char_length_prefix_depends_on_max_length() -> None:
    short = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xFE08, real_type=0xFE, charset=255)
    assert read(short, b"\x03abc") == "abc"
    long_ = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xDE00, real_type=0xFE, charset=255)
    assert read(long_, b"\x03\x00abc") == "abc"


def test_binary_keeps_and_pads_zero_bytes() -> None:
    col = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xFE04, real_type=0xFE, charset=63)
    assert read(col, b"\x02a\x00") == b"a\x00\x00\x00"
    assert value_to_text(b"a\x00\x00\x00", col) == b"a\x00\x00\x00"


def test_varchar_one_and_two_byte_lengths() -> None:
    col = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=255, charset=45)
    assert read(col, b"\x02hi") == "hi"
    col2 = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=1020, charset=255)
    assert read(col2, b"\x02\x00\xc3\xa9") == "é"


def test_varchar_charsets() -> None:
    latin1 = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=8)
    assert read(latin1, b"\x02\x80\xe9") == "€é"  # MySQL latin1 is cp1252
    ucs2 = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=35)
    assert read(ucs2, b"\x04\x00h\x00i") == "hi"
    utf16le = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=56)
    assert read(utf16le, b"\x04h\x00i\x00") == "hi"
    sjis = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=13)
    assert read(sjis, b"\x02\x82\xa0") == "あ"
    binary = ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=63)
    assert read(binary, b"\x02\xff\x00") == b"\xff\x00"
    # undecodable bytes survive with surrogateescape
    bad = read(ColumnInfo(0, T.MYSQL_TYPE_VARCHAR, meta=10, charset=255), b"\x01\xff")
    assert isinstance(bad, str)
    assert bad.encode("utf-8", "surrogateescape") == b"\xff"


def test_codec_map() -> None:
    assert codec_for(33) == "utf-8"  # utf8mb3_general_ci
    assert codec_for(255) == "utf-8"  # utf8mb4_0900_ai_ci
    assert codec_for(8) == "cp1252"
    assert codec_for(11) == "ascii"
    assert codec_for(63) is None
    assert codec_for(35) == "utf-16-be"
    assert codec_for(54) == "utf-16-be"
    assert codec_for(56) == "utf-16-le"
    assert codec_for(60) == "utf-32-be"
    assert codec_for(28) == "gbk"
    assert codec_for(1) == "big5"
    assert codec_for(19) == "euc_kr"
    assert codec_for(12) == "euc_jp"
    assert codec_for(None) == "utf-8"
    assert codec_for(99999) == "utf-8"


def test_blob_prefix_sizes_and_text_vs_binary() -> None:
    for size in (1, 2, 3, 4):
        col = ColumnInfo(0, T.MYSQL_TYPE_BLOB, meta=size)
        data = (3).to_bytes(size, "little") + b"a\x00b"
        assert read(col, data) == b"a\x00b"  # no charset metadata: bytes
    text = ColumnInfo(0, T.MYSQL_TYPE_BLOB, meta=2, charset=255)
    assert read(text, b"\x02\x00hi") == "hi"


def test_enum_and_set() -> None:
    enum1 = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xF701, real_type=0xF7,
                       enum_values=["a", "b"])
    assert read(enum1, b"\x02") == "b"
    assert read(enum1, b"\x00") == ""
    no_names = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xF702, real_type=0xF7)
    assert read(no_names, b"\x2c\x01") == 300  # ENUM with > 255 members: 2 bytes
    set8 = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xF808, real_type=0xF8)
    assert read(set8, b"\xff" * 8) == 2**64 - 1  # SET with 64 members
    named = ColumnInfo(0, T.MYSQL_TYPE_STRING, meta=0xF801, real_type=0xF8,
                       set_values=["x", "y", "z"])
    assert read(named, b"\x05") == "x,z"
    assert read(named, b"\x00") == ""


def test_vector_geometry_json_null() -> None:
    vec = ColumnInfo(0, T.MYSQL_TYPE_VECTOR, meta=4)
    raw = struct.pack("<I3f", 12, 1.0, -1.0, 0.5)
    assert read(vec, raw) == [1.0, -1.0, 0.5]
    assert value_to_text([1.0, -1.0, 0.5], vec) == raw[4:]
    geo = ColumnInfo(0, T.MYSQL_TYPE_GEOMETRY, meta=4)
    wkb = bytes(4) + bytes.fromhex("0101000000000000000000f03f0000000000000040")
    assert read(geo, len(wkb).to_bytes(4, "little") + wkb) == wkb
    js = ColumnInfo(0, T.MYSQL_TYPE_JSON, meta=4)
    assert read(js, b"\x02\x00\x00\x00" b"\x04\x01") == "true"  # length 2, literal true
    mariadb_json = make_reader(ColumnInfo(0, T.MYSQL_TYPE_JSON, meta=4), mariadb=True)
    assert mariadb_json(b"\x02\x00\x00\x00{}", 0) == ("{}", 6)
    assert value_to_text(None, js) is None


def test_unknown_type_raises() -> None:
    with pytest.raises(ValueError, match="no row decoder"):
        make_reader(ColumnInfo(0, T.MYSQL_TYPE_TYPED_ARRAY))


def test_server_float_text_equals_the_decimal_reference() -> None:
    """The string-only float layout equals the Decimal-based reference on random doubles."""
    import random
    import struct

    from binlogscope.wire.binlog.values import (
        _server_float_text,
        _server_float_text_reference,
    )

    rnd = random.Random(5)
    values = [1.0, -1.0, 0.1, 1e-5, 1e15, 1e14, 123.0, 1.5e-16, 5e-324, 100.0, 0.001,
              1.7976931348623157e308, 12345678901234567890.0, -0.000123]
    while len(values) < 20000:
        v = struct.unpack("<d", rnd.randbytes(8))[0]
        if v == v and abs(v) != float("inf") and v != 0:
            values.append(v)
        values.append(rnd.uniform(-1e6, 1e6) or 1.0)
    for v in values:
        for text in (repr(v), f"{v:.5e}"):
            assert _server_float_text(text) == _server_float_text_reference(text), text
