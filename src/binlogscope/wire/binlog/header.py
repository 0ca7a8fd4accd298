"""The 19-byte v4 common event header and the CRC32 trailer."""

from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.types import EventFlag, EventType, event_type_name, is_heartbeat
from binlogscope.wire.constants import flag_names
from binlogscope.wire.reader import ByteReader

HEADER_LEN = 19
BINLOG_MAGIC = b"\xfebin"
#: the one layout of the v4 common header: timestamp, type code, server_id, event_size,
#: log_pos, flags (every reader and writer of a header uses it)
HEADER = struct.Struct("<IBIIIH")
#: LOG_EVENT_ARTIFICIAL_F: the event was made up by the dump thread and is in no file
ARTIFICIAL = int(EventFlag.LOG_EVENT_ARTIFICIAL_F)
_ROTATE = int(EventType.ROTATE_EVENT)


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
    return EventHeader(*HEADER.unpack_from(buf, start))


def is_artificial(h: EventHeader) -> bool:
    """The LOG_EVENT_ARTIFICIAL_F flag: an event the dump thread made up, in no binlog file
    (the fake ROTATE that starts a dump, MariaDB's fake GTID_LIST); the servers' own
    ``is_artificial_event()``. ``log_pos`` 0 alone does not say it: MariaDB 11.4 writes events
    of a transaction with ``log_pos`` 0 (``binlog_legacy_event_pos=OFF``, the default), and
    they are in the file (see :mod:`.coords`)."""
    return bool(h.flags & ARTIFICIAL)


def is_fake_rotate(h: EventHeader) -> bool:
    """The ROTATE a dump starts with (and sends at each file switch), naming the file the
    stream is in, itself in no file. MariaDB's clients tell it so: ``mariadb-binlog`` by its
    timestamp 0 (``rev->when == 0``), the replica by the artificial flag; both are tested."""
    return h.type_code == _ROTATE and (h.timestamp == 0 or bool(h.flags & ARTIFICIAL))


def in_no_file(h: EventHeader) -> bool:
    """Sent by the dump thread outside any file whatever its ``log_pos``: a heartbeat or an
    artificial event (a FORMAT_DESCRIPTION re-sent with ``log_pos`` 0 is told by the
    coordinates, :mod:`.coords`)."""
    return is_heartbeat(h.type_code) or is_artificial(h) or is_fake_rotate(h)


HEADER_DOC = "v4 common event header: 19 bytes in front of every event"
#: docs of timestamp, event_type, server_id, event_size, log_pos, flags
FIELD_DOCS = (
    "seconds since the epoch when the statement began on the source",
    "what kind of event follows; decides how the body is read",
    "server_id of the server that first wrote the event "
    "(a replica skips its own id to break circular replication)",
    "size of the whole event: header + body + checksum",
    "offset in the source's binlog of the byte after this event (0 for artificial events; "
    "MariaDB 11.4+ also writes 0 inside a transaction unless binlog_legacy_event_pos=ON)",
    "LOG_EVENT_*_F bits, e.g. BINLOG_IN_USE (file not closed cleanly), ARTIFICIAL",
)
#: display texts of event_type and flags, filled as they are met (at most 256 and 65,536
#: entries)
TYPE_DISPLAY: dict[int, str] = {}
FLAGS_DISPLAY: dict[int, str] = {}


def type_display(code: int) -> str:
    text = TYPE_DISPLAY.get(code)
    if text is None:
        text = TYPE_DISPLAY[code] = f"{event_type_name(code)} ({code})"
    return text


def flags_display(flags: int) -> str:
    text = FLAGS_DISPLAY.get(flags)
    if text is None:
        text = FLAGS_DISPLAY[flags] = f"0x{flags:04x} {flag_names(flags, EventFlag)}"
    return text


_last_time: list[Any] = [None, ""]


def time_display(ts: int) -> str:
    """``1795307206 (2026-11-22 12:26:46 UTC)``: a header timestamp a person can read (UTC,
    so a dump reads the same on every machine; 0 is the artificial events' "no time")."""
    if ts == _last_time[0]:
        return str(_last_time[1])
    text = f"{ts} ({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(ts))} UTC)" if ts else "0"
    _last_time[:] = [ts, text]
    return text


def decode_header(r: ByteReader, type_map: dict[int, int] | None = None) -> EventHeader:
    r.begin("header", doc=HEADER_DOC)
    if r.record and r.pos + 4 <= r.end:
        shown = time_display(int.from_bytes(r.buf[r.pos:r.pos + 4], "little"))
        ts = r.u32("timestamp", doc=FIELD_DOCS[0], display=shown)
    else:
        ts = r.u32("timestamp", doc=FIELD_DOCS[0])
    if r.record:
        start = r.pos
        code = r.take(1, "event_type")[0]
        shown = type_display(code)
        if type_map and code in type_map:
            wire_code, code = code, type_map[code]
            shown = (f"{event_type_name(code)} ({code}; numbered {wire_code} by this pre-GA "
                     "5.1/5.2 server)")
        r.leaf("event_type", start, code, wire="int<1>", doc=FIELD_DOCS[1], display=shown)
    else:
        code = r.u8("event_type")
        if type_map:
            code = type_map.get(code, code)
    sid = r.u32("server_id", doc=FIELD_DOCS[2])
    size = r.u32("event_size", doc=FIELD_DOCS[3])
    pos = r.u32("log_pos", doc=FIELD_DOCS[4])
    if r.record:
        start = r.pos
        flags = int.from_bytes(r.take(2, "flags"), "little")
        r.leaf("flags", start, flags, wire="int<2>", doc=FIELD_DOCS[5],
               display=flags_display(flags))
    else:
        flags = r.u16("flags")
    r.end_group()
    return EventHeader(ts, code, sid, size, pos, flags)


def crc32(data: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF
