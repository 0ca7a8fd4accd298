"""QUERY events, encoded: the inverse of :mod:`query_event` (QUERY, QUERY_COMPRESSED,
EXECUTE_LOAD_QUERY) and of its status variables.

``encode_query(v)`` writes the body of a :class:`QueryEvent` (an
:class:`ExecuteLoadQueryEvent` gets its extra post-header fields). The status variables are
written in the order of ``v.status_vars`` (names as the decoder keys them, values as it returns
them), then ``v.unknown_status_vars`` raw. ``schema_length`` and ``status_vars_length`` are
computed, not taken from the value. :func:`query_event` builds a value with the usual status
variables for a statement.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog._collations import python_codec
from binlogscope.wire.binlog.query_event import ExecuteLoadQueryEvent, QueryEvent
from binlogscope.wire.binlog.status_vars import STATUS_VAR_NAMES

_CODES = {name: code for code, name in STATUS_VAR_NAMES.items()}


def _len_str(s: str) -> bytes:
    b = s.encode()
    return bytes((len(b),)) + b


def _u16s(*vs: int) -> bytes:
    return struct.pack(f"<{len(vs)}H", *vs)


def _updated_db_names(v: Any) -> bytes:
    if v is None:
        return bytes((254,))  # OVER_MAX_DBS_IN_EVENT_MTS
    return bytes((len(v),)) + b"".join(n.encode() + b"\0" for n in v)


def _gtid_flags3(v: Any) -> bytes:
    flags, seq = v
    return bytes((flags,)) + (struct.pack("<Q", seq) if seq is not None else b"")


def _collations(v: Any) -> bytes:
    return bytes((len(v),)) + b"".join(_u16s(a, b) for a, b in v)


_STATUS_ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "Q_FLAGS2_CODE": lambda v: struct.pack("<I", v),
    "Q_SQL_MODE_CODE": lambda v: struct.pack("<Q", v),
    "Q_CATALOG_CODE": lambda v: _len_str(v) + b"\0",
    "Q_AUTO_INCREMENT": lambda v: _u16s(*v),
    "Q_CHARSET_CODE": lambda v: _u16s(*v),
    "Q_TIME_ZONE_CODE": _len_str,
    "Q_CATALOG_NZ_CODE": _len_str,
    "Q_LC_TIME_NAMES_CODE": lambda v: _u16s(v),
    "Q_CHARSET_DATABASE_CODE": lambda v: _u16s(v),
    "Q_TABLE_MAP_FOR_UPDATE_CODE": lambda v: struct.pack("<Q", v),
    "Q_MASTER_DATA_WRITTEN_CODE": lambda v: struct.pack("<I", v),
    "Q_INVOKER": lambda v: _len_str(v[0]) + _len_str(v[1]),
    "Q_UPDATED_DB_NAMES": _updated_db_names,
    "Q_MICROSECONDS": lambda v: v.to_bytes(3, "little"),
    "Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP": lambda v: bytes((v,)),
    "Q_DDL_LOGGED_WITH_XID": lambda v: struct.pack("<Q", v),
    "Q_DEFAULT_COLLATION_FOR_UTF8MB4": lambda v: _u16s(v),
    "Q_SQL_REQUIRE_PRIMARY_KEY": lambda v: bytes((v,)),
    "Q_DEFAULT_TABLE_ENCRYPTION": lambda v: bytes((v,)),
    "Q_HRNOW": lambda v: v.to_bytes(3, "little"),
    "Q_XID": lambda v: struct.pack("<Q", v),
    "Q_GTID_FLAGS3": _gtid_flags3,
    "Q_CHARACTER_SET_COLLATIONS": _collations,
}


def encode_status_vars(status_vars: dict[str, Any], unknown: bytes | None = None) -> bytes:
    """The status-variable block: ``code<1>`` + value per variable, then ``unknown`` raw."""
    out = bytearray()
    for name, value in status_vars.items():
        enc = _STATUS_ENCODERS.get(name)
        if enc is None:
            raise ValueError(f"no encoder for status variable {name}")
        out += bytes((_CODES[name],)) + enc(value)
    return bytes(out) + (unknown or b"")


def _compress_query(text: bytes) -> bytes:
    n = len(text)
    lenlen = max(1, (n.bit_length() + 7) // 8)
    return bytes((0x80 | lenlen,)) + n.to_bytes(lenlen, "big") + zlib.compress(text)


def encode_query(v: QueryEvent, *, compressed: bool = False) -> bytes:
    """Body of a QUERY event (``compressed``: of a QUERY_COMPRESSED event; the query text is
    zlib-compressed unless ``v.compressed_query`` holds the compressed bytes to reuse)."""
    status = encode_status_vars(v.status_vars, v.unknown_status_vars)
    schema = v.schema.encode()
    post = struct.pack("<IIBHH", v.thread_id, v.exec_time, len(schema), v.error_code,
                       len(status))
    if isinstance(v, ExecuteLoadQueryEvent):
        post += struct.pack("<IIIB", v.file_id, v.start_pos, v.end_pos, v.dup_handling)
    cs = v.status_vars.get("Q_CHARSET_CODE")
    codec = python_codec(cs[0] if isinstance(cs, tuple) else None)
    text = v.query.encode(codec, "surrogateescape")
    if compressed:
        if v.compressed_query is not None:
            text = (bytes((0x80 | 4,)) + len(text).to_bytes(4, "big") + v.compressed_query)
        else:
            text = _compress_query(text)
    return post + status + schema + b"\0" + text


def query_event(sql: str, schema: str = "", *, thread_id: int = 1, exec_time: int = 0,
                error_code: int = 0, charset: tuple[int, int, int] = (33, 33, 8),
                sql_mode: int = 0, flags2: int = 0, **extra: Any) -> QueryEvent:
    """A :class:`QueryEvent` with the status variables servers always write (flags2,
    sql_mode, charset) plus ``extra`` ones by name (``Q_XID=...``)."""
    status: dict[str, Any] = {"Q_FLAGS2_CODE": flags2, "Q_SQL_MODE_CODE": sql_mode,
                              "Q_CHARSET_CODE": charset, **extra}
    return QueryEvent(thread_id, exec_time, len(schema.encode()), error_code,
                      len(encode_status_vars(status)), status, schema, sql)


__all__ = ["encode_query", "encode_status_vars", "query_event"]
