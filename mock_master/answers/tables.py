"""Answers about tables: information_schema SELECTs, SHOW CREATE TABLE, SHOW [FULL] COLUMNS,
SHOW INDEX, SHOW [FULL] TABLES, SHOW DATABASES, DESCRIBE - for :class:`AnswerHost`.

The statement is parsed with sqlglot; the values come from the schema knowledge
(:mod:`mock_master.schema.sources`) through :mod:`mock_master.answers.info_schema`. An unknown
table or
database gets the server's error (1046, 1049, 1146), a statement form not evaluated here ERR
1105 saying why (and a run-log note).
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.results import ColumnDefinition41
from mock_master.answers.base import (
    MBMAXLEN,
    NO_INDEX_USED,
    NOT_NULL,
    T_VAR_STRING,
    Answer,
    AnswerHost,
    QueryContext,
    like_pattern,
    rows,
    unsupported,
)
from mock_master.answers.info_schema import (
    IS_TABLES,
    QueryError,
    UnsupportedError,
    is_col,
    privileges_for,
    select_information_schema,
    show_create_table,
    statistics_rows,
    table_spec,
    truth,
)
from mock_master.answers.mysql_shapes import (
    show_columns_cols,
    show_databases_col,
    show_status_col,
    show_tables_cols,
)
from mock_master.schema.model import columns_row, tables_row
from mock_master.schema.mysql import (
    mysql_columns_row,
    mysql_is_row,
    show_create_table_mysql,
)
from mock_master.schema.sources import SchemaKnowledge
from mock_master.schema.sql import MariaDBDialect


def about_tables(a: AnswerHost, q: str, ctx: QueryContext) -> Answer:
    """information_schema SELECTs, SHOW CREATE TABLE, SHOW COLUMNS, DESCRIBE."""
    # synonyms sqlglot's grammar does not have: FIELDS = COLUMNS, KEYS/INDEXES = INDEX
    q = re.sub(r"^(\s*SHOW\s+(?:FULL\s+)?)FIELDS\b", r"\1COLUMNS", q, flags=re.IGNORECASE)
    q = re.sub(r"^(\s*SHOW\s+)(?:KEYS|INDEXES)\b", r"\1INDEX", q, flags=re.IGNORECASE)
    try:
        stmt = sqlglot.parse_one(q, read=MariaDBDialect)
    except SqlglotError as exc:
        return unsupported(q, f"the SQL parser cannot read it ({str(exc).splitlines()[0]})")
    k = a.knowledge()
    try:
        if isinstance(stmt, exp.Select):
            return select_from(a, stmt, q, ctx, k)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "CREATE TABLE":
            return show_create(a, stmt, ctx, k)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "COLUMNS":
            t = known_table(a, stmt.args.get("target"), stmt.args.get("db"), ctx, k)
            like = stmt.args.get("like")
            return show_columns(a, t, bool(stmt.args.get("full")),
                                      like.name if like is not None else None, ctx)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "INDEX":
            t = known_table(a, stmt.args.get("target"), stmt.args.get("db"), ctx, k)
            return show_index(a, t, ctx)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "TABLE STATUS":
            return show_table_status(a, stmt, ctx, k)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "TABLES":
            return show_tables(a, stmt, ctx, k)
        if isinstance(stmt, exp.Show) and str(stmt.name).upper() == "DATABASES":
            like = stmt.args.get("like")
            return show_databases(a, like.name if like is not None else None, ctx, k)
        if isinstance(stmt, exp.Describe) and isinstance(stmt.this, exp.Table):
            t = known_table(a, stmt.this.this, stmt.this.args.get("db"), ctx, k)
            return show_columns(a, t, False, None, ctx)
    except QueryError as e:
        if k.mysql_version is not None and e.err.error_code == 1054:
            # MySQL names the clause as thd->where: 'field list', 'where clause', 'order clause'
            # (MariaDB 10.11: 'SELECT', 'WHERE', 'ORDER BY')
            msg = re.sub(r"in '(SELECT|WHERE|ORDER BY)'$", lambda m: "in '" + {
                "SELECT": "field list", "WHERE": "where clause",
                "ORDER BY": "order clause"}[m.group(1)] + "'", e.err.error_message)
            return Answer(err=ErrPacket(1054, msg, e.err.sql_state))
        return Answer(err=e.err)
    except UnsupportedError as e:
        return unsupported(q, str(e))
    return unsupported(q, "statement form not supported")

def select_from(a: AnswerHost, stmt: exp.Select, q: str, ctx: QueryContext, k: SchemaKnowledge
                 ) -> Answer:
    src = stmt.args.get("from_") or stmt.args.get("from")
    t = src.this if src is not None else None
    if isinstance(t, exp.Table) and t.db.lower() == "information_schema":
        cols, out = select_information_schema(stmt, k, ctx.charset, ctx.user, [],
                                                ctx.database)
        return Answer(cols, rows(*out), extra_status=NO_INDEX_USED)
    if isinstance(t, exp.Table) and not stmt.args.get("joins"):
        table = known_table(a, t.this, t.args.get("db"), ctx, k)
        raise UnsupportedError(f"table data of {table.schema}.{table.name} (the mock master "
                          "serves binlogs, not tables)")
    raise UnsupportedError("SELECT over more than one table")

def known_table(a: AnswerHost, name: Any, db: Any, ctx: QueryContext, k: SchemaKnowledge) -> Any:
    """The known table, or the server's error for an unknown one (1046, 1146)."""
    tname = name.name if isinstance(name, exp.Expression) else str(name or "")
    schema = db.name if isinstance(db, exp.Expression) else (db or ctx.database)
    if not schema:
        raise QueryError(1046, "No database selected", "3D000")
    if schema.lower() == "information_schema" and tname.upper() in IS_TABLES:
        raise UnsupportedError(f"SHOW/DESCRIBE of information_schema.{tname}")
    t = k.find(schema, tname)
    if t is None:
        why = ("its TABLE_MAPs carry no column names" if (schema, tname) in k.unnamed
               else "no DDL, scenario schema or TABLE_MAP describes it")
        note = f"unknown table {schema}.{tname} ({why}): ERR 1146"
        if note not in k.notes:
            k.notes.append(note)
        raise QueryError(1146, f"Table '{schema}.{tname}' doesn't exist", "42S02")
    return t

def show_create(a: AnswerHost, stmt: exp.Show, ctx: QueryContext, k: SchemaKnowledge) -> Answer:
    t = known_table(a, stmt.args.get("target"), stmt.args.get("db"), ctx, k)
    text = show_create_table(t) if k.mysql_version is None else \
        show_create_table_mysql(t, k.mysql_version)
    cs = ctx.charset
    mb = MBMAXLEN.get(cs, 4)
    cols = [ColumnDefinition41("Table", T_VAR_STRING, "", "", "", "", "def", cs, 64 * mb,
                               NOT_NULL, 39),
            ColumnDefinition41("Create Table", T_VAR_STRING, "", "", "", "", "def", cs,
                               max(len(text), 1024) * mb, NOT_NULL, 39)]
    return Answer(cols, rows((t.name, text)))

def show_columns(a: AnswerHost, t: Any, full: bool, like: str | None, ctx: QueryContext
                  ) -> Answer:
    spec = {s[0]: s for s in IS_TABLES["COLUMNS"]}
    names = [("Field", "COLUMN_NAME"), ("Type", "COLUMN_TYPE")]
    if full:
        names.append(("Collation", "COLLATION_NAME"))
    names += [("Null", "IS_NULLABLE"), ("Key", "COLUMN_KEY"), ("Default", "COLUMN_DEFAULT"),
              ("Extra", "EXTRA")]
    if full:
        names += [("Privileges", "PRIVILEGES"), ("Comment", "COLUMN_COMMENT")]
    mv = a.knowledge().mysql_version
    cols = ([is_col(*spec[org], ctx.charset, label=label, table_label="COLUMNS",
                    org_table="COLUMNS") for label, org in names] if mv is None
            else show_columns_cols([label for label, _ in names], ctx.charset, mv))
    out = []
    pat = None
    if like is not None:
        pat = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c)
                                 for c in like), re.IGNORECASE)
    for i, c in enumerate(t.columns, start=1):
        if pat is not None and not pat.fullmatch(c.name):
            continue
        r = columns_row(t, c, i, privileges_for(ctx.user))
        k = a.knowledge()
        if k.mysql_version is not None:
            r = mysql_columns_row(r, c, k.mysql_version)
        d = r["COLUMN_DEFAULT"]
        # SHOW COLUMNS shows the default unquoted, and NULL for 'NULL'
        if d == "NULL":
            d = None
        elif d is not None and len(d) >= 2 and d[0] == d[-1] == "'":
            d = d[1:-1].replace("''", "'")
        r["COLUMN_DEFAULT"] = d
        out.append(tuple(r[org] for _, org in names))
    # MySQL: no SERVER_QUERY_NO_INDEX_USED here (capture, 8.0.26 DESC)
    return Answer(cols, rows(*out), extra_status=NO_INDEX_USED if mv is None else 0)

def show_index(a: AnswerHost, t: Any, ctx: QueryContext) -> Answer:
    k = a.knowledge()
    spec = {s[0]: s for s in table_spec("STATISTICS", k)}
    names = [("Table", "TABLE_NAME"), ("Non_unique", "NON_UNIQUE"),
             ("Key_name", "INDEX_NAME"), ("Seq_in_index", "SEQ_IN_INDEX"),
             ("Column_name", "COLUMN_NAME"), ("Collation", "COLLATION"),
             ("Cardinality", "CARDINALITY"), ("Sub_part", "SUB_PART"),
             ("Packed", "PACKED"), ("Null", "NULLABLE"), ("Index_type", "INDEX_TYPE"),
             ("Comment", "COMMENT"), ("Index_comment", "INDEX_COMMENT")]
    # MySQL 8's SHOW INDEX ends with Visible and Expression, MariaDB 10.11's with Ignored
    names += [("Ignored", "IGNORED")] if k.mysql_version is None else \
        [("Visible", "IS_VISIBLE"), ("Expression", "EXPRESSION")]
    cols = [is_col(*spec[org], ctx.charset, label=label, table_label="STATISTICS",
                   org_table="STATISTICS") for label, org in names]
    rows_in = statistics_rows(t) if k.mysql_version is None else \
        [mysql_is_row("STATISTICS", r) for r in statistics_rows(t)]
    out = [tuple(r[org] for _, org in names) for r in rows_in]
    return Answer(cols, rows(*out), extra_status=NO_INDEX_USED)

def _shown_schema(a: AnswerHost, stmt: exp.Show, ctx: QueryContext, k: SchemaKnowledge) -> str:
    """The database a SHOW ... [FROM db] is about, or the server's error (1046 none selected,
    1049 unknown)."""
    db = stmt.args.get("db")
    schema = db.name if isinstance(db, exp.Expression) else ctx.database
    if not schema:
        raise QueryError(1046, "No database selected", "3D000")
    if schema not in databases(a, k):
        raise QueryError(1049, f"Unknown database '{schema}'", "42000")
    return schema


def show_tables(a: AnswerHost, stmt: exp.Show, ctx: QueryContext, k: SchemaKnowledge) -> Answer:
    schema = _shown_schema(a, stmt, ctx, k)
    like = stmt.args.get("like")
    label = f"Tables_in_{schema}" + (f" ({like.name})" if like is not None else "")
    spec = IS_TABLES["TABLE_NAMES"]
    cols = [is_col(*spec[0], ctx.charset, label=label, table_label="TABLE_NAMES",
                   org_table="TABLE_NAMES")]
    full = bool(stmt.args.get("full"))
    if full:
        cols.append(is_col(*spec[1], ctx.charset, label="Table_type",
                           table_label="TABLE_NAMES", org_table="TABLE_NAMES"))
    if k.mysql_version is not None:
        cols = show_tables_cols(label, f"Tables_in_{schema}", full, ctx.charset,
                                k.mysql_version)
    where = stmt.args.get("where")
    out: list[tuple[Any, ...]] = []
    for (sch, name) in sorted(k.tables):
        if sch != schema or (like is not None and not like_pattern(like.name).fullmatch(name)):
            continue
        row = {label.upper(): name, "TABLE_TYPE": "BASE TABLE"}
        if where is not None and not truth(where.this, row, []):
            continue
        out.append((name, "BASE TABLE") if full else (name,))
    # MySQL: no SERVER_QUERY_NO_INDEX_USED (captures 8.0.26-9.0)
    return Answer(cols, rows(*out),
                  extra_status=NO_INDEX_USED if k.mysql_version is None else 0)

_STATUS = [("Name", "TABLE_NAME"), ("Engine", "ENGINE"), ("Version", "VERSION"),
           ("Row_format", "ROW_FORMAT"), ("Rows", "TABLE_ROWS"),
           ("Avg_row_length", "AVG_ROW_LENGTH"), ("Data_length", "DATA_LENGTH"),
           ("Max_data_length", "MAX_DATA_LENGTH"), ("Index_length", "INDEX_LENGTH"),
           ("Data_free", "DATA_FREE"), ("Auto_increment", "AUTO_INCREMENT"),
           ("Create_time", "CREATE_TIME"), ("Update_time", "UPDATE_TIME"),
           ("Check_time", "CHECK_TIME"), ("Collation", "TABLE_COLLATION"),
           ("Checksum", "CHECKSUM"), ("Create_options", "CREATE_OPTIONS"),
           ("Comment", "TABLE_COMMENT"), ("Max_index_length", "MAX_INDEX_LENGTH"),
           ("Temporary", "TEMPORARY")]


def show_table_status(a: AnswerHost, stmt: exp.Show, ctx: QueryContext, k: SchemaKnowledge
                      ) -> Answer:
    """SHOW TABLE STATUS [FROM db] [LIKE ...]: information_schema.TABLES renamed."""
    schema = _shown_schema(a, stmt, ctx, k)
    spec = {s[0]: s for s in IS_TABLES["TABLES"]}
    names = _STATUS
    cols = [is_col(*spec[org], ctx.charset, label=label, table_label="TABLES",
                   org_table="TABLES") for label, org in names]
    if k.mysql_version is not None:
        # MySQL 8 (sql/dd/info_schema/show.cc): a derived table named TABLES over the view,
        # without MariaDB's Max_index_length and Temporary
        names = [(lb, org) for lb, org in _STATUS if org not in ("MAX_INDEX_LENGTH",
                                                                 "TEMPORARY")]
        cols = [show_status_col(is_col(*spec[org], ctx.charset, label=label,
                                       table_label="TABLES", org_table="TABLES"), org,
                                ctx.charset, k.mysql_version) for label, org in names]
    like = stmt.args.get("like")
    out = []
    for (sch, name), t in sorted(k.tables.items()):
        if sch == schema and (like is None or like_pattern(like.name).fullmatch(name)):
            r = tables_row(t)
            out.append(tuple(r[org] for _, org in names))
    return Answer(cols, rows(*out), extra_status=NO_INDEX_USED)


def databases(a: AnswerHost, k: SchemaKnowledge) -> set[str]:
    names = {"information_schema", "mysql", "performance_schema", "sys"}
    names.update(k.history.databases)
    names.update(s for s, _ in k.tables)
    return names


def show_databases(a: AnswerHost, like: str | None, ctx: QueryContext, k: SchemaKnowledge
                    ) -> Answer:
    spec = {s[0]: s for s in IS_TABLES["SCHEMATA"]}
    label = "Database" + (f" ({like})" if like is not None else "")
    cols = [is_col(*spec["SCHEMA_NAME"], ctx.charset, label=label, table_label="SCHEMATA",
                   org_table="SCHEMATA") if k.mysql_version is None
            else show_databases_col(label, ctx.charset, k.mysql_version)]
    names = sorted(n for n in databases(a, k)
                   if like is None or like_pattern(like).fullmatch(n))
    return Answer(cols, rows(*[(n,) for n in names]), extra_status=NO_INDEX_USED)
