"""The column definitions MySQL 8 sends where they differ from MariaDB's (the mock master's
MySQL flavour).

Where each fact comes from ("capture": a real MySQL server's answer in the fixture captures,
/work/shared/fixtures, compared packet by packet in tests/mock_master/test_mm_mysql_captures.py;
"source": read in mysql-server's source, not checked against a server):

- String items (``Item_empty_string``, functions, system variables) carry decimals 31
  (NOT_FIXED_DEC; MariaDB's is 39). Capture: 8.0.21-9.0 ``@@version_comment``,
  ``DATABASE()``, ``USER()``, ``version()``, SHOW WARNINGS.
- ``SELECT @@var`` of a string variable: VAR_STRING, flags 0, length ``21845 x mbmaxlen`` of the
  result charset (65535 at utf8mb3, 87380 at utf8mb4) from 8.0.26 on; 8.0.21 still sent
  ``len(value) x mbmaxlen``. Captures: 8.0.21, 8.0.26, 8.0.28, 8.0.29, 8.0.32. Versions 8.0.22-25
  are not captured; the length is taken as the newer form from 8.0.22 on.
- ``DATABASE()``: 34 characters, nullable; ``USER()`` (and the other Item_func_user): 288
  characters (USERNAME_LENGTH 32 + 1 + HOSTNAME_LENGTH 255), nullable; ``VERSION()``: its length,
  NOT NULL. Captures: 8.0.26, 8.0.32, 9.0.0.
- ``NOW()``: DATETIME, binary, length 19, BINARY|NOT_NULL, decimals 0. Capture: 8.0.28, 8.0.29.
- SHOW DATABASES / SHOW [FULL] TABLES / SHOW [FULL] COLUMNS / DESCRIBE are queries over a
  derived table named after the information_schema view (sql/dd/info_schema/show.cc): the
  ``table`` is the view's name, ``org_name`` the derived column's name, ``org_table`` the data
  dictionary table for plain columns (``schemata``, ``tables``, ``columns``) and '' for
  expressions, ``schema`` '' (8.0.21 sent ``mysql``, the dictionary's schema). Captures: 8.0.21,
  8.0.26, 8.0.32, 9.0.0 (SHOW DATABASES, SHOW TABLES, DESC).
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

from binlogscope.wire.results import ColumnDefinition41
from mock_master.answers.base import AnswerHost, QueryContext

T_LONG, T_DATETIME, T_BLOB, T_VAR_STRING, T_STRING = 3, 12, 252, 253, 254
NN, BLOB_F, UNS, BIN, ENUM_F, NO_DEF = 0x1, 0x10, 0x20, 0x80, 0x100, 0x1000
#: NOT_FIXED_DEC of MySQL
DEC = 31
#: charset id -> mbmaxlen (the charsets a connection uses)
_MB = {8: 1, 11: 1, 33: 3, 83: 3, 192: 3, 45: 4, 46: 4, 224: 4, 255: 4, 63: 1}


def mbmax(cs: int) -> int:
    return _MB.get(cs, 4)


def string_item(name: str, chars: int, cs: int, *, flags: int = 0) -> ColumnDefinition41:
    """A string expression's column (no table), as MySQL sends it."""
    return ColumnDefinition41(name, T_VAR_STRING, "", "", "", "", "def", cs, chars * mbmax(cs),
                              flags, DEC)


def sysvar_string(name: str, value: str, cs: int, version: tuple[int, int, int]
                  ) -> ColumnDefinition41:
    chars = 21845 if version >= (8, 0, 22) else len(value)
    return string_item(name, chars, cs)


def now_col(name: str) -> ColumnDefinition41:
    return ColumnDefinition41(name, T_DATETIME, "", "", "", "", "def", 63, 19, BIN | NN, 0)


def mysql_decimals(c: ColumnDefinition41) -> ColumnDefinition41:
    """MariaDB's NOT_FIXED_DEC (39) on a result column is MySQL's 31."""
    return dataclasses.replace(c, decimals=DEC) if c.decimals == 39 else c


_VAR = re.compile(r"^@@(?:(global|session|local)\.)?([A-Za-z_][A-Za-z0-9_]*)$", re.IGNORECASE)


def mysql_eval(a: AnswerHost, e: str, ctx: QueryContext
               ) -> tuple[Any, ColumnDefinition41] | None:
    """The expressions whose MySQL column differs from MariaDB's (None: answered as
    MariaDB's). Facts: the module doc."""
    cs = ctx.charset
    m = _VAR.match(e)
    if m:
        var = a.variable(m.group(2), ctx, m.group(1))
        if var is None or var.kind != "str":
            return None
        val = var.select()
        return val, sysvar_string(e, "" if val is None else str(val), cs, a.version_tuple())
    up = e.upper().replace(" ", "")
    if up == "VERSION()":
        v = str(a.variables["version"].resolved())
        return v, string_item(e, len(v), cs, flags=NN)
    if up in ("DATABASE()", "SCHEMA()"):
        return ctx.database, string_item(e, 34, cs)
    if up in ("USER()", "CURRENT_USER()", "SESSION_USER()", "SYSTEM_USER()", "CURRENT_USER"):
        return f"{ctx.user}@{ctx.host}", string_item(e, 288, cs)
    if up in ("NOW()", "CURRENT_TIMESTAMP()", "CURRENT_TIMESTAMP", "LOCALTIME()",
              "SYSDATE()"):
        return time.strftime("%Y-%m-%d %H:%M:%S"), now_col(e)
    return None


def _derived_schema(version: tuple[int, int, int]) -> str:
    return "" if version >= (8, 0, 22) else "mysql"


def show_col(label: str, org_name: str, view: str, dd_table: str, kind: int, chars: int,
             flags: int, cs: int, version: tuple[int, int, int]) -> ColumnDefinition41:
    """A column of a SHOW statement's derived table (see the module doc)."""
    length = chars * mbmax(cs) if kind != T_LONG else chars
    return ColumnDefinition41(label, kind, _derived_schema(version), view, dd_table, org_name,
                              "def", cs if kind != T_LONG else 63, length, flags, 0)


#: SHOW [FULL] COLUMNS / DESCRIBE: (label, type, chars, flags, plain dictionary column?).
#: Field..Extra: capture (8.0.26 DESC). Collation, Privileges, Comment (FULL): source only -
#: COLLATION_NAME and PRIVILEGES are expressions of the COLUMNS view (CASE, a function:
#: VAR_STRING, nullable), COLUMN_COMMENT is IFNULL(col.comment, '') over VARCHAR(2048).
SHOW_COLUMNS = {
    "Field": (T_VAR_STRING, 64, 0, False),
    "Type": (T_BLOB, 16777215, NN | BLOB_F | BIN | NO_DEF, True),
    "Collation": (T_VAR_STRING, 64, 0, False),
    "Null": (T_VAR_STRING, 3, NN, False),
    "Key": (T_STRING, 3, NN | BIN | ENUM_F | NO_DEF, True),
    "Default": (T_BLOB, 65535, BLOB_F | BIN, True),
    "Extra": (T_VAR_STRING, 256, 0, False),
    "Privileges": (T_VAR_STRING, 154, 0, False),
    "Comment": (T_VAR_STRING, 2048, NN, False),
}


def show_columns_cols(names: list[str], cs: int, version: tuple[int, int, int]
                      ) -> list[ColumnDefinition41]:
    out = []
    for label in names:
        kind, chars, flags, plain = SHOW_COLUMNS[label]
        out.append(show_col(label, label, "COLUMNS", "columns" if plain else "", kind, chars,
                            flags, cs, version))
    return out


def show_databases_col(label: str, cs: int, version: tuple[int, int, int]
                       ) -> ColumnDefinition41:
    return show_col(label, "Database", "SCHEMATA", "schemata", T_VAR_STRING, 64,
                    NN | BIN | NO_DEF, cs, version)


def show_tables_cols(label: str, org_name: str, full: bool, cs: int,
                     version: tuple[int, int, int]) -> list[ColumnDefinition41]:
    """Tables_in_db: capture; Table_type (FULL): the TABLES view's TABLE_TYPE, an expression
    (source only)."""
    out = [show_col(label, org_name, "TABLES", "tables", T_VAR_STRING, 64, NN | BIN | NO_DEF,
                    cs, version)]
    if full:
        out.append(show_col("Table_type", "Table_type", "TABLES", "", T_VAR_STRING, 11, NN, cs,
                            version))
    return out


# ------------------------------------------------------------------------------- information_schema
#: View columns whose MySQL 8 definition is known: (dictionary table or '' for an expression,
#: type, characters, flags). COLUMNS' COLUMN_NAME..EXTRA: capture (their types reach DESC
#: unchanged). *_SCHEMA/*_NAME/CATALOG: the same ``<dd>.name`` + collation form as SHOW
#: DATABASES' and SHOW TABLES' columns (capture) in the view definitions
#: (sql/dd/impl/system_views/*.cc); the other views' ``<x>.name COLLATE utf8mb3_tolower_ci``
#: and ``IF(..., 'YES', ...)`` columns take the form of COLUMNS' COLUMN_NAME and IS_NULLABLE.
#: ORDINAL_POSITION, SEQ_IN_INDEX, DATETIME_PRECISION, SRS_ID: plain INT UNSIGNED dictionary
#: columns (source). Any other column: MariaDB's type and length, as an expression (source
#: only: not checked).
_NAME = (T_VAR_STRING, 64, NN | BIN | NO_DEF)
_LOWER = ("", T_VAR_STRING, 64, 0)  # <x>.name COLLATE utf8mb3_tolower_ci
_YES = ("", T_VAR_STRING, 3, NN)  # IF(..., 'YES', 'NO'|'')
MYSQL_IS: dict[str, dict[str, tuple[str, int, int, int]]] = {
    "COLUMNS": {
        "TABLE_CATALOG": ("catalogs", *_NAME), "TABLE_SCHEMA": ("schemata", *_NAME),
        "TABLE_NAME": ("tables", *_NAME), "COLUMN_NAME": ("", T_VAR_STRING, 64, 0),
        "ORDINAL_POSITION": ("columns", T_LONG, 10, NN | UNS | NO_DEF),
        "COLUMN_DEFAULT": ("columns", T_BLOB, 65535, BLOB_F | BIN),
        "IS_NULLABLE": ("", T_VAR_STRING, 3, NN),
        "COLUMN_TYPE": ("columns", T_BLOB, 16777215, NN | BLOB_F | BIN | NO_DEF),
        "COLUMN_KEY": ("columns", T_STRING, 3, NN | BIN | ENUM_F | NO_DEF),
        "EXTRA": ("", T_VAR_STRING, 256, 0),
        "DATETIME_PRECISION": ("columns", T_LONG, 10, UNS),
        "SRS_ID": ("columns", T_LONG, 10, UNS),
    },
    # TABLE_TYPE, ROW_FORMAT, DEFAULT_ENCRYPTION: dictionary ENUMs, as COLUMN_KEY
    "TABLES": {"TABLE_CATALOG": ("catalogs", *_NAME), "TABLE_SCHEMA": ("schemata", *_NAME),
               "TABLE_NAME": ("tables", *_NAME),
               "TABLE_TYPE": ("tables", T_STRING, 11, NN | BIN | ENUM_F | NO_DEF),
               "ROW_FORMAT": ("tables", T_STRING, 10, BIN | ENUM_F)},
    "SCHEMATA": {"CATALOG_NAME": ("catalogs", *_NAME), "SCHEMA_NAME": ("schemata", *_NAME),
                 "DEFAULT_ENCRYPTION": ("schemata", T_STRING, 3,
                                        NN | BIN | ENUM_F | NO_DEF)},
    "STATISTICS": {"TABLE_CATALOG": ("catalogs", *_NAME), "TABLE_SCHEMA": ("schemata", *_NAME),
                   "TABLE_NAME": ("tables", *_NAME), "INDEX_SCHEMA": ("schemata", *_NAME),
                   "INDEX_NAME": _LOWER, "COLUMN_NAME": _LOWER, "NULLABLE": _YES,
                   "IS_VISIBLE": _YES,
                   "SEQ_IN_INDEX": ("index_column_usage", T_LONG, 10, NN | UNS | NO_DEF)},
    "KEY_COLUMN_USAGE": {"CONSTRAINT_CATALOG": ("catalogs", *_NAME),
                         "CONSTRAINT_SCHEMA": ("schemata", *_NAME),
                         "TABLE_CATALOG": ("catalogs", *_NAME),
                         "TABLE_SCHEMA": ("schemata", *_NAME),
                         "TABLE_NAME": ("tables", *_NAME), "COLUMN_NAME": _LOWER},
}


def is_view_col(view: str, column: str, fallback: ColumnDefinition41, *, label: str | None,
                table_label: str | None, cs: int) -> ColumnDefinition41:
    """A column of a SELECT over an information_schema view (MySQL 8: the views are views -
    the label is the view's column name, upper case, unless aliased; the table is the alias or
    the view's name; schema information_schema; org_name the view column; org_table the
    dictionary table of a plain column, '' for an expression). Source (sql/table.cc
    create_view_field, sql/item.cc Item_ref::make_field) and the derived-table captures; the
    names are not checked against a server (none here), the types as MYSQL_IS says."""
    known = MYSQL_IS.get(view, {}).get(column)
    if known is not None:
        dd_table, kind, chars, flags = known
        binary = kind == T_LONG
        return ColumnDefinition41(label or column, kind, "information_schema",
                                  table_label or view, dd_table, column, "def",
                                  63 if binary else cs, chars if binary else chars * mbmax(cs),
                                  flags, 0)
    return dataclasses.replace(fallback, name=label or column, schema="information_schema",
                               table=table_label or view, org_table="", org_name=column,
                               flags=fallback.flags & ~NO_DEF)


def show_variables_cols(global_: bool, cs: int, version: tuple[int, int, int]
                        ) -> list[ColumnDefinition41]:
    """SHOW [GLOBAL] VARIABLES is ``SELECT * FROM (SELECT VARIABLE_NAME AS Variable_name,
    VARIABLE_VALUE AS Value FROM performance_schema.session_variables) session_variables``
    (``global_variables`` for GLOBAL; sql/sql_show_status.cc build_query), over the PFS table
    ``VARIABLE_NAME varchar(64) NOT NULL, VARIABLE_VALUE varchar(1024)`` (utf8mb4). Source only,
    with the derived-table metadata the captures show for the SHOW statements over the data
    dictionary (8.0.21 named the base table's schema, later versions '')."""
    table = "global_variables" if global_ else "session_variables"
    schema = "" if version >= (8, 0, 22) else "performance_schema"
    mb = mbmax(cs)
    return [ColumnDefinition41("Variable_name", T_VAR_STRING, schema, table, table,
                               "Variable_name", "def", cs, 64 * mb, NN | NO_DEF, 0),
            ColumnDefinition41("Value", T_VAR_STRING, schema, table, table, "Value", "def", cs,
                               1024 * mb, 0, 0)]


def show_status_col(fallback: ColumnDefinition41, view_column: str, cs: int,
                    version: tuple[int, int, int]) -> ColumnDefinition41:
    """A SHOW TABLE STATUS column: the derived table ``TABLES`` over the view (show.cc), its
    name the alias; the view column's type where MYSQL_IS knows it (Name: TABLE_NAME, as SHOW
    TABLES' capture), else MariaDB's type as an expression (source only)."""
    col = is_view_col("TABLES", view_column, fallback, label=fallback.name, table_label=None,
                      cs=cs)
    return dataclasses.replace(col, schema=_derived_schema(version), table="TABLES",
                               org_name=fallback.name)
