"""Answers to the queries replication clients send during setup, shaped as the real server's.

Column definitions (type, charset, length, flags, decimals) follow what MariaDB 10.11 sends,
captured from a real server: ``@@var`` strings are VAR_STRING sized ``chars x mbmaxlen`` of the
connection charset with decimals 39, integers LONGLONG/binary/21, user variables LONG_BLOB,
``SHOW VARIABLES`` columns come from ``information_schema.SESSION_VARIABLES``, and so on.
Queries about tables (information_schema, SHOW CREATE TABLE, SHOW [FULL] COLUMNS, DESCRIBE)
are parsed with sqlglot and answered by :mod:`mock_master.answers.info_schema` from the schema
knowledge (:mod:`mock_master.schema.sources`); ``binlog_gtid_pos()`` from the served files.
A query nothing here knows gets an ERR (and the server logs it) - add an answer in the scenario.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from binlogscope.wire.handshake import OkPacket
from binlogscope.wire.results import ColumnDefinition41
from mock_master.answers.base import (
    BINARY,
    CHARSET_IDS,
    MBMAXLEN,
    NO_DEFAULT,
    NO_INDEX_USED,
    NOT_NULL,
    T_LONG,
    T_LONG_BLOB,
    T_LONGLONG,
    UNSIGNED,
    Answer,
    QueryContext,
    Variable,
    err,
    int_col,
    rows,
    string_col,
    syntax_error,
    unsupported,
)
from mock_master.answers.mysql_shapes import mysql_decimals, mysql_eval, show_variables_cols
from mock_master.answers.replica_status import mariadb_slave_status, mysql_replica_status
from mock_master.answers.tables import about_tables
from mock_master.schema.sources import SchemaKnowledge
from mock_master.schema.sql import MariaDBDialect


def default_variables(flavor: str, version: str, server_id: int, *, checksum: bool,
                      semi_sync: bool, gtid_pos: str | Callable[[], str],
                      server_uuid: str | Callable[[], str],
                      port: int, basename: str, mysql_gtids: bool | Callable[[], bool],
                      gtid_purged: str | Callable[[], str] = "",
                      semi_sync_plugin: str = "rpl_semi_sync_master",
                      ) -> dict[str, Variable]:
    """The server variables; ``gtid_pos`` and ``mysql_gtids`` may be functions, called when a
    client first asks (they need the stream's GTID index). ``semi_sync_plugin``: the prefix of
    the semi-sync source plugin's variables (``rpl_semi_sync_source`` from MySQL 8.0.26:
    mock_master/dump/replica_vars.py). MySQL 8.0.26 also added ``log_replica_updates`` beside
    the deprecated ``log_slave_updates`` (the terminology change)."""
    gtid_mode: Any = ((lambda: "ON" if mysql_gtids() else "OFF") if callable(mysql_gtids)
                      else ("ON" if mysql_gtids else "OFF"))
    v: dict[str, Variable] = {
        "version": Variable(version),
        "version_comment": Variable("binlogscope mock master"),
        "server_id": Variable(server_id, "int"),
        "binlog_checksum": Variable("CRC32" if checksum else "NONE"),
        "binlog_format": Variable("ROW"),
        "binlog_row_image": Variable("FULL"),
        "binlog_row_metadata": Variable("FULL"),
        "log_bin": Variable(True, "bool"),
        "log_bin_basename": Variable(f"/var/lib/mysql/{basename}"),
        "max_allowed_packet": Variable(1 << 30, "int"),
        "net_read_timeout": Variable(30, "int"),
        "net_write_timeout": Variable(60, "int"),
        "wait_timeout": Variable(28800, "int"),
        "interactive_timeout": Variable(28800, "int"),
        "port": Variable(port, "int"),
        "hostname": Variable("mock-master"),
        "read_only": Variable(False, "bool"),
        "autocommit": Variable(True, "bool"),
        "lower_case_table_names": Variable(0, "int"),
        "auto_increment_increment": Variable(1, "int"),
        "time_zone": Variable("SYSTEM"),
        "system_time_zone": Variable("UTC"),
        "sql_mode": Variable("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,"
                             "NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"),
        "character_set_server": Variable("utf8mb4"),
        "collation_server": Variable("utf8mb4_general_ci" if flavor == "mariadb"
                                     else "utf8mb4_0900_ai_ci"),
        "character_set_client": Variable("utf8mb4"),
        "character_set_connection": Variable("utf8mb4"),
        "character_set_results": Variable("utf8mb4"),
        "transaction_isolation": Variable("REPEATABLE-READ"),
        "tx_isolation": Variable("REPEATABLE-READ"),
        "log_slave_updates": Variable(False, "bool"),
        f"{semi_sync_plugin}_enabled": Variable(semi_sync, "bool"),
    }
    if semi_sync_plugin == "rpl_semi_sync_master":
        v["rpl_semi_sync_slave_enabled"] = Variable(False, "bool")
    if flavor == "mariadb":
        v.update({
            "gtid_domain_id": Variable(0, "int"),
            "gtid_binlog_pos": Variable(gtid_pos),
            "gtid_current_pos": Variable(gtid_pos),
            "gtid_slave_pos": Variable(""),
            "gtid_strict_mode": Variable(False, "bool"),
            "binlog_annotate_row_events": Variable(True, "bool"),
            "log_bin_compress": Variable(False, "bool"),
        })
    else:
        if semi_sync_plugin == "rpl_semi_sync_source":  # 8.0.26+
            v["log_replica_updates"] = Variable(False, "bool")
        v.update({
            "server_uuid": Variable(server_uuid),
            "gtid_mode": Variable(gtid_mode),
            "enforce_gtid_consistency": Variable(gtid_mode),
            "gtid_executed": Variable(gtid_pos),
            "gtid_purged": Variable(gtid_purged),
            "binlog_transaction_compression": Variable(False, "bool"),
            "binlog_rows_query_log_events": Variable(False, "bool"),
            "server_id_bits": Variable(32, "int"),
            "character_set_database": Variable("utf8mb4"),
        })
    return v


# ------------------------------------------------------------------------------- the answerer
_SET_RE = re.compile(r"^\s*SET\s+(.*)$", re.IGNORECASE | re.DOTALL)
_NAMES_RE = re.compile(r"^\s*NAMES\s+'?\"?(\w+)'?\"?(?:\s+COLLATE\s+'?(\w+)'?)?\s*$",
                       re.IGNORECASE)
_SHOW_VARS = re.compile(
    r"^\s*SHOW\s+(?:(GLOBAL|SESSION|LOCAL)\s+)?VARIABLES"
    r"(?:\s+LIKE\s+'([^']*)'|\s+WHERE\s+Variable_name\s*=\s*'([^']*)')?\s*$", re.IGNORECASE)
_VAR_REF = re.compile(r"^@@(?:(global|session|local)\.)?([A-Za-z_][A-Za-z0-9_]*)$",
                      re.IGNORECASE)
_USER_VAR = re.compile(r"^@`?([A-Za-z_][A-Za-z0-9_$.]*)`?$")
class Answerer:
    """Turns a query text into an :class:`Answer` for one server's variables and stream."""

    def __init__(self, flavor: str, variables: dict[str, Variable],
                 binlogs: Callable[[], list[tuple[str, int]]],
                 knowledge: Callable[[], SchemaKnowledge],
                 custom: list[tuple[re.Pattern[str], Any]] | None = None,
                 gtid_pos: Callable[[str, int], str | None] | None = None, *,
                 replicas: Callable[[], list[tuple[int, str, int, int, str]]] | None = None
                 ) -> None:
        self.flavor = flavor
        self.variables = variables
        self.binlogs = binlogs
        self.knowledge = knowledge
        self.custom = custom or []
        #: binlog_gtid_pos(file, pos): the GTID state at that point of the served files
        self.gtid_pos = gtid_pos
        #: the registered replicas (SHOW REPLICAS): (server_id, host, port, master_id, uuid)
        self.replicas = replicas or (lambda: [])

    # ---------------------------------------------------------------- entry
    def answer(self, query: str, ctx: QueryContext) -> Answer | None:
        """The answer, or None when the query is unknown (the caller sends the ERR)."""
        a = self._answer(query, ctx)
        if self.flavor == "mysql" and a is not None and a.columns:
            a.columns = [mysql_decimals(c) for c in a.columns]
        return a

    def _answer(self, query: str, ctx: QueryContext) -> Answer | None:
        q = query.strip().rstrip(";").strip()
        for pattern, spec in self.custom:
            if pattern.fullmatch(q):
                return custom_answer(spec, ctx)
        up = re.sub(r"\s+", " ", q).upper()
        if not q:
            return err(1065, "Query was empty", "42000")
        if up.startswith("SET "):
            return self._set(q, ctx)
        if up in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"):
            return self._master_status(up, ctx)
        if up in ("SHOW BINARY LOGS", "SHOW MASTER LOGS"):
            if up == "SHOW MASTER LOGS" and self.flavor == "mysql" \
                    and _version_tuple(str(self.variables["version"].value)) >= (8, 4):
                return syntax_error("MASTER LOGS", "MySQL")  # removed in 8.4
            return self._binary_logs(ctx)
        if up in ("SHOW REPLICAS", "SHOW SLAVE HOSTS", "SHOW REPLICA HOSTS"):
            return self._show_replicas(up, ctx)
        if up in ("SHOW SLAVE STATUS", "SHOW REPLICA STATUS", "SHOW ALL SLAVES STATUS",
                  "SHOW ALL REPLICAS STATUS"):
            return self._replica_status(up, q, ctx)
        m = _SHOW_VARS.match(q)
        if m:
            a = self._show_variables(m.group(2), m.group(3), ctx)
            if self.flavor == "mysql":
                a.columns = show_variables_cols((m.group(1) or "").lower() == "global",
                                                ctx.charset, self.version_tuple())
            return a
        if (up.startswith(("SELECT ", "(SELECT ")) and " FROM " in up) or up.startswith(
                ("SHOW CREATE TABLE ", "SHOW COLUMNS ", "SHOW FULL COLUMNS ", "SHOW FIELDS ",
                 "SHOW FULL FIELDS ", "DESC ", "DESCRIBE ", "SHOW INDEX ", "SHOW INDEXES ",
                 "SHOW KEYS ", "SHOW TABLES", "SHOW FULL TABLES", "SHOW TABLE STATUS")) or re.match(
                r"SHOW (DATABASES|SCHEMAS)( LIKE |$)", up):
            return self._about_tables(q, ctx)
        if up.startswith("SELECT ") and " FROM " not in up:
            if self.flavor == "mysql":  # the mysql client's "select @@version_comment limit 1"
                m = re.fullmatch(r"(.*?)\s+LIMIT\s+(\d+)", q[7:], re.IGNORECASE | re.DOTALL)
                if m:
                    sel = self._select(m.group(1), ctx)
                    if sel is not None and int(m.group(2)) == 0:
                        sel.rows = []
                    return sel
            return self._select(q[7:], ctx)
        if up.startswith(("USE ", "COMMIT", "ROLLBACK", "BEGIN", "START TRANSACTION")):
            if up.startswith("USE "):
                ctx.database = q[4:].strip().strip("`")
            return Answer(ok=OkPacket())
        return None

    # ---------------------------------------------------------------- SET
    def _set(self, q: str, ctx: QueryContext) -> Answer:
        body = _SET_RE.match(q)
        text = body.group(1) if body else ""
        m = _NAMES_RE.match(text)
        if m:
            name = m.group(1).lower()
            if name not in CHARSET_IDS:
                return err(1115, f"Unknown character set: '{m.group(1)}'", "42000")
            ctx.charset = CHARSET_IDS[name]
            if self.flavor == "mysql":
                # the results' charset is the collation named (capture: 8.4.2 sends
                # SET NAMES 'utf8mb4' COLLATE 'utf8mb4_0900_ai_ci'), else the charset's
                # default: utf8mb4_0900_ai_ci (255) for utf8mb4 in MySQL 8
                from mock_master.schema.model import COLLATION_IDS, normalize_collation

                if m.group(2):
                    ctx.charset = COLLATION_IDS.get(normalize_collation(m.group(2)),
                                                    ctx.charset)
                elif name == "utf8mb4":
                    ctx.charset = 255
            return Answer(ok=OkPacket())
        for part in _split_top(text, ","):
            lhs, sep, rhs = part.partition("=")
            if not sep:
                return err(1064, "You have an error in your SQL syntax; check the manual that "
                           f"corresponds to your server version for the right syntax to use "
                           f"near '{part.strip()[:80]}' at line 1", "42000")
            lhs = lhs.strip().rstrip(":")
            value = self._eval(rhs.strip(), ctx)
            if isinstance(value, Answer):
                return value
            um = _USER_VAR.match(lhs)
            if um:
                ctx.user_vars[um.group(1).lower()] = value[0]
                continue
            name = re.sub(r"^(?:@@)?(?:(?:GLOBAL|SESSION|LOCAL)\s*\.?\s*)", "", lhs,
                          flags=re.IGNORECASE).strip().lower()
            if name == "autocommit":
                ctx.autocommit = str(value[0]).upper() in ("1", "ON", "TRUE")
            base = self.variables.get(name)
            kind = base.kind if base is not None else "str"
            ctx.session_vars[name] = Variable(value[0], kind)
        return Answer(ok=OkPacket())

    def version_tuple(self) -> tuple[int, int, int]:
        nums = [int(x) for x in re.findall(r"\d+", str(self.variables["version"].resolved())
                                           .removeprefix("5.5.5-"))[:3]] + [0, 0, 0]
        return nums[0], nums[1], nums[2]

    # ---------------------------------------------------------------- expressions
    def variable(self, name: str, ctx: QueryContext, scope: str | None) -> Variable | None:
        key = name.lower()
        if (scope is None or scope.lower() != "global") and key in ctx.session_vars:
            return ctx.session_vars[key]
        return self.variables.get(key)

    def _eval(self, expr: str, ctx: QueryContext
              ) -> tuple[Any, ColumnDefinition41 | None] | Answer:
        """(value, column definition when selected) or an ERR answer."""
        e = expr.strip()
        cs = ctx.charset
        name = e
        if self.flavor == "mysql":
            got = mysql_eval(self, e, ctx)
            if got is not None:
                return got
        m = _VAR_REF.match(e)
        if m:
            var = self.variable(m.group(2), ctx, m.group(1))
            if var is None:
                return err(1193, f"Unknown system variable '{m.group(2)}'")
            val = var.select()
            if var.kind in ("int", "bool"):
                length = 1 if var.kind == "bool" else 21
                flags = BINARY if var.kind == "bool" else UNSIGNED | BINARY
                return val, int_col(name, length, flags)
            chars = len(str(val))
            return val, string_col(name, chars, cs)
        m = _USER_VAR.match(e)
        if m:
            val = ctx.user_vars.get(m.group(1).lower())
            return val, ColumnDefinition41(name, T_LONG_BLOB, "", "", "", "", "def", cs,
                                           16777215 * MBMAXLEN.get(cs, 4), 0, 39)
        up = e.upper().replace(" ", "")
        if up == "UNIX_TIMESTAMP()":
            return int(time.time()), int_col(name, 17, BINARY)
        if up in ("VERSION()",):
            v = str(self.variables["version"].value)
            return v, string_col(name, len(v), cs, flags=NOT_NULL)
        if up in ("DATABASE()", "SCHEMA()"):
            return ctx.database, string_col(name, 64, cs)
        if up in ("USER()", "CURRENT_USER()", "SESSION_USER()", "SYSTEM_USER()"):
            v = f"{ctx.user}@{ctx.host}"
            return v, string_col(name, 141, cs, flags=NOT_NULL)
        if up in ("CONNECTION_ID()",):
            return 1, int_col(name, 10, NOT_NULL | UNSIGNED | BINARY)
        if up.startswith("BINLOG_GTID_POS("):
            return self._binlog_gtid_pos(e, ctx)
        if up == "NULL":
            return None, ColumnDefinition41(name, 6, "", "", "", "", "def", 63, 0, BINARY, 0)
        if re.fullmatch(r"-?\d+", e):
            return int(e), int_col(name, len(e.lstrip("-")) + (1 if e.startswith("-") else 0),
                                   NOT_NULL | BINARY, type_code=T_LONG if len(e) < 10
                                   else T_LONGLONG)
        if len(e) >= 2 and e[0] == e[-1] and e[0] in "'\"":
            s = e[1:-1].replace("\\'", "'").replace("''", "'")
            return s, string_col(s, len(s), cs, flags=NOT_NULL)
        if e.upper() in ("ON", "OFF", "TRUE", "FALSE", "DEFAULT"):
            return e, None
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", e):
            return e, None  # SET x = keyword (e.g. NONE, ROW)
        return err(1064, "You have an error in your SQL syntax; check the manual that "
                   f"corresponds to your server version for the right syntax to use near "
                   f"'{e[:80]}' at line 1", "42000")

    def _select(self, list_text: str, ctx: QueryContext) -> Answer | None:
        cols: list[ColumnDefinition41] = []
        vals: list[Any] = []
        for item in _split_top(list_text, ","):
            expr, alias = _split_alias(item.strip())
            r = self._eval(expr, ctx)
            if isinstance(r, Answer):
                if r.err is not None and r.err.error_code == 1064:
                    return None  # not an expression we know: unknown query
                return r
            val, col = r
            if col is None:
                return None
            if alias:
                col = ColumnDefinition41(alias, col.type, col.schema, col.table, col.org_table,
                                         col.org_name, col.catalog, col.character_set,
                                         col.column_length, col.flags, col.decimals)
            cols.append(col)
            vals.append(val)
        return Answer(cols, rows(tuple(vals)))

    # ---------------------------------------------------------------- SHOW
    def _show_variables(self, like: str | None, exact: str | None, ctx: QueryContext
                        ) -> Answer:
        cs = ctx.charset
        cols = [string_col("Variable_name", 64, cs, flags=NOT_NULL | NO_DEFAULT, decimals=0,
                           schema="information_schema", table="SESSION_VARIABLES",
                           org_table="SESSION_VARIABLES", org_name="VARIABLE_NAME"),
                string_col("Value", 4096, cs, flags=NOT_NULL | NO_DEFAULT, decimals=0,
                           schema="information_schema", table="SESSION_VARIABLES",
                           org_table="SESSION_VARIABLES", org_name="VARIABLE_VALUE")]
        merged = dict(self.variables)
        merged.update(ctx.session_vars)
        if exact is not None:
            pat = re.compile(re.escape(exact), re.IGNORECASE)
        elif like is not None:
            rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in like)
            pat = re.compile(rx, re.IGNORECASE)
        else:
            pat = re.compile(".*")
        out = [(k, v.show()) for k, v in sorted(merged.items()) if pat.fullmatch(k)]
        return Answer(cols, rows(*out), extra_status=NO_INDEX_USED)

    def _master_status(self, up: str, ctx: QueryContext) -> Answer:
        version = str(self.variables["version"].value)
        major_minor = _version_tuple(version)
        if self.flavor == "mariadb":
            if up == "SHOW BINARY LOG STATUS" and major_minor < (10, 5):
                return syntax_error("BINARY LOG STATUS")
            if up == "SHOW BINARY LOG STATUS" and major_minor < (11, 0):
                return syntax_error("LOG STATUS")
        elif up == "SHOW BINARY LOG STATUS" and major_minor < (8, 2):
            return syntax_error("BINARY LOG STATUS", "MySQL")
        elif up == "SHOW MASTER STATUS" and major_minor >= (8, 4):
            return syntax_error("MASTER STATUS", "MySQL")
        cs = ctx.charset
        cols = [string_col("File", 512, cs, flags=NOT_NULL),
                int_col("Position", 20, NOT_NULL | UNSIGNED | BINARY),
                string_col("Binlog_Do_DB", 255, cs, flags=NOT_NULL),
                string_col("Binlog_Ignore_DB", 255, cs, flags=NOT_NULL)]
        logs = self.binlogs()
        if not logs:
            return Answer(cols, [])
        name, size = logs[-1]
        row: tuple[Any, ...] = (name, size, "", "")
        if self.flavor == "mysql":
            # rpl_source.cc show_master_status: Item_empty_string sized by the set's text
            gtids = self.variables.get("gtid_executed", Variable("")).show()
            cols.append(string_col("Executed_Gtid_Set", len(gtids), cs, flags=NOT_NULL))
            row = (*row, gtids)
        return Answer(cols, rows(row))

    def _show_replicas(self, up: str, ctx: QueryContext) -> Answer:
        """SHOW REPLICAS (MySQL 8.0.22+) / SHOW SLAVE HOSTS (MySQL before 8.4, MariaDB) / SHOW
        REPLICA HOSTS (MariaDB 10.5.1+). MySQL (``show_replicas``, sql/rpl_source.cc at
        08415f0d): Server_Id (Item_return_int 10, LONG), Host (Item_empty_string
        HOSTNAME_LENGTH 255), Port (7), Source_Id (10), Replica_UUID (UUID_LENGTH 36); the old
        statement renames them (``rename_fields_use_old_replica_source_terms``): Server_id,
        Master_id, Slave_UUID. MariaDB: Server_id, Host, Port, Master_id (compared with the
        real 10.11 in tests/mock_master/test_mm_show_replicas.py). The report password and
        user (show_slave_auth_info) are not shown, as by default. Which versions have which
        statement: the MySQL 8.0 manual (SHOW REPLICAS / SHOW REPLICA STATUS aliases from
        8.0.22) and the 8.4.0 release notes' "SQL statements removed" (SHOW SLAVE STATUS,
        SHOW SLAVE HOSTS, SHOW MASTER STATUS, SHOW MASTER LOGS, ...: a syntax error there, as
        users of 8.4 report for SHOW MASTER STATUS: near 'MASTER STATUS')."""
        ver = _version_tuple(str(self.variables["version"].value))
        if self.flavor == "mysql":
            if up == "SHOW REPLICA HOSTS":
                return syntax_error("HOSTS", "MySQL")
            if up == "SHOW REPLICAS" and self.version_tuple() < (8, 0, 22):
                return syntax_error("REPLICAS", "MySQL")
            if up == "SHOW SLAVE HOSTS" and ver >= (8, 4):
                return syntax_error("SLAVE HOSTS", "MySQL")
        elif up == "SHOW REPLICAS" or (up == "SHOW REPLICA HOSTS"
                                       and self.version_tuple() < (10, 5, 1)):
            return syntax_error(up.split(" ", 1)[1] if up == "SHOW REPLICAS" else "REPLICA HOSTS")
        cs = ctx.charset
        flags = NOT_NULL | UNSIGNED | BINARY
        old = up != "SHOW REPLICAS"
        if self.flavor == "mysql":
            names = ("Server_id", "Master_id", "Slave_UUID") if old else \
                ("Server_Id", "Source_Id", "Replica_UUID")
            cols = [int_col(names[0], 10, flags, type_code=T_LONG),
                    string_col("Host", 255, cs, flags=NOT_NULL),
                    int_col("Port", 7, flags, type_code=T_LONG),
                    int_col(names[1], 10, flags, type_code=T_LONG),
                    string_col(names[2], 36, cs, flags=NOT_NULL)]
            return Answer(cols, rows(*self.replicas()))
        cols = [int_col("Server_id", 10, flags, type_code=T_LONG),
                string_col("Host", 20, cs, flags=NOT_NULL),
                int_col("Port", 7, flags, type_code=T_LONG),
                int_col("Master_id", 10, flags, type_code=T_LONG)]
        return Answer(cols, rows(*[r[:4] for r in self.replicas()]))

    def _replica_status(self, up: str, q: str, ctx: QueryContext) -> Answer:
        """SHOW [ALL] SLAVE(S)/REPLICA(S) STATUS (:mod:`mock_master.answers.replica_status`)."""
        new = "REPLICA" in up
        if self.flavor == "mariadb":
            if new and self.version_tuple() < (10, 5, 1):
                return syntax_error(up.split(" ", 1)[1])
            pos = self.variables.get("gtid_slave_pos")
            return mariadb_slave_status(up.startswith("SHOW ALL"), ctx.charset,
                                        pos.show() if pos is not None else "")
        ver = self.version_tuple()
        if up.startswith("SHOW ALL"):
            return syntax_error(up.split(" ", 1)[1], "MySQL")
        if new and ver < (8, 0, 22):
            return syntax_error("REPLICA STATUS", "MySQL")
        if not new and ver >= (8, 4, 0):
            return syntax_error("SLAVE STATUS", "MySQL")
        if ver < (8, 0, 0):
            return unsupported(q, "MySQL 5.x's SHOW SLAVE STATUS columns are not known to the "
                               "mock (8.0 and later are)")
        gtids = self.variables.get("gtid_executed", Variable("")).show()
        return mysql_replica_status(not new, ver, ctx.charset, gtids)

    def _binary_logs(self, ctx: QueryContext) -> Answer:
        cs = ctx.charset
        cols = [string_col("Log_name", 255, cs, flags=NOT_NULL),
                int_col("File_size", 20, NOT_NULL | UNSIGNED | BINARY)]
        out: list[tuple[Any, ...]] = [(n, s) for n, s in self.binlogs()]
        if self.flavor == "mysql":
            cols.append(string_col("Encrypted", 3, cs, flags=NOT_NULL))
            out = [(n, s, "No") for n, s in out]
        return Answer(cols, rows(*out))

    # ---------------------------------------------------------------- tables
    def _about_tables(self, q: str, ctx: QueryContext) -> Answer:
        try:
            return about_tables(self, q, ctx)
        except Exception as exc:  # a bug here must cost the client one answer, not the link
            return unsupported(q, f"internal error {type(exc).__name__}: {exc}")

    def _binlog_gtid_pos(self, e: str, ctx: QueryContext
                         ) -> tuple[Any, ColumnDefinition41 | None] | Answer:
        try:
            node = sqlglot.parse_one(e, read=MariaDBDialect)
        except SqlglotError:
            return syntax_error(e[:80])
        args = list(node.expressions) if isinstance(node, exp.Anonymous) else []
        if self.flavor != "mariadb":
            if not ctx.database:
                return err(1046, "No database selected", "3D000")
            return err(1305, f"FUNCTION {ctx.database}.binlog_gtid_pos does not exist", "42000")
        if len(args) != 2:
            return err(1582, "Incorrect parameter count in the call to native function "
                       "'binlog_gtid_pos'", "42000")
        vals = []
        for a in args:
            if not isinstance(a, exp.Literal):
                return unsupported(e, "binlog_gtid_pos() of an expression")
            vals.append(a.name)
        try:
            pos = int(vals[1])
        except ValueError:
            pos = 0
        v = self.gtid_pos(vals[0], pos) if self.gtid_pos is not None else None
        cs = ctx.charset
        return v, ColumnDefinition41(e, T_LONG_BLOB, "", "", "", "", "def", cs,
                                     16777216 * MBMAXLEN.get(cs, 4), 0, 39)

def _version_tuple(v: str) -> tuple[int, int]:
    m = re.match(r"(?:5\.5\.5-)?(\d+)\.(\d+)", v)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside quotes and parentheses."""
    out: list[str] = []
    depth = 0
    quote: str | None = None
    cur = []
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
            cur.append(c)
        elif c == "(":
            depth += 1
            cur.append(c)
        elif c == ")":
            depth -= 1
            cur.append(c)
        elif c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return [p for p in out if p.strip()]


def _split_alias(item: str) -> tuple[str, str | None]:
    m = re.match(r"^(.*?)\s+(?:AS\s+)?`?([A-Za-z_][A-Za-z0-9_]*)`?$", item, re.IGNORECASE)
    if m and not m.group(1).strip().endswith(("(", ",")) and m.group(1).strip():
        return m.group(1).strip(), m.group(2)
    return item.strip(), None


def custom_answer(spec: Any, ctx: QueryContext) -> Answer:
    """A scenario-defined answer: {"columns": [...], "rows": [[...]]} | {"ok": ...} |
    {"error": [code, "message"]}."""
    if isinstance(spec, Answer):
        return spec
    if not isinstance(spec, dict):
        raise ValueError(f"answer must be a table, got {spec!r}")
    if "error" in spec:
        code, msg, *state = spec["error"]
        return err(int(code), str(msg), state[0] if state else "HY000")
    if "columns" in spec:
        cols = []
        for c in spec["columns"]:
            if isinstance(c, dict):
                if c.get("type", "string") == "int":
                    cols.append(int_col(c["name"], int(c.get("length", 21))))
                else:
                    cols.append(string_col(c["name"], int(c.get("length", 64)), ctx.charset))
            else:
                cols.append(string_col(str(c), 64, ctx.charset))
        return Answer(cols, rows(*[tuple(r) for r in spec.get("rows", [])]))
    return Answer(ok=OkPacket(affected_rows=int(spec.get("affected_rows", 0))))
