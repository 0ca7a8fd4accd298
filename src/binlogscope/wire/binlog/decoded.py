"""DecodedEvent: what decoding one binlog event gives (its own module so that the C fast path
glue, ``_cfast.py``, can build it without importing the decoder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.node import Node


@dataclass(slots=True)
class DecodedEvent:
    """The result of decoding one event."""

    offset: int  # absolute offset of the event's first byte in its source
    header: EventHeader | None
    body: Any  # the typed event value (None when the body could not be decoded)
    node: Node | None  # the annotated tree (None in fast mode)
    checksum_ok: bool | None  # None: no checksum in force
    checksum_stored: int | None = None
    checksum_computed: int | None = None
    error: str | None = None
    size: int = 0  # bytes consumed from the buffer
    raw: bytes | None = None  # the event's bytes (record mode only; the hex pane reads them)

    @property
    def type_name(self) -> str:
        return self.header.type_name if self.header else "UNKNOWN_EVENT"

    @property
    def end(self) -> int:
        return self.offset + self.size
