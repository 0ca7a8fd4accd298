"""MySQL 8's information_schema values for the same tables (the mock master's MySQL flavour).

Where MySQL 8.0 shows a column differently from MariaDB (the values here follow MySQL 8.0's
documented behaviour; there is no MySQL server in this project's tests to compare with, so the
result-set column definitions stay MariaDB's):

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

from mock_master.schema_model import INT_TYPES, Column

#: information_schema.COLUMNS of MySQL 8: MariaDB's list without IS_GENERATED, plus SRS_ID
MYSQL_COLUMNS_EXTRA = ("SRS_ID",)
MYSQL_COLUMNS_ABSENT = ("IS_GENERATED",)


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
