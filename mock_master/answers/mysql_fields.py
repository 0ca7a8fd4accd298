"""A table's own columns as MySQL 8 describes them in a result set - the answer to
COM_FIELD_LIST (the ``mysql`` client's table-name completion), one column definition per
column followed by its default value.

Facts from the fixture captures of real servers (tests/mock_master/test_mm_mysql_captures.py
compares packet by packet): MySQL 8.0.26 (``int unsigned`` auto-increment primary key,
``varchar(20) NOT NULL`` utf8mb3, nullable ``int``), 8.0.32 (``float``) and 9.0.0 (the
``mysql.component`` and ``mysql.db`` system tables: CHAR in ascii and utf8mb3_bin, ENUM,
TEXT, keys), and from MySQL's source (Field::make_send_field, Protocol_classic's
send_field_metadata):

- ``charset`` is the connection's result charset for text columns (63 otherwise) and the
  length is converted to it: ``bytes / mbmaxlen(column) x mbmaxlen(result)``;
- lengths: the integer display widths (4/3, 6/5, 9/8, 11/10, 20), FLOAT 12 and DOUBLE 22 with
  decimals 31, DECIMAL(M,D) ``M + (D > 0) + (signed)``, CHAR/VARCHAR/ENUM/SET characters,
  TEXT/BLOB their maximum bytes per character, temporal ``19 (+ fsp + 1)``;
- flags: NOT_NULL; PRI_KEY for primary key parts; UNIQUE_KEY for a one-column unique key;
  MULTIPLE_KEY for the first part of another key; PART_KEY for any key part; BLOB; UNSIGNED;
  ZEROFILL; BINARY for binary strings, ``_bin`` collations and temporal types; ENUM; SET;
  AUTO_INCREMENT; TIMESTAMP and ON_UPDATE_NOW for TIMESTAMP columns; NO_DEFAULT_VALUE for a
  NOT NULL column without a default (not auto-increment);
- the default value after each definition: its text, NULL for a nullable column without one,
  ``0``/'' (the empty row's value) for a NOT NULL number/string without one.
"""

from __future__ import annotations

import re

from binlogscope.wire.results import ColumnDefinition41, encode_column_definition41
from mock_master.answers.mysql_shapes import mbmax
from mock_master.schema.model import (
    COLLATION_IDS,
    INT_TYPES,
    LOB_TYPES,
    Column,
    Table,
)

NN, PRI, UNI, MUL, BLOB_F, UNS, ZF, BIN = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80
ENUM_F, AI, TS, SET_F, NO_DEF, ON_UPD, PART = 0x100, 0x200, 0x400, 0x800, 0x1000, 0x2000, 0x4000
_TYPES = {"tinyint": 1, "smallint": 2, "int": 3, "float": 4, "double": 5, "timestamp": 7,
          "bigint": 8, "mediumint": 9, "date": 10, "time": 11, "datetime": 12, "year": 13,
          "bit": 16, "json": 245, "decimal": 246, "enum": 254, "set": 254, "char": 254,
          "binary": 254, "varchar": 253, "varbinary": 253, "geometry": 255}
_TEMPORAL = {"timestamp", "datetime", "time", "date", "year"}
_BINARY_STRINGS = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}


def _lenenc(b: bytes | None) -> bytes:
    if b is None:
        return b"\xfb"
    n = len(b)
    if n < 251:
        return bytes([n]) + b
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + b
    return b"\xfd" + n.to_bytes(3, "little") + b


def _key_flags(t: Table, c: Column) -> int:
    name = c.name.lower()
    flags = 0
    for ix in t.indexes:
        cols = [x.lower() for x in ix.columns]
        if name not in cols:
            continue
        flags |= PART
        if ix.primary:
            flags |= PRI
        elif ix.unique and len(cols) == 1:
            flags |= UNI
        elif not ix.unique and cols[0] == name:
            flags |= MUL
    return flags


def _length(c: Column, col_mb: int) -> tuple[int, int]:
    """(display length in the column's own charset, decimals)."""
    t = c.data_type
    if t in INT_TYPES:
        return (c.length if c.length is not None else INT_TYPES[t][0][1 if c.unsigned else 0]), 0
    if t in ("float", "double"):
        if c.scale is not None and c.length is not None:
            return c.length, c.scale
        return (12 if t == "float" else 22), 31
    if t == "decimal":
        m = c.length if c.length is not None else 10
        d = c.scale if c.scale is not None else 0
        return m + (1 if d else 0) + (0 if c.unsigned else 1), d
    if t in ("datetime", "timestamp"):
        return 19 + (c.fsp + 1 if c.fsp else 0), c.fsp
    if t == "time":
        return 10 + (c.fsp + 1 if c.fsp else 0), c.fsp
    if t == "date":
        return 10, 0
    if t == "year":
        return 4, 0
    if t in LOB_TYPES:
        return LOB_TYPES[t] * (col_mb if t not in _BINARY_STRINGS else 1), 0
    if c.json:
        return 4294967295, 0
    n, _octets = c.char_lengths()
    return (n or 0) * col_mb, 0


def _default(c: Column, nullable: bool) -> bytes | None:
    if c.has_default and c.default not in (None, "NULL"):
        d = c.default
        if d.startswith("'") and d.endswith("'") and len(d) >= 2:
            d = d[1:-1].replace("''", "'")
        elif re.fullmatch(r"current_timestamp(\(\d*\))?", d, re.IGNORECASE):
            d = "0000-00-00 00:00:00"
        return d.encode()
    if nullable:
        return None
    if c.data_type in INT_TYPES or c.data_type in ("decimal", "float", "double", "bit", "year"):
        return b"0"
    return b""


def field_definitions(t: Table, result_cs: int, wild: str = "") -> list[bytes]:
    """Each column's definition and default value, as COM_FIELD_LIST sends them (``wild``: a
    LIKE pattern on the column names, as the command's second argument)."""
    out = []
    pat = re.compile("".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
                             for ch in wild), re.IGNORECASE) if wild else None
    for c in t.columns:
        if pat is not None and not pat.fullmatch(c.name):
            continue
        kind = "json" if c.json else c.data_type
        code = _TYPES.get(kind, 252 if kind in LOB_TYPES else 253)
        text = c.collation is not None and kind not in _BINARY_STRINGS and not c.json and \
            kind not in INT_TYPES and kind not in _TEMPORAL and kind not in (
                "decimal", "float", "double", "bit")
        col_mb = mbmax(COLLATION_IDS.get(c.collation or "", 63)) if text else 1
        length, decimals = _length(c, col_mb)
        key = _key_flags(t, c)
        nullable = c.nullable and not key & PRI
        flags = key | (0 if nullable else NN)
        if c.unsigned:
            flags |= UNS
        if c.zerofill:
            flags |= ZF
        if kind in LOB_TYPES or c.json:
            flags |= BLOB_F
        if kind in _BINARY_STRINGS or kind in _TEMPORAL or c.json or (
                text and (c.collation or "").endswith("_bin")):
            flags |= BIN
        if kind == "enum":
            flags |= ENUM_F
        if kind == "set":
            flags |= SET_F
        ai = "auto_increment" in c.extra
        if ai:
            flags |= AI
        if kind == "timestamp":
            flags |= TS
        if "on update" in c.extra.lower():
            flags |= ON_UPD
        if not nullable and not ai and not (c.has_default and c.default not in (None, "NULL")):
            flags |= NO_DEF
        cs = 63
        if text:
            cs = result_cs
            length = length // col_mb * mbmax(result_cs)
        cd = ColumnDefinition41(c.name, code, t.schema, t.name, t.name, c.name, "def", cs,
                                min(length, 0xFFFFFFFF), flags, decimals)
        out.append(encode_column_definition41(cd) + _lenenc(_default(c, nullable)))
    return out

