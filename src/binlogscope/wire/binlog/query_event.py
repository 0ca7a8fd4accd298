"""QUERY_EVENT (2), MariaDB's QUERY_COMPRESSED_EVENT (165) and EXECUTE_LOAD_QUERY_EVENT (18).

Layout (v4)::

    post-header  thread_id<4> exec_time<4> schema_length<1> error_code<2> status_vars_length<2>
                 [EXECUTE_LOAD_QUERY: file_id<4> start_pos<4> end_pos<4> dup_handling<1>]
    body         status_vars<status_vars_length> schema<schema_length + NUL> query<EOF>

Status variables are ``code<1>`` + a code-specific value. A reader that meets a code it does not
know cannot know its length, so - like the server - binlogscope stops there and shows the rest
of the block as one raw ``unknown_status_vars`` field (not an error). MySQL (codes 0-20) and
MariaDB (0-11, 128-131) share the low codes, so every known code is decoded whatever the
flavour.

MariaDB replaces an event a replica cannot handle with a *dummy* QUERY event whose text is
``# Dummy event replacing event type N that slave cannot handle.`` (cut or space-padded to the
size of the original event); :attr:`QueryEvent.dummy_replaced_type` names ``N``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog._collations import collation_name, decode_text
from binlogscope.wire.binlog._ddl import watch_ddl
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import EventType, event_type_name
from binlogscope.wire.reader import ByteReader, DecodeError

# ----------------------------------------------------------------------------- status var codes
Q_FLAGS2_CODE = 0
Q_SQL_MODE_CODE = 1
Q_CATALOG_CODE = 2
Q_AUTO_INCREMENT = 3
Q_CHARSET_CODE = 4
Q_TIME_ZONE_CODE = 5
Q_CATALOG_NZ_CODE = 6
Q_LC_TIME_NAMES_CODE = 7
Q_CHARSET_DATABASE_CODE = 8
Q_TABLE_MAP_FOR_UPDATE_CODE = 9
Q_MASTER_DATA_WRITTEN_CODE = 10
Q_INVOKER = 11
Q_UPDATED_DB_NAMES = 12
Q_MICROSECONDS = 13
Q_COMMIT_TS = 14
Q_COMMIT_TS2 = 15
Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16
Q_DDL_LOGGED_WITH_XID = 17
Q_DEFAULT_COLLATION_FOR_UTF8MB4 = 18
Q_SQL_REQUIRE_PRIMARY_KEY = 19
Q_DEFAULT_TABLE_ENCRYPTION = 20
# MariaDB
Q_HRNOW = 128
Q_XID = 129
Q_GTID_FLAGS3 = 130
Q_CHARACTER_SET_COLLATIONS = 131

STATUS_VAR_NAMES: dict[int, str] = {
    Q_FLAGS2_CODE: "Q_FLAGS2_CODE",
    Q_SQL_MODE_CODE: "Q_SQL_MODE_CODE",
    Q_CATALOG_CODE: "Q_CATALOG_CODE",
    Q_AUTO_INCREMENT: "Q_AUTO_INCREMENT",
    Q_CHARSET_CODE: "Q_CHARSET_CODE",
    Q_TIME_ZONE_CODE: "Q_TIME_ZONE_CODE",
    Q_CATALOG_NZ_CODE: "Q_CATALOG_NZ_CODE",
    Q_LC_TIME_NAMES_CODE: "Q_LC_TIME_NAMES_CODE",
    Q_CHARSET_DATABASE_CODE: "Q_CHARSET_DATABASE_CODE",
    Q_TABLE_MAP_FOR_UPDATE_CODE: "Q_TABLE_MAP_FOR_UPDATE_CODE",
    Q_MASTER_DATA_WRITTEN_CODE: "Q_MASTER_DATA_WRITTEN_CODE",
    Q_INVOKER: "Q_INVOKER",
    Q_UPDATED_DB_NAMES: "Q_UPDATED_DB_NAMES",
    Q_MICROSECONDS: "Q_MICROSECONDS",
    Q_COMMIT_TS: "Q_COMMIT_TS",
    Q_COMMIT_TS2: "Q_COMMIT_TS2",
    Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: "Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP",
    Q_DDL_LOGGED_WITH_XID: "Q_DDL_LOGGED_WITH_XID",
    Q_DEFAULT_COLLATION_FOR_UTF8MB4: "Q_DEFAULT_COLLATION_FOR_UTF8MB4",
    Q_SQL_REQUIRE_PRIMARY_KEY: "Q_SQL_REQUIRE_PRIMARY_KEY",
    Q_DEFAULT_TABLE_ENCRYPTION: "Q_DEFAULT_TABLE_ENCRYPTION",
    Q_HRNOW: "Q_HRNOW",
    Q_XID: "Q_XID",
    Q_GTID_FLAGS3: "Q_GTID_FLAGS3",
    Q_CHARACTER_SET_COLLATIONS: "Q_CHARACTER_SET_COLLATIONS",
}

#: Q_UPDATED_DB_NAMES count meaning "more databases than fit; replica must not parallelise"
OVER_MAX_DBS_IN_EVENT_MTS = 254
#: the largest count a Q_UPDATED_DB_NAMES list may hold
MAX_DBS_IN_EVENT_MTS = 16

FLAGS2_NAMES: dict[int, str] = {
    0x00004000: "OPTION_AUTO_IS_NULL",
    0x00080000: "OPTION_NOT_AUTOCOMMIT",
    0x04000000: "OPTION_NO_FOREIGN_KEY_CHECKS",
    0x08000000: "OPTION_RELAXED_UNIQUE_CHECKS",
}

_SQL_MODE_BITS: tuple[str, ...] = (
    "REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NOT_USED",
    "ONLY_FULL_GROUP_BY", "NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "POSTGRESQL",
    "ORACLE", "MSSQL", "DB2", "MAXDB", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
    "NO_FIELD_OPTIONS", "MYSQL323", "MYSQL40", "ANSI", "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE", "INVALID_DATES", "ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL",
    "NO_AUTO_CREATE_USER", "HIGH_NOT_PRECEDENCE", "NO_ENGINE_SUBSTITUTION",
    "PAD_CHAR_TO_FULL_LENGTH",
)
_SQL_MODE_HIGH_MYSQL = {32: "TIME_TRUNCATE_FRACTIONAL"}
_SQL_MODE_HIGH_MARIADB = {
    32: "EMPTY_STRING_IS_NULL", 33: "SIMULTANEOUS_ASSIGNMENT", 34: "TIME_ROUND_FRACTIONAL",
}

# MariaDB Q_GTID_FLAGS3 bits (Gtid_log_event::FL_*_E1)
FL_EXTRA_MULTI_ENGINE_E1 = 0x01
FL_START_ALTER_E1 = 0x02
FL_COMMIT_ALTER_E1 = 0x04
FL_ROLLBACK_ALTER_E1 = 0x08
FLAGS3_NAMES: dict[int, str] = {
    FL_EXTRA_MULTI_ENGINE_E1: "FL_EXTRA_MULTI_ENGINE_E1",
    FL_START_ALTER_E1: "FL_START_ALTER_E1",
    FL_COMMIT_ALTER_E1: "FL_COMMIT_ALTER_E1",
    FL_ROLLBACK_ALTER_E1: "FL_ROLLBACK_ALTER_E1",
}

DUP_HANDLING_NAMES = {0: "LOAD_DUP_ERROR", 1: "LOAD_DUP_IGNORE", 2: "LOAD_DUP_REPLACE"}

_DUMMY_RE = re.compile(r"# Dummy event replacing event type (\d+)")


def sql_mode_names(mode: int, mariadb: bool = False) -> str:
    """``STRICT_TRANS_TABLES,NO_ZERO_DATE,...`` for an sql_mode bit mask."""
    names = [n for i, n in enumerate(_SQL_MODE_BITS) if mode >> i & 1]
    high = _SQL_MODE_HIGH_MARIADB if mariadb else _SQL_MODE_HIGH_MYSQL
    for bit in range(32, 64):
        if mode >> bit & 1:
            names.append(high.get(bit, f"bit{bit}"))
    return ",".join(names) if names else "''"


def _bit_names(value: int, table: dict[int, str]) -> str:
    names = [n for b, n in table.items() if value & b]
    rest = value & ~sum(table)
    if rest:
        names.append(hex(rest))
    return "|".join(names) if names else "0"


# ----------------------------------------------------------------------------- values
@dataclass(slots=True)
class QueryEvent:
    """A decoded QUERY_EVENT (also the base of QUERY_COMPRESSED and EXECUTE_LOAD_QUERY)."""

    thread_id: int
    exec_time: int
    schema_length: int
    error_code: int
    status_vars_length: int
    #: decoded status variables keyed by their MySQL name (``"Q_SQL_MODE_CODE"``)
    status_vars: dict[str, Any]
    schema: str
    query: str
    #: bytes of the status-var block after the first unknown code (None when all were known)
    unknown_status_vars: bytes | None = None
    #: for a MariaDB dummy event: the type code of the event it replaced
    dummy_replaced_type: int | None = None
    #: QUERY_COMPRESSED_EVENT: the compressed bytes of the query field
    compressed_query: bytes | None = None

    @property
    def sql_mode(self) -> int | None:
        v = self.status_vars.get("Q_SQL_MODE_CODE")
        return v if isinstance(v, int) else None

    @property
    def charset(self) -> tuple[int, int, int] | None:
        """(character_set_client, collation_connection, collation_server) collation ids."""
        v = self.status_vars.get("Q_CHARSET_CODE")
        return v if isinstance(v, tuple) else None

    @property
    def xid(self) -> int | None:
        """The XID of DDL logged with one (MySQL Q_DDL_LOGGED_WITH_XID, MariaDB Q_XID)."""
        v = self.status_vars.get("Q_DDL_LOGGED_WITH_XID", self.status_vars.get("Q_XID"))
        return v if isinstance(v, int) else None


@dataclass(slots=True)
class ExecuteLoadQueryEvent(QueryEvent):
    """EXECUTE_LOAD_QUERY_EVENT: the LOAD DATA statement that consumes the file blocks."""

    file_id: int = 0
    start_pos: int = 0
    end_pos: int = 0
    dup_handling: int = 0


# ----------------------------------------------------------------------------- status vars
_VarReader = Callable[[ByteReader, DecodeContext], tuple[Any, str]]


def _sv_flags2(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u32("flags2", doc="session option bits the replica must apply: autocommit, foreign "
              "key checks, unique checks, sql_auto_is_null")
    return v, (_bit_names(v, FLAGS2_NAMES) if r.record else "")


def _sv_sql_mode(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u64("sql_mode", doc="the session sql_mode as a bit mask; the replica runs the "
              "statement with the same mode so it behaves identically")
    return v, (sql_mode_names(v, ctx.is_mariadb) if r.record else "")


def _len_str(r: ByteReader, name: str, doc: str) -> str:
    start = r.pos
    n = r.take(1, name)[0]
    try:
        s = r.take(n, name).decode("utf-8", "replace")
    except DecodeError:
        r.pos = start  # the error node then covers the whole field
        raise
    r.leaf(name, start, s, wire="string<len1>", doc=doc)
    return s


def _sv_catalog(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    start = r.pos
    n = r.take(1, "catalog")[0]
    try:
        raw = r.take(n + 1, "catalog")
    except DecodeError:
        r.pos = start
        raise
    if raw[-1:] != b"\0":
        r.pos = start
        raise DecodeError(r.base + r.pos - 1, "Q_CATALOG_CODE: catalog is not NUL-terminated")
    s = raw[:-1].decode("utf-8", "replace")
    r.leaf("catalog", start, s, wire="string<len1+NUL>",
           doc="catalog name (always 'std'); the NUL-terminated form of MySQL 5.0.0-5.0.3")
    return s, ""


def _sv_catalog_nz(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    s = _len_str(r, "catalog", "catalog name, always 'std' (length-prefixed, no NUL)")
    return s, ""


def _sv_auto_increment(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    inc = r.u16("auto_increment_increment",
                doc="session auto_increment_increment: step between generated ids")
    off = r.u16("auto_increment_offset",
                doc="session auto_increment_offset: first generated id")
    return (inc, off), f"increment={inc} offset={off}"


def _coll(r: ByteReader, name: str, doc: str) -> int:
    if r.record:
        start = r.pos
        v = int.from_bytes(r.take(2, name), "little")
        r.leaf(name, start, v, wire="int<2>", doc=doc, display=f"{v} ({collation_name(v)})")
        return v
    return r.u16(name)


def _sv_charset(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    a = _coll(r, "character_set_client",
              "collation id of the client character set: how the query text is encoded")
    b = _coll(r, "collation_connection",
              "collation id of the connection: used for string literals in the statement")
    c = _coll(r, "collation_server",
              "collation id of the server default: used by CREATE DATABASE without one")
    disp = (f"client={collation_name(a)} connection={collation_name(b)} "
            f"server={collation_name(c)}") if r.record else ""
    return (a, b, c), disp


def _sv_time_zone(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    s = _len_str(r, "time_zone", "session time_zone (written when not SYSTEM); NOW() and "
                 "TIMESTAMP conversions on the replica use it")
    return s, ""


def _sv_lc_time_names(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u16("lc_time_names", doc="locale number for DAYNAME()/MONTHNAME() (0 = en_US)")
    return v, ("en_US" if v == 0 else f"locale {v}")


def _sv_charset_database(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = _coll(r, "collation_database", "collation id of the default database")
    return v, collation_name(v)


def _sv_table_map_for_update(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u64("table_map_for_update", doc="bit i set: the i-th table of a multi-table UPDATE "
              "is updated (lets replication filters decide)")
    return v, f"0x{v:016x}"


def _sv_master_data_written(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u32("master_data_written", doc="original event size on a pre-5.0 source "
              "(relay logs only; obsolete)")
    return v, ""


def _sv_invoker(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    user = _len_str(r, "user", "definer user the statement runs as (stored routines, views, "
                    "CURRENT_USER())")
    host = _len_str(r, "host", "host part of that definer account")
    return (user, host), f"'{user}'@'{host}'"


def _sv_updated_db_names(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    count = r.u8("count", doc="number of databases the statement changes; 254 "
                 "(OVER_MAX_DBS_IN_EVENT_MTS) means too many to list",
                 display="")
    if count > MAX_DBS_IN_EVENT_MTS:
        return None, (f"{count}: OVER_MAX_DBS_IN_EVENT_MTS, the multi-threaded replica runs "
                      "this event alone")
    names: list[str] = []
    for i in range(count):
        names.append(r.nul_str(f"db_{i}",
                               doc="a database the statement changes (the multi-threaded "
                               "replica schedules by database)"))
    return names, ",".join(names)


def _sv_microseconds(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u24("microseconds", doc="fractional part of the header timestamp: NOW(6) on the "
              "replica matches the source")
    return v, ""


def _sv_explicit_defaults(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u8("explicit_defaults_for_timestamp",
             doc="session explicit_defaults_for_timestamp (1 ON, 0 OFF) for CREATE TABLE")
    return v, ("ON" if v else "OFF")


def _sv_ddl_xid(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u64("ddl_xid", doc="XID of an atomic DDL (MySQL 8): the DDL commits like a "
              "transaction, so crash recovery can tell whether it happened")
    return v, ""


def _sv_default_collation_utf8mb4(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = _coll(r, "default_collation_for_utf8mb4",
              "collation utf8mb4 means in this session (utf8mb4_0900_ai_ci or the 5.7 "
              "utf8mb4_general_ci)")
    return v, collation_name(v)


def _sv_sql_require_pk(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u8("sql_require_primary_key",
             doc="session sql_require_primary_key: refuse tables without a primary key")
    return v, ("ON" if v else "OFF")


def _sv_default_table_encryption(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u8("default_table_encryption",
             doc="session default_table_encryption for CREATE SCHEMA/TABLESPACE")
    return v, ("ON" if v else "OFF")


def _sv_hrnow(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u24("hrnow", doc="MariaDB: microsecond part of the statement start time")
    return v, ""


def _sv_xid(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u64("xid", doc="MariaDB: XID of DDL logged with an xid (crash-safe DDL); MariaDB "
              "writes no separate XID event for it")
    return v, ""


def _sv_gtid_flags3(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    v = r.u8("gtid_flags3", doc="MariaDB: extra GTID flags of the statement (split ALTER "
             "TABLE phases, multi-engine)",
             display="")
    seq: int | None = None
    if v & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
        seq = r.u64("sa_seq_no", doc="MariaDB: GTID seq_no of the START ALTER this "
                    "COMMIT/ROLLBACK ALTER finishes")
    return (v, seq), _bit_names(v, FLAGS3_NAMES) if r.record else ""


def _sv_character_set_collations(r: ByteReader, ctx: DecodeContext) -> tuple[Any, str]:
    n = r.u8("count", doc="MariaDB 11.2+: number of charset=collation pairs from "
             "@@character_set_collations")
    pairs: list[tuple[int, int]] = []
    for i in range(n):
        r.begin(f"pair_{i}", doc="one character_set_collations mapping")
        a = _coll(r, "charset_default_collation",
                  "the character set, named by the id of its default collation")
        b = _coll(r, "collation", "the collation used for that character set instead")
        r.end_group(value=(a, b), display=f"{collation_name(a)}={collation_name(b)}")
        pairs.append((a, b))
    disp = ",".join(f"{collation_name(a)}={collation_name(b)}" for a, b in pairs)
    return pairs, disp


_STATUS_VARS: dict[int, tuple[_VarReader, str]] = {
    Q_FLAGS2_CODE: (_sv_flags2, "session option flags (flags2)"),
    Q_SQL_MODE_CODE: (_sv_sql_mode, "session sql_mode"),
    Q_CATALOG_CODE: (_sv_catalog, "catalog, old NUL-terminated form (MySQL 5.0.0-5.0.3)"),
    Q_AUTO_INCREMENT: (_sv_auto_increment, "auto_increment_increment/offset (written when not "
                       "1/1)"),
    Q_CHARSET_CODE: (_sv_charset, "character_set_client, collation_connection and "
                     "collation_server"),
    Q_TIME_ZONE_CODE: (_sv_time_zone, "session time_zone"),
    Q_CATALOG_NZ_CODE: (_sv_catalog_nz, "catalog name"),
    Q_LC_TIME_NAMES_CODE: (_sv_lc_time_names, "lc_time_names locale"),
    Q_CHARSET_DATABASE_CODE: (_sv_charset_database, "collation of the default database"),
    Q_TABLE_MAP_FOR_UPDATE_CODE: (_sv_table_map_for_update, "tables updated by a multi-table "
                                  "UPDATE"),
    Q_MASTER_DATA_WRITTEN_CODE: (_sv_master_data_written, "original event size (relay log)"),
    Q_INVOKER: (_sv_invoker, "definer account the statement runs as"),
    Q_UPDATED_DB_NAMES: (_sv_updated_db_names, "databases changed (for the multi-threaded "
                         "replica)"),
    Q_MICROSECONDS: (_sv_microseconds, "microseconds of the statement start time"),
    Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: (_sv_explicit_defaults,
                                        "explicit_defaults_for_timestamp"),
    Q_DDL_LOGGED_WITH_XID: (_sv_ddl_xid, "XID of an atomic DDL"),
    Q_DEFAULT_COLLATION_FOR_UTF8MB4: (_sv_default_collation_utf8mb4,
                                      "default collation for utf8mb4"),
    Q_SQL_REQUIRE_PRIMARY_KEY: (_sv_sql_require_pk, "sql_require_primary_key"),
    Q_DEFAULT_TABLE_ENCRYPTION: (_sv_default_table_encryption, "default_table_encryption"),
    Q_HRNOW: (_sv_hrnow, "MariaDB: microseconds of the start time"),
    Q_XID: (_sv_xid, "MariaDB: XID of the DDL"),
    Q_GTID_FLAGS3: (_sv_gtid_flags3, "MariaDB: extra GTID flags"),
    Q_CHARACTER_SET_COLLATIONS: (_sv_character_set_collations,
                                 "MariaDB: @@character_set_collations"),
}


def _status_var_name(code: int) -> str:
    return STATUS_VAR_NAMES.get(code, f"UNKNOWN_STATUS_VAR_{code}")


def decode_status_vars(
    r: ByteReader, ctx: DecodeContext, length: int
) -> tuple[dict[str, Any], bytes | None]:
    """Read the ``status_vars`` block of ``length`` bytes as a ``status_vars`` group.

    Returns the decoded variables and the raw bytes after the first unknown code (or None).
    """
    out: dict[str, Any] = {}
    unknown: bytes | None = None
    r.begin("status_vars", doc="session state the replica must reproduce to run the statement "
            "identically; each is code<1> + value")
    with r.bounded(length, "status_vars"):
        while r.remaining > 0:
            code = r.buf[r.pos]
            entry = _STATUS_VARS.get(code)
            if entry is None:
                name = _status_var_name(code)
                why = ("MySQL reserves this code but never writes it" if code in
                       (Q_COMMIT_TS, Q_COMMIT_TS2) else "a code binlogscope does not know")
                unknown = r.rest(
                    "unknown_status_vars",
                    doc=f"starts with {name} ({code}), {why}: its length is unknown, so "
                    "(like the server) parsing of status vars stops here",
                )
                break
            reader, doc = entry
            name = STATUS_VAR_NAMES[code]
            r.begin(name.lower(), doc=doc)
            r.u8("code", doc="status variable code: says which value follows",
                 display=f"{name} ({code})")
            value, display = reader(r, ctx)
            r.end_group(value=value, display=display or None)
            out[name] = value
    r.end_group()
    return out, unknown


# ----------------------------------------------------------------------------- the event
def _decode_query_common(
    r: ByteReader, ctx: DecodeContext, h: EventHeader, *, compressed: bool, load: bool
) -> QueryEvent:
    post_len = ctx.post_header(h.type_code)
    if post_len is None:
        post_len = 26 if load else 13
    start = r.pos
    r.begin("post_header", doc="fixed-size part of the event body; its length comes from the "
            "FORMAT_DESCRIPTION")
    thread_id = r.u32("thread_id", doc="connection id of the session on the source "
                      "(pseudo_thread_id; temporary tables are per thread)")
    exec_time = r.u32("exec_time", doc="seconds the statement took on the source (a rough "
                      "replication-lag hint)")
    schema_length = r.u8("schema_length", doc="length of the default database name that "
                         "follows the status vars")
    error_code = r.u16("error_code", doc="error the statement got on the source; the "
                       "replica expects the same error (0 = none)")
    status_len = 0
    if post_len >= 13:
        status_len = r.u16("status_vars_length", doc="size of the status variable block")
    file_id = start_pos = end_pos = dup = 0
    if load:
        file_id = r.u32("file_id", doc="id of the file whose blocks BEGIN_LOAD_QUERY/"
                        "APPEND_BLOCK carried")
        start_pos = r.u32("start_pos", doc="offset in the query text where the file-name "
                          "clause starts (a replica substitutes its local temp file)")
        end_pos = r.u32("end_pos", doc="offset in the query text where that clause ends")
        dup = r.u8("dup_handling", doc="what LOAD DATA does with duplicate keys",
                   display=DUP_HANDLING_NAMES.get(r.peek_u8() or 0, "?") if r.record else "")
    extra = post_len - (r.pos - start)
    if extra > 0:
        r.raw("post_header_extra", min(extra, r.remaining),
              doc="post-header bytes added by a newer server than binlogscope knows")
    r.end_group()

    status_vars, unknown = decode_status_vars(r, ctx, status_len)
    coll = None
    cs = status_vars.get("Q_CHARSET_CODE")
    if isinstance(cs, tuple):
        coll = cs[0]

    p = r.pos
    raw_schema = r.take(schema_length + 1, "schema")
    if raw_schema[-1] != 0:
        r.pos = p
        raise DecodeError(r.base + r.pos - 1, "schema: no NUL after schema_length bytes")
    schema = raw_schema[:-1].decode("utf-8", "replace")
    r.leaf("schema", p, schema, wire="string<NUL>",
           doc="default database (USE db) when the statement ran; empty for none")

    compressed_bytes: bytes | None = None
    if compressed:
        query, compressed_bytes = _read_compressed_query(r, coll)
    else:
        p = r.pos
        query = decode_text(r.take(r.remaining, "query"), coll)
        display = ""
        if r.record and query.startswith("# Dummy"):
            display = _dummy_display(query)
        r.leaf("query", p, query, wire="string<EOF>", display=display,
               doc="the SQL text, in the character_set_client of Q_CHARSET_CODE")

    if error_code == 0:
        watch_ddl(query, schema, ctx.declared)
    dummy: int | None = None
    if query.startswith("# Dummy"):
        m = _DUMMY_RE.match(query)
        dummy = int(m.group(1)) if m else -1

    args = (thread_id, exec_time, schema_length, error_code, status_len, status_vars, schema,
            query, unknown, dummy, compressed_bytes)
    if load:
        return ExecuteLoadQueryEvent(*args, file_id=file_id, start_pos=start_pos,
                                     end_pos=end_pos, dup_handling=dup)
    return QueryEvent(*args)


def _dummy_display(query: str) -> str:
    m = _DUMMY_RE.match(query)
    if m is None:
        return ("MariaDB dummy event (text cut short): the source replaced an event this "
                "replica said it cannot handle")
    code = int(m.group(1))
    return (f"MariaDB dummy event: replaces {event_type_name(code)} ({code}), which this "
            "replica's @mariadb_slave_capability says it cannot handle")


def _read_compressed_query(r: ByteReader, coll: int | None) -> tuple[str, bytes]:
    r.begin("query", doc="MariaDB-compressed query: header byte, big-endian uncompressed "
            "length, zlib data")
    p = r.pos
    hdr = r.take(1, "compress_header")[0]
    lenlen = hdr & 0x07
    alg = (hdr >> 4) & 0x07
    r.leaf("compress_header", p, hdr, wire="int<1>",
           doc="0x80 marks compressed data; bits 4-6 = algorithm (0 zlib); low 3 bits = "
           "number of length bytes that follow",
           display=f"0x{hdr:02x}: algorithm {alg} ({'zlib' if alg == 0 else '?'}), "
           f"{lenlen} length bytes")
    if hdr & 0xE0 != 0x80 or not 1 <= lenlen <= 4:
        raise DecodeError(r.base + p, f"compressed query header 0x{hdr:02x} is not valid "
                          "(expected 0x80 | length-byte count 1-4)")
    ulen = r.uint_be("uncompressed_length", lenlen,
                     doc="size of the query text after decompression (big-endian)")
    p = r.pos
    data = r.take(r.remaining, "compressed_data")
    try:
        d = zlib.decompressobj()
        plain = d.decompress(data, ulen + 1)
    except zlib.error as exc:
        r.pos = p
        raise DecodeError(r.base + p, f"zlib: {exc}") from exc
    if len(plain) != ulen:
        r.pos = p
        raise DecodeError(r.base + p, f"decompressed {len(plain)} bytes, header says {ulen}")
    query = decode_text(plain, coll)
    r.leaf("compressed_data", p, data, wire="string<EOF>",
           doc="the query text, zlib-compressed (log_bin_compress=ON)",
           display=f"{len(data)} bytes -> {ulen} bytes: {query!r}" if r.record else "")
    r.end_group(value=query)
    return query, data


@decodes(
    EventType.QUERY_EVENT,
    doc="QUERY: a statement to re-execute (DDL, statement-based DML, BEGIN/COMMIT) with the "
    "session state it needs",
)
def decode_query(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> QueryEvent:
    return _decode_query_common(r, ctx, h, compressed=False, load=False)


@decodes(
    EventType.QUERY_COMPRESSED_EVENT,
    doc="QUERY_COMPRESSED (MariaDB, log_bin_compress=ON): a QUERY event whose text is "
    "zlib-compressed",
)
def decode_query_compressed(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> QueryEvent:
    return _decode_query_common(r, ctx, h, compressed=True, load=False)


@decodes(
    EventType.EXECUTE_LOAD_QUERY_EVENT,
    doc="EXECUTE_LOAD_QUERY: the LOAD DATA statement; the replica runs it on the file "
    "rebuilt from the preceding BEGIN_LOAD_QUERY/APPEND_BLOCK events",
)
def decode_execute_load_query(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> QueryEvent:
    return _decode_query_common(r, ctx, h, compressed=False, load=True)


__all__ = [
    "STATUS_VAR_NAMES",
    "ExecuteLoadQueryEvent",
    "QueryEvent",
    "decode_status_vars",
    "sql_mode_names",
]
