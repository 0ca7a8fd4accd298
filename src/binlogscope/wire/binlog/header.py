"""The 19-byte v4 common event header and the CRC32 trailer."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from binlogscope.wire.binlog.types import EventFlag, event_type_name, flag_names
from binlogscope.wire.reader import ByteReader

HEADER_LEN = 19
BINLOG_MAGIC = b"\xfebin"
_HEADER = struct.Struct("<IBIIIH")


@dataclass(slots=True)
class EventHeader:
    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int

    @property
    def type_name(self) -> str:
        return event_type_name(self.type_code)


def peek_header(buf: bytes | bytearray | memoryview, start: int = 0) -> EventHeader:
    """Unpack a header without recording (caller guarantees 19 bytes are there)."""
    return EventHeader(*_HEADER.unpack_from(buf, start))


def decode_header(r: ByteReader, type_map: dict[int, int] | None = None) -> EventHeader:
    r.begin("header", doc="v4 common event header: 19 bytes in front of every event")
    ts = r.u32("timestamp", doc="seconds since the epoch when the statement began on the source")
    if r.record:
        start = r.pos
        code = r.take(1, "event_type")[0]
        shown = f"{event_type_name(code)} ({code})"
        if type_map and code in type_map:
            wire_code, code = code, type_map[code]
            shown = (f"{event_type_name(code)} ({code}; numbered {wire_code} by this pre-GA "
                     "5.1/5.2 server)")
        r.leaf("event_type", start, code, wire="int<1>",
               doc="what kind of event follows; decides how the body is read",
               display=shown)
    else:
        code = r.u8("event_type")
        if type_map:
            code = type_map.get(code, code)
    sid = r.u32("server_id", doc="server_id of the server that first wrote the event "
                "(a replica skips its own id to break circular replication)")
    size = r.u32("event_size", doc="size of the whole event: header + body + checksum")
    pos = r.u32("log_pos", doc="offset in the source's binlog of the byte after this event "
                "(0 for artificial events)")
    if r.record:
        start = r.pos
        flags = int.from_bytes(r.take(2, "flags"), "little")
        r.leaf("flags", start, flags, wire="int<2>",
               doc="LOG_EVENT_*_F bits, e.g. BINLOG_IN_USE (file not closed cleanly), ARTIFICIAL",
               display=f"0x{flags:04x} {flag_names(flags, EventFlag)}")
    else:
        flags = r.u16("flags")
    r.end_group()
    return EventHeader(ts, code, sid, size, pos, flags)


def crc32(data: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF
