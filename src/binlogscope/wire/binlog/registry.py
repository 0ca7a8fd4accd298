"""The event-decoder table: ``EVENT_DECODERS[type_code] -> decode function``.

A decoder reads the event *body* (post-header + payload, checksum excluded) from a
:class:`ByteReader` whose ``end`` is the end of the body, and returns a typed value. It records
its fields in the reader; bytes it leaves unread become an ``unparsed`` node. It may raise any
exception on bad input: ``decode_event`` turns that into an error node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.reader import ByteReader

EventDecoder = Callable[[ByteReader, DecodeContext, EventHeader], Any]

EVENT_DECODERS: dict[int, EventDecoder] = {}
#: one-line explanation per event type, for the event node's ``doc``
EVENT_DOCS: dict[int, str] = {}


def decodes(*codes: int, doc: str = "") -> Callable[[EventDecoder], EventDecoder]:
    """Register ``fn`` as the body decoder of the given event type codes."""

    def register(fn: EventDecoder) -> EventDecoder:
        for code in codes:
            EVENT_DECODERS[int(code)] = fn
            if doc:
                EVENT_DOCS[int(code)] = doc
        return fn

    return register
