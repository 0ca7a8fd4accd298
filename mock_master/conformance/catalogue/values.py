"""values: every column type at its edges, with FULL, MINIMAL and no row metadata.

Each case serves one table and one rows event; a correct client reports each value as the
value contract (docs/value-contract.md) has it - the text the server's SELECT prints, bytes for
binary columns. Without FULL metadata the client has to ask for the column names (the mock
master answers information_schema from the case's DDL).
"""

from __future__ import annotations

from mock_master.conformance.catalogue.common import values_case
from mock_master.conformance.model import Case
from mock_master.conformance.streams import FULL, METADATA, MINIMAL, NONE

_MIXED = [("id", "INT"), ("u", "INT UNSIGNED"), ("d", "DECIMAL(10,2)"), ("s", "VARCHAR(20)"),
          ("dt", "DATETIME(3)"), ("b", "VARBINARY(8)")]
_MIXED_ROWS = [(1, 4294967295, "-12.50", "hé", "2024-02-29 12:34:56.789", b"\x00\xff"),
               (2, None, None, None, None, None)]

CASES: list[Case] = [
    values_case("values/int-edges", "TINYINT..BIGINT signed minimum and maximum, NULL",
                [("id", "INT"), ("a", "TINYINT"), ("b", "SMALLINT"), ("c", "MEDIUMINT"),
                 ("d", "INT"), ("e", "BIGINT")],
                [(1, -128, -32768, -8388608, -2147483648, -9223372036854775808),
                 (2, 127, 32767, 8388607, 2147483647, 9223372036854775807),
                 (3, None, None, None, None, None)]),
    values_case("values/int-unsigned-edges", "UNSIGNED integers at their maximum",
                [("a", "TINYINT UNSIGNED"), ("b", "SMALLINT UNSIGNED"),
                 ("c", "MEDIUMINT UNSIGNED"), ("d", "INT UNSIGNED"), ("e", "BIGINT UNSIGNED")],
                [(255, 65535, 16777215, 4294967295, 18446744073709551615), (0, 0, 0, 0, 0)]),
    values_case("values/float", "FLOAT: the float32 value (3.14, 1e-45, -0.5, 3.4e38)",
                [("id", "INT"), ("f", "FLOAT")],
                [(1, 3.14), (2, 1.401298464324817e-45), (3, -0.5), (4, 3.4028234663852886e38),
                 (5, None)]),
    values_case("values/double", "DOUBLE: 0.1, -1.5e-16, 1e15, 1.7976931348623157e308",
                [("id", "INT"), ("f", "DOUBLE")],
                [(1, 0.1), (2, -1.5e-16), (3, 1e15), (4, 1.7976931348623157e308)]),
    values_case("values/decimal-widths", "DECIMAL(5,2), (10,0), (18,9), (65,30): exact text",
                [("id", "INT"), ("a", "DECIMAL(5,2)"), ("b", "DECIMAL(10,0)"),
                 ("c", "DECIMAL(18,9)"), ("d", "DECIMAL(65,30)")],
                [(1, "-999.99", "1234567890", "-123456789.123456789",
                  "12345678901234567890123456789012345.123456789012345678901234567890"),
                 (2, "0.00", "0", "0.000000001", "-0.000000000000000000000000000001")]),
    values_case("values/year", "YEAR 0000 (not 1900), 1901, 2155",
                [("id", "INT"), ("y", "YEAR")], [(1, 0), (2, 1901), (3, 2155), (4, None)]),
    values_case("values/date-zero", "zero DATE 0000-00-00 (a value, not NULL) and edges",
                [("id", "INT"), ("d", "DATE")],
                [(1, "0000-00-00"), (2, "1000-01-01"), (3, "9999-12-31"), (4, None)]),
    values_case("values/date-partial-zero", "DATE with a zero month or day (2024-00-00)",
                [("id", "INT"), ("d", "DATE")], [(1, "2024-00-00"), (2, "2024-02-00")]),
    values_case("values/datetime-zero", "zero DATETIME 0000-00-00 00:00:00 (not NULL)",
                [("id", "INT"), ("d", "DATETIME")],
                [(1, "0000-00-00 00:00:00"), (2, "9999-12-31 23:59:59")]),
    values_case("values/datetime-fsp", "DATETIME(0..6): as many fraction digits as the fsp",
                [("id", "INT")] + [(f"d{n}", f"DATETIME({n})") for n in range(1, 7)],
                [(1, "2024-02-29 12:34:56.1", "2024-02-29 12:34:56.12",
                  "2024-02-29 12:34:56.123", "2024-02-29 12:34:56.1234",
                  "2024-02-29 12:34:56.12345", "2024-02-29 12:34:56.123456"),
                 (2, "2024-02-29 12:34:56.0", "2024-02-29 12:34:56.00",
                  "2024-02-29 12:34:56.000", "2024-02-29 12:34:56.0000",
                  "2024-02-29 12:34:56.00000", "2024-02-29 12:34:56.000000")]),
    values_case("values/time-negative", "TIME negative and at its limits (-838:59:59)",
                [("id", "INT"), ("t", "TIME")],
                [(1, "-838:59:59"), (2, "838:59:59"), (3, "-00:00:01"), (4, "00:00:00")]),
    values_case("values/time-fractional", "TIME(6) and TIME(3) negative with fractions",
                [("id", "INT"), ("t6", "TIME(6)"), ("t3", "TIME(3)")],
                [(1, "-00:00:00.500000", "-12:30:00.250"),
                 (2, "838:59:58.999999", "-838:59:58.999")]),
    values_case("values/timestamp", "TIMESTAMP(6) in UTC; 0 is 0000-00-00 00:00:00",
                [("id", "INT"), ("ts", "TIMESTAMP(6)")],
                [(1, "2024-02-29 12:34:56.123456"), (2, "0000-00-00 00:00:00.000000"),
                 (3, "2038-01-19 03:14:07.999999")]),
    values_case("values/bit-widths", "BIT(1), BIT(8), BIT(13), BIT(64)",
                [("id", "INT"), ("a", "BIT(1)"), ("b", "BIT(8)"), ("c", "BIT(13)"),
                 ("d", "BIT(64)")],
                [(1, 1, 0xA5, 0x1ABC, 0xFFFFFFFFFFFFFFFF), (2, 0, 0, 0, 0)]),
    values_case("values/enum-1-2-byte", "ENUM of 3 members (1 byte) and of 300 (2 bytes)",
                [("id", "INT"), ("e", "ENUM('a','b','c')"),
                 ("f", "ENUM(" + ",".join(f"'m{i}'" for i in range(300)) + ")")],
                [(1, "b", "m299"), (2, "", "m0")]),
    values_case("values/set-1-2-8-byte", "SET of 3 (1 byte), 12 (2 bytes) and 64 members",
                [("id", "INT"), ("s", "SET('a','b','c')"),
                 ("m", "SET(" + ",".join(f"'x{i}'" for i in range(12)) + ")"),
                 ("w", "SET(" + ",".join(f"'w{i}'" for i in range(64)) + ")")],
                [(1, "a,c", "x0,x11", "w0,w63"), (2, "", "", "")]),
    values_case("values/charset-latin1", "latin1 text (café) decoded as latin1",
                [("id", "INT"), ("s", "VARCHAR(10) CHARACTER SET latin1")], [(1, "café")]),
    values_case("values/charset-ucs2", "ucs2 text decoded as ucs2 (not raw bytes)",
                [("id", "INT"), ("s", "VARCHAR(10) CHARACTER SET ucs2")], [(1, "héllo")]),
    values_case("values/charset-utf16", "utf16 text (big-endian) with a surrogate pair",
                [("id", "INT"), ("s", "VARCHAR(10) CHARACTER SET utf16")],
                [(1, "héllo\U0001F600")]),
    values_case("values/charset-sjis", "sjis text decoded as Shift-JIS",
                [("id", "INT"), ("s", "VARCHAR(10) CHARACTER SET sjis")], [(1, "日本語")]),
    values_case("values/charset-utf8mb4", "utf8mb4 text with a 4-byte character",
                [("id", "INT"), ("s", "VARCHAR(10)"), ("t", "TEXT")],
                [(1, "\U0001F600 ok", "long " * 20)]),
    # the server strips BINARY(n)'s trailing 0x00 (its pad byte) when it writes the row image;
    # SELECT returns the n bytes, so a client pads them back from the column's length
    values_case("values/binary-trailing-zeros", "BINARY(4) padded back to 4 bytes (the row "
                "image holds it without its trailing 0x00)",
                [("id", "INT"), ("b", "BINARY(4)"), ("v", "VARBINARY(4)")],
                [(1, b"a", b"\x00\x00"), (2, b"", b"")],
                expected=[(1, b"a\x00\x00\x00", b"\x00\x00"), (2, b"\x00\x00\x00\x00", b"")]),
    values_case("values/blob", "BLOB, TINYBLOB, MEDIUMBLOB bytes (not text)",
                [("id", "INT"), ("a", "TINYBLOB"), ("b", "BLOB"), ("c", "MEDIUMBLOB")],
                [(1, b"\xff\xfe", b"\x00" * 300, bytes(range(256)))]),
    values_case("values/char-multibyte", "CHAR(10) utf8mb4 over 255 bytes (2-byte length)",
                [("id", "INT"), ("c", "CHAR(100)")], [(1, "é" * 100)]),
    values_case("values/geometry", "GEOMETRY: SRID + WKB bytes as stored",
                [("id", "INT"), ("g", "POINT")],
                [(1, bytes.fromhex("00000000" "0101000000000000000000f03f0000000000000040"))]),
    values_case("values/json-mysql", "MySQL binary JSON: object, array, scalars, nesting",
                [("id", "INT"), ("j", "JSON")],
                [(1, '{"a": 1, "b": [true, false, null], "c": {"d": "x"}}'),
                 (2, '[1, 2.5, "three", -4]'), (3, '"just a string"'), (4, "12345678901")],
                flavors=("mysql",)),
    values_case("values/vector", "MySQL 9 VECTOR(3): float32 values",
                [("id", "INT"), ("v", "VECTOR(3)")],
                [(1, [1.5, -2.25, 3.0e-5]), (2, [0.0, 0.0, 0.0])], flavors=("mysql",)),
    values_case("values/update-images", "UPDATE before and after images",
                [("id", "INT"), ("s", "VARCHAR(10)"), ("n", "INT")],
                [((1, "old", 5), (1, "new", None))], kind="update"),
    values_case("values/delete-image", "DELETE before image", [("id", "INT"), ("s", "CHAR(3)")],
                [(7, "bye")], kind="delete"),
    values_case("values/mariadb-hires-temporal",
                "MariaDB 5.3 hi-res TIME(3)/DATETIME(6)/TIMESTAMP(2) under the old type codes",
                [("id", "INT"), ("t", "TIME(3)"), ("dt", "DATETIME(6)"),
                 ("ts", "TIMESTAMP(2)")],
                [(1, "-12:34:56.789", "2024-02-29 12:34:56.123456", "2024-02-29 12:34:56.12")],
                flavors=("mariadb",), hires=True),
    values_case("values/mariadb-compressed-rows", "MariaDB compressed WRITE_ROWS (zlib)",
                [("id", "INT"), ("s", "VARCHAR(40)")],
                [(i, f"compressed row {i}") for i in range(1, 6)], flavors=("mariadb",),
                compressed=True),
]

for _m in METADATA:
    if _m == FULL:
        continue
    CASES.append(values_case(
        f"values/metadata-{_m}", f"binlog_row_metadata={_m.upper()}: column names from "
        "information_schema", _MIXED, _MIXED_ROWS, metadata=_m,
        expect="column names and signedness taken from information_schema when the "
        "TABLE_MAP does not carry them; every value as the value contract says"))
CASES.append(values_case("values/metadata-full", "binlog_row_metadata=FULL (names, "
                         "signedness, charsets in the TABLE_MAP)", _MIXED, _MIXED_ROWS))
assert MINIMAL and NONE
