"""MySQL 8's information_schema values for the same tables (the mock master's MySQL flavour).

Where MySQL 8.0 shows a column differently from MariaDB (the values here follow MySQL 8.0's
documented behaviour and source; there is no MySQL server in this project's tests to compare
with; the result-set column definitions are in :mod:`mock_master.answers.mysql_shapes`, SHOW CREATE
TABLE's text is :func:`show_create_table_mysql` below):

- integer display widths are gone from COLUMN_TYPE since 8.0.19 (``int``, ``bigint unsigned``),
  except ``tinyint(1)`` and ZEROFILL columns; ``year`` has none;
- JSON is its own type: DATA_TYPE and COLUMN_TYPE ``json``, no charset;
- COLUMN_DEFAULT is NULL for a column without a default (MariaDB: the text ``NULL``), a string
  default is shown unquoted, ``CURRENT_TIMESTAMP`` in capitals; EXTRA says
  ``DEFAULT_GENERATED`` for an expression default, ``on update CURRENT_TIMESTAMP``;
- there is no IS_GENERATED column; GENERATION_EXPRESSION is ``''`` and SRS_ID follows it.
"""

from __future__ import annotations

import re
from typing import Any

from mock_master.schema.model import (
    INT_TYPES,
    LOB_TYPES,
    Column,
    Table,
    collation_charset,
    create_table_keys,
    default_collation,
)

#: information_schema.COLUMNS of MySQL 8: MariaDB's list without IS_GENERATED, plus SRS_ID
MYSQL_COLUMNS_EXTRA = ("SRS_ID",)
MYSQL_COLUMNS_ABSENT = ("IS_GENERATED",)
#: the other views' columns MariaDB has and MySQL 8 has not, and MySQL's own (name, kind as in
#: info_schema.IS_TABLES, chars, flags) with their value (MySQL 8.0 Reference Manual, the
#: INFORMATION_SCHEMA chapter; sql/dd/impl/system_views/*.cc)
MYSQL_IS_ABSENT: dict[str, tuple[str, ...]] = {
    "COLUMNS": MYSQL_COLUMNS_ABSENT, "TABLES": ("MAX_INDEX_LENGTH", "TEMPORARY"),
    "STATISTICS": ("IGNORED",), "SCHEMATA": ("SCHEMA_COMMENT",),
}
MYSQL_IS_EXTRA: dict[str, list[tuple[str, str, int, int, Any]]] = {
    "COLUMNS": [("SRS_ID", "l", 10, 0x20, None)],
    "STATISTICS": [("IS_VISIBLE", "s", 3, 0x1, "YES"), ("EXPRESSION", "b", 65535, 0, None)],
    "SCHEMATA": [("DEFAULT_ENCRYPTION", "s", 3, 0x1, "NO")],
}


def mysql_is_row(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A MariaDB row of an information_schema table (not COLUMNS) as MySQL 8 has it."""
    out = {k: v for k, v in row.items() if k not in MYSQL_IS_ABSENT.get(table, ())}
    for name, *_, value in MYSQL_IS_EXTRA.get(table, []):
        out[name] = value
    return out


def mysql_column_type(c: Column, version: tuple[int, int, int]) -> str:
    if c.json:
        return "json"
    text = c.column_type()
    if c.data_type in INT_TYPES and version >= (8, 0, 19) and not c.zerofill \
            and text != "tinyint(1)":
        text = re.sub(r"^(\w+)\(\d+\)", r"\1", text)
    if c.data_type == "year":
        text = "year"
    return text


def _default(c: Column) -> tuple[str | None, bool]:
    """(COLUMN_DEFAULT, whether it is an expression default)."""
    if not c.has_default or c.default in (None, "NULL"):
        return None, False
    d = c.default
    if d.startswith("'") and d.endswith("'") and len(d) >= 2:
        return d[1:-1].replace("''", "'"), False
    m = re.fullmatch(r"current_timestamp\((\d*)\)", d)
    if m:
        return "CURRENT_TIMESTAMP" + (f"({m.group(1)})" if m.group(1) else ""), True
    return d, False


def mysql_columns_row(row: dict[str, Any], c: Column, version: tuple[int, int, int]
                      ) -> dict[str, Any]:
    """A MariaDB information_schema.COLUMNS row turned into what MySQL 8 shows."""
    out = {k: v for k, v in row.items() if k not in MYSQL_COLUMNS_ABSENT}
    out["COLUMN_TYPE"] = mysql_column_type(c, version)
    default, expression = _default(c)
    out["COLUMN_DEFAULT"] = default
    extra = re.sub(r"on update current_timestamp\((\d*)\)",
                   lambda m: "on update CURRENT_TIMESTAMP" + (f"({m.group(1)})"
                                                               if m.group(1) else ""),
                   c.extra)
    if expression:
        extra = ("DEFAULT_GENERATED " + extra).strip()
    out["EXTRA"] = extra
    if c.json:
        out.update(DATA_TYPE="json", CHARACTER_SET_NAME=None, COLLATION_NAME=None,
                   CHARACTER_MAXIMUM_LENGTH=None, CHARACTER_OCTET_LENGTH=None)
    out["GENERATION_EXPRESSION"] = c.generation or ""
    out["SRS_ID"] = None
    return out


# ------------------------------------------------------------------------------- SHOW CREATE
def _cs_name(cs: str, version: tuple[int, int, int]) -> str:
    """utf8mb3 was printed under its alias utf8 before 8.0.30."""
    return "utf8" if cs in ("utf8mb3", "utf8") and version < (8, 0, 30) else cs


def _coll_name(coll: str, version: tuple[int, int, int]) -> str:
    return "utf8_" + coll[8:] if coll.startswith("utf8mb3_") and version < (8, 0, 30) else coll


def _primary_collation(coll: str) -> bool:
    """MY_CS_PRIMARY: the charset's default collation (MySQL 8's defaults)."""
    cs = collation_charset(coll)
    if cs == "utf8mb4":
        return coll == "utf8mb4_0900_ai_ci"
    return coll == default_collation(cs)


def _default_clause(c: Column, nullable: bool) -> str | None:
    """print_default_clause: every default quoted except BIT, CURRENT_TIMESTAMP and
    expressions; DEFAULT NULL for a nullable column without one (not TEXT/BLOB)."""
    if "auto_increment" in c.extra or c.generation:
        return None
    if not c.has_default or c.default in (None, "NULL"):
        if nullable and c.data_type not in LOB_TYPES and not c.json:
            return "NULL"
        return None
    d = c.default
    m = re.fullmatch(r"current_timestamp\((\d*)\)", d, re.IGNORECASE)
    if m:
        return "CURRENT_TIMESTAMP" + (f"({m.group(1)})" if m.group(1) else "")
    if d.startswith("'") and d.endswith("'"):
        return d
    if re.fullmatch(r"-?[0-9.]+(e[-+]?\d+)?", d, re.IGNORECASE):
        return d if c.data_type == "bit" else f"'{d}'"
    return f"({d})"


def show_create_table_mysql(t: Table, version: tuple[int, int, int]) -> str:
    """SHOW CREATE TABLE as MySQL 8 writes it (sql/sql_show.cc store_create_info, 8.0/8.4:
    integer types without display width, CHARACTER SET/COLLATE per column only when they
    differ from the table's, DEFAULT NULL for nullable columns, quoted defaults, ON UPDATE
    CURRENT_TIMESTAMP, keys PRIMARY/UNIQUE/others, ENGINE, DEFAULT CHARSET and COLLATE= when
    the collation is not the charset's default or is utf8mb4_0900_ai_ci, ROW_FORMAT only when
    the DDL gave it; AUTO_INCREMENT=n only once rows exist - the mock master has none)."""
    lines = []
    for c in t.columns:
        s = f"  `{c.name}` {mysql_column_type(c, version)}"
        if c.collation and c.data_type in ("char", "varchar", "enum", "set", "tinytext", "text",
                                           "mediumtext", "longtext") and not c.json:
            if collation_charset(c.collation) != collation_charset(t.collation):
                s += f" CHARACTER SET {_cs_name(collation_charset(c.collation), version)}"
            if not _primary_collation(c.collation) or (c.collation != t.collation and \
                    collation_charset(c.collation) == collation_charset(t.collation)):
                s += f" COLLATE {_coll_name(c.collation, version)}"
        if c.generation:
            s += f" GENERATED ALWAYS AS ({c.generation})"
            s += " VIRTUAL" if "VIRTUAL" in c.extra.upper() else " STORED"
        nullable = c.nullable and t.key_of(c) != "PRI"
        if not nullable:
            s += " NOT NULL"
        elif c.data_type == "timestamp":
            s += " NULL"
        d = _default_clause(c, nullable)
        if d is not None:
            s += f" DEFAULT {d}"
        m = re.search(r"on update current_timestamp\((\d*)\)", c.extra, re.IGNORECASE)
        if m:
            s += " ON UPDATE CURRENT_TIMESTAMP" + (f"({m.group(1)})" if m.group(1) else "")
        if "auto_increment" in c.extra:
            s += " AUTO_INCREMENT"
        if c.comment:
            s += " COMMENT '" + c.comment.replace("'", "''") + "'"
        lines.append(s)
    lines.extend(create_table_keys(t))
    tail = f") ENGINE={t.engine}"
    tail += f" DEFAULT CHARSET={_cs_name(collation_charset(t.collation), version)}"
    if not _primary_collation(t.collation) or t.collation == "utf8mb4_0900_ai_ci":
        tail += f" COLLATE={_coll_name(t.collation, version)}"
    if t.row_format:
        tail += f" ROW_FORMAT={t.row_format}"
    if t.comment:
        tail += " COMMENT='" + t.comment.replace("'", "''") + "'"
    return f"CREATE TABLE `{t.name}` (\n" + ",\n".join(lines) + "\n" + tail
