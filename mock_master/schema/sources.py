"""Where the mock master's table knowledge comes from, in order of precedence.

1. The scenario: ``schema_ddl`` (a DDL script: CREATE DATABASE / USE / CREATE TABLE ...),
   ``schema_from`` (a live server: its ``SHOW CREATE TABLE`` texts, read through the same DDL
   reader), and the older ``schema`` table of information_schema.COLUMNS rows.
2. The DDL in the served stream: CREATE / ALTER / RENAME / DROP TABLE in QUERY events, applied
   in stream order; the catalog keeps a snapshot after each (by file and event index).
3. TABLE_MAP optional metadata (binlog_row_metadata=FULL): column names, signedness, charsets,
   ENUM/SET members, primary key. Without names (MINIMAL) a table stays unknown: its columns are
   never invented.

Each table keeps where it came from (``Table.origin``); every statement or table that could not
be used leaves one line in ``SchemaKnowledge.notes`` (the run log's notes).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from binlogscope.wire.binlog._collations import COLLATIONS, charset_of
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.header import HEADER_LEN
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.binlog.values import split_string_meta
from mock_master.schema.ddl import SchemaCatalog, catalog_from_ddl
from mock_master.schema.model import Column, Index, Table, mbmaxlen
from mock_master.schema.sql import looks_like_ddl

if TYPE_CHECKING:
    from mock_master.history.sources import EventStream

# sqlglot reports statements it reads as a generic command on its logger: the catalog's notes
# say what matters
logging.getLogger("sqlglot").setLevel(logging.ERROR)

QUERY = int(EventType.QUERY_EVENT)
TABLE_MAP = int(EventType.TABLE_MAP_EVENT)
#: environment variable holding the password of ``schema_from`` (kept off the command line)
SCHEMA_PASSWORD_ENV = "MOCK_MASTER_SCHEMA_PASSWORD"


@dataclass
class SchemaKnowledge:
    """The tables the answers use (current state) plus the stream's DDL history."""

    tables: dict[tuple[str, str], Table] = field(default_factory=dict)
    history: SchemaCatalog = field(default_factory=SchemaCatalog)
    notes: list[str] = field(default_factory=list)
    #: (schema, table) seen in TABLE_MAPs without column names: answered as unknown tables
    unnamed: set[tuple[str, str]] = field(default_factory=set)
    #: the MySQL version when the flavour is MySQL (its information_schema values differ)
    mysql_version: tuple[int, int, int] | None = None

    def find(self, schema: str, table: str) -> Table | None:
        return self.tables.get((schema, table))


def build_knowledge(stream: EventStream, *, ddl: str | None = None,
                    schema_from: str | None = None,
                    columns_rows: dict[str, list[dict[str, Any]]] | None = None,
                    server_collation: str = "utf8mb4_general_ci", flavor: str = "mariadb",
                    version: str = "") -> SchemaKnowledge:
    """All sources merged: the scenario over the stream's DDL over TABLE_MAP metadata."""
    k = SchemaKnowledge()
    if flavor == "mysql":
        nums = [int(x) for x in re.findall(r"\d+", version)[:3]] + [0, 0, 0]
        k.mysql_version = (nums[0], nums[1], nums[2]) if nums[0] else (8, 0, 0)
    tm_tables, unnamed = tables_from_table_maps(stream)
    k.unnamed = unnamed - set(tm_tables)
    k.tables.update(tm_tables)
    k.history = catalog_from_stream(stream, server_collation, mysql=flavor == "mysql")
    k.notes.extend(k.history.notes)
    # a table the stream's DDL created, renamed or dropped is what that DDL left (its older
    # TABLE_MAPs describe a table that no longer exists under that name)
    for _pos, changes in k.history.history:
        for key in changes:
            k.tables.pop(key, None)
    k.tables.update(k.history.tables)
    _old_temporal_from_table_maps(k.history.tables, tm_tables)
    k.unnamed -= set(k.history.tables)
    scenario: dict[tuple[str, str], Table] = {}
    if columns_rows:
        scenario.update(tables_from_columns_rows(columns_rows))
    if schema_from:
        cat = catalog_from_server(schema_from)
        k.notes.extend(cat.notes)
        scenario.update(cat.tables)
    if ddl is not None:
        cat = catalog_from_ddl(ddl, origin="scenario", mysql_collation=server_collation
                               if flavor == "mysql" else None)
        k.notes.extend(cat.notes)
        scenario.update(cat.tables)
    k.tables.update(scenario)
    k.unnamed -= set(scenario)
    for schema, table in sorted(k.unnamed):
        k.notes.append(f"schema: {schema}.{table} has TABLE_MAPs without column names "
                       "(binlog_row_metadata is not FULL) and no DDL: answered as an unknown "
                       "table; give its DDL in the scenario (schema_ddl)")
    return k


def _old_temporal_from_table_maps(ddl: dict[tuple[str, str], Table],
                                  maps: dict[tuple[str, str], Table]) -> None:
    """What the DDL cannot say: a TIME/DATETIME/TIMESTAMP created with
    mysql56_temporal_format=OFF travels as the old type (11/12/7, seen in its TABLE_MAP); the
    server shows it as ``datetime /* mariadb-5.3 */``."""
    for key, t in ddl.items():
        tm = maps.get(key)
        if tm is None or len(tm.columns) != len(t.columns):
            continue
        for c, m in zip(t.columns, tm.columns, strict=True):
            if m.old_temporal and c.data_type == m.data_type and c.raw_type is None:
                c.raw_type = c.column_type() + " /* mariadb-5.3 */"


# ------------------------------------------------------------------------------- the stream
def catalog_from_stream(stream: EventStream, server_collation: str, *, mysql: bool = False
                        ) -> SchemaCatalog:
    """The stream's DDL applied in order (a snapshot per change, keyed (file, event))."""
    from mock_master.history.sources import decode_stored

    cat = SchemaCatalog(server_collation=server_collation, mysql=mysql)
    for fi, f in enumerate(stream.files):
        for ei, ev in f.select((QUERY,)):
            body: Any = decode_stored(ev, f.checksum).body
            if body is None or body.error_code:
                continue
            q = str(body.query)
            cs = body.status_vars.get("Q_CHARSET_CODE")
            if isinstance(cs, tuple) and len(cs) == 3 and cs[2] in COLLATIONS:
                cat.server_collation = COLLATIONS[cs[2]]
            if looks_like_ddl(q):
                cat.apply_sql(q, body.schema or None, origin="stream DDL",
                              where=f" at {f.name} event {ei}")
                cat.snapshot((fi, ei))
    return cat


def tables_from_table_maps(stream: EventStream
                           ) -> tuple[dict[tuple[str, str], Table], set[tuple[str, str]]]:
    """Tables described by their last TABLE_MAP with FULL metadata; the names of the others."""
    from mock_master.history.sources import decode_stored

    out: dict[tuple[str, str], Table] = {}
    unnamed: set[tuple[str, str]] = set()
    seen: set[bytes] = set()
    for f in stream.files:
        for _ei, ev in f.select((TABLE_MAP,)):
            body = ev[HEADER_LEN + 6:len(ev) - 4 if f.checksum else len(ev)]
            if body in seen:
                continue
            seen.add(body)
            d = decode_stored(ev, f.checksum)
            tm = d.body
            if not isinstance(tm, TableMapEvent) or d.error is not None:
                continue
            key = (tm.schema, tm.table)
            if any(c.name is None for c in tm.columns):
                unnamed.add(key)
                continue
            t = Table(tm.schema, tm.table, origin="TABLE_MAP")
            t.columns = [column_from_table_map(c) for c in tm.columns]
            pk = tm.table_map.primary_key if tm.table_map is not None else []
            if pk:
                names = [tm.columns[i].name or "" for i in pk if i < len(tm.columns)]
                t.indexes.append(Index("PRIMARY", names, unique=True, primary=True))
                for c in t.columns:
                    if c.name in names:
                        c.nullable = False
            cs = [c.charset for c in t.columns if c.collation]
            if cs:
                t.collation = next(c.collation for c in t.columns if c.collation) or t.collation
            out[key] = t
    return out, unnamed


_INT_CODES: dict[int, str] = {
    T.MYSQL_TYPE_TINY: "tinyint", T.MYSQL_TYPE_SHORT: "smallint",
    T.MYSQL_TYPE_INT24: "mediumint", T.MYSQL_TYPE_LONG: "int", T.MYSQL_TYPE_LONGLONG: "bigint"}
#: the binary collation (its charset is "binary"): VARBINARY, BINARY, BLOB
_BINARY = 63
_LOB_PREFIX = {1: "tiny", 2: "", 3: "medium", 4: "long"}


def column_from_table_map(c: ColumnInfo) -> Column:
    """A column from a TABLE_MAP with optional metadata (what the binlog says; display widths,
    defaults and comments are not in it: the server's defaults are shown)."""
    t = c.real_type if c.real_type is not None else c.type
    coll = COLLATIONS.get(c.charset) if c.charset is not None else None
    charset = charset_of(c.charset) if c.charset is not None else None
    binary = c.charset == _BINARY
    col = Column(c.name or "", "", unsigned=c.unsigned, nullable=c.nullable,
                 old_temporal=t in (T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIME,
                                    T.MYSQL_TYPE_DATETIME))
    if t in _INT_CODES:
        col.data_type = _INT_CODES[t]
    elif t == T.MYSQL_TYPE_YEAR:
        col.data_type = "year"
    elif t == T.MYSQL_TYPE_NEWDECIMAL:
        col.data_type, col.length, col.scale = "decimal", c.meta >> 8, c.meta & 0xFF
    elif t in (T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE):
        col.data_type = "float" if t == T.MYSQL_TYPE_FLOAT else "double"
    elif t == T.MYSQL_TYPE_BIT:
        col.data_type, col.length = "bit", (c.meta >> 8) * 8 + (c.meta & 0xFF)
    elif t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        col.data_type = "varbinary" if binary else "varchar"
        col.length = c.meta if binary else c.meta // mbmaxlen(charset)
    elif t in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        col.data_type = "enum" if t == T.MYSQL_TYPE_ENUM else "set"
        col.members = list((c.enum_values if t == T.MYSQL_TYPE_ENUM else c.set_values) or [])
    elif t == T.MYSQL_TYPE_STRING:
        _real, length = split_string_meta(c.meta)
        col.data_type = "binary" if binary else "char"
        col.length = length if binary else length // mbmaxlen(charset)
    elif t == T.MYSQL_TYPE_BLOB:
        col.data_type = _LOB_PREFIX.get(c.meta, "long") + ("blob" if binary else "text")
    elif t == T.MYSQL_TYPE_JSON:
        col.data_type, charset, coll = "json", None, None
    elif t in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        col.data_type = "date"
    elif t in (T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_DATETIME2):
        col.data_type, col.fsp = "datetime", c.meta if t == T.MYSQL_TYPE_DATETIME2 else c.hires_dec
    elif t in (T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIMESTAMP2):
        col.data_type = "timestamp"
        col.fsp = c.meta if t == T.MYSQL_TYPE_TIMESTAMP2 else c.hires_dec
    elif t in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_TIME2):
        col.data_type, col.fsp = "time", c.meta if t == T.MYSQL_TYPE_TIME2 else c.hires_dec
    elif t == T.MYSQL_TYPE_GEOMETRY:
        col.data_type = "geometry"
    else:
        col.data_type = f"type {t}"
    if not binary and col.data_type in ("char", "varchar", "enum", "set", "tinytext", "text",
                                         "mediumtext", "longtext"):
        col.charset, col.collation = charset, coll
    return col


# ------------------------------------------------------------------------------- the scenario
def tables_from_columns_rows(rows: dict[str, list[dict[str, Any]]]
                             ) -> dict[tuple[str, str], Table]:
    """The scenario's ``schema`` table ("db.table" -> information_schema.COLUMNS rows)."""
    out: dict[tuple[str, str], Table] = {}
    for key, cols in rows.items():
        schema, _, name = key.partition(".")
        t = Table(schema, name, origin="scenario")
        pk: list[str] = []
        for r in cols:
            u = {k.upper(): v for k, v in r.items()}
            dtype = str(u.get("DATA_TYPE", "varchar")).lower()
            ctype = str(u.get("COLUMN_TYPE", dtype))
            c = Column(str(u["COLUMN_NAME"]), dtype, raw_type=ctype,
                       unsigned="unsigned" in ctype.lower(),
                       charset=u.get("CHARACTER_SET_NAME"), collation=u.get("COLLATION_NAME"),
                       nullable=str(u.get("IS_NULLABLE", "YES")).upper() == "YES",
                       default=u.get("COLUMN_DEFAULT"), has_default="COLUMN_DEFAULT" in u,
                       extra=str(u.get("EXTRA", "")), comment=str(u.get("COLUMN_COMMENT", "")))
            if u.get("CHARACTER_MAXIMUM_LENGTH") is not None:
                c.length = int(u["CHARACTER_MAXIMUM_LENGTH"])
            if str(u.get("COLUMN_KEY", "")).upper() == "PRI":
                pk.append(c.name)
            t.columns.append(c)
        if pk:
            t.indexes.append(Index("PRIMARY", pk, unique=True, primary=True))
        out[(schema, name)] = t
    return out


def catalog_from_server(url: str) -> SchemaCatalog:
    """A live server's tables: ``mysql://user[:password]@host[:port][/db1,db2]`` (the password
    better in ``$MOCK_MASTER_SCHEMA_PASSWORD``). Every base table outside the system schemas
    (or in the listed ones) through its ``SHOW CREATE TABLE`` text."""
    import pymysql

    u = urlparse(url)
    if u.scheme not in ("mysql", "mariadb") or not u.hostname:
        raise ValueError(f"--schema-from {url.split('@')[-1]!r}: expected "
                         "mysql://user@host[:port][/db,...]")
    password = os.environ.get(SCHEMA_PASSWORD_ENV, unquote(u.password or ""))
    wanted = [d for d in u.path.strip("/").split(",") if d]
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=unquote(u.username or ""),
                           password=password, charset="utf8mb4")
    cat = SchemaCatalog()
    try:
        cur = conn.cursor()
        cur.execute("SELECT @@collation_server")
        cat.server_collation = str(cur.fetchone()[0])
        cur.execute("SELECT SCHEMA_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA")
        system = {"mysql", "information_schema", "performance_schema", "sys"}
        for name, coll in cur.fetchall():
            if (wanted and name in wanted) or (not wanted and name not in system):
                cat.databases[str(name)] = str(coll)
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                    "WHERE TABLE_TYPE = 'BASE TABLE'")
        for schema, table in sorted(cur.fetchall()):
            if schema not in cat.databases:
                continue
            q = "`" + str(schema).replace("`", "``") + "`.`" + str(table).replace("`", "``") + "`"
            cur.execute(f"SHOW CREATE TABLE {q}")
            ddl = str(cur.fetchone()[1])
            cat.apply_sql(ddl, str(schema), origin="server",
                          where=f" (SHOW CREATE TABLE {schema}.{table})")
    finally:
        conn.close()
    return cat
