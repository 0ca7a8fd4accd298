"""Binlog enumerations, named exactly as in the MySQL/MariaDB sources so a grep finds them."""

from __future__ import annotations

from enum import IntEnum, IntFlag


class EventType(IntEnum):
    """``Log_event_type`` (MySQL ``binlog_event.h``) plus MariaDB's 160+ range."""

    UNKNOWN_EVENT = 0
    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    SLAVE_EVENT = 7
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    GTID_EVENT = 162
    GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171


#: HEARTBEAT_LOG_EVENT, HEARTBEAT_LOG_EVENT_V2: keep-alives a source sends during silence, in
#: no binlog file
HEARTBEATS = frozenset((int(EventType.HEARTBEAT_LOG_EVENT), int(EventType.HEARTBEAT_LOG_EVENT_V2)))


def is_heartbeat(type_code: int) -> bool:
    """A heartbeat (v1 or v2): sent by the dump thread while the source is idle."""
    return type_code in HEARTBEATS


#: MySQL's GTID events, each the start of a transaction: GTID_LOG_EVENT, ANONYMOUS_GTID and
#: GTID_TAGGED (8.3+)
MYSQL_GTIDS = frozenset(int(t) for t in (EventType.GTID_LOG_EVENT,
                                         EventType.ANONYMOUS_GTID_LOG_EVENT,
                                         EventType.GTID_TAGGED_LOG_EVENT))
#: MariaDB's own event types start here (ANNOTATE_ROWS, 160); MySQL never writes them
MARIADB_TYPES_START = int(EventType.ANNOTATE_ROWS_EVENT)


def is_mariadb_only(type_code: int) -> bool:
    """One of MariaDB's own event types (ANNOTATE_ROWS, BINLOG_CHECKPOINT, GTID, GTID_LIST,
    START_ENCRYPTION, the compressed events...): a replica that did not say it can read them
    gets a dummy or nothing."""
    return type_code >= MARIADB_TYPES_START


def event_type_name(code: int) -> str:
    """MySQL source name of an event type code, or ``UNKNOWN_EVENT_<code>``."""
    name = _EVENT_NAMES.get(code)
    if name is None:
        try:
            name = EventType(code).name
        except ValueError:
            name = f"UNKNOWN_EVENT_{code}"
    return name


#: how :func:`unknown_not_ignorable`'s error starts (the decoder's other errors start with
#: "at offset"): the event's bytes are sound, a replica just cannot skip it
UNKNOWN_TYPE_ERROR = "unknown event type "


def unknown_not_ignorable(code: int, flags: int) -> str | None:
    """The error of an event of a type neither MySQL nor MariaDB defines whose header does
    not carry LOG_EVENT_IGNORABLE_F (None for a known type, or an unknown one flagged
    ignorable). A real replica stops at such an event: MariaDB's and MySQL's
    ``Log_event::read_log_event`` (sql/log_event.cc) make an ``Ignorable_log_event`` of an
    unknown type only when the flag is set, and otherwise fail with "Found invalid event in
    binary log" (the IO/SQL thread stops; mysqlbinlog dies without --force)."""
    if code in _EVENT_NAMES or flags & 0x80:
        return None
    return (f"{UNKNOWN_TYPE_ERROR}{code} without LOG_EVENT_IGNORABLE_F (flags "
            f"0x{flags:04x}): a MySQL/MariaDB replica stops here (\"Found invalid event in "
            "binary log\")")


class EventFlag(IntFlag):
    """Common-header flags (``LOG_EVENT_*_F``)."""

    LOG_EVENT_BINLOG_IN_USE_F = 0x1
    LOG_EVENT_FORCED_ROTATE_F = 0x2
    LOG_EVENT_THREAD_SPECIFIC_F = 0x4
    LOG_EVENT_SUPPRESS_USE_F = 0x8
    LOG_EVENT_UPDATE_TABLE_MAP_VERSION_F = 0x10
    LOG_EVENT_ARTIFICIAL_F = 0x20
    LOG_EVENT_RELAY_LOG_F = 0x40
    LOG_EVENT_IGNORABLE_F = 0x80
    LOG_EVENT_NO_FILTER_F = 0x100
    LOG_EVENT_MTS_ISOLATE_F = 0x200
    LOG_EVENT_SKIP_REPLICATION_F = 0x8000


class ChecksumAlg(IntEnum):
    """``enum_binlog_checksum_alg``."""

    BINLOG_CHECKSUM_ALG_OFF = 0
    BINLOG_CHECKSUM_ALG_CRC32 = 1
    BINLOG_CHECKSUM_ALG_UNDEF = 255


class ColumnType(IntEnum):
    """``enum_field_types`` (MySQL ``field_types.h``)."""

    MYSQL_TYPE_DECIMAL = 0
    MYSQL_TYPE_TINY = 1
    MYSQL_TYPE_SHORT = 2
    MYSQL_TYPE_LONG = 3
    MYSQL_TYPE_FLOAT = 4
    MYSQL_TYPE_DOUBLE = 5
    MYSQL_TYPE_NULL = 6
    MYSQL_TYPE_TIMESTAMP = 7
    MYSQL_TYPE_LONGLONG = 8
    MYSQL_TYPE_INT24 = 9
    MYSQL_TYPE_DATE = 10
    MYSQL_TYPE_TIME = 11
    MYSQL_TYPE_DATETIME = 12
    MYSQL_TYPE_YEAR = 13
    MYSQL_TYPE_NEWDATE = 14
    MYSQL_TYPE_VARCHAR = 15
    MYSQL_TYPE_BIT = 16
    MYSQL_TYPE_TIMESTAMP2 = 17
    MYSQL_TYPE_DATETIME2 = 18
    MYSQL_TYPE_TIME2 = 19
    MYSQL_TYPE_TYPED_ARRAY = 20
    MYSQL_TYPE_VECTOR = 242
    MYSQL_TYPE_INVALID = 243
    MYSQL_TYPE_BOOL = 244
    MYSQL_TYPE_JSON = 245
    MYSQL_TYPE_NEWDECIMAL = 246
    MYSQL_TYPE_ENUM = 247
    MYSQL_TYPE_SET = 248
    MYSQL_TYPE_TINY_BLOB = 249
    MYSQL_TYPE_MEDIUM_BLOB = 250
    MYSQL_TYPE_LONG_BLOB = 251
    MYSQL_TYPE_BLOB = 252
    MYSQL_TYPE_VAR_STRING = 253
    MYSQL_TYPE_STRING = 254
    MYSQL_TYPE_GEOMETRY = 255


def column_type_name(code: int) -> str:
    try:
        return ColumnType(code).name
    except ValueError:
        return f"MYSQL_TYPE_{code}"


_EVENT_NAMES: dict[int, str] = {int(t): t.name for t in EventType}
