"""GTID events: MySQL GTID (33), ANONYMOUS_GTID (34), GTID_TAGGED (42), PREVIOUS_GTIDS (35);
MariaDB GTID (162) and GTID_LIST (163).

MySQL GTID / ANONYMOUS_GTID (fixed layout, fields appended over the versions)::

    flags<1> sid<16> gno<8>                                  (5.6)
    lt_type<1>=2 last_committed<8> sequence_number<8>        (5.7.6+: post-header of 42 bytes)
    immediate_commit_timestamp<7> [original_commit_timestamp<7>]   (8.0.1+; bit 55 of the
        immediate value says the original one follows, else both are equal)
    transaction_length<packed>                               (8.0.2+)
    immediate_server_version<4> [original_server_version<4>] (8.0.14+; bit 31 rule as above)
    commit_group_ticket<8>                                   (8.0.33+, only when set)

GTID_TAGGED (MySQL 8.3+) uses the MySQL serialization library instead: a version byte, the
message size and last non-ignorable field id as variable-length integers, then
``field_id value`` pairs (ids 0-11: flags, sid, gno, tag, last_committed, sequence_number,
immediate/original commit timestamp, transaction_length, immediate/original server version,
commit_group_ticket). A variable-length integer stores its byte count in the number of trailing
1-bits of the first byte; signed values are zig-zag encoded.
"""

from __future__ import annotations

import datetime as _dt
import struct
import uuid as _uuid
from dataclasses import dataclass, field

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.reader import ByteReader, DecodeError

FLAG_MAY_HAVE_SBR = 0x01
LOGICAL_TIMESTAMP_TYPECODE = 2
UNDEFINED_SERVER_VERSION = 999999
_TS_ORIGINAL_FOLLOWS = 1 << 55
_SV_ORIGINAL_FOLLOWS = 1 << 31

# MariaDB GTID_EVENT flags2
_GTID_HEAD = struct.Struct("<QIB")
FL_STANDALONE = 0x01
FL_GROUP_COMMIT_ID = 0x02
FL_TRANSACTIONAL = 0x04
FL_ALLOW_PARALLEL = 0x08
FL_WAITED = 0x10
FL_DDL = 0x20
FL_PREPARED_XA = 0x40
FL_COMPLETED_XA = 0x80
MARIADB_FLAGS2: dict[int, str] = {
    FL_STANDALONE: "FL_STANDALONE", FL_GROUP_COMMIT_ID: "FL_GROUP_COMMIT_ID",
    FL_TRANSACTIONAL: "FL_TRANSACTIONAL", FL_ALLOW_PARALLEL: "FL_ALLOW_PARALLEL",
    FL_WAITED: "FL_WAITED", FL_DDL: "FL_DDL", FL_PREPARED_XA: "FL_PREPARED_XA",
    FL_COMPLETED_XA: "FL_COMPLETED_XA",
}
FL_EXTRA_MULTI_ENGINE_E1 = 0x01
FL_START_ALTER_E1 = 0x02
FL_COMMIT_ALTER_E1 = 0x04
FL_ROLLBACK_ALTER_E1 = 0x08
MARIADB_FLAGS_EXTRA: dict[int, str] = {
    FL_EXTRA_MULTI_ENGINE_E1: "FL_EXTRA_MULTI_ENGINE_E1", FL_START_ALTER_E1: "FL_START_ALTER_E1",
    FL_COMMIT_ALTER_E1: "FL_COMMIT_ALTER_E1", FL_ROLLBACK_ALTER_E1: "FL_ROLLBACK_ALTER_E1",
}
# MariaDB GTID_LIST_EVENT flags (top 4 bits of the count)
GTID_LIST_FLAG_UNTIL_REACHED = 1
GTID_LIST_FLAG_IGN_GTIDS = 2


def _bits(value: int, table: dict[int, str]) -> str:
    names = [n for b, n in table.items() if value & b]
    rest = value & ~sum(table)
    if rest:
        names.append(hex(rest))
    return "|".join(names) if names else "0"


def format_usec_timestamp(usec: int) -> str:
    """Microseconds since the epoch as ``2024-02-29 12:34:56.123456 UTC``."""
    try:
        t = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=usec)
    except OverflowError:
        return f"{usec} us"
    return t.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def format_server_version(v: int) -> str:
    """80031 -> ``8.0.31``; 999999 -> ``undefined``."""
    if v == UNDEFINED_SERVER_VERSION:
        return "undefined (999999)"
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


# ============================================================================ values
@dataclass(slots=True)
class GtidEvent:
    """MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED."""

    gtid: str  # "uuid:gno", "uuid:tag:gno" or "ANONYMOUS"
    flags: int
    sid: str
    gno: int
    tag: str = ""
    lt_type: int | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    @property
    def anonymous(self) -> bool:
        return self.gtid == "ANONYMOUS"


@dataclass(slots=True)
class GtidInterval:
    start: int
    end: int  # exclusive, as on the wire


@dataclass(slots=True)
class GtidSetEntry:
    sid: str
    tag: str
    intervals: list[GtidInterval]


@dataclass(slots=True)
class PreviousGtidsEvent:
    gtid_set: str
    entries: list[GtidSetEntry] = field(default_factory=list)
    tagged: bool = False


@dataclass(slots=True)
class MariadbGtidEvent:
    gtid: str  # "domain-server-seq"
    seq_no: int
    domain_id: int
    server_id: int
    flags2: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    flags_extra: int = 0
    extra_engines: int | None = None
    sa_seq_no: int | None = None

    @property
    def standalone(self) -> bool:
        return bool(self.flags2 & FL_STANDALONE)


@dataclass(slots=True)
class MariadbGtid:
    domain_id: int
    server_id: int
    seq_no: int

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


@dataclass(slots=True)
class GtidListEvent:
    gtid_list: str
    gtids: list[MariadbGtid]
    flags: int


# ============================================================================ helpers
def _uuid_leaf(r: ByteReader, name: str, doc: str) -> str:
    p = r.pos
    raw = r.take(16, name)
    s = str(_uuid.UUID(bytes=raw))
    r.leaf(name, p, s, wire="byte<16>", doc=doc)
    return s


def _varlen_raw(r: ByteReader, name: str) -> int:
    """Read a serialization-library variable-length unsigned integer (no recording)."""
    p = r.pos
    if p >= r.end:
        raise DecodeError(r.base + p, f"{name!r}: truncated variable-length integer")
    first = r.buf[p]
    n = 0
    while n < 8 and first >> n & 1:
        n += 1
    size = n + 1
    b = r.take(size, name)
    if size == 9:
        return int.from_bytes(b[1:], "little")
    return int.from_bytes(b, "little") >> size


def varlen_bytes(value: int, *, signed: bool = False) -> bytes:
    """The serialization library's variable-length integer (the inverse of the reader below):
    the byte count in the trailing 1-bits of the first byte, 9 bytes for 64-bit values;
    ``signed``: zig-zag first."""
    if signed:
        value = value << 1 if value >= 0 else ((-value - 1) << 1) | 1
    if value < 0:
        raise ValueError(f"{value}: not an unsigned integer")
    for size in range(1, 9):
        if value < 1 << (7 * size):
            return ((value << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")
    if value >= 1 << 64:
        raise ValueError(f"{value}: more than 64 bits")
    return b"\xff" + value.to_bytes(8, "little")


def _varlen(r: ByteReader, name: str, doc: str, *, signed: bool = False,
            display: str = "") -> int:
    p = r.pos
    u = _varlen_raw(r, name)
    v = (-(u >> 1) - 1 if u & 1 else u >> 1) if signed else u
    r.leaf(name, p, v, wire="varlen_sint" if signed else "varlen_uint", doc=doc, display=display)
    return v


def _ts7(r: ByteReader, name: str, doc: str) -> tuple[int, bool]:
    p = r.pos
    raw = int.from_bytes(r.take(7, name), "little")
    follows = bool(raw & _TS_ORIGINAL_FOLLOWS)
    v = raw & (_TS_ORIGINAL_FOLLOWS - 1)
    if r.record:
        disp = format_usec_timestamp(v) + (" (original timestamp follows)" if follows else "")
        r.leaf(name, p, v, wire="int<7>", doc=doc, display=disp)
    return v, follows


def _sv4(r: ByteReader, name: str, doc: str) -> tuple[int, bool]:
    p = r.pos
    raw = int.from_bytes(r.take(4, name), "little")
    follows = bool(raw & _SV_ORIGINAL_FOLLOWS)
    v = raw & (_SV_ORIGINAL_FOLLOWS - 1)
    if r.record:
        disp = format_server_version(v) + (" (original version follows)" if follows else "")
        r.leaf(name, p, v, wire="int<4>", doc=doc, display=disp)
    return v, follows


_DOC_FLAGS = ("GTID flags: bit 0 FLAG_MAY_HAVE_SBR = the transaction may contain statement-"
              "based events (cleared for row-only transactions since 5.7.19/8.0.2)")
_DOC_SID = "source_uuid of the server where the transaction originated (GTID = uuid:gno)"
_DOC_GNO = "transaction number: n-th transaction of that source (0 for ANONYMOUS)"
_DOC_LT = "logical clock type: 2 = LOGICAL_TIMESTAMP (last_committed, sequence_number follow)"
_DOC_LC = ("sequence_number of the last transaction this one depends on: a multi-threaded "
           "replica may run transactions with the same last_committed in parallel")
_DOC_SEQ = "this transaction's logical timestamp within the binlog file"
_DOC_ICT = ("microseconds since the epoch when the transaction committed on the immediate "
            "source; high bit set = original_commit_timestamp follows")
_DOC_OCT = "microseconds since the epoch when it committed on the original source"
_DOC_TLEN = "size in bytes of the whole transaction, this GTID event included"
_DOC_ISV = ("version of the immediate source (e.g. 80031); high bit set = "
            "original_server_version follows")
_DOC_OSV = "version of the server where the transaction originated"
_DOC_TICKET = "binlog group commit ticket (group replication; 0 when unset)"


# ============================================================================ MySQL GTID
@decodes(EventType.GTID_LOG_EVENT,
         doc="GTID: starts a transaction and names it uuid:gno; carries the logical clock for "
         "parallel replication and commit timestamps")
@decodes(EventType.ANONYMOUS_GTID_LOG_EVENT,
         doc="ANONYMOUS_GTID: starts a transaction when GTIDs are off; same layout as GTID, "
         "no identity, still carries the logical clock")
def decode_gtid(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> GtidEvent:
    anonymous = h.type_code == EventType.ANONYMOUS_GTID_LOG_EVENT
    r.begin("post_header", doc="flags, GTID and logical clock")
    flags = r.u8("gtid_flags", doc=_DOC_FLAGS,
                 display=("FLAG_MAY_HAVE_SBR" if (r.peek_u8() or 0) & 1 else "0")
                 if r.record else "")
    sid = _uuid_leaf(r, "sid", _DOC_SID)
    gno = r.sint("gno", 8, doc=_DOC_GNO)
    ev = GtidEvent("ANONYMOUS" if anonymous else f"{sid}:{gno}", flags, sid, gno)
    if r.remaining > 0:
        ev.lt_type = r.u8("lt_type", doc=_DOC_LT)
        if ev.lt_type == LOGICAL_TIMESTAMP_TYPECODE and r.remaining >= 16:
            ev.last_committed = r.u64("last_committed", doc=_DOC_LC)
            ev.sequence_number = r.u64("sequence_number", doc=_DOC_SEQ)
    r.end_group()
    if r.remaining >= 7:
        ev.immediate_commit_timestamp, follows = _ts7(r, "immediate_commit_timestamp", _DOC_ICT)
        if follows:
            ev.original_commit_timestamp, _ = _ts7(r, "original_commit_timestamp", _DOC_OCT)
        else:
            ev.original_commit_timestamp = ev.immediate_commit_timestamp
        if r.remaining > 0:
            ev.transaction_length = r.packed_int("transaction_length", doc=_DOC_TLEN)
        if r.remaining >= 4:
            ev.immediate_server_version, follows = _sv4(r, "immediate_server_version", _DOC_ISV)
            if follows:
                ev.original_server_version, _ = _sv4(r, "original_server_version", _DOC_OSV)
            else:
                ev.original_server_version = ev.immediate_server_version
        if r.remaining >= 8:
            ev.commit_group_ticket = r.u64("commit_group_ticket", doc=_DOC_TICKET)
    return ev


_TAGGED_FIELDS = (
    "gtid_flags", "sid", "gno", "tag", "last_committed", "sequence_number",
    "immediate_commit_timestamp", "original_commit_timestamp", "transaction_length",
    "immediate_server_version", "original_server_version", "commit_group_ticket",
)


@decodes(EventType.GTID_TAGGED_LOG_EVENT,
         doc="GTID_TAGGED (MySQL 8.3+): a GTID with a tag (uuid:tag:gno), written in the "
         "MySQL serialization-library format")
def decode_gtid_tagged(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> GtidEvent:
    msg_start = r.pos
    r.begin("message_header", doc="serialization-library envelope of the event body")
    r.u8("serialization_version", doc="version of the serialization format (1 byte)")
    size = _varlen(r, "serializable_size", "size of the whole serialized body, this header "
                   "included (lets an old reader skip fields it does not know)")
    _varlen(r, "last_non_ignorable_field_id", "highest field id a reader must understand; "
            "unknown fields above it may be skipped")
    r.end_group()
    msg_end = msg_start + size
    if msg_end > r.end or msg_end < r.pos:
        raise DecodeError(r.base + msg_start, f"serializable_size {size} does not fit the body")
    ev = GtidEvent("", 0, "", 0)
    r.begin("fields", doc="field_id<varlen> + value pairs; absent fields take their defaults")
    while r.pos < msg_end:
        fid_start = r.pos
        fid = _varlen_raw(r, "field_id")
        if fid >= len(_TAGGED_FIELDS):
            r.pos = fid_start
            r.raw("unknown_fields", msg_end - r.pos,
                  doc="fields from a newer server; the message size lets a reader skip them")
            break
        name = _TAGGED_FIELDS[fid]
        r.pos = fid_start
        r.begin(name, doc=f"field {fid}: {name}")
        _varlen(r, "field_id", "serialization field id (position of the field in the "
                "definition)")
        if fid == 0:
            ev.flags = _varlen(r, "value", _DOC_FLAGS)
        elif fid == 1:
            p = r.pos
            octets = [_varlen_raw(r, "sid") for _ in range(16)]
            if max(octets) > 0xFF:
                r.pos = p
                raise DecodeError(r.base + p, "sid: an element does not fit in a byte")
            raw = bytes(octets)
            ev.sid = str(_uuid.UUID(bytes=raw))
            r.leaf("value", p, ev.sid, wire="varlen_uint[16]",
                   doc=_DOC_SID + " (16 bytes, each a variable-length integer)")
        elif fid == 2:
            ev.gno = _varlen(r, "value", _DOC_GNO, signed=True)
        elif fid == 3:
            n = _varlen(r, "length", "length of the tag")
            ev.tag = r.fixed_str("value", n, doc="GTID tag: names a group of transactions "
                                 "(SET gtid_next='AUTOMATIC:tag')")
        elif fid == 4:
            ev.last_committed = _varlen(r, "value", _DOC_LC, signed=True)
        elif fid == 5:
            ev.sequence_number = _varlen(r, "value", _DOC_SEQ, signed=True)
        elif fid in (6, 7):
            v = _varlen_raw_leaf(r, _DOC_ICT.split(";")[0] if fid == 6 else _DOC_OCT,
                                 format_usec_timestamp)
            if fid == 6:
                ev.immediate_commit_timestamp = v
            else:
                ev.original_commit_timestamp = v
        elif fid == 8:
            ev.transaction_length = _varlen(r, "value", _DOC_TLEN)
        elif fid in (9, 10):
            v = _varlen_raw_leaf(r, _DOC_ISV.split(";")[0] if fid == 9 else _DOC_OSV,
                                 format_server_version)
            if fid == 9:
                ev.immediate_server_version = v
            else:
                ev.original_server_version = v
        else:
            ev.commit_group_ticket = _varlen(r, "value", _DOC_TICKET)
        r.end_group()
    r.end_group()
    if ev.original_commit_timestamp is None:
        ev.original_commit_timestamp = ev.immediate_commit_timestamp
    if ev.original_server_version is None:
        ev.original_server_version = ev.immediate_server_version
    ev.lt_type = LOGICAL_TIMESTAMP_TYPECODE
    ev.gtid = f"{ev.sid}:{ev.tag}:{ev.gno}" if ev.tag else f"{ev.sid}:{ev.gno}"
    return ev


#: a serialization-library variable-length integer read with its leaf (GTID sets use it too)
read_varlen = _varlen


def _varlen_raw_leaf(r: ByteReader, doc: str, fmt: object) -> int:
    p = r.pos
    v = _varlen_raw(r, "value")
    if r.record:
        disp = fmt(v) if callable(fmt) else ""
        r.leaf("value", p, v, wire="varlen_uint", doc=doc, display=str(disp))
    return v


# ============================================================================ PREVIOUS_GTIDS
def format_gtid_set(entries: list[GtidSetEntry]) -> str:
    """``uuid:1-5:7,uuid2:tag:1-3`` (intervals are stored end-exclusive)."""
    out: list[str] = []
    last_sid = None
    for e in entries:
        iv = ":".join(f"{i.start}" if i.end - i.start == 1 else f"{i.start}-{i.end - 1}"
                      for i in e.intervals)
        part = (f"{e.tag}:{iv}" if e.tag else iv)
        if e.sid == last_sid and out:
            out[-1] += f":{part}"
        else:
            out.append(f"{e.sid}:{part}")
            last_sid = e.sid
    return ",".join(out)


@decodes(EventType.PREVIOUS_GTIDS_LOG_EVENT,
         doc="PREVIOUS_GTIDS: every GTID written before this file (gtid_executed at rotation); "
         "lets a reader find the file holding a given GTID")
def decode_previous_gtids(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> PreviousGtidsEvent:
    p = r.pos
    word = int.from_bytes(r.take(8, "n_sids"), "little")
    tagged = (word & 0xFF) == 1 and (word >> 56) == 1
    n_sids = (word >> 8) & ((1 << 48) - 1) if tagged else word
    r.leaf("n_sids", p, n_sids, wire="int<8>",
           doc="number of (uuid[, tag]) entries; in the tagged format (8.3+) the first and "
           "last byte are the format (1) and the count sits in between",
           display=f"{n_sids}" + (" (tagged format)" if tagged else ""))
    if n_sids > r.remaining // 24 + 1:
        raise DecodeError(r.base + p, f"n_sids {n_sids} cannot fit in {r.remaining} bytes")
    entries: list[GtidSetEntry] = []
    for i in range(n_sids):
        r.begin(f"sid_{i}" if r.record else "sid", doc="one source uuid and its GNO intervals")
        sid = _uuid_leaf(r, "sid", "source uuid")
        tag = ""
        if tagged:
            n = _varlen(r, "tag_length", "length of the tag (variable-length integer)")
            tag = r.fixed_str("tag", n, doc="GTID tag (empty for untagged GTIDs)")
        n_iv = r.u64("n_intervals", doc="number of GNO intervals")
        if n_iv > r.remaining // 16:
            raise DecodeError(r.offset, f"n_intervals {n_iv} cannot fit")
        ivs: list[GtidInterval] = []
        for j in range(n_iv):
            r.begin(f"interval_{j}" if r.record else "interval", doc="GNOs start..end-1")
            s = r.sint("start", 8, doc="first GNO of the interval")
            e = r.sint("end", 8, doc="one past the last GNO (end-exclusive)")
            r.end_group(display=f"{s}-{e - 1}" if r.record else None)
            ivs.append(GtidInterval(s, e))
        entry = GtidSetEntry(sid, tag, ivs)
        r.end_group(display=format_gtid_set([entry]) if r.record else None)
        entries.append(entry)
    return PreviousGtidsEvent(format_gtid_set(entries), entries, tagged)


#: docs of the MariaDB GTID fields seq_no, domain_id, flags2 and the zero padding
GTID_DOCS = (
    "sequence number: increases by one per event group in a domain",
    "replication domain (gtid_domain_id): independent streams of transactions",
    "FL_STANDALONE (no COMMIT follows: DDL), FL_GROUP_COMMIT_ID, FL_TRANSACTIONAL, "
    "FL_ALLOW_PARALLEL, FL_WAITED, FL_DDL, FL_PREPARED_XA, FL_COMPLETED_XA",
    "zero bytes padding the event to its 19-byte minimum (the server reads the first as "
    "flags_extra = 0)",
)


# ============================================================================ MariaDB
@decodes(EventType.GTID_EVENT,
         doc="GTID (MariaDB): starts an event group and names it domain-server-seq; replaces "
         "BEGIN")
def decode_mariadb_gtid(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> MariadbGtidEvent:
    if not r.record:
        # the common shape without a tree: seq, domain, flags2 without commit id / XA, then
        # only zero padding (what the general path below reads the same way)
        p = r.pos
        buf = r.buf
        if r.end - p >= 13 and not buf[p + 12] & (FL_GROUP_COMMIT_ID | FL_PREPARED_XA
                                                 | FL_COMPLETED_XA):
            rest = buf[p + 13 : r.end]
            if not any(rest):
                seq, dom, f2 = _GTID_HEAD.unpack_from(buf, p)
                r.pos = r.end
                return MariadbGtidEvent(f"{dom}-{h.server_id}-{seq}", seq, dom, h.server_id, f2)
    seq = r.u64("seq_no", doc=GTID_DOCS[0])
    dom = r.u32("domain_id", doc=GTID_DOCS[1])
    f2 = r.u8("flags2", doc=GTID_DOCS[2],
              display=_bits(r.peek_u8() or 0, MARIADB_FLAGS2) if r.record else "")
    ev = MariadbGtidEvent(f"{dom}-{h.server_id}-{seq}", seq, dom, h.server_id, f2)
    if f2 & FL_GROUP_COMMIT_ID:
        ev.commit_id = r.u64("commit_id", doc="group-commit id: groups with the same id "
                             "committed together and may be applied in parallel")
    if f2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        r.begin("xid", doc="XID of the XA transaction this group prepares or completes")
        ev.xa_format_id = r.u32("format_id", doc="XID formatID")
        gl = r.u8("gtrid_length", doc="length of the global transaction id")
        bl = r.u8("bqual_length", doc="length of the branch qualifier")
        ev.xa_gtrid = r.raw("gtrid", gl, doc="global transaction id")
        ev.xa_bqual = r.raw("bqual", bl, doc="branch qualifier")
        r.end_group()
    if r.remaining > 0:
        rest = r.peek(r.remaining)
        if not any(rest):
            r.rest("padding", doc=GTID_DOCS[3])
        else:
            fx = r.u8("flags_extra", doc="extra flags (MariaDB 10.8+): multi-engine "
                      "transaction, split ALTER TABLE phases",
                      display=_bits(r.peek_u8() or 0, MARIADB_FLAGS_EXTRA) if r.record else "")
            ev.flags_extra = fx
            if fx & FL_EXTRA_MULTI_ENGINE_E1:
                ev.extra_engines = r.u8("extra_engines", doc="number of engines beyond the "
                                        "first the transaction touched")
            if fx & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
                ev.sa_seq_no = r.u64("sa_seq_no", doc="seq_no of the START ALTER this "
                                     "COMMIT/ROLLBACK ALTER finishes")
            if r.remaining > 0 and not any(r.peek(r.remaining)):
                r.rest("padding", doc="zero padding to the 19-byte minimum")
    return ev


@decodes(EventType.GTID_LIST_EVENT,
         doc="GTID_LIST (MariaDB): the binlog state (last GTID of each domain/server) at the "
         "start of this file")
def decode_gtid_list(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> GtidListEvent:
    p = r.pos
    word = int.from_bytes(r.take(4, "count"), "little")
    count = word & ((1 << 28) - 1)
    flags = word >> 28
    if r.record:
        names = [n for b, n in ((GTID_LIST_FLAG_UNTIL_REACHED, "FLAG_UNTIL_REACHED"),
                                (GTID_LIST_FLAG_IGN_GTIDS, "FLAG_IGN_GTIDS")) if flags & b]
        r.leaf("count", p, count, wire="int<4>",
               doc="number of GTIDs (low 28 bits); the top 4 bits are flags "
               "(1 UNTIL_REACHED, 2 IGN_GTIDS)",
               display=f"{count}" + (f" flags={'|'.join(names)}" if flags else ""))
    if count > r.remaining // 16:
        raise DecodeError(r.base + p, f"count {count} cannot fit in {r.remaining} bytes")
    gtids: list[MariadbGtid] = []
    for i in range(count):
        r.begin(f"gtid_{i}" if r.record else "gtid", doc="one domain-server-seq GTID")
        d = r.u32("domain_id", doc="replication domain")
        s = r.u32("server_id", doc="server that wrote the GTID")
        q = r.u64("seq_no", doc="sequence number")
        g = MariadbGtid(d, s, q)
        r.end_group(display=str(g) if r.record else None)
        gtids.append(g)
    return GtidListEvent(",".join(str(g) for g in gtids), gtids, flags)
