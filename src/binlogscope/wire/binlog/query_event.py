"""QUERY_EVENT (2), MariaDB's QUERY_COMPRESSED_EVENT (165) and EXECUTE_LOAD_QUERY_EVENT (18).

Layout (v4)::

    post-header  thread_id<4> exec_time<4> schema_length<1> error_code<2> status_vars_length<2>
                 [EXECUTE_LOAD_QUERY: file_id<4> start_pos<4> end_pos<4> dup_handling<1>]
    body         status_vars<status_vars_length> schema<schema_length + NUL> query<EOF>

The status variables (``code<1>`` + a code-specific value each) are read by
:mod:`.status_vars`; its public names are importable from here too.

MariaDB replaces an event a replica cannot handle with a *dummy* QUERY event whose text is
``# Dummy event replacing event type N that slave cannot handle.`` (cut or space-padded to the
size of the original event); :attr:`QueryEvent.dummy_replaced_type` names ``N``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog._collations import decode_text
from binlogscope.wire.binlog._ddl import watch_ddl
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.status_vars import (
    STATUS_VAR_NAMES,
    decode_status_vars,
    sql_mode_names,
)
from binlogscope.wire.binlog.types import EventType, event_type_name
from binlogscope.wire.reader import ByteReader, DecodeError

DUP_HANDLING_NAMES = {0: "LOAD_DUP_ERROR", 1: "LOAD_DUP_IGNORE", 2: "LOAD_DUP_REPLACE"}

_DUMMY_RE = re.compile(r"# Dummy event replacing event type (\d+)")


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
