"""DecodedEvent: what decoding one binlog event gives (its own module, so that the layers
above can name the type without importing the decoder), and :data:`EventBody`, the union of
the typed values a body decodes to: read a body by narrowing it (``isinstance(ev.body,
QueryEvent)``, ``match ev.body: case RowsEvent(): ...``) or through
:mod:`binlogscope.wire.binlog.bodies`, never by ``getattr``.

:class:`TransactionPayloadEvent` is defined here, not in ``payload_events``: it holds whole
``DecodedEvent`` values, so the two types are one recursion in one module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from binlogscope.wire.binlog import control_events as ce
from binlogscope.wire.binlog import gtid_events as ge
from binlogscope.wire.binlog import load_events as le
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.node import Node

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
COMPRESSION_NAMES = {COMPRESSION_ZSTD: "ZSTD", COMPRESSION_NONE: "NONE"}


@dataclass(slots=True)
class TransactionPayloadEvent:
    """A TRANSACTION_PAYLOAD: a transaction's events, compressed into one event."""

    compression_type: int
    payload_size: int
    uncompressed_size: int
    #: the inner events, decoded from ``uncompressed`` (offsets relative to it)
    events: list[DecodedEvent] = field(default_factory=list)
    uncompressed: bytes = b""

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression_type, f"unknown ({self.compression_type})")


#: every value an event body decodes to (``ExecuteLoadQueryEvent`` is a ``QueryEvent``)
EventBody: TypeAlias = (
    ce.FormatDescriptionEvent | ce.RotateEvent | ce.StopEvent | ce.StartEventV3 | ce.XidEvent
    | ce.IntvarEvent | ce.RandEvent | ce.UserVarEvent | ce.IncidentEvent | ce.HeartbeatEvent
    | ce.IgnorableEvent | ce.RowsQueryEvent | ce.AnnotateRowsEvent | ce.BinlogCheckpointEvent
    | ce.StartEncryptionEvent | ce.SlaveEvent | ce.XaPrepareEvent | ce.TransactionContextEvent
    | ce.ViewChangeEvent
    | ge.GtidEvent | ge.PreviousGtidsEvent | ge.MariadbGtidEvent | ge.GtidListEvent
    | le.FileBlockEvent | le.FileIdEvent | le.LoadEvent
    | QueryEvent | RowsEvent | TableMapEvent | TransactionPayloadEvent
)


@dataclass(slots=True)
class DecodedEvent:
    """The result of decoding one event."""

    offset: int  # absolute offset of the event's first byte in its source
    header: EventHeader | None
    #: the typed event value (None when the body could not be decoded, or its type is one
    #: binlogscope does not decode)
    body: EventBody | None
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
