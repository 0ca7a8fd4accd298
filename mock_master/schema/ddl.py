"""DDL -> tables: CREATE / ALTER / RENAME / DROP TABLE (and CREATE/DROP DATABASE) applied.

The statements are read with sqlglot (:mod:`mock_master.schema.sql` says why a real parser and
holds the grammar); this module applies their trees to the tables as MariaDB does. A statement
it cannot read is reported (``SchemaCatalog.notes``) and leaves the tables as they were.

:class:`SchemaCatalog` holds the tables and, like Canal's table-meta history, a snapshot after
every change keyed by the stream position (file index, event index) of the DDL that made it:
``at(pos)`` is the schema a client saw at that point of the stream, ``tables`` the current one.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError

from mock_master.schema.model import (
    LOB_TYPES,
    Column,
    Index,
    Table,
    collation_charset,
    default_collation,
    mbmaxlen,
    normalize_charset,
    normalize_collation,
)
from mock_master.schema.sql import (
    CONVERT_RE,
    NUMERIC_TYPES,
    PARTITIONS,
    SQL_TYPES,
    UNSIGNED_MARK,
    MariaDBDialect,
    command_text,
    default_text,
    fn_text,
    join_extra,
    key_columns,
    lob_for,
    lob_for_bytes,
    looks_like_ddl,
    param_int,
    parse_ddl,
    short_sql,
    split_commas,
    unique_name,
)


class DdlError(ValueError):
    """A statement the DDL reader cannot apply (the reason is the message)."""


@dataclass
class SchemaCatalog:
    """Tables by (schema, name), database default collations, and the history of changes."""

    tables: dict[tuple[str, str], Table] = field(default_factory=dict)
    databases: dict[str, str] = field(default_factory=dict)  # schema -> default collation
    server_collation: str = "utf8mb4_general_ci"
    #: (position, {table: its definition after the change, None when dropped}) per change,
    #: in stream order: only the tables a statement touched are copied
    history: list[tuple[tuple[int, int], dict[tuple[str, str], Table | None]]] = \
        field(default_factory=list)
    #: what could not be read (one line each), for the run log
    notes: list[str] = field(default_factory=list)
    touched: set[tuple[str, str]] = field(default_factory=set)
    #: MySQL 8 rules (utf8mb4's default collation is utf8mb4_0900_ai_ci there)
    mysql: bool = False

    def _default_collation(self, charset: str) -> str:
        if self.mysql and normalize_charset(charset) == "utf8mb4":
            return "utf8mb4_0900_ai_ci"
        return default_collation(charset)

    def find(self, schema: str, name: str) -> Table | None:
        return self.tables.get((schema, name))

    def at(self, pos: tuple[int, int]) -> dict[tuple[str, str], Table]:
        """The tables as they were just before stream position ``pos`` (file, event index)."""
        state: dict[tuple[str, str], Table] = {}
        for p, changes in self.history:
            if p >= pos:
                break
            for key, t in changes.items():
                if t is None:
                    state.pop(key, None)
                else:
                    state[key] = t
        return state

    def snapshot(self, pos: tuple[int, int]) -> None:
        """Record the tables the statements since the last snapshot touched."""
        if self.touched:
            self.history.append((pos, {k: copy.deepcopy(self.tables.get(k))
                                       for k in sorted(self.touched)}))
            self.touched.clear()

    # ---------------------------------------------------------------- applying DDL
    def apply_sql(self, sql: str, default_schema: str | None, *, origin: str,
                  where: str = "") -> bool:
        """Apply one statement if it is DDL this reader knows. False (and a note) when it is
        DDL that could not be read; True otherwise (also for statements that are not DDL)."""
        if not looks_like_ddl(sql):
            return True
        try:
            parsed = parse_ddl(sql)
        except SqlglotError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.notes.append(f"schema: cannot parse DDL{where}: {first}: {short_sql(sql)}")
            return False
        ok = True
        for stmt in parsed:
            if stmt is None:
                continue
            try:
                self._apply(stmt, sql, default_schema, origin)
            except DdlError as exc:
                self.notes.append(f"schema: DDL not applied{where}: {exc}: {short_sql(sql)}")
                ok = False
            except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
                # a tree shape this reader did not expect: the statement is skipped, said once
                self.notes.append(f"schema: DDL not understood{where} ({type(exc).__name__}: "
                                  f"{exc}): {short_sql(sql)}")
                ok = False
        return ok

    def _apply(self, stmt: exp.Expr, sql: str, db: str | None, origin: str) -> None:
        if isinstance(stmt, exp.Create):
            kind = (stmt.args.get("kind") or "").upper()
            if kind in ("DATABASE", "SCHEMA"):
                name = stmt.this.name if isinstance(stmt.this, exp.Table) else \
                    stmt.this.sql(dialect=MariaDBDialect)
                coll = self._options_collation(stmt, self.server_collation)
                self.databases[name] = coll
                return
            if kind != "TABLE":
                return
            self._create_table(stmt, sql, db, origin)
        elif isinstance(stmt, exp.Alter):
            if (stmt.args.get("kind") or "").upper() == "TABLE":
                self._alter(stmt, db)
        elif isinstance(stmt, exp.Drop):
            kind = (stmt.args.get("kind") or "").upper()
            if kind == "TABLE":
                for t in stmt.args.get("tables") or [stmt.this]:
                    key = self._key(t, db)
                    self.touched.add(key)
                    self.tables.pop(key, None)
            elif kind in ("DATABASE", "SCHEMA"):
                node = (stmt.args.get("tables") or [stmt.this])[0]
                name = node.name if node is not None else ""
                self.databases.pop(name, None)
                for k in [k for k in self.tables if k[0] == name]:
                    self.touched.add(k)
                    del self.tables[k]
        elif isinstance(stmt, exp.Command) and stmt.name.upper() == "RENAME":
            self._rename(command_text(stmt), db)
        elif isinstance(stmt, exp.Command) and stmt.name.upper() == "ALTER" and \
                CONVERT_RE.match(command_text(stmt)):
            self._convert(command_text(stmt), db)
        elif isinstance(stmt, exp.Command) and stmt.name.upper() in ("CREATE", "ALTER"):
            raise DdlError("statement form not supported by the parser")

    def _key(self, t: exp.Expression, db: str | None) -> tuple[str, str]:
        if not isinstance(t, exp.Table):
            raise DdlError(f"not a table name: {t.sql()}")
        schema = t.db or db
        if not schema:
            raise DdlError(f"no database for table {t.name!r} (no USE before it)")
        return schema, t.name

    def _options_collation(self, stmt: exp.Expression, inherited: str) -> str:
        charset = collation = None
        props = stmt.args.get("properties")
        for p in props.expressions if props is not None else []:
            if isinstance(p, exp.CharacterSetProperty):
                charset = normalize_charset(p.this.name)
            elif isinstance(p, exp.CollateProperty):
                collation = normalize_collation(p.this.name)
        if collation:
            return collation
        if charset:
            return self._default_collation(charset)
        return inherited

    def _create_table(self, stmt: exp.Create, sql: str, db: str | None, origin: str) -> None:
        target = stmt.this
        schema_node = target if isinstance(target, exp.Schema) else None
        tnode = schema_node.this if schema_node is not None else target
        key = self._key(tnode, db)
        if stmt.args.get("exists") and key in self.tables:
            return
        props = stmt.args.get("properties")
        like = next((p for p in (props.expressions if props is not None else [])
                     if isinstance(p, exp.LikeProperty)), None)
        if like is not None:
            src = self.tables.get(self._key(like.this, db))
            if src is None:
                raise DdlError(f"CREATE TABLE ... LIKE an unknown table {like.this.sql()}")
            t = copy.deepcopy(src)
            t.schema, t.name, t.origin = key[0], key[1], origin
            self.tables[key] = t
            self.touched.add(key)
            return
        if schema_node is None:
            raise DdlError("CREATE TABLE without a column list (CREATE ... SELECT)")
        coll = self._options_collation(stmt, self.databases.get(key[0], self.server_collation))
        t = Table(key[0], key[1], collation=coll, origin=origin, ddl=sql)
        self._table_options(t, props.expressions if props is not None else [])
        t.partitioned = bool(PARTITIONS.search(sql))
        for item in schema_node.expressions:
            if isinstance(item, exp.ColumnDef):
                col = self._column(item, t)
                t.columns.append(col)
            else:
                self._table_constraint(item, t)
        self.tables[key] = t
        self.touched.add(key)

    def _column(self, cd: exp.ColumnDef, t: Table) -> Column:
        kind = cd.args.get("kind")
        if not isinstance(kind, exp.DataType):
            raise DdlError(f"column {cd.name!r} without a type")
        tname = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
        if tname not in SQL_TYPES:
            raise DdlError(f"column {cd.name!r}: type {kind.sql(dialect=MariaDBDialect)} not "
                           "known to the DDL reader")
        dtype, unsigned = SQL_TYPES[tname]
        params = [param_int(p) for p in kind.expressions
                  if not (isinstance(p, exp.Literal) and p.is_string)]
        col = Column(cd.name, dtype, unsigned=unsigned)
        if dtype in ("enum", "set"):
            # MariaDB keeps the members in utf8mb3 (the .frm): a 4-byte character becomes '?'
            col.members = [re.sub("[\U00010000-\U0010FFFF]", "?", p.name)
                           for p in kind.expressions]
        elif dtype in ("datetime", "timestamp", "time"):
            col.fsp = params[0] if params and params[0] is not None else 0
        elif tname == "BOOLEAN":
            col.length = 1
        elif dtype in ("text", "blob") and params and params[0] is not None:
            col.data_type = dtype = lob_for(dtype, params[0])  # TEXT(n): the fitting type
        elif dtype == "year" or dtype == "vector":
            pass
        else:
            if params:
                col.length = params[0]
            if len(params) > 1:
                col.scale = params[1]
        if tname == "SERIAL":
            col.nullable = False
            col.extra = "auto_increment"
            t.indexes.append(Index(cd.name, [cd.name], unique=True))
        charset = collation = None
        binary_attr = False
        for cons in cd.constraints:
            k = cons.kind
            if isinstance(k, exp.NotNullColumnConstraint):
                col.nullable = bool(k.args.get("allow_null"))
            elif isinstance(k, exp.AutoIncrementColumnConstraint):
                col.extra = join_extra(col.extra, "auto_increment")
            elif isinstance(k, exp.DefaultColumnConstraint):
                col.has_default = True
                col.default = default_text(k.this, col)
            elif isinstance(k, exp.CharacterSetColumnConstraint):
                charset = normalize_charset(k.this.name)
            elif isinstance(k, exp.CollateColumnConstraint):
                collation = normalize_collation(k.this.name)
            elif isinstance(k, exp.CommentColumnConstraint) and k.this.name == UNSIGNED_MARK:
                col.unsigned = True
            elif isinstance(k, exp.CommentColumnConstraint):
                col.comment = k.this.name
            elif isinstance(k, exp.PrimaryKeyColumnConstraint):
                col.nullable = False
                t.indexes.insert(0, Index("PRIMARY", [cd.name], unique=True, primary=True))
            elif isinstance(k, exp.UniqueColumnConstraint):
                t.indexes.append(Index(cd.name, [cd.name], unique=True))
            elif isinstance(k, exp.ZeroFillColumnConstraint):
                col.zerofill = col.unsigned = True
            elif isinstance(k, exp.BinaryColumnConstraint):
                binary_attr = True
            elif isinstance(k, exp.OnUpdateColumnConstraint):
                col.extra = join_extra(col.extra, "on update " + fn_text(k.this))
            elif isinstance(k, exp.ComputedColumnConstraint):
                col.extra = join_extra(col.extra, "STORED GENERATED" if k.args.get("persisted")
                                  else "VIRTUAL GENERATED")
                col.generation = k.this.sql(dialect=MariaDBDialect, identify=True)
            elif isinstance(k, exp.CheckColumnConstraint) and "json_valid" in \
                    k.sql(dialect=MariaDBDialect).lower():
                col.json = True  # JSON as SHOW CREATE TABLE writes it: LONGTEXT + this CHECK
            elif isinstance(k, exp.InvisibleColumnConstraint):
                col.extra = join_extra(col.extra, "INVISIBLE")
        if tname in ("NCHAR", "NVARCHAR") and charset is None:
            charset = "utf8mb3"  # NATIONAL CHAR: MariaDB's utf8mb3
        if tname == "JSON":
            charset, collation = "utf8mb4", "utf8mb4_bin"
            col.json = True
        if dtype in ("char", "varchar", "enum", "set", "tinytext", "text", "mediumtext",
                     "longtext"):
            if collation is None:
                collation = self._default_collation(charset) if charset else t.collation
                if binary_attr:
                    collation = f"{charset or collation_charset(collation)}_bin"
            col.collation = collation
            col.charset = charset or collation_charset(collation)
            if col.charset == "binary":  # CHAR(n) CHARACTER SET binary is BINARY(n)
                col.data_type = {"char": "binary", "varchar": "varbinary"}.get(
                    dtype, dtype.replace("text", "blob"))
                col.charset = col.collation = None
        if dtype not in NUMERIC_TYPES:
            col.unsigned = False
        return col

    def _table_constraint(self, item: exp.Expression, t: Table) -> None:
        if isinstance(item, exp.PrimaryKey):
            cols, subs = key_columns(item.expressions)
            t.indexes.insert(0, Index("PRIMARY", cols, unique=True, primary=True,
                                      sub_parts=subs))
            for n in cols:
                c = t.column(n)
                if c is not None:
                    c.nullable = False
        elif isinstance(item, exp.UniqueColumnConstraint):
            target = item.this
            cols, subs = key_columns(target.expressions if isinstance(target, exp.Schema)
                                      else [])
            name = target.this.name if isinstance(target, exp.Schema) and target.this \
                else (cols[0] if cols else "")
            t.indexes.append(Index(unique_name(t, name), cols, unique=True, sub_parts=subs))
        elif isinstance(item, exp.IndexColumnConstraint):
            cols, subs = key_columns(item.expressions)
            kind = (item.args.get("kind") or "").upper()
            name = item.this.name if item.this else (cols[0] if cols else "")
            t.indexes.append(Index(unique_name(t, name), cols, sub_parts=subs,
                                   kind={"FULLTEXT": "FULLTEXT", "SPATIAL": "SPATIAL"}.get(
                                       kind, "BTREE")))
        elif isinstance(item, exp.Constraint):
            for sub in item.expressions:
                self._table_constraint(sub, t)
        # FOREIGN KEY, CHECK...: not part of what the answers show

    def _alter(self, stmt: exp.Alter, db: str | None) -> None:
        key = self._key(stmt.this, db)
        t = self.tables.get(key)
        if t is None:
            raise DdlError(f"ALTER TABLE of an unknown table {key[0]}.{key[1]}")
        self.touched.add(key)
        self._table_options(t, stmt.args.get("options") or [])
        for action in stmt.args.get("actions") or []:
            if isinstance(action, exp.ColumnDef):
                if action.args.get("exists") and t.column(action.name) is not None:
                    continue  # ADD COLUMN IF NOT EXISTS of a column that exists
                self._place(t, self._column(action, t), action.args.get("position"))
            elif isinstance(action, exp.DropPrimaryKey):
                t.indexes = [ix for ix in t.indexes if not ix.primary]
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() \
                    in ("FOREIGN KEY", "CONSTRAINT", "CHECK"):
                continue  # not part of what the answers show
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() \
                    in ("INDEX", "KEY") and action.args.get("tables"):
                names = {n.name for n in action.args["tables"]}
                t.indexes = [ix for ix in t.indexes if ix.name not in names]
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() \
                    == "COLUMN":
                for c in action.args.get("tables") or []:
                    col = t.column(c.name)
                    if col is not None:
                        t.columns.remove(col)
                        for ix in t.indexes:
                            ix.columns = [n for n in ix.columns if n.lower() != c.name.lower()]
                        t.indexes = [ix for ix in t.indexes if ix.columns]
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() \
                    in ("INDEX", "KEY", "PRIMARY KEY"):
                name = "PRIMARY" if (action.args.get("kind") or "").upper() == "PRIMARY KEY" \
                    else action.this.name if action.this else ""
                t.indexes = [ix for ix in t.indexes if not (
                    (ix.primary and name.upper() == "PRIMARY") or ix.name == name)]
            elif isinstance(action, exp.ModifyColumn):
                cd = action.this
                old = action.args.get("rename_from")
                old_name = old.name if old is not None else cd.name
                col = self._column(cd, t)
                cur = t.column(old_name)
                if cur is None:
                    raise DdlError(f"unknown column {old_name!r} in ALTER TABLE {t.name}")
                if t.key_of(cur) == "PRI":
                    col.nullable = False
                self._rename_in_indexes(t, old_name, col.name)
                pos = action.args.get("position") or cd.args.get("position")
                if pos is None:
                    t.columns[t.columns.index(cur)] = col
                else:
                    t.columns.remove(cur)
                    self._place(t, col, pos)
            elif isinstance(action, exp.RenameColumn):
                col = t.column(action.this.name)
                if col is None:
                    raise DdlError(f"unknown column {action.this.name!r} in RENAME COLUMN")
                self._rename_in_indexes(t, col.name, action.args["to"].name)
                col.name = action.args["to"].name
            elif isinstance(action, exp.AlterRename):
                new = self._key(action.this, key[0])
                del self.tables[key]
                t.schema, t.name = new
                self.tables[new] = t
                key = new
                self.touched.add(new)
            elif isinstance(action, exp.AddConstraint):
                for c in action.expressions:
                    self._table_constraint(c, t)
            elif isinstance(action, exp.AlterColumn):
                col = t.column(action.this.name)
                if col is not None and "default" in action.args:
                    d = action.args.get("default")
                    col.has_default = d is not None
                    col.default = default_text(d, col) if d is not None else None
                elif col is not None and action.args.get("drop"):
                    col.has_default, col.default = True, None
            elif isinstance(action, exp.Property | exp.Properties):
                for p in action.expressions if isinstance(action, exp.Properties) else [action]:
                    if isinstance(p, exp.EngineProperty):
                        t.engine = p.this.name
                    elif isinstance(p, exp.SchemaCommentProperty):
                        t.comment = p.this.name
            else:
                raise DdlError(f"ALTER action not understood: {action.sql(dialect=MySQL)}")

    def _table_options(self, t: Table, options: list[Any]) -> None:
        """Table options: ENGINE, COMMENT, ROW_FORMAT, DEFAULT CHARSET/COLLATE (in ALTER TABLE
        the default of new columns; existing ones keep theirs)."""
        charset = collation = None
        for p in options:
            if isinstance(p, exp.EngineProperty):
                t.engine = p.this.name
            elif isinstance(p, exp.SchemaCommentProperty):
                t.comment = p.this.name
            elif isinstance(p, exp.CharacterSetProperty):
                charset = normalize_charset(p.this.name)
            elif isinstance(p, exp.CollateProperty):
                collation = normalize_collation(p.this.name)
            elif isinstance(p, exp.RowFormatProperty):
                t.row_format = p.this.name.upper()
        if collation or charset:
            t.collation = collation or self._default_collation(charset or "")

    def _convert(self, text: str, db: str | None) -> None:
        """ALTER TABLE t CONVERT TO CHARACTER SET cs [COLLATE c]: every text column and the
        table default take the charset (TEXT types grow to keep their length in characters,
        as the server does)."""
        m = CONVERT_RE.match(text)
        assert m is not None
        key = self._name(m.group(1), db)
        t = self.tables.get(key)
        if t is None:
            raise DdlError(f"ALTER TABLE of an unknown table {key[0]}.{key[1]}")
        charset = normalize_charset(m.group(2))
        collation = (normalize_collation(m.group(3)) if m.group(3)
                     else self._default_collation(charset))
        self.touched.add(key)
        t.collation = collation
        for c in t.columns:
            if c.collation is None or c.json:
                continue
            if c.data_type in LOB_TYPES and c.charset is not None:
                # the old maximum in characters, in bytes of the new charset
                chars = LOB_TYPES[c.data_type] // mbmaxlen(c.charset)
                c.data_type = lob_for_bytes("text", chars * mbmaxlen(charset))
            c.charset, c.collation = charset, collation

    @staticmethod
    def _rename_in_indexes(t: Table, old: str, new: str) -> None:
        for ix in t.indexes:
            ix.columns = [new if n.lower() == old.lower() else n for n in ix.columns]

    @staticmethod
    def _place(t: Table, col: Column, pos: Any) -> None:
        if isinstance(pos, exp.ColumnPosition):
            if (pos.args.get("position") or "").upper() == "FIRST":
                t.columns.insert(0, col)
                return
            after = t.column(pos.this.name) if pos.this is not None else None
            if after is not None:
                t.columns.insert(t.columns.index(after) + 1, col)
                return
        t.columns.append(col)

    def _rename(self, text: str, db: str | None) -> None:
        body = re.sub(r"^\s*TABLES?\s+", "", text, flags=re.IGNORECASE)
        pairs = []
        for part in split_commas(body):
            lr = re.split(r"\s+TO\s+", part.strip(), flags=re.IGNORECASE)
            if len(lr) != 2:
                raise DdlError("RENAME TABLE not understood")
            pairs.append((self._name(lr[0], db), self._name(lr[1], db)))
        for old, new in pairs:
            t = self.tables.pop(old, None)
            if t is None:
                raise DdlError(f"RENAME of an unknown table {old[0]}.{old[1]}")
            t.schema, t.name = new
            self.tables[new] = t
            self.touched.update((old, new))

    def _name(self, text: str, db: str | None) -> tuple[str, str]:
        try:
            node = sqlglot.parse_one(f"SELECT 1 FROM {text}", read=MariaDBDialect)
        except SqlglotError:
            raise DdlError(f"bad table name {text!r}") from None
        t = node.find(exp.Table)
        if t is None:
            raise DdlError(f"bad table name {text!r}")
        return self._key(t, db)


def catalog_from_ddl(text: str, *, default_schema: str | None = None,
                     origin: str = "scenario", mysql_collation: str | None = None
                     ) -> SchemaCatalog:
    """A catalog from a DDL script (``CREATE DATABASE``/``USE``/``CREATE TABLE``...); the
    statements are split by sqlglot, so semicolons inside strings are fine.
    ``mysql_collation``: a MySQL server's collation_server (MySQL 8's charset defaults)."""
    cat = SchemaCatalog() if mysql_collation is None else \
        SchemaCatalog(server_collation=mysql_collation, mysql=True)
    db = default_schema
    try:
        stmts = sqlglot.parse(text, read=MariaDBDialect)
    except SqlglotError as exc:
        raise DdlError(f"cannot parse the DDL: {str(exc).splitlines()[0]}") from None
    for stmt in stmts:
        if stmt is None:
            continue
        if isinstance(stmt, exp.Use):
            db = stmt.this.name if stmt.this is not None else db
            continue
        sql = stmt.sql(dialect=MariaDBDialect)
        try:
            cat._apply(stmt, sql, db, origin)
        except DdlError as exc:
            cat.notes.append(f"schema: DDL not applied: {exc}: {short_sql(sql)}")
    return cat
