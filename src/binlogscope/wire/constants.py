"""Client/server protocol enumerations, named exactly as in the MySQL/MariaDB sources.

Capability flags, server status flags, command bytes, COM_BINLOG_DUMP flags, session-state
tracker types and column-definition flags. A grep of the MySQL docs finds every member name.
"""

from __future__ import annotations

import functools
from enum import IntEnum, IntFlag


class CapabilityFlag(IntFlag):
    """``CLIENT_*`` capability flags (32 bits: ``capability_flags_1`` low + ``_2`` high)."""

    CLIENT_LONG_PASSWORD = 1 << 0  # MariaDB calls this bit CLIENT_MYSQL
    CLIENT_FOUND_ROWS = 1 << 1
    CLIENT_LONG_FLAG = 1 << 2
    CLIENT_CONNECT_WITH_DB = 1 << 3
    CLIENT_NO_SCHEMA = 1 << 4
    CLIENT_COMPRESS = 1 << 5
    CLIENT_ODBC = 1 << 6
    CLIENT_LOCAL_FILES = 1 << 7
    CLIENT_IGNORE_SPACE = 1 << 8
    CLIENT_PROTOCOL_41 = 1 << 9
    CLIENT_INTERACTIVE = 1 << 10
    CLIENT_SSL = 1 << 11
    CLIENT_IGNORE_SIGPIPE = 1 << 12
    CLIENT_TRANSACTIONS = 1 << 13
    CLIENT_RESERVED = 1 << 14
    CLIENT_SECURE_CONNECTION = 1 << 15  # "CLIENT_RESERVED2" in MySQL 8 sources
    CLIENT_MULTI_STATEMENTS = 1 << 16
    CLIENT_MULTI_RESULTS = 1 << 17
    CLIENT_PS_MULTI_RESULTS = 1 << 18
    CLIENT_PLUGIN_AUTH = 1 << 19
    CLIENT_CONNECT_ATTRS = 1 << 20
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21
    CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS = 1 << 22
    CLIENT_SESSION_TRACK = 1 << 23
    CLIENT_DEPRECATE_EOF = 1 << 24
    CLIENT_OPTIONAL_RESULTSET_METADATA = 1 << 25
    CLIENT_ZSTD_COMPRESSION_ALGORITHM = 1 << 26
    CLIENT_QUERY_ATTRIBUTES = 1 << 27
    MULTI_FACTOR_AUTHENTICATION = 1 << 28
    CLIENT_CAPABILITY_EXTENSION = 1 << 29
    CLIENT_SSL_VERIFY_SERVER_CERT = 1 << 30
    CLIENT_REMEMBER_OPTIONS = 1 << 31


CAPABILITY_DOCS: dict[int, str] = {
    CapabilityFlag.CLIENT_LONG_PASSWORD: "new (4.1) password hashing; MariaDB servers clear it "
    "(CLIENT_MYSQL) to announce MariaDB extended capabilities",
    CapabilityFlag.CLIENT_CONNECT_WITH_DB: "a database name may follow in the handshake response",
    CapabilityFlag.CLIENT_COMPRESS: "zlib-compressed protocol (a second framing layer)",
    CapabilityFlag.CLIENT_LOCAL_FILES: "LOAD DATA LOCAL INFILE allowed",
    CapabilityFlag.CLIENT_PROTOCOL_41: "4.1 protocol: SQL state in ERR, warnings in OK/EOF",
    CapabilityFlag.CLIENT_SSL: "TLS may be negotiated with an SSLRequest",
    CapabilityFlag.CLIENT_TRANSACTIONS: "status flags are sent in OK packets",
    CapabilityFlag.CLIENT_SECURE_CONNECTION: "auth response is length-prefixed (4.1 auth)",
    CapabilityFlag.CLIENT_MULTI_STATEMENTS: "several statements per COM_QUERY",
    CapabilityFlag.CLIENT_MULTI_RESULTS: "several result sets per COM_QUERY",
    CapabilityFlag.CLIENT_PLUGIN_AUTH: "pluggable authentication: plugin names are sent",
    CapabilityFlag.CLIENT_CONNECT_ATTRS: "connection attributes follow the handshake response",
    CapabilityFlag.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: "auth response is a lenenc string",
    CapabilityFlag.CLIENT_SESSION_TRACK: "OK packets may carry session-state changes",
    CapabilityFlag.CLIENT_DEPRECATE_EOF: "EOF packets are replaced by OK packets with a 0xFE "
    "header",
    CapabilityFlag.CLIENT_OPTIONAL_RESULTSET_METADATA: "result sets may omit column metadata",
    CapabilityFlag.CLIENT_ZSTD_COMPRESSION_ALGORITHM: "zstd-compressed protocol",
    CapabilityFlag.CLIENT_QUERY_ATTRIBUTES: "COM_QUERY carries query attributes",
}


#: what a modern client and server both speak (used when joining a connection mid-way)
DEFAULT_CAPABILITIES = int(
    CapabilityFlag.CLIENT_LONG_PASSWORD | CapabilityFlag.CLIENT_LONG_FLAG
    | CapabilityFlag.CLIENT_PROTOCOL_41 | CapabilityFlag.CLIENT_TRANSACTIONS
    | CapabilityFlag.CLIENT_SECURE_CONNECTION | CapabilityFlag.CLIENT_MULTI_RESULTS
    | CapabilityFlag.CLIENT_PLUGIN_AUTH | CapabilityFlag.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
)


class MariaDbCapability(IntFlag):
    """MariaDB extended capabilities (bits 32+ of the capability set, sent in the filler)."""

    MARIADB_CLIENT_PROGRESS = 1 << 0
    MARIADB_CLIENT_COM_MULTI = 1 << 1
    MARIADB_CLIENT_STMT_BULK_OPERATIONS = 1 << 2
    MARIADB_CLIENT_EXTENDED_METADATA = 1 << 3
    MARIADB_CLIENT_CACHE_METADATA = 1 << 4
    MARIADB_CLIENT_BULK_UNIT_RESULTS = 1 << 5


class StatusFlag(IntFlag):
    """``SERVER_STATUS_*`` flags in OK and EOF packets (``SERVER_STATUS_flags_enum``)."""

    SERVER_STATUS_IN_TRANS = 0x0001
    SERVER_STATUS_AUTOCOMMIT = 0x0002
    SERVER_MORE_RESULTS_EXISTS = 0x0008
    SERVER_QUERY_NO_GOOD_INDEX_USED = 0x0010
    SERVER_QUERY_NO_INDEX_USED = 0x0020
    SERVER_STATUS_CURSOR_EXISTS = 0x0040
    SERVER_STATUS_LAST_ROW_SENT = 0x0080
    SERVER_STATUS_DB_DROPPED = 0x0100
    SERVER_STATUS_NO_BACKSLASH_ESCAPES = 0x0200
    SERVER_STATUS_METADATA_CHANGED = 0x0400
    SERVER_QUERY_WAS_SLOW = 0x0800
    SERVER_PS_OUT_PARAMS = 0x1000
    SERVER_STATUS_IN_TRANS_READONLY = 0x2000
    SERVER_SESSION_STATE_CHANGED = 0x4000


class Command(IntEnum):
    """``enum_server_command``: the first payload byte of every client command."""

    COM_SLEEP = 0x00
    COM_QUIT = 0x01
    COM_INIT_DB = 0x02
    COM_QUERY = 0x03
    COM_FIELD_LIST = 0x04
    COM_CREATE_DB = 0x05
    COM_DROP_DB = 0x06
    COM_REFRESH = 0x07
    COM_SHUTDOWN = 0x08
    COM_STATISTICS = 0x09
    COM_PROCESS_INFO = 0x0A
    COM_CONNECT = 0x0B
    COM_PROCESS_KILL = 0x0C
    COM_DEBUG = 0x0D
    COM_PING = 0x0E
    COM_TIME = 0x0F
    COM_DELAYED_INSERT = 0x10
    COM_CHANGE_USER = 0x11
    COM_BINLOG_DUMP = 0x12
    COM_TABLE_DUMP = 0x13
    COM_CONNECT_OUT = 0x14
    COM_REGISTER_SLAVE = 0x15
    COM_STMT_PREPARE = 0x16
    COM_STMT_EXECUTE = 0x17
    COM_STMT_SEND_LONG_DATA = 0x18
    COM_STMT_CLOSE = 0x19
    COM_STMT_RESET = 0x1A
    COM_SET_OPTION = 0x1B
    COM_STMT_FETCH = 0x1C
    COM_DAEMON = 0x1D
    COM_BINLOG_DUMP_GTID = 0x1E
    COM_RESET_CONNECTION = 0x1F
    COM_CLONE = 0x20


def command_name(code: int) -> str:
    try:
        return Command(code).name
    except ValueError:
        return f"COM_UNKNOWN_{code:#04x}"


class BinlogDumpFlag(IntFlag):
    """``flags`` of COM_BINLOG_DUMP (2 bytes little-endian)."""

    BINLOG_DUMP_NON_BLOCK = 0x01
    BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB


class BinlogDumpGtidFlag(IntFlag):
    """``flags`` of COM_BINLOG_DUMP_GTID (2 bytes little-endian)."""

    BINLOG_DUMP_NON_BLOCK = 0x01
    BINLOG_THROUGH_POSITION = 0x02
    BINLOG_THROUGH_GTID = 0x04


class SessionTrackType(IntEnum):
    """``enum_session_state_type``: entry types in an OK packet's session-state info."""

    SESSION_TRACK_SYSTEM_VARIABLES = 0
    SESSION_TRACK_SCHEMA = 1
    SESSION_TRACK_STATE_CHANGE = 2
    SESSION_TRACK_GTIDS = 3
    SESSION_TRACK_TRANSACTION_CHARACTERISTICS = 4
    SESSION_TRACK_TRANSACTION_STATE = 5


class ColumnFlag(IntFlag):
    """Column definition ``flags`` (``*_FLAG`` in ``mysql_com.h``)."""

    NOT_NULL_FLAG = 1
    PRI_KEY_FLAG = 2
    UNIQUE_KEY_FLAG = 4
    MULTIPLE_KEY_FLAG = 8
    BLOB_FLAG = 16
    UNSIGNED_FLAG = 32
    ZEROFILL_FLAG = 64
    BINARY_FLAG = 128
    ENUM_FLAG = 256
    AUTO_INCREMENT_FLAG = 512
    TIMESTAMP_FLAG = 1024
    SET_FLAG = 2048
    NO_DEFAULT_VALUE_FLAG = 4096
    ON_UPDATE_NOW_FLAG = 8192
    NUM_FLAG = 32768


#: semi-sync: first byte of the 2-byte header the source puts before each event, and of an ACK
SEMI_SYNC_INDICATOR = 0xEF
#: semi-sync header flag bit: the source wants an ACK for this event
SEMI_SYNC_ACK_REQ = 0x01

#: short explanations of error codes a replication tool meets
ERROR_HINTS: dict[int, str] = {
    1236: "the requested binlog file/position does not exist on the server (or was purged); "
    "check SHOW BINARY LOGS and the file name/position in COM_BINLOG_DUMP",
    1045: "access denied: wrong user/password or the host is not allowed",
    1227: "the user lacks a privilege (replication needs REPLICATION SLAVE/REPLICA)",
    1040: "too many connections: max_connections reached",
    1129: "host blocked after too many connection errors (FLUSH HOSTS)",
    1130: "this host is not allowed to connect to the server",
    1153: "packet bigger than max_allowed_packet",
    1593: "fatal replication error (often a duplicate server_id or server_uuid)",
    1317: "query interrupted (KILL)",
    1064: "SQL syntax error",
}


@functools.lru_cache(maxsize=4096)
def flag_names(flags: int, enum: type[IntFlag]) -> str:
    """``"A|B|0x40"`` for the set members of ``enum`` plus any unknown bits, ``"(none set)"``
    for none (any IntFlag:
    capability, status, binlog event-header flags; cached, the same few values recur)."""
    names = [m.name or "" for m in enum if m.value & flags]
    rest = flags & ~sum(m.value for m in enum)
    if rest:
        names.append(hex(rest))
    return "|".join(names) if names else "(none set)"  # not "0": read as a second value
