"""DecodedEvent: what decoding one binlog event gives (its own module, so that the layers
above can name the type without importing the decoder)."""

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
    node: Node | None  # the annotated tree (None when decoded without one)
    checksum_ok: bool | None  # None: no checksum in force
    checksum_stored: int | None = None
    checksum_computed: int | None = None
    error: str | None = None
    size: int = 0  # bytes consumed from the buffer
    #: the event's bytes (as go-mysql's RawData): the decoder reads them, the hex pane shows
    #: them, a rows event reads its row values from them on demand
    raw: bytes | None = None
    #: coordinates (set by :class:`binlogscope.wire.binlog.coords.CoordTracker`, None until
    #: then or when unknown): the binlog file the event is in, its start offset in that file
    #: (None for an event that is in no file: the dump's fake ROTATE, heartbeats...) and the
    #: GTID of the transaction it belongs to
    binlog_file: str | None = None
    file_pos: int | None = None
    trx_gtid: str | None = None

    @property
    def type_name(self) -> str:
        return self.header.type_name if self.header else "UNKNOWN_EVENT"

    @property
    def end(self) -> int:
        return self.offset + self.size
