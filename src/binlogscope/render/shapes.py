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
value. :func:`event_table` and :func:`rows_of` are the accessors the filters and the summary
line use; neither decodes row values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from binlogscope.events import (
    DecodeError,
    PacketDecoded,
    Peer,
    PhaseChanged,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.pipeline.filter import event_table
from binlogscope.wire.binlog.types import event_type_name
from binlogscope.wire.fields import redact
from binlogscope.wire.node import json_value

if TYPE_CHECKING:
    from binlogscope.drivers.live import LiveItem
    from binlogscope.drivers.pcap import CaptureItem
    from binlogscope.wire.binlog.decode import DecodedEvent

#: the body attributes the event shape reads (each ``None`` when the body has no such attribute)
_BODY_KEYS = ("schema", "table", "rows", "gtid", "query")
_NO_FIELDS = (None, None, None, None, None)

BodyFields = tuple[Any, Any, Any, Any, Any]

#: per body class: the function giving (schema, table, rows, gtid, query) of its instances
_getters: dict[type, Callable[[Any], BodyFields]] = {}


def _str_or_none(v: Any) -> str | None:
    return v if type(v) is str else None


def _generic_fields(body: Any) -> BodyFields:
    if body is None:
        return _NO_FIELDS
    schema, table, rows, gtid, query = (getattr(body, k, None) for k in _BODY_KEYS)
    return (_str_or_none(schema), _str_or_none(table), rows_json(rows), _str_or_none(gtid),
            _str_or_none(query))


def _getter(cls: type) -> Callable[[Any], BodyFields]:
    """The fields function of a body class. A slotted class (no instance ``__dict__``) has a
    fixed set of attributes, so its function reads only those: no failing getattr per event."""
    if cls.__dictoffset__ or cls is type(None):
        return _generic_fields
    s, t, r, g, q = (hasattr(cls, k) for k in _BODY_KEYS)
    if not (s or t or r or g or q):
        return lambda body: _NO_FIELDS
    if s and t and r and not g and not q:  # a rows event
        def rows_event(body: Any) -> BodyFields:
            schema = body.schema
            table = body.table
            return (schema if type(schema) is str else None,
                    table if type(table) is str else None, rows_json(body.rows), None, None)
        return rows_event
    if s and t and not (r or g or q):  # a TABLE_MAP
        def names(body: Any) -> BodyFields:
            schema = body.schema
            table = body.table
            return (schema if type(schema) is str else None,
                    table if type(table) is str else None, None, None, None)
        return names
    if g and not (s or t or r or q):  # a GTID
        def gtid(body: Any) -> BodyFields:
            value = body.gtid
            return None, None, None, value if type(value) is str else None, None
        return gtid
    if q and not (s or t or r or g):  # ANNOTATE_ROWS, ROWS_QUERY
        def query(body: Any) -> BodyFields:
            value = body.query
            return None, None, None, None, value if type(value) is str else None
        return query

    def fields(body: Any) -> BodyFields:
        return (_str_or_none(body.schema) if s else None, _str_or_none(body.table) if t else None,
                rows_json(body.rows) if r else None, _str_or_none(body.gtid) if g else None,
                _str_or_none(body.query) if q else None)
    return fields


def body_fields(body: Any) -> BodyFields:
    """(schema, table, rows, gtid, query) of an event body as the shapes write them."""
    get = _getters.get(type(body))
    if get is None:
        get = _getters[type(body)] = _getter(type(body))
    return get(body)


def rows_json(rows: Any) -> Any:
    """The ``rows`` value: the decoder's ``[{"before": image | None, "after": ...}, ...]``
    list as it is (the serializer writes its values), anything else rebuilt in that shape."""
    if rows is None or (type(rows) is list and (not rows or type(rows[0]) is dict)):
        return rows
    out: list[dict[str, Any]] = []
    for row in rows:
        if isinstance(row, dict):
            out.append({"before": row.get("before"), "after": row.get("after")})
        else:
            out.append({"before": getattr(row, "before", None),
                        "after": getattr(row, "after", None)})
    return out


def rows_of(ev: DecodedEvent) -> Any:
    """The event body's ``rows`` (None when it has none)."""
    body = ev.body
    return None if body is None else getattr(body, "rows", None)


#: type code -> event type name
_type_names: dict[int, str] = {}


def _type_name(code: int) -> str:
    name = _type_names.get(code)
    if name is None:
        name = _type_names[code] = event_type_name(code)
    return name


def _binlog_keys(out: dict[str, Any], ev: DecodedEvent, timestamp_key: str) -> None:
    """Add a binlog event's keys to ``out``: ``offset``, ``event_type``, the header's fields
    (its ``timestamp`` under ``timestamp_key``), ``checksum_ok``, ``schema``, ``table``,
    ``rows``, ``gtid``, ``query``. The one list of a binlog event's keys."""
    h = ev.header
    out["offset"] = ev.offset
    if h is None:
        out["event_type"] = ev.type_name
        out["type_code"] = out[timestamp_key] = out["server_id"] = out["event_size"] = None
        out["log_pos"] = out["flags"] = None
    else:
        code = h.type_code
        name = _type_names.get(code)
        out["event_type"] = name if name is not None else _type_name(code)
        out["type_code"] = code
        out[timestamp_key] = h.timestamp
        out["server_id"] = h.server_id
        out["event_size"] = h.event_size
        out["log_pos"] = h.log_pos
        out["flags"] = h.flags
    out["checksum_ok"] = ev.checksum_ok
    body = ev.body
    get = _getters.get(type(body))
    if get is None:
        get = _getters[type(body)] = _getter(type(body))
    out["schema"], out["table"], out["rows"], out["gtid"], out["query"] = get(body)


def binlog_event_json(ev: DecodedEvent, file: str | None = None) -> dict[str, Any]:
    """A binlog event read from a file: ``file``, the event's keys (:func:`_binlog_keys`),
    ``error``."""
    out: dict[str, Any] = {"file": file}
    _binlog_keys(out, ev, "timestamp")
    out["error"] = ev.error
    return out


def semi_sync_json(ev: PacketDecoded) -> dict[str, bool] | None:
    semi = ev.semi_sync
    if semi is None:
        return None
    return {"ack_requested": bool(semi.flag & 0x01)}


_SERVER = Peer.SERVER
_CLIENT = Peer.CLIENT


def _packet_keys(out: dict[str, Any], ev: PacketDecoded, timestamp_key: str) -> dict[str, Any]:
    """Add a decoded packet's keys to ``out`` (the flow/frame head of a capture item, or
    nothing) in their output order."""
    d = ev.direction  # (identity tests: an Enum's .value is a Python-level descriptor)
    out["direction"] = "server" if d is _SERVER else "client" if d is _CLIENT else d.value
    out["seq"] = ev.seq
    out["payload_length"] = ev.payload_length
    semi = ev.semi_sync
    out["semi_sync"] = None if semi is None else {"ack_requested": bool(semi.flag & 0x01)}
    bev = ev.binlog_event
    out["kind"] = "binlog_event" if bev is not None else ev.kind
    out["packet_offset"] = ev.offset
    out["error"] = ev.error
    if bev is not None:
        _binlog_keys(out, bev, timestamp_key)
    elif ev.node is not None:  # a tree was recorded: the payload's fields too
        payload = next((c for c in ev.node.children if c.name != "packet_header"), None)
        if payload is not None:
            out["fields"] = {c.name: json_value(c.value)
                             for c in redact(payload).children if not c.children}
    return out


def _other_event_keys(out: dict[str, Any], ev: SessionEvent | None) -> dict[str, Any] | None:
    """Add the keys of a session event that is not a packet; None: nothing to print."""
    if isinstance(ev, DecodeError):
        out.update(kind="decode_error", direction=ev.direction.value, offset=ev.offset,
                   error=ev.message)
    elif isinstance(ev, SequenceMismatch):
        out.update(kind="sequence_mismatch", direction=ev.direction.value, offset=ev.offset,
                   expected=ev.expected, got=ev.got)
    elif isinstance(ev, PhaseChanged):
        out.update({"kind": "phase", "from": ev.old.value, "to": ev.new.value,
                    "why": ev.reason})
    elif isinstance(ev, TlsStarted):
        out.update(kind="tls", offset=ev.offset)
    else:
        return None
    return out


def session_event_json(ev: SessionEvent | None) -> dict[str, Any] | None:
    """A session event (a packet, a decode error, ...); None: nothing to print."""
    if type(ev) is PacketDecoded:
        out: dict[str, Any] = {}
        _packet_keys(out, ev, "timestamp")
        # (a packet's keys begin with its kind)
        return {"kind": out.pop("kind"), **out}
    return _other_event_keys({}, ev)


def live_item_json(item: LiveItem) -> dict[str, Any] | None:
    """An item of the live replica: a session event, a setup step, a note or an error."""
    if item.kind == "step" and item.step is not None:
        s = item.step
        return {"kind": "step", "phase": s.phase, "what": s.what, "why": s.why, "sql": s.sql}
    if item.kind in ("note", "error"):
        return {"kind": item.kind, "text": item.text}
    return session_event_json(item.event)


#: the last flow seen and its name (a capture's packets come in runs of one flow)
_last_flow: list[Any] = [None, ""]


def capture_item_json(item: CaptureItem) -> dict[str, Any] | None:
    """An item of a capture: ``flow``, ``flow_id``, ``frame``, ``timestamp`` (the capture
    time), then the session event's keys; a binlog event's own header timestamp is
    ``event_timestamp``. Flow starts, notes and errors: ``kind`` and ``text``."""
    flow = item.flow
    last = _last_flow
    if flow is last[0]:
        name = last[1]
    else:
        name = last[1] = flow.name
        last[0] = flow
    out: dict[str, Any] = {"flow": name, "flow_id": flow.id, "frame": item.frame,
                           "timestamp": item.timestamp}
    ev = item.event
    if item.kind != "event":
        out["kind"] = item.kind
        out["text"] = item.text
        return out
    if type(ev) is PacketDecoded:
        return _packet_keys(out, ev, "event_timestamp")
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
    "rows_json",
    "rows_of",
    "semi_sync_json",
    "session_event_json",
]
