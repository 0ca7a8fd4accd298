"""The ``file --json`` line of an event as the native kernel writes it: the layouts it
interprets (``_native/_line.c``, ``EventLines``), declared here.

One definition of the line: the keys and their order are :func:`~binlogscope.render.shapes.
binlog_event_json`'s - the template is made from what that function returns for probe events
of each body layout (so a key added there without a slot here turns the kernel's lines off
instead of writing another line); the values that are the same for the whole file (``file``,
``binlog_file``) are written once by the one serializer. The kernel fills the other keys from
the event's header (the layout of ``wire/binlog/header.py``), its checksum (CRC32, verified as
``wire/binlog/decode.py`` does) and the fixed part of the bodies below, read as the Python
decoders' common case reads them; any other event (another type, a bad or absent checksum, a
body those layouts do not cover) is declined and goes the Python path (decode_event -> shapes
-> the serializer), which stays the definition. ``tests/cli/test_file_lines.py`` holds both
paths byte-identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from binlogscope import _native
from binlogscope.render.json_out import dumps
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog.control_events import XidEvent
from binlogscope.wire.binlog.decoded import DecodedEvent, EventBody
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.types import EventType, event_type_name

if TYPE_CHECKING:
    from binlogscope._native._kernel import EventLines

#: the keys the kernel fills, and their value slot (``_line.c`` V_*, the same numbers)
SLOTS: dict[str, int] = {
    "offset": 1, "log_pos": 2, "gtid": 3, "event_type": 4, "type_code": 5, "timestamp": 6,
    "server_id": 7, "event_size": 8, "flags": 9, "checksum_ok": 10, "schema": 11, "table": 12,
    "rows": 13, "query": 14, "error": 15,
}
#: the keys whose value is the file's (written into the template's text)
FILE_KEYS = ("file", "binlog_file")

#: body layouts (``_line.c`` BODY_*, the same numbers): XID, its 8-byte xid
#: (``control_events.decode_xid``); a MariaDB GTID, seq_no, domain_id, flags2, the group
#: commit id when flagged, then zero padding (``gtid_events.decode_mariadb_gtid``; XA and
#: flags_extra decline)
BODY_XID = 1
BODY_MARIADB_GTID = 2
#: type code -> its body layout; a type not here is declined
BODY_LAYOUTS: dict[int, int] = {
    int(EventType.XID_EVENT): BODY_XID,
    int(EventType.GTID_EVENT): BODY_MARIADB_GTID,
}
#: a body of each layout, for the probe events the template is made from
_PROBE_BODIES: dict[int, EventBody] = {
    BODY_XID: XidEvent(1),
    BODY_MARIADB_GTID: MariadbGtidEvent("0-1-1", 1, 0, 1, 0),
}


def _probe_keys(code: int, layout: int) -> list[str]:
    """The keys of :func:`binlog_event_json` for an event of this body layout."""
    ev = DecodedEvent(4, EventHeader(0, code, 1, 27, 31, 0), _PROBE_BODIES[layout], None, True,
                      size=27, binlog_file="b")
    return list(binlog_event_json(ev, "f"))


def line_template(path: str, binlog_file: str | None
                  ) -> tuple[tuple[tuple[bytes, int], ...], bytes] | None:
    """The line's template for events of the file ``path`` (its events' ``binlog_file``):
    (text before each value, value slot) pairs and the closing text; None when the shape
    has a key the kernel cannot fill."""
    keys: list[str] | None = None
    for code, layout in BODY_LAYOUTS.items():
        got = _probe_keys(code, layout)
        if keys is not None and got != keys:
            return None  # (the layouts' lines differ in their keys: not one template)
        keys = got
    if not keys:
        return None
    pairs: list[tuple[bytes, int]] = []
    text = b"{"
    for i, key in enumerate(keys):
        text += (b"," if i else b"") + dumps(key) + b":"
        if key in FILE_KEYS:
            text += dumps(path if key == "file" else binlog_file)
            continue
        slot = SLOTS.get(key)
        if slot is None:
            return None
        pairs.append((text, slot))
        text = b""
    return tuple(pairs), text + b"}\n"


def event_lines(path: str, binlog_file: str | None) -> EventLines | None:
    """The kernel's line writer for the events of ``path``, or None (no kernel, or a shape
    it cannot write)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    template = line_template(path, binlog_file)
    if template is None:
        return None
    names = tuple(dumps(event_type_name(c)) if c in BODY_LAYOUTS else None for c in range(256))
    bodies = bytes(BODY_LAYOUTS.get(c, 0) for c in range(256))
    lines: EventLines = kernel.EventLines(template[0], template[1], names, bodies)
    return lines


__all__ = ["BODY_LAYOUTS", "SLOTS", "event_lines", "line_template"]
