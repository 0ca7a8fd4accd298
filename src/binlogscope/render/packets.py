"""How one session event (a packet, an error, a phase change) is printed: JSON and text.

Shared by every driver that shows a connection packet by packet (``binlogscope live``,
``binlogscope pcap``), so both print the same shapes.
"""

from __future__ import annotations

from typing import Any

from binlogscope.events import (
    DecodeError,
    PacketDecoded,
    PhaseChanged,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.render.text import render_node
from binlogscope.summary import event_summary, short_summary
from binlogscope.wire.fields import redact, redact_bytes
from binlogscope.wire.node import json_value


def semi_sync_json(ev: PacketDecoded) -> dict[str, bool] | None:
    if ev.semi_sync is None:
        return None
    return {"ack_requested": bool(ev.semi_sync.flag & 0x01)}


def event_json(ev: SessionEvent | None) -> dict[str, Any] | None:
    """The ``--json`` object of one session event (None: nothing to print)."""
    if isinstance(ev, PacketDecoded):
        base: dict[str, Any] = {
            "kind": ev.kind, "direction": ev.direction.value, "seq": ev.seq,
            "payload_length": ev.payload_length, "semi_sync": semi_sync_json(ev),
            "packet_offset": ev.offset, "error": ev.error,
        }
        if ev.binlog_event is not None:
            summary = event_summary(ev.binlog_event)
            summary.pop("file", None)
            summary.pop("error", None)
            base.update(summary)
            base["error"] = ev.error
            base["kind"] = "binlog_event"
        elif ev.node is not None:
            payload = next((c for c in ev.node.children if c.name != "packet_header"), None)
            if payload is not None:
                base["fields"] = {c.name: json_value(c.value)
                                  for c in redact(payload).children if not c.children}
        return base
    if isinstance(ev, DecodeError):
        return {"kind": "decode_error", "direction": ev.direction.value, "offset": ev.offset,
                "error": ev.message}
    if isinstance(ev, SequenceMismatch):
        return {"kind": "sequence_mismatch", "direction": ev.direction.value,
                "offset": ev.offset, "expected": ev.expected, "got": ev.got}
    if isinstance(ev, PhaseChanged):
        return {"kind": "phase", "from": ev.old.value, "to": ev.new.value, "why": ev.reason}
    if isinstance(ev, TlsStarted):
        return {"kind": "tls", "offset": ev.offset}
    return None


def wire_bytes(ev: PacketDecoded) -> bytes | None:
    """The packet as it was on the wire (header + payload), secrets masked with ``*``.

    None for a packet that came in several fragments (their headers are not kept).
    """
    if ev.node is None or ev.wire_length != len(ev.payload) + 4 or not ev.payload:
        return None
    raw = len(ev.payload).to_bytes(3, "little") + bytes([ev.seq & 0xFF]) + ev.payload
    return redact_bytes(ev.node, raw)


def event_text(ev: SessionEvent | None, brief: bool, prefix: str = "") -> list[str]:
    """The text lines of one session event (the head line, then the field dump)."""
    if isinstance(ev, PacketDecoded):
        arrow = "->" if ev.direction.value == "client" else "<-"
        title = ev.node.display if ev.node is not None else ev.kind
        semi = ""
        if ev.semi_sync is not None:
            semi = " [semi-sync" + (" ACK requested]" if ev.semi_sync.flag & 1 else "]")
        head = f"{prefix}{arrow} {ev.direction.value} {title}{semi}"
        if ev.binlog_event is not None:
            head += f"  {short_summary(ev.binlog_event)}"
        if ev.error:
            head += f"  !! {ev.error}"
        if brief or ev.node is None:
            return [head]
        lines = [head]
        lines.extend(list(render_node(redact(ev.node), wire_bytes(ev), base=ev.offset,
                                      explain=True))[1:])
        return lines
    if isinstance(ev, PhaseChanged):
        return [f"{prefix}-- phase {ev.old.value} -> {ev.new.value}: {ev.reason}"]
    if isinstance(ev, DecodeError):
        return [f"{prefix}!! {ev.direction.value} at {ev.offset}: {ev.message}"]
    if isinstance(ev, SequenceMismatch):
        return [f"{prefix}!! {ev.direction.value} at {ev.offset}: sequence id {ev.got}, "
                f"expected {ev.expected}"]
    if isinstance(ev, TlsStarted):
        return [f"{prefix}-- TLS: the rest of this connection is encrypted"]
    return []


__all__ = ["event_json", "event_text", "semi_sync_json"]
