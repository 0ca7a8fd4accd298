"""The mock master's table model and the information_schema values the real server derives from it.

A :class:`Table` is what the server knows of a table: its columns (type as MariaDB names it,
length, scale, fractional seconds, unsigned/zerofill, ENUM/SET members, charset and collation,
nullability, default, extra, comment), its indexes and table options. It is built from DDL
(:mod:`mock_master.schema.ddl`), from a live server's information_schema
(:mod:`mock_master.schema.sources`) or from TABLE_MAP optional metadata.

The ``*_row`` functions give the values MariaDB 10.11 shows in ``information_schema.COLUMNS``,
``TABLES``, ``STATISTICS`` and ``KEY_COLUMN_USAGE`` for it (``sql_show.cc``: display widths
``int(11)``/``int(10) unsigned``, NUMERIC_PRECISION 7 for signed MEDIUMINT, JSON as
``longtext``/``utf8mb4_bin``, BLOB/BINARY without charset, COLUMN_DEFAULT ``'NULL'`` for a
nullable column without default, COLUMN_KEY PRI/UNI/MUL by the key flags, ...); the tests
compare every value with a real server holding the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog._collations import COLLATIONS, charset_of

#: charset -> max bytes per character (MariaDB's mbmaxlen)
MBMAXLEN: dict[str, int] = {
    "utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "ucs2": 2,
    "big5": 2, "gbk": 2, "gb2312": 2, "sjis": 2, "cp932": 2, "euckr": 2, "ujis": 3,
    "eucjpms": 3, "gb18030": 4,
}
#: charset -> its default collation (the ones that are not ``<charset>_general_ci``)
DEFAULT_COLLATION: dict[str, str] = {
    "latin1": "latin1_swedish_ci", "binary": "binary", "utf8mb3": "utf8mb3_general_ci",
    "latin2": "latin2_general_ci", "latin5": "latin5_turkish_ci", "latin7": "latin7_general_ci",
    "cp1251": "cp1251_general_ci", "big5": "big5_chinese_ci", "gbk": "gbk_chinese_ci",
    "gb2312": "gb2312_chinese_ci", "sjis": "sjis_japanese_ci", "ujis": "ujis_japanese_ci",
    "euckr": "euckr_korean_ci", "cp932": "cp932_japanese_ci", "tis620": "tis620_thai_ci",
}
COLLATION_IDS: dict[str, int] = {name: i for i, name in sorted(COLLATIONS.items(), reverse=True)}

#: integer types: (display width signed, unsigned), NUMERIC_PRECISION (signed, unsigned)
INT_TYPES: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "tinyint": ((4, 3), (3, 3)), "smallint": ((6, 5), (5, 5)),
    "mediumint": ((9, 8), (7, 8)), "int": ((11, 10), (10, 10)), "bigint": ((20, 20), (19, 20)),
}
#: text/blob types: their maximum byte length
LOB_TYPES: dict[str, int] = {
    "tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295,
    "tinyblob": 255, "blob": 65535, "mediumblob": 16777215, "longblob": 4294967295,
}
TEMPORAL_FSP = ("datetime", "timestamp", "time")
STRING_TYPES = ("char", "varchar", "enum", "set", "tinytext", "text", "mediumtext", "longtext")
BINARY_TYPES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
FULL_PRIVILEGES = "select,insert,update,references"


def normalize_charset(cs: str) -> str:
    cs = cs.lower()
    return "utf8mb3" if cs == "utf8" else cs


def normalize_collation(coll: str) -> str:
    coll = coll.lower()
    return "utf8mb3" + coll[4:] if coll.startswith("utf8_") else coll


def default_collation(charset: str) -> str:
    cs = normalize_charset(charset)
    return DEFAULT_COLLATION.get(cs, f"{cs}_general_ci")


def collation_charset(coll: str) -> str:
    cid = COLLATION_IDS.get(coll)
    if cid is not None:
        return charset_of(cid) or coll.split("_", 1)[0]
    return coll.split("_", 1)[0]


def mbmaxlen(charset: str | None) -> int:
    return MBMAXLEN.get(charset or "", 1)


@dataclass
class Column:
    """One column as the server knows it (values already in the server's spelling)."""

    name: str
    data_type: str  # MariaDB's DATA_TYPE: int, varchar, enum, longtext (JSON), inet4...
    length: int | None = None  # display width / char length / M of DECIMAL, FLOAT(M,D), BIT(M)
    scale: int | None = None  # D of DECIMAL / FLOAT(M,D)
    fsp: int = 0  # fractional seconds of DATETIME/TIMESTAMP/TIME
    unsigned: bool = False
    zerofill: bool = False
    members: list[str] = field(default_factory=list)  # ENUM / SET
    charset: str | None = None
    collation: str | None = None
    nullable: bool = True
    #: COLUMN_DEFAULT as information_schema shows it (None: no default)
    default: str | None = None
    has_default: bool = False  # a DEFAULT clause was given
    extra: str = ""
    comment: str = ""
    #: the type as written when the DDL reader did not know it (shown as is)
    raw_type: str | None = None
    json: bool = False  # MariaDB's JSON: LONGTEXT utf8mb4_bin CHECK (json_valid(...))
    #: a TIME/DATETIME/TIMESTAMP in the pre-10.0 format (its TABLE_MAP type 11/12/7)
    old_temporal: bool = False
    #: GENERATION_EXPRESSION of a generated column (as the server writes it)
    generation: str | None = None

    def column_type(self) -> str:
        t = self.data_type
        if self.raw_type:
            return self.raw_type
        if t in INT_TYPES:
            width = self.length if self.length is not None else \
                INT_TYPES[t][0][1 if self.unsigned else 0]
            s = f"{t}({width})"
        elif t in ("decimal",):
            s = f"decimal({self.length if self.length is not None else 10},"\
                f"{self.scale if self.scale is not None else 0})"
        elif t in ("float", "double"):
            s = t if self.length is None or self.scale is None \
                else f"{t}({self.length},{self.scale})"
        elif t in ("bit", "char", "varchar", "binary", "varbinary"):
            s = f"{t}({self.length if self.length is not None else 1})"
        elif t in ("enum", "set"):
            s = f"{t}(" + ",".join("'" + m.replace("'", "''") + "'" for m in self.members) + ")"
        elif t in TEMPORAL_FSP:
            s = f"{t}({self.fsp})" if self.fsp else t
        elif t == "year":
            s = "year(4)"
        else:
            s = t
        if self.unsigned and (t in INT_TYPES or t in ("decimal", "float", "double")):
            s += " unsigned"
        if self.zerofill:
            s += " zerofill"
        return s

    def char_lengths(self) -> tuple[int | None, int | None]:
        """CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH."""
        t = self.data_type
        if t in LOB_TYPES:
            return LOB_TYPES[t], LOB_TYPES[t]
        if t in ("char", "varchar", "binary", "varbinary"):
            n = self.length if self.length is not None else 1
        elif t == "enum":
            n = max((len(m) for m in self.members), default=0)
        elif t == "set":
            n = sum(len(m) for m in self.members) + max(len(self.members) - 1, 0)
        else:
            return None, None
        return n, n * mbmaxlen(self.charset)

    def numeric(self) -> tuple[int | None, int | None]:
        """NUMERIC_PRECISION, NUMERIC_SCALE."""
        t = self.data_type
        if t in INT_TYPES:
            return INT_TYPES[t][1][1 if self.unsigned else 0], 0
        if t == "decimal":
            return (self.length if self.length is not None else 10,
                    self.scale if self.scale is not None else 0)
        if t == "float":
            return (self.length, self.scale) if self.scale is not None else (12, None)
        if t == "double":
            return (self.length, self.scale) if self.scale is not None else (22, None)
        if t == "bit":
            return self.length if self.length is not None else 1, None
        return None, None


@dataclass
class Index:
    name: str
    columns: list[str]
    unique: bool = False
    primary: bool = False
    kind: str = "BTREE"  # BTREE, FULLTEXT, SPATIAL, HASH
    comment: str = ""
    #: per column: prefix length (None: whole column)
    sub_parts: list[int | None] = field(default_factory=list)


@dataclass
class Table:
    schema: str
    name: str
    columns: list[Column] = field(default_factory=list)
    indexes: list[Index] = field(default_factory=list)
    engine: str = "InnoDB"
    collation: str = "utf8mb4_general_ci"
    comment: str = ""
    #: ROW_FORMAT given in the DDL (upper case), None: the engine's default
    row_format: str | None = None
    partitioned: bool = False
    #: where the definition came from: "scenario", "server", "stream DDL", "TABLE_MAP"
    origin: str = ""
    #: the CREATE TABLE text this came from (when the origin was DDL)
    ddl: str | None = None

    def column(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        return None

    @property
    def primary_key(self) -> Index | None:
        for ix in self.indexes:
            if ix.primary:
                return ix
        return None

    def _first_unique_not_null(self) -> Index | None:
        """Without a PRIMARY KEY the server takes the first UNIQUE key of NOT NULL columns as
        the primary one (COLUMN_KEY shows PRI)."""
        for ix in self.indexes:
            cols = [self.column(n) for n in ix.columns]
            if ix.unique and cols and all(c is not None and not c.nullable for c in cols):
                return ix
        return None

    def key_of(self, col: Column) -> str:
        """COLUMN_KEY: PRI for primary key parts; UNI for the column of a one-column unique
        key; MUL for the first column of any other key."""
        name = col.name.lower()
        pk = self.primary_key or self._first_unique_not_null()
        if pk is not None and name in (c.lower() for c in pk.columns):
            return "PRI"
        uni = mul = False
        for ix in self.indexes:
            if ix.primary or not ix.columns or ix.columns[0].lower() != name:
                continue
            if ix.unique and len(ix.columns) == 1:
                uni = True
            else:
                mul = True
        return "UNI" if uni else "MUL" if mul else ""


def create_table_keys(t: Table) -> list[str]:
    """The key lines of SHOW CREATE TABLE, as MariaDB and MySQL 8 both write them: the primary
    key first, then unique keys, then the others, each in the order it was created."""
    lines = []
    for ix in sorted(t.indexes, key=lambda i: (not i.primary, not i.unique)):
        parts = ",".join(f"`{n}`" + (f"({p})" if p else "")
                         for n, p in zip(ix.columns, ix.sub_parts or [None] * len(ix.columns),
                                         strict=False))
        if ix.primary:
            lines.append(f"  PRIMARY KEY ({parts})")
        else:
            kind = "UNIQUE KEY" if ix.unique else {"FULLTEXT": "FULLTEXT KEY",
                                                  "SPATIAL": "SPATIAL KEY"}.get(ix.kind, "KEY")
            lines.append(f"  {kind} `{ix.name}` ({parts})")
    return lines


def columns_row(t: Table, c: Column, ordinal: int, privileges: str) -> dict[str, Any]:
    """The information_schema.COLUMNS row of column ``c`` (MariaDB 10.11 values)."""
    max_len, octets = c.char_lengths()
    prec, scale = c.numeric()
    nullable = c.nullable and t.key_of(c) != "PRI"
    default = c.default
    if not c.has_default:
        default = "NULL" if nullable and "auto_increment" not in c.extra else None
    return {
        "TABLE_CATALOG": "def", "TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
        "COLUMN_NAME": c.name, "ORDINAL_POSITION": ordinal, "COLUMN_DEFAULT": default,
        "IS_NULLABLE": "YES" if nullable else "NO", "DATA_TYPE": c.data_type,
        "CHARACTER_MAXIMUM_LENGTH": max_len, "CHARACTER_OCTET_LENGTH": octets,
        "NUMERIC_PRECISION": prec, "NUMERIC_SCALE": scale,
        "DATETIME_PRECISION": c.fsp if c.data_type in TEMPORAL_FSP else None,
        "CHARACTER_SET_NAME": c.charset if c.data_type in STRING_TYPES else None,
        "COLLATION_NAME": c.collation if c.data_type in STRING_TYPES else None,
        "COLUMN_TYPE": c.column_type(), "COLUMN_KEY": t.key_of(c), "EXTRA": c.extra,
        "PRIVILEGES": privileges, "COLUMN_COMMENT": c.comment,
        "IS_GENERATED": "ALWAYS" if "GENERATED" in c.extra else "NEVER",
        "GENERATION_EXPRESSION": c.generation,
    }


def tables_row(t: Table) -> dict[str, Any]:
    """The information_schema.TABLES row. The statistics (rows, lengths, times) are what an
    empty InnoDB table shows: the mock master has no table data."""
    ai = 1 if any("auto_increment" in c.extra for c in t.columns) else None
    return {
        "TABLE_CATALOG": "def", "TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
        "TABLE_TYPE": "BASE TABLE", "ENGINE": t.engine, "VERSION": 10,
        "ROW_FORMAT": row_format(t), "TABLE_ROWS": 0, "AVG_ROW_LENGTH": 0,
        "DATA_LENGTH": 16384, "MAX_DATA_LENGTH": 0, "INDEX_LENGTH": 0, "DATA_FREE": 0,
        "AUTO_INCREMENT": ai, "CREATE_TIME": None, "UPDATE_TIME": None, "CHECK_TIME": None,
        "TABLE_COLLATION": t.collation, "CHECKSUM": None,
        "CREATE_OPTIONS": " ".join(x for x in (
            "partitioned" if t.partitioned else "",
            f"row_format={t.row_format}" if t.row_format else "") if x),
        "TABLE_COMMENT": t.comment, "MAX_INDEX_LENGTH": 0, "TEMPORARY": "N",
    }


def row_format(t: Table) -> str:
    """TABLES.ROW_FORMAT: the DDL's, else the engine's default (MyISAM: Fixed without
    variable-length columns)."""
    if t.row_format:
        return t.row_format.capitalize()
    if t.engine.lower() == "myisam" and not any(
            c.data_type in ("varchar", "varbinary") or c.data_type in LOB_TYPES
            for c in t.columns):
        return "Fixed"
    return "Dynamic"


def statistics_rows(t: Table) -> list[dict[str, Any]]:
    """information_schema.STATISTICS: one row per index column (PRIMARY first, then unique
    keys, then the others, as the server orders its keys)."""
    out = []
    for ix in sorted(t.indexes, key=lambda i: (not i.primary, not i.unique)):
        for seq, name in enumerate(ix.columns, start=1):
            c = t.column(name)
            nullable = c is not None and c.nullable and not ix.primary
            sub = ix.sub_parts[seq - 1] if seq - 1 < len(ix.sub_parts) else None
            out.append({
                "TABLE_CATALOG": "def", "TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
                "NON_UNIQUE": 0 if ix.unique or ix.primary else 1, "INDEX_SCHEMA": t.schema,
                "INDEX_NAME": "PRIMARY" if ix.primary else ix.name, "SEQ_IN_INDEX": seq,
                "COLUMN_NAME": c.name if c is not None else name,
                "COLLATION": None if ix.kind in ("FULLTEXT", "HASH") else "A",
                "CARDINALITY": 0, "SUB_PART": sub, "PACKED": None,
                "NULLABLE": "YES" if nullable else "", "INDEX_TYPE": ix.kind, "COMMENT": "",
                "INDEX_COMMENT": ix.comment, "IGNORED": "NO",
            })
    return out


def key_column_usage_rows(t: Table) -> list[dict[str, Any]]:
    """information_schema.KEY_COLUMN_USAGE: the columns of PRIMARY and UNIQUE keys."""
    out = []
    for ix in sorted(t.indexes, key=lambda i: (not i.primary,)):
        if not (ix.primary or ix.unique):
            continue
        for pos, name in enumerate(ix.columns, start=1):
            c = t.column(name)
            out.append({
                "CONSTRAINT_CATALOG": "def", "CONSTRAINT_SCHEMA": t.schema,
                "CONSTRAINT_NAME": "PRIMARY" if ix.primary else ix.name,
                "TABLE_CATALOG": "def", "TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
                "COLUMN_NAME": c.name if c is not None else name, "ORDINAL_POSITION": pos,
                "POSITION_IN_UNIQUE_CONSTRAINT": None, "REFERENCED_TABLE_SCHEMA": None,
                "REFERENCED_TABLE_NAME": None, "REFERENCED_COLUMN_NAME": None,
            })
    return out
