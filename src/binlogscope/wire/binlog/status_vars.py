"""The ``status_vars`` block of QUERY-family events: codes, names and readers.

Status variables are ``code<1>`` + a code-specific value. A reader that meets a code it does not
know cannot know its length, so - like the server - binlogscope stops there and shows the rest
of the block as one raw ``unknown_status_vars`` field (not an error). MySQL (codes 0-20) and
MariaDB (0-11, 128-131) share the low codes, so every known code is decoded whatever the
flavour. The event around the block is decoded in :mod:`.query_event`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog._collations import collation_name
from binlogscope.wire.binlog.context import DecodeContext
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


__all__ = [
    "FLAGS2_NAMES",
    "FLAGS3_NAMES",
    "STATUS_VAR_NAMES",
    "decode_status_vars",
    "sql_mode_names",
]
