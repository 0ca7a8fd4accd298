"""The SQL side of the DDL reader: sqlglot's MySQL grammar with MariaDB's type names, the
parse with its fallbacks, and how literal parts of a column definition read as the server shows
them (defaults, functions, key parts).

Why a real SQL parser: DDL in the wild has quoted and back-quoted names with spaces and
keywords, comments, ``DEFAULT 'a,b'`` strings holding commas and parentheses, ENUM members with
escaped quotes, table options in any order, and ALTER statements with many actions. Regular
expressions get some of these wrong silently; sqlglot gives a syntax tree or fails loudly.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from mock_master.schema.model import LOB_TYPES, Column, Table, mbmaxlen


class MariaDBDialect(MySQL):
    """sqlglot's MySQL dialect plus the type names only MariaDB has."""

    class Tokenizer(MySQL.Tokenizer):
        KEYWORDS = {  # noqa: RUF012 - sqlglot's extension point is this class attribute
            **MySQL.Tokenizer.KEYWORDS,
            "INET4": TokenType.IPV4, "INET6": TokenType.IPV6, "POINT": TokenType.POINT,
            "LINESTRING": TokenType.LINESTRING, "POLYGON": TokenType.POLYGON,
            "MULTIPOLYGON": TokenType.MULTIPOLYGON,
            "MULTILINESTRING": TokenType.MULTILINESTRING,
            # types sqlglot has no token for, carried by tokens MySQL DDL never uses
            "MULTIPOINT": TokenType.RING, "GEOMETRYCOLLECTION": TokenType.HLLSKETCH,
            "GEOMCOLLECTION": TokenType.HLLSKETCH,
        }


#: sqlglot type name -> (MariaDB DATA_TYPE, unsigned)
SQL_TYPES: dict[str, tuple[str, bool]] = {
    "BOOLEAN": ("tinyint", False), "TINYINT": ("tinyint", False), "UTINYINT": ("tinyint", True),
    "SMALLINT": ("smallint", False), "USMALLINT": ("smallint", True),
    "MEDIUMINT": ("mediumint", False), "UMEDIUMINT": ("mediumint", True),
    "INT": ("int", False), "UINT": ("int", True), "BIGINT": ("bigint", False),
    "UBIGINT": ("bigint", True), "SERIAL": ("bigint", True),
    "DECIMAL": ("decimal", False), "UDECIMAL": ("decimal", True),
    "FLOAT": ("float", False), "UFLOAT": ("float", True),
    "DOUBLE": ("double", False), "UDOUBLE": ("double", True), "BIT": ("bit", False),
    "CHAR": ("char", False), "NCHAR": ("char", False), "VARCHAR": ("varchar", False),
    "NVARCHAR": ("varchar", False), "BINARY": ("binary", False),
    "VARBINARY": ("varbinary", False), "TINYTEXT": ("tinytext", False),
    "TEXT": ("text", False), "MEDIUMTEXT": ("mediumtext", False),
    "LONGTEXT": ("longtext", False), "TINYBLOB": ("tinyblob", False), "BLOB": ("blob", False),
    "MEDIUMBLOB": ("mediumblob", False), "LONGBLOB": ("longblob", False),
    "JSON": ("longtext", False), "ENUM": ("enum", False), "SET": ("set", False),
    "DATE": ("date", False), "DATETIME": ("datetime", False), "DATETIME64": ("datetime", False),
    "TIMESTAMP": ("timestamp", False), "TIMESTAMPTZ": ("timestamp", False),
    "TIMESTAMPLTZ": ("timestamp", False), "TIME": ("time", False), "YEAR": ("year", False),
    "GEOMETRY": ("geometry", False), "POINT": ("point", False),
    "LINESTRING": ("linestring", False), "POLYGON": ("polygon", False),
    "MULTIPOLYGON": ("multipolygon", False), "MULTILINESTRING": ("multilinestring", False),
    "RING": ("multipoint", False), "HLLSKETCH": ("geometrycollection", False),
    "UUID": ("uuid", False), "IPV4": ("inet4", False), "IPV6": ("inet6", False),
    "VECTOR": ("vector", False),
}
NUMERIC_TYPES = ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double")


UNSIGNED_MARK = "\x00unsigned"
CONVERT_RE = re.compile(r"^\s*TABLE\s+(.+?)\s+CONVERT\s+TO\s+(?:CHARACTER\s+SET|CHARSET)\s+"
                         r"'?(\w+)'?(?:\s+COLLATE\s+'?(\w+)'?)?\s*$", re.IGNORECASE | re.DOTALL)
#: MariaDB's own generated-column syntax, written the standard way for the parser
MARIADB_GENERATED = re.compile(r"\s(?:GENERATED\s+ALWAYS\s+)?AS\s*\(", re.IGNORECASE)
PARTITIONS = re.compile(r"\bPARTITION\s+BY\b.*$", re.IGNORECASE | re.DOTALL)


def command_text(stmt: exp.Command) -> str:
    """What follows the first word of a statement sqlglot kept as a generic command."""
    e = stmt.args.get("expression")
    return str(e.this if isinstance(e, exp.Expr) else e or "")


def parse_ddl(sql: str) -> list[Any]:
    """sqlglot's tree of a DDL statement; when the grammar does not take it, once more without
    what the answers never show (PARTITION BY ...) and with MariaDB's ``AS (expr)
    VIRTUAL|PERSISTENT`` generated columns spelt ``GENERATED ALWAYS AS (expr) ...``."""
    try:
        parsed = sqlglot.parse(sql, read=MariaDBDialect)
        if not any(isinstance(p, exp.Command) and p.name.upper() == "CREATE" for p in parsed):
            return list(parsed)
        first_error: SqlglotError | None = None
    except SqlglotError as exc:
        first_error = exc
    again = PARTITIONS.sub("", sql)
    again = MARIADB_GENERATED.sub(" GENERATED ALWAYS AS (", again)
    again = re.sub(r"\)\s+PERSISTENT\b", ") STORED", again, flags=re.IGNORECASE)
    # FLOAT/DOUBLE UNSIGNED (deprecated, still accepted) is not in the grammar: a marker
    again = re.sub(r"\b(FLOAT|DOUBLE|REAL)(\s*\(\s*\d+\s*(?:,\s*\d+\s*)?\))?\s+UNSIGNED\b",
                   rf"\1\2 COMMENT '{UNSIGNED_MARK}'", again, flags=re.IGNORECASE)
    if again == sql and first_error is not None:
        raise first_error
    try:
        return list(sqlglot.parse(again, read=MariaDBDialect))
    except SqlglotError:
        if first_error is not None:
            raise first_error from None
        raise


DDL_RE = re.compile(r"^\s*(?:/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME)\s+(?:OR\s+REPLACE\s+)?"
                     r"(?:TEMPORARY\s+)?(?:ONLINE\s+|IGNORE\s+)?(TABLES?|DATABASE|SCHEMA)\b",
                     re.IGNORECASE | re.DOTALL)


def looks_like_ddl(sql: str) -> bool:
    """Whether a statement is table/database DDL (only those are parsed)."""
    return bool(DDL_RE.match(sql))


def short_sql(sql: str) -> str:
    s = " ".join(sql.split())
    return s if len(s) <= 160 else s[:157] + "..."


def param_int(node: exp.Expression) -> int | None:
    v: Any = node.this if isinstance(node, exp.DataTypeParam) else node
    try:
        return int(v.name if isinstance(v, exp.Expr) else v)
    except (TypeError, ValueError):
        return None


def lob_for_bytes(base: str, n: int) -> str:
    for prefix in ("tiny", "", "medium", "long"):
        if n <= LOB_TYPES[prefix + base]:
            return prefix + base
    return "long" + base


def lob_for(dtype: str, n: int) -> str:
    base = "text" if dtype == "text" else "blob"
    for prefix in ("tiny", "", "medium", "long"):
        if n <= LOB_TYPES[prefix + base] // mbmaxlen("utf8mb4" if base == "text" else None):
            return prefix + base
    return "long" + base


def join_extra(extra: str, word: str) -> str:
    return f"{extra} {word}".strip()


def fn_text(node: exp.Expression) -> str:
    """A function default as the server shows it: ``current_timestamp()``,
    ``current_timestamp(6)``."""
    if isinstance(node, exp.CurrentTimestamp | exp.CurrentDatetime):
        arg = node.this
        return f"current_timestamp({arg.name if arg is not None else ''})"
    if isinstance(node, exp.Anonymous) and node.name.upper() == "NOW":
        return "current_timestamp(" + ",".join(a.sql() for a in node.expressions) + ")"
    return node.sql(dialect=MariaDBDialect).lower()


def default_text(node: exp.Expression, col: Column) -> str | None:
    """COLUMN_DEFAULT: ``'NULL'``; a number as is; a string quoted for string/temporal types
    (``'x'``), as a number for numeric ones; a function lowercased."""
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return "-" + number_text(node.this.name, col)
    if isinstance(node, exp.Literal):
        if col.data_type in NUMERIC_TYPES:
            return number_text(node.name, col)
        if node.is_string:
            return "'" + node.name.replace("'", "''") + "'"
        return number_text(node.name, col) if col.data_type not in (
            "char", "varchar", "enum", "set") else "'" + node.name + "'"
    if isinstance(node, exp.Boolean):
        return "1" if node.this else "0"
    return fn_text(node)


def number_text(text: str, col: Column) -> str:
    if col.data_type == "decimal":
        scale = col.scale if col.scale is not None else 0
        try:
            return f"{float(text):.{scale}f}"
        except ValueError:
            return text
    return text


def key_columns(parts: list[exp.Expression]) -> tuple[list[str], list[int | None]]:
    cols: list[str] = []
    subs: list[int | None] = []
    for p in parts:
        node = p.this if isinstance(p, exp.Ordered) else p
        if isinstance(node, exp.Anonymous | exp.Func) and node.expressions:
            cols.append(node.name)  # col(10): a prefix
            subs.append(param_int(node.expressions[0]))
        else:
            cols.append(node.name)
            subs.append(None)
    return cols, subs


def unique_name(t: Table, name: str) -> str:
    names = {ix.name for ix in t.indexes}
    if name not in names:
        return name
    n = 2
    while f"{name}_{n}" in names:
        n += 1
    return f"{name}_{n}"


def split_commas(text: str) -> list[str]:
    out, cur, q = [], [], None
    for ch in text:
        if q:
            cur.append(ch)
            if ch == q:
                q = None
        elif ch in "`'\"":
            q = ch
            cur.append(ch)
        elif ch == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p for p in out if p.strip()]
