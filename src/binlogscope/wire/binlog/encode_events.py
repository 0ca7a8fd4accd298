"""Binlog events, encoded: the inverse of the body decoders of :mod:`control_events` and
:mod:`gtid_events`, plus the 19-byte header and the CRC32 trailer around any body.

Each ``encode_<thing>(value) -> bytes`` returns the event *body* for the value type its decoder
returns (``decode_rotate`` -> :class:`RotateEvent` <- ``encode_rotate``). :func:`encode_event`
puts the common header in front and the CRC32 behind. A round-trip test guards every pair:
``decode_event(encode_event(code, encode_x(v))).body == v``.

QUERY-family events are encoded in :mod:`encode_query`, TABLE_MAP and row events in
:mod:`encode_rows`, column values in :mod:`encode_values`.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog._collations import python_codec
from binlogscope.wire.binlog.context import fde_has_checksum_alg
from binlogscope.wire.binlog.control_events import (
    USER_VAR_UNSIGNED_F,
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    FormatDescriptionEvent,
    HeartbeatEvent,
    IgnorableEvent,
    IncidentEvent,
    IntvarEvent,
    RandEvent,
    RotateEvent,
    RowsQueryEvent,
    StartEncryptionEvent,
    StopEvent,
    TransactionContextEvent,
    UserVarEvent,
    ViewChangeEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlogscope.wire.binlog.encode_values import encode_decimal
from binlogscope.wire.binlog.gtid_events import (
    _SV_ORIGINAL_FOLLOWS,
    _TS_ORIGINAL_FOLLOWS,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_EXTRA_MULTI_ENGINE_E1,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    GtidEvent,
    GtidListEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    varlen_bytes,
)
from binlogscope.wire.binlog.header import HEADER, HEADER_LEN, EventHeader
from binlogscope.wire.binlog.load_events import FileBlockEvent
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.fields import lenenc_int
from binlogscope.wire.gtid_sets import encode_gtid_set

_U32 = struct.Struct("<I")

#: header flag of events a source makes up (fake ROTATE, heartbeats)
LOG_EVENT_ARTIFICIAL_F = 0x20

#: post-header lengths of real FORMAT_DESCRIPTION events (MariaDB 10.11 and MySQL 8.0)
MARIADB_POST_HEADER_LEN = (
    56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 228, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0,
    0, 10, 10, 10, 0, 0, 0, 0, 0, 0, 10, 10, 10, *([0] * 119),
    4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10)
MYSQL_POST_HEADER_LEN = (
    0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
    10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0)


# ----------------------------------------------------------------------------- header + CRC
def encode_header(h: EventHeader) -> bytes:
    """The 19-byte v4 common header."""
    return HEADER.pack(h.timestamp, h.type_code, h.server_id, h.event_size, h.log_pos,
                        h.flags)


def add_crc32(event: bytes | bytearray) -> bytes:
    """``event`` (header + body, its event_size already counting 4 more bytes) + its CRC32."""
    return bytes(event) + _U32.pack(zlib.crc32(event) & 0xFFFFFFFF)


def encode_event(type_code: int, body: bytes, *, timestamp: int = 0, server_id: int = 1,
                 log_pos: int = 0, flags: int = 0, checksum: bool = True) -> bytes:
    """Header + ``body`` (+ CRC32 when ``checksum``). ``log_pos`` is the end offset of the
    event in its file (0 for artificial events). A FORMAT_DESCRIPTION whose body ends with a
    checksum-algorithm byte always carries the 4-byte trailer, as servers write it."""
    if type_code == EventType.FORMAT_DESCRIPTION_EVENT:
        checksum = checksum or _fde_has_alg(body)
    size = HEADER_LEN + len(body) + (4 if checksum else 0)
    raw = HEADER.pack(timestamp, type_code, server_id, size, log_pos, flags) + body
    return add_crc32(raw) if checksum else raw


def _fde_has_alg(body: bytes) -> bool:
    version = body[2:52].split(b"\0", 1)[0].decode("ascii", "replace")
    return fde_has_checksum_alg(version)


# ----------------------------------------------------------------------------- stream control
def format_description(server_version: str, *, checksum: bool = True,
                       create_timestamp: int = 0) -> FormatDescriptionEvent:
    """A FORMAT_DESCRIPTION value with the post-header lengths of a real MariaDB 10.11 or
    MySQL 8.0 server (by ``server_version``)."""
    lens = (MARIADB_POST_HEADER_LEN if "mariadb" in server_version.lower()
            else MYSQL_POST_HEADER_LEN)
    return FormatDescriptionEvent(4, server_version, create_timestamp, HEADER_LEN, lens,
                                  1 if checksum else 0)


def encode_format_description(v: FormatDescriptionEvent) -> bytes:
    """Body of a FORMAT_DESCRIPTION; the checksum-alg byte is written when the server version
    has one (MySQL 5.6.1+, MariaDB 5.3+)."""
    out = (struct.pack("<H", v.binlog_version)
           + v.server_version.encode()[:50].ljust(50, b"\0")
           + _U32.pack(v.create_timestamp) + bytes((v.header_length,))
           + bytes(v.post_header_len))
    if fde_has_checksum_alg(v.server_version):
        out += bytes((v.checksum_alg,))
    return out


def encode_rotate(v: RotateEvent) -> bytes:
    return struct.pack("<Q", v.position) + v.next_log_name.encode()


def encode_stop(v: StopEvent) -> bytes:
    return b""


def encode_xid(v: XidEvent) -> bytes:
    return struct.pack("<Q", v.xid)


def encode_intvar(v: IntvarEvent) -> bytes:
    return struct.pack("<BQ", v.type, v.value)


def encode_rand(v: RandEvent) -> bytes:
    return struct.pack("<QQ", v.seed1, v.seed2)


def user_var_value_bytes(type_code: int, value: Any, charset: int = 33,
                         flags: int | None = None) -> bytes:
    """The value bytes of a USER_VAR: text in the charset, REAL float64, INT 8 bytes (signed
    unless ``flags`` has UNSIGNED_F), DECIMAL precision<1> scale<1> + packed digits."""
    if type_code == 0:
        if isinstance(value, bytes):
            return value
        return str(value).encode(python_codec(charset), "surrogateescape")
    if type_code == 1:
        return struct.pack("<d", float(value))
    if type_code == 2:
        unsigned = bool(flags and flags & USER_VAR_UNSIGNED_F)
        return int(value).to_bytes(8, "little", signed=not unsigned)
    if type_code == 4:
        text = str(value).lstrip("-")
        ip, _, fp = text.partition(".")
        scale = len(fp)
        precision = max(len(ip.lstrip("0")) + scale, 1)
        return bytes((precision, scale)) + encode_decimal(value, precision, scale)
    raise ValueError(f"user variable type {type_code} is not a value type")


def encode_user_var(v: UserVarEvent) -> bytes:
    name = v.name.encode()
    out = _U32.pack(len(name)) + name + bytes((1 if v.is_null else 0,))
    if v.is_null:
        return out
    t = v.type if v.type is not None else 0
    cs = v.charset if v.charset is not None else 63
    raw = v.raw_value or user_var_value_bytes(t, v.value, cs, v.flags)
    out += struct.pack("<BII", t, cs, len(raw)) + raw
    if v.flags is not None:
        out += bytes((v.flags,))
    return out


def encode_incident(v: IncidentEvent) -> bytes:
    msg = v.message.encode()
    return struct.pack("<HB", v.incident, len(msg)) + msg


def encode_file_block(v: FileBlockEvent) -> bytes:
    """BEGIN_LOAD_QUERY or APPEND_BLOCK body (the caller picks the type code: the first block
    of a LOAD DATA file is a BEGIN_LOAD_QUERY, each further one an APPEND_BLOCK):
    file_id<4> and the block's bytes."""
    return _U32.pack(v.file_id) + v.block_data


def encode_heartbeat(v: HeartbeatEvent) -> bytes:
    """HEARTBEAT body (the file name); ``v.log_pos`` goes into the header's log_pos."""
    return v.log_file.encode()


def encode_heartbeat_v2(v: HeartbeatEvent) -> bytes:
    """HEARTBEAT_V2 (MySQL 8.0.26+): log_filename and log_position TLVs, then the end mark."""
    name = v.log_file.encode()
    pos = lenenc_int(v.log_pos)
    return (b"\x01" + lenenc_int(len(name)) + name + b"\x02" + lenenc_int(len(pos)) + pos
            + b"\x00")


def encode_ignorable(v: IgnorableEvent) -> bytes:
    return v.data


def encode_rows_query(v: RowsQueryEvent) -> bytes:
    q = v.query.encode()
    return bytes((min(len(q), 255),)) + q


def encode_annotate_rows(v: AnnotateRowsEvent) -> bytes:
    return v.query.encode()


def encode_binlog_checkpoint(v: BinlogCheckpointEvent) -> bytes:
    name = v.binlog_file.encode()
    return _U32.pack(len(name)) + name


def encode_start_encryption(v: StartEncryptionEvent) -> bytes:
    return struct.pack("<BI", v.crypto_scheme, v.key_version) + v.nonce[:12].ljust(12, b"\0")


def encode_xa_prepare(v: XaPrepareEvent) -> bytes:
    return (struct.pack("<BIII", 1 if v.one_phase else 0, v.format_id, len(v.gtrid),
                        len(v.bqual)) + v.gtrid + v.bqual)


def encode_transaction_context(v: TransactionContextEvent) -> bytes:
    """TRANSACTION_CONTEXT (MySQL group replication): the 18-byte post-header
    (server_uuid_len<1> thread_id<4> gtid_specified<1> snapshot_version_len<4>
    write_set_items<4> read_set_items<4>), the UUID, the snapshot version, then each write-set
    and read-set item as len<2> + bytes (libbinlogevents control_events.h)."""
    u = v.server_uuid.encode()
    out = struct.pack("<BIBIII", len(u), v.thread_id, 1 if v.gtid_specified else 0,
                      len(v.snapshot_version), len(v.write_set), len(v.read_set))
    out += u + v.snapshot_version
    for item in (*v.write_set, *v.read_set):
        out += struct.pack("<H", len(item)) + item
    return out


def encode_view_change(v: ViewChangeEvent) -> bytes:
    """VIEW_CHANGE (MySQL group replication): view_id NUL-padded to 40 bytes, seq_number<8>,
    the certification info's entry count<4>, then each key_len<2> key value_len<4> value
    (libbinlogevents control_events.h, VIEW_CHANGE_HEADER_LEN 52)."""
    out = v.view_id.encode()[:40].ljust(40, b"\0") + struct.pack(
        "<QI", v.seq_number, len(v.certification_info))
    for key, value in v.certification_info.items():
        k = key.encode()
        out += struct.pack("<H", len(k)) + k + _U32.pack(len(value)) + value
    return out


# ----------------------------------------------------------------------------- GTIDs
def encode_mariadb_gtid(v: MariadbGtidEvent) -> bytes:
    """MariaDB GTID body (the server id of the GTID goes into the header); zero-padded to the
    19-byte minimum as the server writes it."""
    out = struct.pack("<QIB", v.seq_no, v.domain_id, v.flags2)
    if v.flags2 & FL_GROUP_COMMIT_ID:
        out += struct.pack("<Q", v.commit_id or 0)
    if v.flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        g, b = v.xa_gtrid or b"", v.xa_bqual or b""
        out += struct.pack("<IBB", v.xa_format_id or 0, len(g), len(b)) + g + b
    if v.flags_extra:
        out += bytes((v.flags_extra,))
        if v.flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
            out += bytes((v.extra_engines or 0,))
        if v.flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            out += struct.pack("<Q", v.sa_seq_no or 0)
    return out.ljust(19, b"\0")


def encode_gtid_list(v: GtidListEvent) -> bytes:
    out = _U32.pack(len(v.gtids) | v.flags << 28)
    for g in v.gtids:
        out += struct.pack("<IIQ", g.domain_id, g.server_id, g.seq_no)
    return out


def _ts7(value: int, follows: bool) -> bytes:
    return (value | (_TS_ORIGINAL_FOLLOWS if follows else 0)).to_bytes(7, "little")


def encode_gtid(v: GtidEvent) -> bytes:
    """MySQL GTID / ANONYMOUS_GTID body (the fields of later versions when they are set)."""
    out = (bytes((v.flags,)) + uuid.UUID(v.sid).bytes
           + v.gno.to_bytes(8, "little", signed=True))
    if v.lt_type is None:
        return out
    out += bytes((v.lt_type,))
    if v.last_committed is not None:
        out += struct.pack("<QQ", v.last_committed, v.sequence_number or 0)
    ict = v.immediate_commit_timestamp
    if ict is None:
        return out
    oct_ = v.original_commit_timestamp
    if oct_ is not None and oct_ != ict:
        out += _ts7(ict, True) + _ts7(oct_, False)
    else:
        out += _ts7(ict, False)
    if v.transaction_length is None:
        return out
    out += lenenc_int(v.transaction_length)
    isv = v.immediate_server_version
    if isv is None:
        return out
    osv = v.original_server_version
    if osv is not None and osv != isv:
        out += _U32.pack(isv | _SV_ORIGINAL_FOLLOWS) + _U32.pack(osv)
    else:
        out += _U32.pack(isv)
    if v.commit_group_ticket is not None:
        out += struct.pack("<Q", v.commit_group_ticket)
    return out


def encode_previous_gtids(v: PreviousGtidsEvent) -> bytes:
    """PREVIOUS_GTIDS body: the tagged format (MySQL 8.3+) when the set has tags or was read
    in it, the untagged one otherwise (:func:`binlogscope.wire.gtid_sets.encode_gtid_set`)."""
    entries = [(e.sid, e.tag, [(i.start, i.end) for i in e.intervals]) for e in v.entries]
    return encode_gtid_set(entries, tagged=v.tagged or None)


def encode_gtid_tagged(v: GtidEvent) -> bytes:
    """GTID_TAGGED (MySQL 8.3+) body in the serialization-library format that
    :func:`~binlogscope.wire.binlog.gtid_events.decode_gtid_tagged` reads: version 1, the
    message size, the last non-ignorable field id (0), then ``field_id value`` pairs; the
    original commit timestamp and server version are left out when they equal the immediate
    ones, the commit group ticket when it is not set (as MySQL 9.6 writes them)."""
    fields: list[bytes] = [varlen_bytes(v.flags)]
    fields.append(b"".join(varlen_bytes(b) for b in uuid.UUID(v.sid).bytes))
    fields.append(varlen_bytes(v.gno, signed=True))
    tag = v.tag.encode("ascii")
    fields.append(varlen_bytes(len(tag)) + tag)
    fields.append(varlen_bytes(v.last_committed or 0, signed=True))
    fields.append(varlen_bytes(v.sequence_number or 0, signed=True))
    ict = v.immediate_commit_timestamp or 0
    fields.append(varlen_bytes(ict))
    oct_ = v.original_commit_timestamp
    fields.append(b"" if oct_ is None or oct_ == ict else varlen_bytes(oct_))
    fields.append(varlen_bytes(v.transaction_length or 0))
    isv = v.immediate_server_version or 0
    fields.append(varlen_bytes(isv))
    osv = v.original_server_version
    fields.append(b"" if osv is None or osv == isv else varlen_bytes(osv))
    t = v.commit_group_ticket
    fields.append(b"" if not t else varlen_bytes(t))
    payload = b"".join(varlen_bytes(i) + f for i, f in enumerate(fields) if f)
    head = varlen_bytes(1)  # serialization version
    last = varlen_bytes(0)
    size = len(head) + len(last) + len(payload) + 1
    while len(head) + len(varlen_bytes(size)) + len(last) + len(payload) != size:
        size = len(head) + len(varlen_bytes(size)) + len(last) + len(payload)
    return head + varlen_bytes(size) + last + payload


def encode_transaction_payload(uncompressed: bytes, compression_type: int = 0) -> bytes:
    """TRANSACTION_PAYLOAD body (MySQL 8.0.20+) holding the events ``uncompressed`` (each
    without a checksum, log_pos 0): payload_size, compression_type, uncompressed_size TLVs,
    the end mark, then the payload (zstd for type 0, as is for 255 NONE)."""
    if compression_type == 0:
        import zstandard

        payload = zstandard.ZstdCompressor().compress(uncompressed)
    elif compression_type == 255:
        payload = uncompressed
    else:
        raise ValueError(f"compression type {compression_type} has no encoder")

    def tlv(code: int, value: int) -> bytes:
        v = lenenc_int(value)
        return lenenc_int(code) + lenenc_int(len(v)) + v

    return (tlv(1, len(payload)) + tlv(2, compression_type) + tlv(3, len(uncompressed))
            + b"\x00" + payload)


#: value type -> (event type code, body encoder) for the events whose code the value decides
EVENT_ENCODERS: dict[type, tuple[int, Callable[[Any], bytes]]] = {
    FormatDescriptionEvent: (EventType.FORMAT_DESCRIPTION_EVENT, encode_format_description),
    RotateEvent: (EventType.ROTATE_EVENT, encode_rotate),
    StopEvent: (EventType.STOP_EVENT, encode_stop),
    XidEvent: (EventType.XID_EVENT, encode_xid),
    IntvarEvent: (EventType.INTVAR_EVENT, encode_intvar),
    RandEvent: (EventType.RAND_EVENT, encode_rand),
    UserVarEvent: (EventType.USER_VAR_EVENT, encode_user_var),
    IncidentEvent: (EventType.INCIDENT_EVENT, encode_incident),
    HeartbeatEvent: (EventType.HEARTBEAT_LOG_EVENT, encode_heartbeat),
    IgnorableEvent: (EventType.IGNORABLE_LOG_EVENT, encode_ignorable),
    RowsQueryEvent: (EventType.ROWS_QUERY_LOG_EVENT, encode_rows_query),
    AnnotateRowsEvent: (EventType.ANNOTATE_ROWS_EVENT, encode_annotate_rows),
    BinlogCheckpointEvent: (EventType.BINLOG_CHECKPOINT_EVENT, encode_binlog_checkpoint),
    StartEncryptionEvent: (EventType.START_ENCRYPTION_EVENT, encode_start_encryption),
    XaPrepareEvent: (EventType.XA_PREPARE_LOG_EVENT, encode_xa_prepare),
    TransactionContextEvent: (EventType.TRANSACTION_CONTEXT_EVENT, encode_transaction_context),
    ViewChangeEvent: (EventType.VIEW_CHANGE_EVENT, encode_view_change),
    MariadbGtidEvent: (EventType.GTID_EVENT, encode_mariadb_gtid),
    GtidListEvent: (EventType.GTID_LIST_EVENT, encode_gtid_list),
    PreviousGtidsEvent: (EventType.PREVIOUS_GTIDS_LOG_EVENT, encode_previous_gtids),
}


def encode_value_event(v: Any, *, timestamp: int = 0, server_id: int | None = None,
                       log_pos: int = 0, flags: int = 0, checksum: bool = True) -> bytes:
    """A whole event for a value of :data:`EVENT_ENCODERS` (a MySQL GtidEvent too). The
    server id of a MariaDB GTID and the log_pos of a HEARTBEAT come from the value."""
    code: int
    if isinstance(v, GtidEvent) and v.tag:
        code = EventType.GTID_TAGGED_LOG_EVENT
        body = encode_gtid_tagged(v)
    elif isinstance(v, GtidEvent):
        code = (EventType.ANONYMOUS_GTID_LOG_EVENT if v.anonymous
                else EventType.GTID_LOG_EVENT)
        body = encode_gtid(v)
    else:
        code, enc = EVENT_ENCODERS[type(v)]
        body = enc(v)
    if isinstance(v, MariadbGtidEvent) and server_id is None:
        server_id = v.server_id
    if isinstance(v, HeartbeatEvent):
        log_pos = v.log_pos
    return encode_event(code, body, timestamp=timestamp,
                        server_id=1 if server_id is None else server_id, log_pos=log_pos,
                        flags=flags, checksum=checksum)
