"""Columns of any type for conformance cases: SQL type text -> the TABLE_MAP column.

:func:`column` turns ``("d", "DATE")`` or ``("e", "ENUM('a','b')")`` into the
:class:`~binlogscope.wire.binlog.context.ColumnInfo` the wire encoders write (type code, metadata,
charset, signedness, member names), so a case declares its table as a server would have it. The
same text is the column's DDL, which the mock master answers information_schema with when a
case's TABLE_MAP carries no column names.

Covered: the integer types, FLOAT, DOUBLE, DECIMAL, YEAR, DATE, TIME/DATETIME/TIMESTAMP with fsp
0-6 (MySQL 5.6+ formats; ``hires=True``: MariaDB 5.3's pre-10.3 formats under the old type codes),
CHAR/VARCHAR/TEXT with a ``CHARACTER SET``, BINARY/VARBINARY/BLOB, ENUM, SET, BIT, JSON,
GEOMETRY and VECTOR (MySQL 9).
"""

from __future__ import annotations

import re

from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T

#: character set -> (its default collation id, bytes per character at most)
CHARSETS: dict[str, tuple[int, int]] = {
    "utf8mb4": (45, 4), "utf8mb3": (33, 3), "utf8": (33, 3), "latin1": (8, 1),
    "ucs2": (35, 2), "utf16": (54, 4), "utf16le": (56, 4), "utf32": (60, 4), "sjis": (13, 2),
    "binary": (63, 1), "ascii": (11, 1), "cp1251": (51, 1), "gbk": (28, 2),
}
_INTS = {"TINYINT": T.MYSQL_TYPE_TINY, "SMALLINT": T.MYSQL_TYPE_SHORT,
         "MEDIUMINT": T.MYSQL_TYPE_INT24, "INT": T.MYSQL_TYPE_LONG, "INTEGER": T.MYSQL_TYPE_LONG,
         "BIGINT": T.MYSQL_TYPE_LONGLONG}
_BLOBS = {"TINYBLOB": 1, "BLOB": 2, "MEDIUMBLOB": 3, "LONGBLOB": 4, "TINYTEXT": 1, "TEXT": 2,
          "MEDIUMTEXT": 3, "LONGTEXT": 4}
_TEMPORAL2 = {"DATETIME": T.MYSQL_TYPE_DATETIME2, "TIMESTAMP": T.MYSQL_TYPE_TIMESTAMP2,
              "TIME": T.MYSQL_TYPE_TIME2}
_HIRES = {"DATETIME": T.MYSQL_TYPE_DATETIME, "TIMESTAMP": T.MYSQL_TYPE_TIMESTAMP,
          "TIME": T.MYSQL_TYPE_TIME}
_GEOMETRY = {"GEOMETRY": 0, "POINT": 1, "LINESTRING": 2, "POLYGON": 3}


def _members(args: str) -> list[str]:
    return [m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", args)]


def column(name: str, sql: str, index: int = 0, *, hires: bool = False) -> ColumnInfo:
    """The TABLE_MAP column of ``sql`` (e.g. ``"VARCHAR(10) CHARACTER SET ucs2"``)."""
    text = sql.strip()
    up = text.upper()
    m = re.match(r"([A-Z]+)\s*(?:\((.*?)\))?(?=\s|$)", up)
    if not m:
        raise ValueError(f"column {name!r}: cannot parse {sql!r}")
    base = m.group(1)
    raw_args = text[m.start(2):m.end(2)] if m.group(2) is not None else ""
    nums = [int(x) for x in re.findall(r"\d+", raw_args)] if base not in ("ENUM", "SET") else []
    cs_m = re.search(r"CHARACTER\s+SET\s+(\w+)|CHARSET\s+(\w+)", up)
    charset = (cs_m.group(1) or cs_m.group(2)).lower() if cs_m else "utf8mb4"
    c = ColumnInfo(index, 0, name=name, nullable="NOT NULL" not in up)
    if base in _INTS:
        c.type, c.unsigned = _INTS[base], "UNSIGNED" in up
    elif base == "FLOAT":
        c.type, c.meta, c.unsigned = T.MYSQL_TYPE_FLOAT, 4, "UNSIGNED" in up
    elif base in ("DOUBLE", "REAL"):
        c.type, c.meta, c.unsigned = T.MYSQL_TYPE_DOUBLE, 8, "UNSIGNED" in up
    elif base in ("DECIMAL", "NUMERIC"):
        p = nums[0] if nums else 10
        s = nums[1] if len(nums) > 1 else 0
        c.type, c.meta, c.unsigned = T.MYSQL_TYPE_NEWDECIMAL, p << 8 | s, "UNSIGNED" in up
    elif base == "YEAR":
        c.type = T.MYSQL_TYPE_YEAR
    elif base == "DATE":
        c.type = T.MYSQL_TYPE_DATE
    elif base in _TEMPORAL2:
        fsp = nums[0] if nums else 0
        if hires:
            c.type, c.hires_dec = _HIRES[base], fsp
        else:
            c.type, c.meta = _TEMPORAL2[base], fsp
    elif base in ("VARCHAR", "VARBINARY"):
        n = nums[0] if nums else 255
        cs = "binary" if base == "VARBINARY" else charset
        c.charset = CHARSETS[cs][0]
        c.type, c.meta = T.MYSQL_TYPE_VARCHAR, n * CHARSETS[cs][1]
    elif base in ("CHAR", "BINARY"):
        n = nums[0] if nums else 1
        cs = "binary" if base == "BINARY" else charset
        c.charset = CHARSETS[cs][0]
        maxb = n * CHARSETS[cs][1]
        c.type, c.real_type = T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_STRING
        c.meta = (254 ^ ((maxb & 0x300) >> 4)) << 8 | (maxb & 0xFF)
    elif base in _BLOBS:
        c.charset = CHARSETS["binary" if "BLOB" in base else charset][0]
        c.type, c.meta = T.MYSQL_TYPE_BLOB, _BLOBS[base]
    elif base in ("ENUM", "SET"):
        members = _members(raw_args)
        c.charset = CHARSETS[charset][0]
        c.type = T.MYSQL_TYPE_STRING
        if base == "ENUM":
            c.real_type, c.enum_values = T.MYSQL_TYPE_ENUM, members
            width = 1 if len(members) < 256 else 2
        else:
            c.real_type, c.set_values = T.MYSQL_TYPE_SET, members
            width = (len(members) + 7) // 8
            width = 8 if width > 4 else width
        c.meta = int(c.real_type) << 8 | width
    elif base == "BIT":
        bits = nums[0] if nums else 1
        c.type, c.meta = T.MYSQL_TYPE_BIT, (bits // 8) << 8 | (bits % 8)
    elif base == "VECTOR":
        c.type, c.meta = T.MYSQL_TYPE_VECTOR, 4
        c.vector_dimensionality = nums[0] if nums else 2048
    elif base == "JSON":
        c.type, c.meta = T.MYSQL_TYPE_JSON, 4
    elif base in _GEOMETRY:
        c.type, c.meta, c.geometry_type = T.MYSQL_TYPE_GEOMETRY, 4, _GEOMETRY[base]
    else:
        raise ValueError(f"column {name!r}: type {sql!r} is not known to the conformance cases")
    return c


def columns(spec: list[tuple[str, str]], *, hires: bool = False) -> list[ColumnInfo]:
    return [column(n, s, i, hires=hires) for i, (n, s) in enumerate(spec)]


def ddl(schema: str, table: str, spec: list[tuple[str, str]]) -> str:
    """The CREATE TABLE of a case's table (the mock master's information_schema answers)."""
    cols = ",\n  ".join(f"`{n}` {s}" for n, s in spec)
    return (f"CREATE DATABASE IF NOT EXISTS `{schema}`;\n"
            f"CREATE TABLE `{schema}`.`{table}` (\n  {cols},\n  PRIMARY KEY (`{spec[0][0]}`)\n);\n")
