"""The ``--json`` shape of every item the commands print: ONE function per item kind.

Each function maps one decoded item to a JSON-ready ``dict`` (keys in output order); the one
serializer (:mod:`binlogscope.render.json_out`) writes it. Every ``--json`` output and export
reads these functions, so adding or renaming a key is an edit here and nowhere else:

==========================  ==============================================================
:func:`binlog_event_json`   a binlog event read from a file (``binlogscope file --json``,
                            the TUI's JSON export of a file)
:func:`session_event_json`  a session event (a decoded packet of any kind - a binlog event
                            with the event keys and ``direction``/``seq``/``payload_length``
                            /``semi_sync``/``packet_offset``, a command, handshake or result
                            packet, a decode error, a sequence mismatch, a phase change,
                            the start of TLS); ``binlogscope live --json``, TUI exports
:func:`live_item_json`      an item of the live replica (a session event, a setup step, a
                            note or an error)
:func:`capture_item_json`   an item of a capture (``binlogscope pcap --json``): the flow,
                            frame and capture time, then the session event's keys
==========================  ==============================================================

Values stay as decoded: row images go to the serializer as they are (bytes become hex there,
see :func:`binlogscope.render.json_out.default`), so a row event costs no Python work per
value; rows not read yet come as the native kernel's JSON text of them
(``RowsEvent.rows_json_bytes``, the same bytes the serializer writes for the values), embedded
as a :class:`~binlogscope.render.json_out.Fragment`. :func:`event_table` and :func:`rows_of`
are the accessors the filters and the summary line use; neither decodes row values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from binlogscope.pipeline.filter import event_table
from binlogscope.render.json_out import Fragment
from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    PacketDecoded,
    Peer,
    PhaseChanged,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, RotateEvent, RowsQueryEvent
from binlogscope.wire.binlog.decoded import EventBody, TransactionPayloadEvent
from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
from binlogscope.wire.binlog.load_events import LoadEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import event_type_name
from binlogscope.wire.commands import gtid_set_text
from binlogscope.wire.constants import Command
from binlogscope.wire.fields import REDACTED, redact
from binlogscope.wire.node import json_value

if TYPE_CHECKING:
    from binlogscope.drivers.items import SourceItem
    from binlogscope.wire.binlog.decode import DecodedEvent

BodyFields = tuple[str | None, str | None, Any, str | None, str | None]
_NO_FIELDS: BodyFields = (None, None, None, None, None)


def _rows_fields(body: RowsEvent) -> BodyFields:
    text = body.rows_json_bytes()
    return body.schema, body.table, body.rows if text is None else Fragment(text), None, None


def _table_fields(body: TableMapEvent | LoadEvent) -> BodyFields:
    return body.schema, body.table, None, None, None


def _gtid_fields(body: GtidEvent | MariadbGtidEvent) -> BodyFields:
    return None, None, None, body.gtid, None


def _query_fields(body: QueryEvent) -> BodyFields:
    return body.schema, None, None, None, body.query


def _text_fields(body: RowsQueryEvent | AnnotateRowsEvent) -> BodyFields:
    return None, None, None, None, body.query


def _no_fields(body: object) -> BodyFields:
    return _NO_FIELDS


def _fields_reader(body: EventBody | None) -> Callable[[Any], BodyFields]:
    """Which of the readers above gives a body's fields (by its class)."""
    match body:
        case RowsEvent():
            return _rows_fields
        case TableMapEvent() | LoadEvent():
            return _table_fields
        case GtidEvent() | MariadbGtidEvent():
            return _gtid_fields
        case QueryEvent():
            return _query_fields
        case RowsQueryEvent() | AnnotateRowsEvent():
            return _text_fields
    return _no_fields


#: body class -> its fields' reader (:func:`_fields_reader`, looked up once per class: a
#: ``match`` over the classes per event was 8 class tests for an XID)
_FIELDS_OF: dict[type, Callable[[Any], BodyFields]] = {}


def body_fields(body: EventBody | None) -> BodyFields:
    """(schema, table, rows, gtid, query) of an event body as the shapes write them: a rows
    event's rows not read yet are the kernel's JSON text of them, embedded as it is by the
    serializer."""
    reader = _FIELDS_OF.get(type(body))
    if reader is None:
        reader = _FIELDS_OF[type(body)] = _fields_reader(body)
    return reader(body)


def rows_of(ev: DecodedEvent) -> list[dict[str, Any]] | None:
    """The event body's ``rows`` (None when it has none)."""
    body = ev.body
    return body.rows if isinstance(body, RowsEvent) else None


#: type code -> event type name
_type_names: dict[int, str] = {}


def _type_name(code: int) -> str:
    name = _type_names.get(code)
    if name is None:
        name = _type_names[code] = event_type_name(code)
    return name


_ROTATE = 4  # ROTATE_EVENT: its target file and position are keys of their own
#: TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+): its decompressed events are listed under ``events``
_TRANSACTION_PAYLOAD = 40


def _binlog_keys(out: dict[str, Any], ev: DecodedEvent) -> None:
    """Add a binlog event's keys to ``out``: its coordinates ``binlog_file``, ``offset`` (its
    start in that file), ``log_pos`` (its end), ``gtid`` (the transaction's), then
    ``event_type``, the header's fields (``timestamp`` is the header's), ``checksum_ok``,
    ``schema``, ``table``, ``rows``, ``query``; a ROTATE adds ``next_file`` and
    ``next_position``. The one list of a binlog event's keys, for every source
    (docs/coordinates.md).

    ``binlog_file``, ``offset``, ``log_pos`` and ``gtid`` come first: the coordinates a
    consumer keys on (to drop the repeats of a resumed stream, to find the event in the file).
    """
    h = ev.header
    out["binlog_file"] = ev.binlog_file
    out["offset"] = ev.file_pos
    out["log_pos"] = None if h is None else h.log_pos
    out["gtid"] = None
    if h is None:
        out["event_type"] = ev.type_name
        out["type_code"] = out["timestamp"] = out["server_id"] = out["event_size"] = None
        out["flags"] = None
        code = -1
    else:
        code = h.type_code
        name = _type_names.get(code)
        out["event_type"] = name if name is not None else _type_name(code)
        out["type_code"] = code
        out["timestamp"] = h.timestamp
        out["server_id"] = h.server_id
        out["event_size"] = h.event_size
        out["flags"] = h.flags
    out["checksum_ok"] = ev.checksum_ok
    body = ev.body
    reader = _FIELDS_OF.get(type(body))  # (body_fields, inline)
    if reader is None:
        reader = _FIELDS_OF[type(body)] = _fields_reader(body)
    out["schema"], out["table"], out["rows"], gtid, out["query"] = reader(body)
    trx = ev.trx_gtid
    out["gtid"] = trx if trx is not None else gtid
    if code == _ROTATE:
        rotate = body if isinstance(body, RotateEvent) else None
        out["next_file"] = None if rotate is None else rotate.next_log_name
        out["next_position"] = None if rotate is None else rotate.position
    elif code == _TRANSACTION_PAYLOAD and isinstance(body, TransactionPayloadEvent):
        out["events"] = [_inner_event_json(e, ev, out["gtid"]) for e in body.events]


def _inner_event_json(e: DecodedEvent, outer: DecodedEvent, gtid: Any) -> dict[str, Any]:
    """An event inside a TRANSACTION_PAYLOAD: the keys of any binlog event (``binlog_file``,
    ``offset`` and ``gtid`` are the outer event's: the inner events have no place of their own
    in the file, and MySQL writes ``log_pos`` 0 in them), ``payload_offset`` (its start in the
    decompressed payload), ``error``."""
    out: dict[str, Any] = {}
    if e.binlog_file is None:
        e.binlog_file = outer.binlog_file
    if e.trx_gtid is None and type(gtid) is str:
        e.trx_gtid = gtid
    if e.file_pos is None:
        e.file_pos = outer.file_pos
    _binlog_keys(out, e)
    out["payload_offset"] = e.offset
    out["error"] = e.error
    return out


def binlog_event_json(ev: DecodedEvent, file: str | None = None) -> dict[str, Any]:
    """A binlog event read from a file: ``file`` (the path read), the event's keys
    (:func:`_binlog_keys`), ``error``."""
    out: dict[str, Any] = {"file": file}
    _binlog_keys(out, ev)
    out["error"] = ev.error
    return out


def semi_sync_json(ev: PacketDecoded) -> dict[str, bool] | None:
    semi = ev.semi_sync
    if semi is None:
        return None
    return {"ack_requested": bool(semi.flag & 0x01)}


_SERVER = Peer.SERVER
_CLIENT = Peer.CLIENT


def _packet_keys(out: dict[str, Any], ev: PacketDecoded) -> dict[str, Any]:
    """Add a decoded packet's keys to ``out`` (the flow/frame head of a capture item, or
    nothing) in their output order: ``direction``, ``seq``, ``payload_length``,
    ``semi_sync``, ``kind``, ``packet_offset`` (in the direction's byte stream),
    ``wire_time``, ``error``, then a binlog event's keys or a packet's ``fields``."""
    d = ev.direction  # (identity tests: an Enum's .value is a Python-level descriptor)
    out["direction"] = "server" if d is _SERVER else "client" if d is _CLIENT else d.value
    out["seq"] = ev.seq
    out["payload_length"] = ev.payload_length
    semi = ev.semi_sync
    out["semi_sync"] = None if semi is None else {"ack_requested": bool(semi.flag & 0x01)}
    bev = ev.binlog_event
    out["kind"] = "binlog_event" if bev is not None else ev.kind
    out["packet_offset"] = ev.offset
    t = ev.wire_time
    out["wire_time"] = None if t is None else round(t, 6)
    out["error"] = ev.error
    if bev is not None:
        _binlog_keys(out, bev)
    else:
        fields = packet_fields(ev)
        if fields is not None:
            out["fields"] = fields
    return out


#: per value class: its (field name, secret) pairs (a secret field is ``repr=False``)
_value_fields: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, bool], ...]:
    got = _value_fields.get(cls)
    if got is None:
        got = _value_fields[cls] = tuple(
            (f.name, not f.repr) for f in dataclasses.fields(cls))
    return got


def packet_fields(ev: PacketDecoded) -> dict[str, Any] | None:
    """``fields`` of a packet that is not a binlog event, the same with or without a tree:
    its typed value's fields (a COM_QUERY's ``query``, a COM_BINLOG_DUMP's
    ``binlog_filename``/``binlog_pos``/``flags``/``server_id``, a COM_BINLOG_DUMP_GTID's
    ``gtid_set``, COM_REGISTER_SLAVE's fields, an ERR's ``error_code``/``sql_state``/
    ``error_message``, a plain command's ``command`` name such as ``COM_QUIT``), else the
    leaves of its tree when one was recorded. Secrets (scrambles, auth responses, passwords)
    are always ``<redacted>``."""
    value = ev.value
    if value is not None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for name, secret in _fields_of(type(value)):
            v = getattr(value, name)
            if secret:
                out[name] = REDACTED if v else json_value(v)
            elif name == "gtid_set" and type(v) is tuple:
                out[name] = gtid_set_text(v)
            elif name == "command" and type(v) is int:
                try:
                    out[name] = Command(v).name
                except ValueError:
                    out[name] = v
            else:
                out[name] = json_value(v)
        return out
    node = ev.node
    if node is None:
        return None
    payload = next((c for c in node.children if c.name != "packet_header"), None)
    if payload is None:
        return None
    return {c.name: json_value(c.value) for c in redact(payload).children if not c.children}


def _other_event_keys(out: dict[str, Any], ev: SessionEvent | None) -> dict[str, Any] | None:
    """Add the keys of a session event that is not a packet; None: nothing to print."""
    if isinstance(ev, DecodeError):
        out.update(kind="decode_error", direction=ev.direction.value,
                   packet_offset=ev.offset, error=ev.message)
    elif isinstance(ev, SequenceMismatch):
        out.update(kind="sequence_mismatch", direction=ev.direction.value,
                   packet_offset=ev.offset, expected=ev.expected, got=ev.got)
    elif isinstance(ev, PhaseChanged):
        out.update({"kind": "phase", "from": ev.old.value, "to": ev.new.value,
                    "why": ev.reason})
    elif isinstance(ev, TlsStarted):
        out.update(kind="tls", packet_offset=ev.offset, terminated=ev.terminated)
    elif isinstance(ev, CompressedFrame):
        f = ev.frame
        out.update(kind="compressed_frame", direction=ev.direction.value,
                   packet_offset=ev.offset, sequence_id=f.sequence_id,
                   compressed_length=f.compressed_length,
                   uncompressed_length=f.uncompressed_length,
                   algorithm=f.algorithm if f.uncompressed_length else "stored",
                   plain_offset=f.plain_offset, plain_length=len(f.plain))
    else:
        return None
    return out


def session_event_json(ev: SessionEvent | None) -> dict[str, Any] | None:
    """A session event (a packet, a decode error, ...); None: nothing to print."""
    if type(ev) is PacketDecoded:
        out: dict[str, Any] = {}
        _packet_keys(out, ev)
        # (a packet's keys begin with its kind)
        return {"kind": out.pop("kind"), **out}
    return _other_event_keys({}, ev)


def live_item_json(item: SourceItem) -> dict[str, Any] | None:
    """An item of the live replica: a session event, a setup step, a note or an error."""
    if item.kind == "step" and item.step is not None:
        s = item.step
        return {"kind": "step", "phase": s.phase, "what": s.what, "why": s.why, "sql": s.sql}
    if item.kind in ("note", "error"):
        return {"kind": item.kind, "text": item.text}
    if item.kind == "health":
        return {"kind": "health", **(item.health or {})}
    return session_event_json(item.event)


#: the last flow seen and its name (a capture's packets come in runs of one flow)
_last_flow: list[Any] = [None, ""]


def capture_item_json(item: SourceItem) -> dict[str, Any] | None:
    """An item of a capture: ``flow``, ``flow_id``, ``frame``, ``wire_time`` (the capture
    time of the frame), then the session event's keys (a binlog event's ``timestamp`` is its
    header's, as from every source). Flow starts, notes and errors: ``kind`` and ``text``."""
    flow = item.flow
    last = _last_flow
    if flow is last[0]:
        name = last[1]
    else:
        name = last[1] = flow.name
        last[0] = flow
    ev = item.event
    if type(ev) is PacketDecoded and item.kind == "packet":  # (wire_time: set by the packet)
        out: dict[str, Any] = {"flow": name, "flow_id": flow.id, "frame": item.frame,
                               "wire_time": None}
        if item.injected:  # (the proxy's fault action made this damage)
            out["injected"] = True
        return _packet_keys(out, ev)
    out = {"flow": name, "flow_id": flow.id, "frame": item.frame,
           "wire_time": round(item.time or 0.0, 6)}
    if item.kind != "packet":
        out["kind"] = item.kind
        out["text"] = item.text
        return out
    if item.injected:
        out["injected"] = True
    keys = _other_event_keys({}, ev)
    if keys is None:
        return None
    out["direction"] = keys.pop("direction", None)
    out.update(keys)
    return out


__all__ = [
    "binlog_event_json",
    "body_fields",
    "capture_item_json",
    "event_table",
    "live_item_json",
    "packet_fields",
    "rows_of",
    "semi_sync_json",
    "session_event_json",
]
