"""Replication stream packets: what flows after COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID.

Source -> replica, one packet per event::

    0x00                       OK byte: an event follows
    [0xEF, flag]               semi-sync header, ONLY when the replica negotiated semi-sync
                               (flag 0x01: the source wants an ACK for this event)
    event                      19-byte header + body (+ CRC32), decoded by decode_event

``0xFE`` in a short packet is EOF (end of a non-blocking dump); ``0xFF`` is ERR (1236: the
requested file/position does not exist on the server: check SHOW BINARY LOGS).

Replica -> source, semi-sync ACK (sequence id 0, the source sends no reply)::

    0xEF                       semi-sync indicator
    int<8>                     binlog position acknowledged
    string<EOF>                binlog file name
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.header import HEADER_LEN, crc32
from binlogscope.wire.binlog.types import ChecksumAlg
from binlogscope.wire.constants import SEMI_SYNC_ACK_REQ, SEMI_SYNC_INDICATOR
from binlogscope.wire.fields import u8, u64
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

_U32 = struct.Struct("<I")
MISSING_MAGIC = "Missing magic number for semi-sync packet"


@dataclass(frozen=True, slots=True)
class SemiSyncHeader:
    """The 2 bytes a semi-sync source puts in front of each event."""

    flag: int

    @property
    def ack_requested(self) -> bool:
        return bool(self.flag & SEMI_SYNC_ACK_REQ)


@dataclass(slots=True)
class BinlogPacket:
    """One binlog network packet: the semi-sync header (if any) and the decoded event."""

    event: DecodedEvent
    semi_sync: SemiSyncHeader | None = None
    #: a protocol problem found outside the event (e.g. the semi-sync magic is missing)
    error: str | None = None


def looks_semi_sync(payload: bytes | bytearray | memoryview) -> bool:
    """Guess (for a capture joined mid-stream) whether a 0x00 packet carries the 2-byte header.

    True when byte 1 is 0xEF and the event header's event_size matches the rest of the payload
    only if 2 bytes are skipped.
    """
    n = len(payload)
    if n < 3 + HEADER_LEN or payload[1] != SEMI_SYNC_INDICATOR:
        return False
    with_hdr = _U32.unpack_from(payload, 3 + 9)[0] == n - 3
    without = n >= 1 + HEADER_LEN and _U32.unpack_from(payload, 1 + 9)[0] == n - 1
    return with_hdr and not without


def _guess_checksum(buf: bytes | bytearray | memoryview, start: int, end: int,
                    ctx: DecodeContext) -> None:
    """Before any FORMAT_DESCRIPTION (e.g. the artificial ROTATE that opens a dump, which
    MariaDB checksums too) the algorithm is unknown: accept CRC32 when the trailer matches."""
    if ctx.fde_seen or ctx.checksum_alg != ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF:
        return
    size = end - start
    if size < HEADER_LEN + 4 or _U32.unpack_from(buf, start + 9)[0] != size:
        return
    if crc32(buf[start : end - 4]) == _U32.unpack_from(buf, end - 4)[0]:
        ctx.checksum_alg = ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32


def decode_binlog_packet(
    r: ByteReader, caps: int, ctx: DecodeContext, *, semi_sync: bool | None = False
) -> BinlogPacket:
    """A 0x00 stream packet. ``semi_sync`` None: detect the header (mid-stream captures)."""
    status = r.u8("status", doc="0x00: a binlog event follows (0xFE would be EOF, 0xFF ERR)")
    if status != 0x00:
        raise ValueError(f"binlog packet status 0x{status:02x}, expected 0x00")
    if semi_sync is None:
        semi_sync = looks_semi_sync(r.buf[r.pos - 1 : r.end])
    header: SemiSyncHeader | None = None
    error: str | None = None
    if semi_sync:
        if r.peek_u8() == SEMI_SYNC_INDICATOR:
            r.begin("semi_sync_header", doc="2 bytes a semi-sync source puts before each event")
            r.u8("semi_sync_indicator", doc="0xEF: magic number of the semi-sync header")
            f = r.peek_u8() or 0
            flag = r.u8("semi_sync_flag",
                        doc="0x01: the source waits for an ACK of this event before it "
                        "tells the committing client OK",
                        display="0x01 ACK requested" if f & SEMI_SYNC_ACK_REQ else
                        f"0x{f:02x} no ACK wanted")
            r.end_group()
            header = SemiSyncHeader(flag)
        else:
            error = (f"at offset {r.offset}: {MISSING_MAGIC}: semi-sync was negotiated but "
                     f"byte 0x{r.peek_u8() or 0:02x} is not 0xEF")
            r.add_node(Node("error", r.offset, 0, None, "", "", "semi-sync header missing",
                            (), error))
    _guess_checksum(r.buf, r.pos, r.end, ctx)
    ev = decode_event(r.buf, ctx, start=r.pos, base=r.base, record=r.record)
    if ev.node is not None:
        r.add_node(ev.node)
    r.pos += ev.size
    if r.pos < r.end:
        r.rest("unparsed", doc="bytes after the event's event_size")
    return BinlogPacket(ev, header, error)


def encode_binlog_packet(event: bytes, semi_sync_flag: int | None = None) -> bytes:
    """``0x00`` + [0xEF + flag when semi-sync is on] + event bytes."""
    if semi_sync_flag is None:
        return b"\x00" + event
    return b"\x00" + bytes((SEMI_SYNC_INDICATOR, semi_sync_flag)) + event


@dataclass(frozen=True, slots=True)
class SemiSyncAck:
    """Replica -> source: 'I have this event' (sequence id 0; no reply)."""

    binlog_pos: int
    binlog_filename: str


def decode_semi_sync_ack(r: ByteReader, caps: int = 0) -> SemiSyncAck:
    ind = r.u8("semi_sync_indicator", doc="0xEF: a semi-sync ACK (not a command)")
    if ind != SEMI_SYNC_INDICATOR:
        raise ValueError(f"semi-sync ACK starts with 0x{ind:02x}, expected 0xEF")
    pos = r.u64("binlog_pos", doc="end position of the acknowledged event in the source's binlog")
    name = r.rest_str("binlog_filename", doc="binlog file of that position")
    return SemiSyncAck(pos, name)


def encode_semi_sync_ack(v: SemiSyncAck) -> bytes:
    return u8(SEMI_SYNC_INDICATOR) + u64(v.binlog_pos) + v.binlog_filename.encode()


def is_semi_sync_ack(payload: bytes) -> bool:
    return len(payload) >= 9 and payload[0] == SEMI_SYNC_INDICATOR
