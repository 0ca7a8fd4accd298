"""Control events: FORMAT_DESCRIPTION, ROTATE, STOP (the events that shape the stream)."""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.wire.binlog.context import DecodeContext, fde_has_checksum_alg
from binlogscope.wire.binlog.header import HEADER_LEN, EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import ChecksumAlg, EventType, event_type_name
from binlogscope.wire.reader import ByteReader


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
        code = r.peek_u8()
        try:
            shown = ChecksumAlg(code).name if code is not None else ""
        except ValueError:
            shown = f"unknown ({code})"
        alg = r.u8("checksum_alg",
                   doc="checksum algorithm of every following event: 0 OFF, 1 CRC32 "
                   "(servers from MySQL 5.6.1 / MariaDB 5.3 on)", display=shown)
    # the FDE changes how everything after it is read
    ctx.binlog_version = ver
    ctx.server_version = server_version
    ctx.header_len = header_len
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
