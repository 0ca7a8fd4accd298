"""Answers about tables: information_schema queries, SHOW CREATE TABLE, SHOW [FULL] COLUMNS.

Queries are parsed with sqlglot (see :mod:`mock_master.schema.ddl` for why a real parser): a
``SELECT <columns | *> FROM information_schema.<COLUMNS|TABLES|STATISTICS|KEY_COLUMN_USAGE|
SCHEMATA> [alias] [WHERE ...] [ORDER BY ...] [LIMIT ...]`` is answered from the known tables
(:mod:`mock_master.schema.sources`), with the result-set column definitions MariaDB 10.11 sends
(name as written, ``org_name`` the real column, ``table`` the alias as written, ``org_table`` the
real table, lengths ``chars x mbmaxlen`` of the connection charset). WHERE may combine
``=``/``<>``/``<``/``>``/``IN``/``LIKE``/``IS [NOT] NULL`` with AND/OR/NOT over columns,
literals and ``?`` parameters. Anything else raises :class:`UnsupportedError` (the caller logs it
and answers an error); unknown tables give the server's errors (1109, 1146, 1054).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.results import ColumnDefinition41
from mock_master.schema.model import (
    FULL_PRIVILEGES,
    MBMAXLEN,
    Table,
    collation_charset,
    columns_row,
    create_table_keys,
    key_column_usage_rows,
    statistics_rows,
    tables_row,
)

__all__ = ["statistics_rows"]
from mock_master.answers.mysql_shapes import is_view_col
from mock_master.schema.mysql import (
    MYSQL_IS_ABSENT,
    MYSQL_IS_EXTRA,
    mysql_columns_row,
    mysql_is_row,
)
from mock_master.schema.sources import SchemaKnowledge

T_LONG, T_LONGLONG, T_DATETIME, T_BLOB, T_VAR_STRING = 3, 8, 12, 252, 253
NN, BLOB_F, UNS, BIN, ND = 0x1, 0x10, 0x20, 0x80, 0x1000
_CS_MBMAX = {8: 1, 63: 1, 33: 3, 83: 3, 192: 3, 11: 1, 47: 1, 65: 1}

#: information_schema tables: (column, kind, chars or length, flags); kinds: s VAR_STRING,
#: b BLOB (text), L LONGLONG, l LONG, D DATETIME (MariaDB 10.11, captured from the server)
_S, _B, _L, _I, _D = "s", "b", "L", "l", "D"
IS_TABLES: dict[str, list[tuple[str, str, int, int]]] = {
    "COLUMNS": [
        ("TABLE_CATALOG", _S, 512, NN), ("TABLE_SCHEMA", _S, 64, NN),
        ("TABLE_NAME", _S, 64, NN), ("COLUMN_NAME", _S, 64, NN),
        ("ORDINAL_POSITION", _L, 21, NN | UNS), ("COLUMN_DEFAULT", _B, 196596, 0),
        ("IS_NULLABLE", _S, 3, NN), ("DATA_TYPE", _S, 64, NN),
        ("CHARACTER_MAXIMUM_LENGTH", _L, 21, UNS), ("CHARACTER_OCTET_LENGTH", _L, 21, UNS),
        ("NUMERIC_PRECISION", _L, 21, UNS), ("NUMERIC_SCALE", _L, 21, UNS),
        ("DATETIME_PRECISION", _L, 21, UNS), ("CHARACTER_SET_NAME", _S, 32, 0),
        ("COLLATION_NAME", _S, 64, 0), ("COLUMN_TYPE", _B, 196605, NN),
        ("COLUMN_KEY", _S, 3, NN), ("EXTRA", _S, 80, NN), ("PRIVILEGES", _S, 80, NN),
        ("COLUMN_COMMENT", _S, 1024, NN), ("IS_GENERATED", _S, 6, NN),
        ("GENERATION_EXPRESSION", _B, 196596, 0),
    ],
    "TABLES": [
        ("TABLE_CATALOG", _S, 512, NN), ("TABLE_SCHEMA", _S, 64, NN),
        ("TABLE_NAME", _S, 64, NN), ("TABLE_TYPE", _S, 64, NN), ("ENGINE", _S, 64, 0),
        ("VERSION", _L, 21, UNS), ("ROW_FORMAT", _S, 10, 0), ("TABLE_ROWS", _L, 21, UNS),
        ("AVG_ROW_LENGTH", _L, 21, UNS), ("DATA_LENGTH", _L, 21, UNS),
        ("MAX_DATA_LENGTH", _L, 21, UNS), ("INDEX_LENGTH", _L, 21, UNS),
        ("DATA_FREE", _L, 21, UNS), ("AUTO_INCREMENT", _L, 21, UNS),
        ("CREATE_TIME", _D, 19, BIN), ("UPDATE_TIME", _D, 19, BIN),
        ("CHECK_TIME", _D, 19, BIN), ("TABLE_COLLATION", _S, 64, 0),
        ("CHECKSUM", _L, 21, UNS), ("CREATE_OPTIONS", _S, 2048, 0),
        ("TABLE_COMMENT", _S, 2048, NN), ("MAX_INDEX_LENGTH", _L, 21, UNS),
        ("TEMPORARY", _S, 1, 0),
    ],
    "STATISTICS": [
        ("TABLE_CATALOG", _S, 512, NN), ("TABLE_SCHEMA", _S, 64, NN),
        ("TABLE_NAME", _S, 64, NN), ("NON_UNIQUE", _L, 1, NN), ("INDEX_SCHEMA", _S, 64, NN),
        ("INDEX_NAME", _S, 64, NN), ("SEQ_IN_INDEX", _I, 2, NN | UNS),
        ("COLUMN_NAME", _S, 64, NN), ("COLLATION", _S, 1, 0), ("CARDINALITY", _L, 21, 0),
        ("SUB_PART", _L, 3, 0), ("PACKED", _S, 10, 0), ("NULLABLE", _S, 3, NN),
        ("INDEX_TYPE", _S, 16, NN), ("COMMENT", _S, 16, 0), ("INDEX_COMMENT", _S, 1024, NN),
        ("IGNORED", _S, 3, NN),
    ],
    "KEY_COLUMN_USAGE": [
        ("CONSTRAINT_CATALOG", _S, 512, NN), ("CONSTRAINT_SCHEMA", _S, 64, NN),
        ("CONSTRAINT_NAME", _S, 64, NN), ("TABLE_CATALOG", _S, 512, NN),
        ("TABLE_SCHEMA", _S, 64, NN), ("TABLE_NAME", _S, 64, NN),
        ("COLUMN_NAME", _S, 64, NN), ("ORDINAL_POSITION", _L, 10, NN),
        ("POSITION_IN_UNIQUE_CONSTRAINT", _L, 10, 0), ("REFERENCED_TABLE_SCHEMA", _S, 64, 0),
        ("REFERENCED_TABLE_NAME", _S, 64, 0), ("REFERENCED_COLUMN_NAME", _S, 64, 0),
    ],
    "TABLE_NAMES": [("TABLE_NAME", _S, 73, NN), ("TABLE_TYPE", _S, 64, NN)],  # SHOW TABLES
    "SCHEMATA": [
        ("CATALOG_NAME", _S, 512, NN), ("SCHEMA_NAME", _S, 64, NN),
        ("DEFAULT_CHARACTER_SET_NAME", _S, 32, NN), ("DEFAULT_COLLATION_NAME", _S, 64, NN),
        ("SQL_PATH", _S, 512, 0), ("SCHEMA_COMMENT", _S, 1024, NN),
    ],
}
#: other information_schema tables of MariaDB 10.11 (answered as not supported, not unknown)
KNOWN_ELSEWHERE = {
    "ALL_PLUGINS", "APPLICABLE_ROLES", "CHARACTER_SETS", "CHECK_CONSTRAINTS", "COLLATIONS",
    "COLLATION_CHARACTER_SET_APPLICABILITY", "COLUMN_PRIVILEGES", "ENABLED_ROLES", "ENGINES",
    "EVENTS", "FILES", "GLOBAL_STATUS", "GLOBAL_VARIABLES", "KEYWORDS", "PARAMETERS",
    "PARTITIONS", "PLUGINS", "PROCESSLIST", "PROFILING", "REFERENTIAL_CONSTRAINTS", "ROUTINES",
    "SCHEMA_PRIVILEGES", "SESSION_STATUS", "SESSION_VARIABLES", "SQL_FUNCTIONS",
    "SYSTEM_VARIABLES", "TABLESPACES", "TABLE_CONSTRAINTS", "TABLE_PRIVILEGES", "TRIGGERS",
    "USER_PRIVILEGES", "VIEWS", "USER_STATISTICS", "CLIENT_STATISTICS", "INDEX_STATISTICS",
    "TABLE_STATISTICS", "THREAD_POOL_GROUPS", "OPTIMIZER_TRACE",
}


class UnsupportedError(Exception):
    """A statement shape these answers do not evaluate (the message says what)."""


class QueryError(Exception):
    """The error the server gives for this statement."""

    def __init__(self, code: int, message: str, state: str = "HY000") -> None:
        super().__init__(message)
        self.err = ErrPacket(code, message, state)


def is_col(name: str, kind: str, chars: int, flags: int, cs: int, *, label: str,
           table_label: str, org_table: str) -> ColumnDefinition41:
    """The column definition of one information_schema column as the server sends it."""
    if kind in (_S, _B):
        mb = _CS_MBMAX.get(cs, MBMAXLEN.get(collation_charset_name(cs), 4))
        return ColumnDefinition41(label, T_BLOB if kind == _B else T_VAR_STRING,
                                  "information_schema", table_label, org_table, name, "def", cs,
                                  chars * mb, flags | ND | (BLOB_F if kind == _B else 0), 0)
    type_code = {_L: T_LONGLONG, _I: T_LONG, _D: T_DATETIME}[kind]
    return ColumnDefinition41(label, type_code, "information_schema", table_label, org_table,
                              name, "def", 63, chars, flags | ND, 0)


def collation_charset_name(cs: int) -> str:
    from binlogscope.wire.binlog._collations import charset_of

    return charset_of(cs) or "utf8mb4"


def privileges_for(user: str) -> str:
    """PRIVILEGES of information_schema.COLUMNS: root has them all; the mock master's other
    users are replication/metadata accounts with SELECT (what the test servers grant)."""
    return FULL_PRIVILEGES if user == "root" else "select"


# ------------------------------------------------------------------------------- evaluation
def _value(node: exp.Expression, row: dict[str, Any], params: list[Any], where: str) -> Any:
    if isinstance(node, exp.Paren):
        return _value(node.this, row, params, where)
    if isinstance(node, exp.Column):
        key = node.name.upper()
        if key not in row:
            raise QueryError(1054, f"Unknown column '{node.sql(dialect='mysql')}' in "
                             f"'{where}'", "42S22")
        return row[key]
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.name
        return int(node.name) if re.fullmatch(r"-?\d+", node.name) else float(node.name)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return 1 if node.this else 0
    if isinstance(node, exp.Placeholder):
        if not params:
            raise UnsupportedError("more ? markers than parameters")
        return params.pop(0)
    if isinstance(node, exp.Neg):
        v = _value(node.this, row, params, where)
        return None if v is None else -v
    raise UnsupportedError(f"expression {node.sql(dialect='mysql')!r}")


def _cmp_key(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


def _eq(a: Any, b: Any, exact: bool) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a == b if exact else a.lower() == b.lower()
    if isinstance(a, int | float) and isinstance(b, str):
        try:
            return float(a) == float(b)
        except ValueError:
            return False
    if isinstance(b, int | float) and isinstance(a, str):
        return _eq(b, a, exact)
    return bool(a == b)


_EXACT = {"TABLE_SCHEMA", "TABLE_NAME", "SCHEMA_NAME", "INDEX_SCHEMA", "CONSTRAINT_SCHEMA"}


def _exact(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and node.name.upper() in _EXACT


def truth(node: exp.Expression, row: dict[str, Any], params: list[Any]) -> bool | None:
    """SQL truth of a WHERE condition on one row (None: unknown)."""
    if isinstance(node, exp.Paren):
        return truth(node.this, row, params)
    if isinstance(node, exp.And):
        a, b = truth(node.this, row, params), truth(node.expression, row, params)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if isinstance(node, exp.Or):
        a, b = truth(node.this, row, params), truth(node.expression, row, params)
        if a or b:
            return True
        return None if a is None or b is None else False
    if isinstance(node, exp.Not):
        v = truth(node.this, row, params)
        return None if v is None else not v
    if isinstance(node, exp.Is):
        v = _value(node.this, row, params, "WHERE")
        return v is None if isinstance(node.expression, exp.Null) else bool(v)
    if isinstance(node, exp.In):
        v = _value(node.this, row, params, "WHERE")
        if node.args.get("query") is not None:
            raise UnsupportedError("IN (SELECT ...)")
        if v is None:
            return None
        exact = _exact(node.this)
        return any(_eq(v, _value(e, row, params, "WHERE"), exact) for e in node.expressions)
    if isinstance(node, exp.Like):
        v = _value(node.this, row, params, "WHERE")
        pat = _value(node.expression, row, params, "WHERE")
        if v is None or pat is None:
            return None
        rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in str(pat))
        return re.fullmatch(rx, str(v), 0 if _exact(node.this) else re.IGNORECASE) is not None
    ops: dict[type[exp.Expression], Callable[[Any, Any], bool]] = {
        exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b,
        exp.LT: lambda a, b: a < b, exp.LTE: lambda a, b: a <= b,
    }
    if isinstance(node, exp.EQ | exp.NEQ):
        a = _value(node.this, row, params, "WHERE")
        b = _value(node.expression, row, params, "WHERE")
        if a is None or b is None:
            return None
        same = _eq(a, b, _exact(node.this) or _exact(node.expression))
        return same if isinstance(node, exp.EQ) else not same
    for cls, fn in ops.items():
        if isinstance(node, cls):
            a = _value(node.this, row, params, "WHERE")
            b = _value(node.expression, row, params, "WHERE")
            if a is None or b is None:
                return None
            try:
                return fn(_cmp_key(a), _cmp_key(b))
            except TypeError:
                return fn(str(a), str(b))
    raise UnsupportedError(f"condition {node.sql(dialect='mysql')!r}")


def table_spec(org: str, knowledge: SchemaKnowledge) -> list[tuple[str, str, int, int]]:
    """The columns of an information_schema table for the server's flavour."""
    spec = IS_TABLES[org]
    if knowledge.mysql_version is not None:
        spec = [x for x in spec if x[0] not in MYSQL_IS_ABSENT.get(org, ())]
        spec += [(name, kind, n, flags) for name, kind, n, flags, _ in
                 MYSQL_IS_EXTRA.get(org, [])]
    return spec


def is_rows(table: str, knowledge: SchemaKnowledge, user: str) -> list[dict[str, Any]]:
    """Every row of an information_schema table, in the server's natural order."""
    tables = [knowledge.tables[k] for k in sorted(knowledge.tables)]
    out: list[dict[str, Any]] = []
    if table == "COLUMNS":
        priv = privileges_for(user)
        v = knowledge.mysql_version
        for t in tables:
            for i, c in enumerate(t.columns, start=1):
                row = columns_row(t, c, i, priv)
                out.append(row if v is None else mysql_columns_row(row, c, v))
    elif table == "TABLES":
        out = [tables_row(t) for t in tables]
    elif table == "STATISTICS":
        for t in tables:
            out.extend(statistics_rows(t))
    elif table == "KEY_COLUMN_USAGE":
        for t in tables:
            out.extend(key_column_usage_rows(t))
    elif table == "SCHEMATA":
        colls = dict(knowledge.history.databases)
        for t in tables:
            colls.setdefault(t.schema, knowledge.history.server_collation)
        for name, coll in sorted(colls.items()):
            out.append({"CATALOG_NAME": "def", "SCHEMA_NAME": name,
                        "DEFAULT_CHARACTER_SET_NAME": collation_charset(coll),
                        "DEFAULT_COLLATION_NAME": coll, "SQL_PATH": None,
                        "SCHEMA_COMMENT": ""})
    if knowledge.mysql_version is not None and table != "COLUMNS":
        out = [mysql_is_row(table, r) for r in out]
    return out


def select_information_schema(sel: exp.Select, knowledge: SchemaKnowledge, cs: int, user: str,
                              params: list[Any], database: str | None = None
                              ) -> tuple[list[ColumnDefinition41], list[tuple[Any, ...]]]:
    """Evaluate one SELECT over an information_schema table (``database``: the connection's
    current one, for DATABASE() / SCHEMA() in the condition)."""
    where_node = sel.args.get("where")
    if where_node is not None and where_node.find(exp.CurrentSchema) is not None:
        sel = sel.copy()
        sel.set("where", where_node.transform(
            lambda n: (exp.Null() if database is None else exp.Literal.string(database))
            if isinstance(n, exp.CurrentSchema) else n))
    src = sel.args.get("from_") or sel.args.get("from")
    tnode = src.this if src is not None else None
    if not isinstance(tnode, exp.Table) or sel.args.get("joins"):
        raise UnsupportedError("only one information_schema table per SELECT")
    org = tnode.name.upper()
    if org not in IS_TABLES or org == "TABLE_NAMES":  # SHOW TABLES' own, not selectable
        if org in KNOWN_ELSEWHERE:
            raise UnsupportedError(f"information_schema.{org}")
        raise QueryError(1109, f"Unknown table '{tnode.name}' in information_schema", "42S02")
    for k in ("group", "having", "windows"):
        if sel.args.get(k):
            raise UnsupportedError(f"{k.upper()} in an information_schema SELECT")
    spec = table_spec(org, knowledge)
    mysql = knowledge.mysql_version is not None
    by_name = {s[0]: s for s in spec}
    label_table = tnode.alias or tnode.name
    cols: list[ColumnDefinition41] = []
    keys: list[str] = []
    counted = False
    for item in sel.expressions:
        node, alias = (item.this, item.alias) if isinstance(item, exp.Alias) else (item, None)
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star) and \
                not node.args.get("distinct"):
            # COUNT(*): BIGINT NOT NULL, binary, 21 wide, named as written
            cols.append(ColumnDefinition41(alias or item.sql(dialect="mysql"), T_LONGLONG, "",
                                           "", "", "", "def", 63, 21, NN | BIN, 0))
            keys.append("")
            counted = True
            continue
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                          and isinstance(node.this, exp.Star)):
            for s in spec:
                c = is_col(*s, cs, label=s[0], table_label=label_table, org_table=org)
                if mysql:
                    c = is_view_col(org, s[0], c, label=None, table_label=tnode.alias or None,
                                    cs=cs)
                cols.append(c)
                keys.append(s[0])
            continue
        if not isinstance(node, exp.Column):
            raise UnsupportedError(f"select item {item.sql(dialect='mysql')!r}")
        key = node.name.upper()
        if key not in by_name:
            raise QueryError(1054, f"Unknown column '{node.sql(dialect='mysql')}' in "
                             "'SELECT'", "42S22")
        c = is_col(*by_name[key], cs, label=alias or node.name, table_label=label_table,
                   org_table=org)
        if mysql:
            c = is_view_col(org, key, c, label=alias or None, table_label=tnode.alias or None,
                            cs=cs)
        cols.append(c)
        keys.append(key)
    rows = is_rows(org, knowledge, user)
    where = sel.args.get("where")
    if where is not None:
        # the parameters are consumed in text order: projection has none, WHERE first
        kept = []
        for r in rows:
            if truth(where.this, r, list(params)):
                kept.append(r)
        rows = kept
    if counted:  # an aggregate without GROUP BY: one row
        if any(k for k in keys):
            raise UnsupportedError("COUNT(*) with other columns and no GROUP BY")
        return cols, [tuple(len(rows) for _ in keys)]
    order = sel.args.get("order")
    if order is not None:
        for o in reversed(order.expressions):
            node = o.this
            if isinstance(node, exp.Literal) and not node.is_string:
                idx = int(node.name) - 1
                if not 0 <= idx < len(keys):
                    raise QueryError(1054, f"Unknown column '{node.name}' in 'ORDER BY'",
                                     "42S22")
                key = keys[idx]
            elif isinstance(node, exp.Column):
                key = node.name.upper()
                aliases = {c.name.upper(): k for c, k in zip(cols, keys, strict=True)}
                key = aliases.get(key, key)
                if key not in by_name:
                    raise QueryError(1054, f"Unknown column '{node.name}' in 'ORDER BY'",
                                     "42S22")
            else:
                raise UnsupportedError(f"ORDER BY {node.sql(dialect='mysql')!r}")
            rows.sort(key=lambda r, k=key: (r[k] is not None, _cmp_key(r[k])),  # type: ignore[misc]
                      reverse=bool(o.args.get("desc")))
    out = [tuple(r[k] for k in keys) for r in rows]
    if sel.args.get("distinct"):
        out = list(dict.fromkeys(out))
    limit = sel.args.get("limit")
    if limit is not None:
        n = int(limit.expression.name)
        off = sel.args.get("offset")
        start = int(off.expression.name) if off is not None else 0
        out = out[start:start + n]
    return cols, out


# ------------------------------------------------------------------------------- SHOW
def show_create_table(t: Table) -> str:
    """SHOW CREATE TABLE's text as MariaDB 10.11 writes it."""
    lines = []
    for c in t.columns:
        s = f"  `{c.name}` {c.column_type()}"
        if c.collation and c.collation != t.collation:
            s += f" CHARACTER SET {c.charset} COLLATE {c.collation}"
        key = t.key_of(c)
        nullable = c.nullable and key != "PRI"
        if not nullable:
            s += " NOT NULL"
        elif c.data_type == "timestamp":
            s += " NULL"
        default = c.default if c.has_default else ("NULL" if nullable else None)
        if "auto_increment" in c.extra:
            default = None
        if default is not None:
            s += f" DEFAULT {default}"
        if "auto_increment" in c.extra:
            s += " AUTO_INCREMENT"
        m = re.search(r"on update (\S+)", c.extra)
        if m:
            s += f" ON UPDATE {m.group(1)}"
        if c.comment:
            s += " COMMENT '" + c.comment.replace("'", "''") + "'"
        if c.json:
            s += f" CHECK (json_valid(`{c.name}`))"
        lines.append(s)
    lines.extend(create_table_keys(t))
    cs = collation_charset(t.collation)
    tail = f") ENGINE={t.engine}"
    # AUTO_INCREMENT=n is shown only once rows were inserted (the mock master has no rows)
    tail += f" DEFAULT CHARSET={cs} COLLATE={t.collation}"
    if t.row_format:
        tail += f" ROW_FORMAT={t.row_format}"
    if t.comment:
        tail += " COMMENT='" + t.comment.replace("'", "''") + "'"
    return f"CREATE TABLE `{t.name}` (\n" + ",\n".join(lines) + "\n" + tail

