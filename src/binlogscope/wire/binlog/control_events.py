"""Control and small session events.

FORMAT_DESCRIPTION, ROTATE, STOP (the events that shape the stream), plus the small events that
travel with statements and transactions: START_V3, XID, INTVAR, RAND, USER_VAR, INCIDENT,
HEARTBEAT (v1/v2), IGNORABLE, ROWS_QUERY, SLAVE, TRANSACTION_CONTEXT, VIEW_CHANGE, XA_PREPARE and
MariaDB's ANNOTATE_ROWS, BINLOG_CHECKPOINT and START_ENCRYPTION.

QUERY-family events are in :mod:`query_event`, GTID events in :mod:`gtid_events`, the LOAD DATA
family in :mod:`load_events`, TRANSACTION_PAYLOAD in :mod:`payload_events`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog._collations import collation_name, decode_text
from binlogscope.wire.binlog._tlv import read_tlv
from binlogscope.wire.binlog.context import DecodeContext, fde_has_checksum_alg, pre_ga_type_map
from binlogscope.wire.binlog.header import HEADER_LEN, EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import ChecksumAlg, EventType, event_type_name
from binlogscope.wire.reader import ByteReader, DecodeError


@dataclass(slots=True)
class FormatDescriptionEvent:
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_len: tuple[int, ...]
    checksum_alg: int


@dataclass(slots=True)
class RotateEvent:
    position: int
    next_log_name: str


@dataclass(slots=True)
class StopEvent:
    pass


@decodes(
    EventType.FORMAT_DESCRIPTION_EVENT,
    doc="FORMAT_DESCRIPTION: first event of every binlog; says the server version, the header "
    "and post-header lengths of every event type and the checksum algorithm",
)
def decode_format_description(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> FormatDescriptionEvent:
    event_offset = r.offset - HEADER_LEN  # the body starts right after the common header
    ver = r.u16("binlog_version", doc="binlog format version: 4 since MySQL 5.0")
    server_version = r.fixed_str(
        "server_version", 50, strip_nul=True,
        doc="version string of the server that wrote the file, NUL-padded to 50 bytes",
    )
    created = r.u32("create_timestamp",
                    doc="seconds since the epoch when the file was created (0 after a rotation)")
    header_len = r.u8("header_length", doc="length of the common header of every event: 19 in v4")
    has_alg = fde_has_checksum_alg(server_version)
    n_types = r.remaining - (1 if has_alg else 0)
    lens: list[int] = []
    r.begin("post_header_len",
            doc="post-header length of each event type, indexed by type code - 1; lets a reader "
            "skip post-header fields added by newer servers")
    for i in range(max(n_types, 0)):
        if r.record:
            code = i + 1
            lens.append(r.u8(event_type_name(code).lower(),
                             doc=f"post-header length of {event_type_name(code)} ({code})"))
        else:
            lens.append(r.u8("len"))
    r.end_group()
    alg: int = ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF
    if has_alg:
        alg_code = r.peek_u8()
        try:
            shown = ChecksumAlg(alg_code).name if alg_code is not None else ""
        except ValueError:
            shown = f"unknown ({alg_code})"
        alg = r.u8("checksum_alg",
                   doc="checksum algorithm of every following event: 0 OFF, 1 CRC32 "
                   "(servers from MySQL 5.6.1 / MariaDB 5.3 on)", display=shown)
    # the FDE changes how everything after it is read
    ctx.binlog_version = ver
    ctx.server_version = server_version
    ctx.header_len = header_len
    ctx.type_map = pre_ga_type_map(server_version)
    if ctx.type_map:  # post-header lengths are indexed by the old codes: renumber them too
        remapped = list(lens)
        for old, new in ctx.type_map.items():
            if old - 1 < len(lens) and new - 1 < len(remapped):
                remapped[new - 1] = lens[old - 1]
        lens = remapped
    ctx.post_header_len = tuple(lens)
    ctx.checksum_alg = alg if has_alg else ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF
    ctx.checksum_source = event_offset
    ctx.fde_seen = True
    ctx.reset_tables()
    return FormatDescriptionEvent(ver, server_version, created, header_len, tuple(lens), alg)


@decodes(
    EventType.ROTATE_EVENT,
    doc="ROTATE: the stream continues in another binlog file at the given position (the first "
    "event of a dump is an artificial ROTATE naming the file)",
)
def decode_rotate(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RotateEvent:
    pos = r.u64("position", doc="offset of the first event to read in the next file")
    name = r.rest_str("next_log_name", doc="name of the next binlog file (not NUL-terminated)")
    ctx.log_file = name
    ctx.reset_tables()
    return RotateEvent(pos, name)


@decodes(EventType.STOP_EVENT,
         doc="STOP: the server shut down cleanly; written as the last event of the file")
def decode_stop(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> StopEvent:
    return StopEvent()


# ============================================================================ small events
@dataclass(slots=True)
class StartEventV3:
    binlog_version: int
    server_version: str
    create_timestamp: int


XID_DOC = ("the storage engine's transaction id; recovery matches it against prepared InnoDB "
           "transactions after a crash")
ANNOTATE_QUERY_DOC = "the original SQL statement"


@dataclass(slots=True)
class XidEvent:
    xid: int


@dataclass(slots=True)
class IntvarEvent:
    type: int
    value: int

    @property
    def type_name(self) -> str:
        return INTVAR_TYPES.get(self.type, f"UNKNOWN_INTVAR_{self.type}")


@dataclass(slots=True)
class RandEvent:
    seed1: int
    seed2: int


@dataclass(slots=True)
class UserVarEvent:
    name: str
    is_null: bool
    #: STRING_RESULT 0, REAL_RESULT 1, INT_RESULT 2, DECIMAL_RESULT 4 (None when NULL)
    type: int | None = None
    charset: int | None = None
    #: str (STRING, decoded with the charset), float, int, str for DECIMAL, None for NULL
    value: Any = None
    raw_value: bytes = b""
    flags: int | None = None

    @property
    def is_unsigned(self) -> bool:
        return bool(self.flags and self.flags & USER_VAR_UNSIGNED_F)


@dataclass(slots=True)
class IncidentEvent:
    incident: int
    message: str


@dataclass(slots=True)
class HeartbeatEvent:
    log_file: str
    log_pos: int


@dataclass(slots=True)
class IgnorableEvent:
    data: bytes


@dataclass(slots=True)
class RowsQueryEvent:
    query: str


@dataclass(slots=True)
class AnnotateRowsEvent:
    query: str


@dataclass(slots=True)
class BinlogCheckpointEvent:
    binlog_file: str


@dataclass(slots=True)
class StartEncryptionEvent:
    crypto_scheme: int
    key_version: int
    nonce: bytes


@dataclass(slots=True)
class SlaveEvent:
    data: bytes


@dataclass(slots=True)
class XaPrepareEvent:
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    @property
    def xid(self) -> str:
        """The XID as mysqlbinlog prints it: ``X'gtrid',X'bqual',format_id``."""
        return f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"


@dataclass(slots=True)
class TransactionContextEvent:
    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: bytes
    write_set: list[bytes]
    read_set: list[bytes]


@dataclass(slots=True)
class ViewChangeEvent:
    view_id: str
    seq_number: int
    certification_info: dict[str, bytes]


INTVAR_TYPES = {0: "INVALID_INT_EVENT", 1: "LAST_INSERT_ID_EVENT", 2: "INSERT_ID_EVENT"}
USER_VAR_TYPES = {0: "STRING_RESULT", 1: "REAL_RESULT", 2: "INT_RESULT", 3: "ROW_RESULT",
                  4: "DECIMAL_RESULT"}
USER_VAR_UNSIGNED_F = 0x01
INCIDENT_TYPES = {0: "INCIDENT_NONE", 1: "INCIDENT_LOST_EVENTS"}


@decodes(EventType.START_EVENT_V3,
         doc="START_V3: first event of a binlog v1/v3 file (MySQL before 5.0); the FDE replaced it")
def decode_start_v3(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> StartEventV3:
    ver = r.u16("binlog_version", doc="binlog format version of the file (1 or 3)")
    server_version = r.fixed_str("server_version", 50, strip_nul=True,
                                 doc="version of the server that wrote the file, NUL-padded")
    created = r.u32("create_timestamp", doc="seconds since the epoch when the file was created")
    return StartEventV3(ver, server_version, created)


@decodes(EventType.XID_EVENT,
         doc="XID: COMMIT of a transaction on a transactional engine (InnoDB); ends the "
         "transaction's event group")
def decode_xid(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> XidEvent:
    xid = r.u64("xid", doc=XID_DOC)
    return XidEvent(xid)


@decodes(EventType.INTVAR_EVENT,
         doc="INTVAR: the AUTO_INCREMENT or LAST_INSERT_ID() value the next statement-based "
         "statement must use")
def decode_intvar(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> IntvarEvent:
    t = r.u8("type", doc="1 LAST_INSERT_ID_EVENT (value of LAST_INSERT_ID()), 2 INSERT_ID_EVENT "
             "(next AUTO_INCREMENT id)",
             display=INTVAR_TYPES.get(r.peek_u8() or 0, "?") if r.record else "")
    v = r.u64("value", doc="the value the replica sets before running the next statement")
    return IntvarEvent(t, v)


@decodes(EventType.RAND_EVENT,
         doc="RAND: seeds of the random generator so RAND() in the next statement gives the "
         "same values on the replica")
def decode_rand(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RandEvent:
    s1 = r.u64("seed1", doc="first seed of the session's random number generator")
    s2 = r.u64("seed2", doc="second seed of the session's random number generator")
    return RandEvent(s1, s2)


_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_bin_size(precision: int, scale: int) -> int:
    """Bytes of MySQL's packed (binary) DECIMAL(precision, scale)."""
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


def decode_packed_decimal(data: bytes, precision: int, scale: int) -> str:
    """Exact text of MySQL's packed DECIMAL: groups of 9 digits in 4 big-endian bytes, the
    sign in the top bit (set = positive), negative numbers stored bit-inverted."""
    if not 0 <= scale <= precision or precision == 0:
        raise ValueError(f"DECIMAL({precision},{scale}) is not a valid precision/scale")
    size = decimal_bin_size(precision, scale)
    if len(data) < size:
        raise ValueError(f"DECIMAL({precision},{scale}) needs {size} bytes, got {len(data)}")
    b = bytearray(data[:size])
    negative = not b[0] & 0x80
    b[0] ^= 0x80
    if negative:
        b = bytearray(x ^ 0xFF for x in b)
    intg = precision - scale
    pos = 0
    parts: list[str] = []
    lead = _DIG2BYTES[intg % 9]
    if lead:
        parts.append(str(int.from_bytes(b[pos : pos + lead], "big")))
        pos += lead
    for _ in range(intg // 9):
        parts.append(f"{int.from_bytes(b[pos : pos + 4], 'big'):09d}")
        pos += 4
    int_text = "".join(parts).lstrip("0") or "0"
    frac: list[str] = []
    for _ in range(scale // 9):
        frac.append(f"{int.from_bytes(b[pos : pos + 4], 'big'):09d}")
        pos += 4
    tail = scale % 9
    if tail:
        frac.append(f"{int.from_bytes(b[pos : pos + _DIG2BYTES[tail]], 'big'):0{tail}d}")
    text = int_text + ("." + "".join(frac) if scale else "")
    return ("-" if negative else "") + text


@decodes(EventType.USER_VAR_EVENT,
         doc="USER_VAR: the value of a @user variable the next statement-based statement uses")
def decode_user_var(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> UserVarEvent:
    n = r.u32("name_length", doc="length of the variable name")
    p = r.pos
    name = r.take(n, "name").decode("utf-8", "replace")
    dummy = name != "" and "!dummyvar".startswith(name)
    r.leaf("name", p, name, wire=f"string<{n}>", doc="variable name without the @",
           display=("MariaDB dummy event: a NULL @`!dummyvar` replacing an event the replica "
                    "cannot handle (too small for a dummy QUERY)") if dummy else "")
    is_null = r.u8("is_null", doc="1: the variable is NULL and nothing follows")
    if is_null:
        return UserVarEvent(name, True)
    t = r.u8("type", doc="value type: 0 STRING, 1 REAL, 2 INT, 4 DECIMAL",
             display=USER_VAR_TYPES.get(r.peek_u8() or 0, "?") if r.record else "")
    if r.record:
        p = r.pos
        cs = int.from_bytes(r.take(4, "charset"), "little")
        r.leaf("charset", p, cs, wire="int<4>", display=f"{cs} ({collation_name(cs)})",
               doc="collation id of a string value (63 binary for numbers)")
    else:
        cs = r.u32("charset")
    vlen = r.u32("value_length", doc="size of the value bytes")
    p = r.pos
    raw = r.take(vlen, "value")
    value: Any
    wire = f"string<{vlen}>"
    display = ""
    r.pos = p  # rewind: on a bad value the error node then covers the value bytes
    if t == 0:
        value = decode_text(raw, cs)
    elif t == 1:
        if vlen != 8:
            raise DecodeError(r.base + p, f"REAL user variable has {vlen} bytes, expected 8")
        value = struct.unpack("<d", raw)[0]
        wire = "float<8>"
    elif t == 2:
        if vlen != 8:
            raise DecodeError(r.base + p, f"INT user variable has {vlen} bytes, expected 8")
        # signedness comes from the flags byte after the value
        q = p + vlen
        signed = not (q < r.end and r.buf[q] & USER_VAR_UNSIGNED_F)
        value = int.from_bytes(raw, "little", signed=signed)
        wire = "int<8>"
    elif t == 4:
        if vlen < 2:
            raise DecodeError(r.base + p, "DECIMAL user variable shorter than 2 bytes")
        try:
            value = decode_packed_decimal(raw[2:], raw[0], raw[1])
        except ValueError as exc:
            raise DecodeError(r.base + p, str(exc)) from exc
        display = f"{value} (DECIMAL({raw[0]},{raw[1]}) packed)"
        wire = "decimal"
    else:
        raise DecodeError(r.base + p, f"user variable type {t} is not a value type")
    r.pos = p + vlen
    r.leaf("value", p, value, wire=wire, display=display,
           doc="the variable's value (packed DECIMAL = precision<1> scale<1> digits)")
    flags: int | None = None
    if r.remaining > 0:
        flags = r.u8("flags", doc="UNSIGNED_F (1): an INT value is unsigned; absent before "
                     "MySQL 5.5")
    return UserVarEvent(name, False, t, cs, value, raw, flags)


@decodes(EventType.INCIDENT_EVENT,
         doc="INCIDENT: something happened on the source the replica cannot reproduce "
         "(e.g. lost events); replication stops here")
def decode_incident(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> IncidentEvent:
    code = int.from_bytes(r.peek(2), "little")
    t = r.u16("incident", doc="incident type: 1 INCIDENT_LOST_EVENTS",
              display=INCIDENT_TYPES.get(code, f"unknown incident number {code} (invalid)")
              if r.record else "")
    message = ""
    if r.remaining > 0:
        n = r.u8("message_length", doc="length of the message")
        message = r.fixed_str("message", n, doc="what went wrong, for the DBA")
    return IncidentEvent(t, message)


@decodes(EventType.HEARTBEAT_LOG_EVENT,
         doc="HEARTBEAT: sent by the source when idle (never stored in files); the header's "
         "log_pos is the current position")
def decode_heartbeat(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> HeartbeatEvent:
    name = r.rest_str("log_ident", doc="binlog file the source is at; the position is the "
                      "header's log_pos")
    return HeartbeatEvent(name, h.log_pos)


_HB_V2_FIELDS = {
    1: ("log_filename", "str", "binlog file the source is at"),
    2: ("log_position", "int", "position in that file (64-bit, unlike the header's log_pos)"),
}


@decodes(EventType.HEARTBEAT_LOG_EVENT_V2,
         doc="HEARTBEAT_V2 (MySQL 8.0.26+): idle keep-alive carrying the file name and a "
         "64-bit position as type-length-value fields")
def decode_heartbeat_v2(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> HeartbeatEvent:
    fields, _ = read_tlv(r, _HB_V2_FIELDS, end_mark_doc="end of the heartbeat fields")
    name = fields.get("log_filename")
    pos = fields.get("log_position")
    return HeartbeatEvent(name if isinstance(name, str) else "",
                          pos if isinstance(pos, int) else h.log_pos)


@decodes(EventType.IGNORABLE_LOG_EVENT,
         doc="IGNORABLE: an event a replica may skip (LOG_EVENT_IGNORABLE_F); body is opaque")
def decode_ignorable(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> IgnorableEvent:
    data = r.rest("data", doc="opaque body; replicas that do not know it skip it safely")
    return IgnorableEvent(data)


@decodes(EventType.ROWS_QUERY_LOG_EVENT,
         doc="ROWS_QUERY: the statement text that produced the following row events "
         "(binlog_rows_query_log_events=ON); informational")
def decode_rows_query(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> RowsQueryEvent:
    r.u8("length", doc="length of the text, capped at 255 - ignored: the text runs to the end")
    q = r.rest_str("query", doc=ANNOTATE_QUERY_DOC)
    return RowsQueryEvent(q)


@decodes(EventType.ANNOTATE_ROWS_EVENT,
         doc="ANNOTATE_ROWS (MariaDB): the statement text of the following row events "
         "(binlog_annotate_row_events)")
def decode_annotate_rows(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> AnnotateRowsEvent:
    q = r.rest_str("query", doc=ANNOTATE_QUERY_DOC)
    return AnnotateRowsEvent(q)


@decodes(EventType.BINLOG_CHECKPOINT_EVENT,
         doc="BINLOG_CHECKPOINT (MariaDB): the oldest binlog file crash recovery still needs")
def decode_binlog_checkpoint(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> BinlogCheckpointEvent:
    n = r.u32("binlog_file_length", doc="length of the file name")
    name = r.fixed_str("binlog_file_name", n,
                       doc="binlog file from which recovery must scan for prepared XIDs")
    return BinlogCheckpointEvent(name)


@decodes(EventType.START_ENCRYPTION_EVENT,
         doc="START_ENCRYPTION (MariaDB): every following event of this file is encrypted "
         "(encrypt_binlog=ON) and cannot be read without the key")
def decode_start_encryption(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> StartEncryptionEvent:
    scheme = r.u8("crypto_scheme", doc="encryption scheme: 1 = AES with the key server's key")
    kv = r.u32("key_version", doc="version of the encryption key in the key management plugin")
    nonce = r.raw("nonce", 12, doc="12-byte nonce; with the event position it forms the "
                  "per-event IV. binlogscope shows but does not decrypt what follows")
    return StartEncryptionEvent(scheme, kv, nonce)


@decodes(EventType.SLAVE_EVENT, doc="SLAVE: never written by any released server; shown raw")
def decode_slave(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> SlaveEvent:
    return SlaveEvent(r.rest("data", doc="unused event type; body kept as raw bytes"))


@decodes(EventType.XA_PREPARE_LOG_EVENT,
         doc="XA_PREPARE: XA PREPARE (or XA COMMIT ... ONE PHASE) of an XA transaction; ends "
         "its event group")
def decode_xa_prepare(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> XaPrepareEvent:
    one = r.u8("one_phase", doc="1: XA COMMIT ONE PHASE (commit now), 0: XA PREPARE")
    fmt = r.u32("format_id", doc="XID formatID chosen by the transaction manager")
    gl = r.u32("gtrid_length", doc="length of the global transaction id (max 64)")
    bl = r.u32("bqual_length", doc="length of the branch qualifier (max 64)")
    if gl > 64 or bl > 64:
        raise DecodeError(r.offset, f"XID lengths {gl}/{bl} exceed 64 bytes")
    g = r.raw("gtrid", gl, doc="global transaction id part of the XID")
    b = r.raw("bqual", bl, doc="branch qualifier part of the XID")
    return XaPrepareEvent(bool(one), fmt, g, b)


@decodes(EventType.TRANSACTION_CONTEXT_EVENT,
         doc="TRANSACTION_CONTEXT (group replication): write set and snapshot used for "
         "certification")
def decode_transaction_context(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> TransactionContextEvent:
    r.begin("post_header", doc="lengths of the variable parts")
    ul = r.u8("server_uuid_length", doc="length of the server UUID")
    tid = r.u32("thread_id", doc="connection id of the transaction")
    gs = r.u8("gtid_specified", doc="1: the GTID was set explicitly (GTID_NEXT)")
    sl = r.u32("snapshot_version_length", doc="size of the encoded snapshot version")
    wl = r.u32("write_set_length", doc="number of write-set items")
    rl = r.u32("read_set_length", doc="number of read-set items")
    r.end_group()
    uuid = r.fixed_str("server_uuid", ul, doc="UUID of the server that ran the transaction")
    snap = r.raw("snapshot_version", sl, doc="encoded GTID set the transaction saw")
    ws: list[bytes] = []
    r.begin("write_set", doc="hashes of the rows written; group members certify on them")
    for i in range(wl):
        n = r.u16(f"item_{i}_length", doc="length of the item")
        ws.append(r.raw(f"item_{i}", n, doc="write-set item"))
    r.end_group()
    rs: list[bytes] = []
    r.begin("read_set", doc="read-set items (unused)")
    for i in range(rl):
        n = r.u16(f"item_{i}_length", doc="length of the item")
        rs.append(r.raw(f"item_{i}", n, doc="read-set item"))
    r.end_group()
    return TransactionContextEvent(uuid, tid, bool(gs), snap, ws, rs)


@decodes(EventType.VIEW_CHANGE_EVENT,
         doc="VIEW_CHANGE (group replication): membership changed; carries the "
         "certification info a joining member needs")
def decode_view_change(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> ViewChangeEvent:
    view_id = r.fixed_str("view_id", 40, strip_nul=True,
                          doc="id of the new group view, NUL-padded to 40 bytes")
    seq = r.u64("seq_number", doc="certification sequence number at the view change")
    n = r.u32("certification_info_size", doc="number of certification entries")
    info: dict[str, bytes] = {}
    r.begin("certification_info", doc="key -> GTID set of the last transaction that wrote it")
    for i in range(n):
        r.begin(f"entry_{i}", doc="one certification entry")
        kl = r.u16("key_length", doc="length of the key")
        key = r.fixed_str("key", kl, doc="write-set key")
        vl = r.u32("value_length", doc="length of the value")
        info[key] = r.raw("value", vl, doc="encoded GTID set")
        r.end_group()
    r.end_group()
    return ViewChangeEvent(view_id, seq, info)
