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

The same writer takes a replication stream's server event packets for ``pcap --json``
(:func:`packet_lines`): the template is made from :func:`~binlogscope.render.shapes.
capture_item_json` of probe packets (the flow's own values, the server's direction and the
``binlog_event`` kind written into its text; the packet's sequence id, payload length,
semi-sync header and offset read by the kernel; the capture frame, wire time and binlog file
given by the driver as JSON text); ``session/packets.py`` ``stream_run`` offers it each packet
whose sequence id is the expected one and keeps every state; ``tests/drivers/capture/
test_pcap_lines.py`` holds both paths byte-identical.

``live --brief`` (:func:`brief_lines`) is the same writer with a text template found in what
the one text renderer (``render/text.py`` ``live_item_text``) writes for probe packets - the
head's values as slots, the event's own line as ``--summary``'s tail - so a renderer that
writes something the slots do not give has no template and the lines stay the renderer's;
``tests/drivers/live/test_live_lines.py`` holds both paths byte-identical.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from binlogscope import _native
from binlogscope.render.json_out import dumps
from binlogscope.render.line_context import (
    BODY_LAYOUTS,
    BODY_MARIADB_GTID,
    BODY_ROWS_V1,
    BODY_ROWS_V2,
    BODY_TABLE_MAP,
    BODY_TEXT,
    BODY_TEXT_AFTER_LENGTH,
    BODY_XID,
    LineContext,
    event_values,
)
from binlogscope.render.shapes import binlog_event_json, capture_item_json, live_item_json
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, RowsQueryEvent, XidEvent
from binlogscope.wire.binlog.decoded import DecodedEvent, EventBody
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.rows import INSERT, RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import EventType, event_type_name

if TYPE_CHECKING:
    from binlogscope._native._kernel import EventLines
    from binlogscope.drivers.items import Flow

#: the keys the kernel fills, and their value slot (``_line.c`` V_*, the same numbers)
SLOTS: dict[str, int] = {
    "offset": 1, "log_pos": 2, "gtid": 3, "event_type": 4, "type_code": 5, "timestamp": 6,
    "server_id": 7, "event_size": 8, "flags": 9, "checksum_ok": 10, "schema": 11, "table": 12,
    "rows": 13, "query": 14, "error": 15,
}
#: the ``file --summary`` line's own slots (``_line.c`` V_CLOCK, V_EVENT)
CLOCK = 16
EVENT = 17
#: the keys whose value is the file's (written into the template's text)
FILE_KEYS = ("file", "binlog_file")
#: a stream's event packet (``_line.c`` V_SEQ...: the packet's own values; V_TEXT0..2: the
#: values the caller gives as JSON text, ``EventLines.texts`` in this order)
PACKET_SLOTS: dict[str, int] = {
    "seq": 18, "payload_length": 19, "semi_sync": 20, "packet_offset": 21,
    "frame": 22, "wire_time": 23, "binlog_file": 24,
}
#: a capture item's keys that are the same for every event packet of a flow (written into
#: the template's text, as the probe item has them: the flow, its id, the server's direction,
#: the binlog_event kind)
FLOW_KEYS = ("flow", "flow_id", "direction", "kind")

#: a body of each layout, for the probe events the template is made from
_PROBE_BODIES: dict[int, EventBody] = {
    BODY_XID: XidEvent(1),
    BODY_MARIADB_GTID: MariadbGtidEvent("0-1-1", 1, 0, 1, 0),
    BODY_ROWS_V1: RowsEvent(1, "s", "t", INSERT, []),
    BODY_ROWS_V2: RowsEvent(1, "s", "t", INSERT, []),
    BODY_TEXT: AnnotateRowsEvent("q"),
    BODY_TEXT_AFTER_LENGTH: RowsQueryEvent("q"),
    BODY_TABLE_MAP: TableMapEvent(1, "s", "t", []),
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
    it cannot write). No event is taken before :meth:`LineContext.seen` has seen the
    decoder's context (the FORMAT_DESCRIPTION)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    template = line_template(path, binlog_file)
    if template is None:
        return None
    names = tuple(dumps(event_type_name(c)) if c in BODY_LAYOUTS else None for c in range(256))
    lines: EventLines = kernel.EventLines(template[0], template[1], names, bytes(256))
    return lines


@functools.cache
def printable() -> bytes:
    """The BMP characters beyond ASCII a statement's text in a kernel's text line may have
    (a bit each, ``EventLines.printable``): printable and not whitespace by this Python's
    ``str.isprintable``/``isspace`` - the characters ``render/text.py`` ``_query_text``
    neither squeezes nor escapes; a statement with any other is the Python path's."""
    bits = bytearray(8192)
    for start in range(0x80, 0x10000, 64):  # (a block of 64 at once where it can)
        block = "".join(map(chr, range(start, start + 64)))
        if block.isprintable() and len(block.split()) == 1:
            bits[start >> 3:(start + 64) >> 3] = b"\xff" * 8
            continue
        for cp in range(start, start + 64):
            ch = chr(cp)
            if ch.isprintable() and not ch.isspace():
                bits[cp >> 3] |= 1 << (cp & 7)
    return bytes(bits)


def summary_lines(path: str, clock: Callable[[int], str]) -> EventLines | None:
    """The kernel's writer of ``file --summary`` lines for the events of ``path`` (the columns
    of ``cli/file.py`` ``_summary_line``: the path, offset, end_log_pos, server id, the time
    as ``clock`` gives it, then the text renderer's ``event_line`` - the type's name and the
    tail of its body), or None (no kernel; a path that is not valid Unicode)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    try:
        head = f"  {path:<24}  ".encode()
    except UnicodeEncodeError:
        return None
    template = ((head, SLOTS["offset"], 10), (b"  ", SLOTS["log_pos"], 11),
                (b"  ", SLOTS["server_id"], 10), (b"  ", CLOCK), (b"  ", EVENT))
    names = tuple(event_type_name(c).encode() if c in BODY_LAYOUTS else None
                  for c in range(256))
    lines: EventLines = kernel.EventLines(template, b"\n", names, bytes(256))
    lines.clock = clock
    lines.printable = printable()
    return lines


def _probe_packet(flow: Flow | None, code: int, layout: int, flag: int | None
                  ) -> dict[str, Any]:
    """:func:`capture_item_json` of an event packet of ``flow`` (None: :func:`live_item_json`
    of a live replica's) holding an event of this body layout (semi-sync header with
    ``flag``, or none)."""
    from binlogscope.drivers.items import SourceItem
    from binlogscope.session.events import PacketDecoded, Peer, Phase
    from binlogscope.wire.replication import BinlogPacket, SemiSyncHeader

    ev = DecodedEvent(4, EventHeader(0, code, 1, 27, 31, 0), _PROBE_BODIES[layout], None, True,
                      size=27, binlog_file="b")
    semi = None if flag is None else SemiSyncHeader(flag)
    pkt = PacketDecoded(Peer.SERVER, 0, 1, 28, "binlog_event", BinlogPacket(ev, semi, None),
                        None, Phase.BINLOG_STREAM, semi, ev, None, 32, b"", 0.0)
    if flow is None:
        out = live_item_json(SourceItem("packet", pkt))
    else:
        out = capture_item_json(SourceItem("packet", pkt, "", None, 0.0, 1, flow))
    assert out is not None
    return out


def packet_template(flow: Flow | None) -> tuple[tuple[tuple[bytes, int], ...], bytes,
                                                tuple[bytes, bytes, bytes]] | None:
    """The ``pcap --json`` line's template of ``flow``'s server event packets (None: the
    ``live --json`` line of the replica's): (text before each value, value slot) pairs, the
    closing text, and the ``semi_sync`` value's text without a semi-sync header, with flag 0
    and with flag 1 - all from what :func:`capture_item_json` (:func:`live_item_json`)
    returns for probe packets; None when its keys differ between the body layouts or one
    has no slot."""
    keys: list[str] | None = None
    probe: dict[str, Any] = {}
    for code, layout in BODY_LAYOUTS.items():
        probe = _probe_packet(flow, code, layout, None)
        if keys is not None and list(probe) != keys:
            return None
        keys = list(probe)
    semis = tuple(dumps(_probe_packet(flow, int(EventType.XID_EVENT), BODY_XID, f).get("semi_sync"))
                  for f in (None, 0, 1))
    if not keys:
        return None
    pairs: list[tuple[bytes, int]] = []
    text = b"{"
    for i, key in enumerate(keys):
        text += (b"," if i else b"") + dumps(key) + b":"
        if key in FLOW_KEYS:
            text += dumps(probe[key])
            continue
        slot = PACKET_SLOTS.get(key, SLOTS.get(key))
        if slot is None:
            return None
        pairs.append((text, slot))
        text = b""
    return tuple(pairs), text + b"}\n", (semis[0], semis[1], semis[2])


#: the values a probe's ``--brief`` line is rendered with, by slot: each the line shows must
#: show once, as the kernel writes it (two sets: the template made from the first must give
#: the second's line)
_BRIEF_PROBES = ({"seq": 201, "payload_length": 30301, "file_pos": 40401, "file": "b.MARK",
                  "frame": 50501},
                 {"seq": 7, "payload_length": 58, "file_pos": 1234567, "file": "mysql-bin.9",
                  "frame": 3})
#: the probe values' slots
_BRIEF_SLOTS = {"seq": PACKET_SLOTS["seq"], "payload_length": PACKET_SLOTS["payload_length"],
                "file_pos": SLOTS["offset"], "file": PACKET_SLOTS["binlog_file"],
                "frame": PACKET_SLOTS["frame"]}
_SEMI = PACKET_SLOTS["semi_sync"]


def _brief_probe(flow: Flow | None, code: int, layout: int, flag: int | None,
                 values: dict[str, Any]) -> str | None:
    """The ``--brief`` text of an event packet holding a probe event of this body layout -
    ``flow``'s (:func:`~binlogscope.render.text.capture_item_text`), None: a live replica's
    (:func:`~binlogscope.render.text.live_item_text`) - without the event's own line at its
    end (:func:`~binlogscope.render.text.event_line`, the kernel's ``EVENT`` slot); None when
    it is not one line ending in that."""
    from binlogscope.drivers.items import SourceItem
    from binlogscope.render.text import capture_item_text, event_line, live_item_text
    from binlogscope.session.events import PacketDecoded, Peer, Phase
    from binlogscope.wire.replication import BinlogPacket, SemiSyncHeader

    ev = DecodedEvent(4, EventHeader(0, code, 1, 27, 31, 0), _PROBE_BODIES[layout], None, True,
                      size=27, binlog_file=values["file"], file_pos=values["file_pos"])
    semi = None if flag is None else SemiSyncHeader(flag)
    pkt = PacketDecoded(Peer.SERVER, 0, values["seq"], values["payload_length"],
                        "binlog_event", BinlogPacket(ev, semi, None), None,
                        Phase.BINLOG_STREAM, semi, ev, None, 32, b"", 0.0)
    if flow is None:
        got = live_item_text(SourceItem("packet", pkt), True)
    else:
        got = capture_item_text(SourceItem("packet", pkt, "", None, 0.0, values["frame"], flow),
                                True)
    tail = event_line(ev)
    if len(got) != 1 or not got[0].endswith(tail):
        return None
    return got[0][:len(got[0]) - len(tail)]


BriefTemplate = tuple[tuple[tuple[bytes, int], ...], bytes, tuple[bytes, ...]]


def _brief_layout(flow: Flow | None, code: int, layout: int) -> BriefTemplate | None:
    """The template of one body layout's probe lines (see :func:`brief_template`)."""
    flags = (None, 0) if flow is None else (None, 0, 1)
    values = _BRIEF_PROBES[0]
    got = [_brief_probe(flow, code, layout, f, values) for f in flags]
    plain = got[0]
    if plain is None:
        return None
    at = -1  # (the semi-sync text: what a flag's line has inserted into the plain one)
    semis: list[str] = [""]
    for line in got[1:]:
        if line is None or len(line) < len(plain):
            return None
        i = 0
        while i < len(plain) and plain[i] == line[i]:
            i += 1
        if at >= 0 and i != at:  # (one place for every flag's text)
            i = at
        text = line[i:i + len(line) - len(plain)]
        if line[:i] + line[i + len(text):] != plain:
            return None
        at = i
        semis.append(text)
    marks = [(at, 0, _SEMI)]
    name = event_type_name(code)
    for key, text in (("name", name), *((k, str(values[k])) for k in _BRIEF_SLOTS)):
        where = plain.find(text)
        if where < 0:
            continue  # (not in the line: not a slot of it; the second set checks that)
        if plain.find(text, where + 1) >= 0:
            return None
        marks.append((where, len(text), SLOTS["event_type"] if key == "name"
                      else _BRIEF_SLOTS[key]))
    marks.sort()
    pairs: list[tuple[bytes, int]] = []
    done = 0
    for where, length, slot in marks:
        if where < done:
            return None
        pairs.append((plain[done:where].encode(), slot))
        done = where + length
    pairs.append((plain[done:].encode(), EVENT))
    # the second set of values, filled in by the template, is the renderer's line
    other = _BRIEF_PROBES[1]
    fill = {SLOTS["event_type"]: name, **{s: str(other[k]) for k, s in _BRIEF_SLOTS.items()}}
    for flag, semi in zip(flags, semis, strict=True):
        fill[_SEMI] = semi
        want = _brief_probe(flow, code, layout, flag, other)
        if want is None or "".join(t.decode() + fill.get(s, "") for t, s in pairs) != want:
            return None
    return tuple(pairs), b"\n", tuple(t.encode() for t in semis)


def brief_template(flow: Flow | None = None) -> BriefTemplate | None:
    """The ``--brief`` line's template of ``flow``'s server event packets (None: the live
    replica's): (text before each value, value slot) pairs, the closing text, and the
    semi-sync header's text without a header, with flag 0 (and, for a capture, flag 1) -
    found in what the text renderer (``render/text.py`` ``capture_item_text``,
    ``live_item_text``) writes for probe packets of every body layout: the flow's prefix and
    the frame, the type's name, the sequence id, the payload length, the event's file and
    offset in it, the semi-sync text, then the event's own line (``EVENT``: the ``file
    --summary`` tail); None when a line has text these slots do not give (a renderer changed
    without a slot here), checked with a second set of probe values."""
    template: BriefTemplate | None = None
    for code, layout in BODY_LAYOUTS.items():
        got = _brief_layout(flow, code, layout)
        if got is None or (template is not None and got != template):
            return None
        template = got
    return template


def brief_lines(flow: Flow | None = None) -> tuple[EventLines, LineContext] | None:
    """The kernel's writer of ``flow``'s server event packets' ``--brief`` lines (None: the
    live replica's; :func:`brief_template`) and the context it is told, or None (no kernel,
    or a line it cannot write). As :func:`packet_lines`: a live replica's packet asking for
    a semi-sync ACK is declined; the values the caller gives are given as their text
    (:meth:`BriefContext.text`)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    template = brief_template(flow)
    if template is None:
        return None
    line = _stream_writer(kernel, template[0], template[1], str.encode)
    line.semi = template[2]
    line.printable = printable()
    return line, BriefContext(line, summary=True)


def packet_lines(flow: Flow | None) -> tuple[EventLines, LineContext] | None:
    """The kernel's writer of ``flow``'s server event packets' ``pcap --json`` lines and the
    context it is told (``session/packets.py`` ``stream_run`` offers it each packet; the
    driver's :class:`~binlogscope.session.packets.StreamLines` keeps it told), or None (no
    kernel, or a shape it cannot write). ``flow`` None: the ``live --json`` lines of the
    replica's stream, whose packets asking for a semi-sync ACK are declined (the replica
    sends the ACK right after the event is in its store)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    template = packet_template(flow)
    if template is None:
        return None
    line = _stream_writer(kernel, template[0], template[1], dumps)
    semi = template[2]
    line.semi = semi if flow is not None else semi[:2]  # (live: flag 1 is not given: declined)
    return line, LineContext(line)


def _stream_writer(kernel: Any, head: Any, tail: Any, name: Callable[[str], bytes]
                   ) -> EventLines:
    """A stream's event-packet line writer (``--json`` or ``--brief``) of a template's two
    parts, each covered type's name given as ``name`` writes it; no packet seen yet."""
    names = tuple(name(event_type_name(c)) if c in BODY_LAYOUTS else None for c in range(256))
    line: EventLines = kernel.EventLines(head, tail, names, bytes(256))
    line.at = -1
    return line


def text_plain(data: bytes) -> bool:
    """True: the kernel's UTF-8 ``data`` has nothing :func:`~binlogscope.render.escape.
    escape_controls` escapes (it may go to a UTF-8 stream as it is)."""
    kernel = _native.kernel
    return kernel is not None and bool(kernel.EventLines.text_plain(data))


class BriefContext(LineContext):
    """The context of ``live --brief`` lines: the tables' text as ``--summary``'s, and the
    binlog file given as the text renderer shows it (``?`` when not known)."""

    @staticmethod
    def text(value: Any) -> bytes:
        if isinstance(value, float):
            return b""  # (the arrival time: not in the line)
        try:  # (the frame; the binlog file, ``?`` when not known)
            return str(value if isinstance(value, int) else value or "?").encode()
        except UnicodeEncodeError:
            return None  # type: ignore[return-value]  # (not given: the kernel declines)


__all__ = ["BODY_LAYOUTS", "PACKET_SLOTS", "SLOTS", "BriefContext", "LineContext",
           "brief_lines", "brief_template", "event_lines", "event_values", "line_template",
           "packet_lines", "packet_template", "summary_lines", "text_plain"]
