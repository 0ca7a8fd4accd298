"""Session events: what :meth:`binlogscope.session.Session.events` yields.

Dataclasses, no behaviour. Every event names the direction it belongs to and the absolute
offset (within that direction's byte stream) where it starts. :class:`PacketDecoded` (one per
packet, the hot one) is a plain ``slots=True`` dataclass: read-only by convention, cheap to
build; the rare ones are frozen.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.compressed import Frame
from binlogscope.wire.node import Node
from binlogscope.wire.replication import SemiSyncHeader


class Peer(Enum):
    """Who sent the bytes."""

    CLIENT = "client"  # the replica (or any client)
    SERVER = "server"  # the source


class Role(Enum):
    """What the session is: one end of the connection, or a passive observer (pcap)."""

    REPLICA = "replica"  # we are the client (MockSlave)
    SOURCE = "source"  # we are the server (MockMaster)
    OBSERVER = "observer"  # we only watch (captures)


class Phase(Enum):
    CONNECT = "connect"  # waiting for the server greeting
    AUTH = "auth"  # handshake response / auth switch / more data until OK or ERR
    COMMAND = "command"  # request / response
    BINLOG_STREAM = "binlog_stream"  # after COM_BINLOG_DUMP(_GTID): one event per packet
    ENCRYPTED = "encrypted"  # after an SSLRequest: TLS, not decoded
    COMPRESSED = "compressed"  # compressed protocol negotiated: not decoded
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class DecodeEnv:
    """What decoding a packet depended on besides its bytes and its kind, as the session had
    it: the capabilities in force and, for binlog events, the FORMAT_DESCRIPTION context (its
    table maps left out). One object is shared by every packet decoded under it; the session
    makes a new one when either changes, so a re-decoder takes it as it is instead of learning
    it again from the packets."""

    caps: int
    binlog: DecodeContext | None = None  # the binlog decode context (no table maps)


@dataclass(slots=True)
class PacketDecoded:
    """One logical packet (all its fragments) and what it means."""

    direction: Peer
    offset: int  # first header byte
    seq: int  # sequence id of the first fragment
    payload_length: int  # joined payload length
    kind: str  # "handshake_v10", "com_query", "binlog_event", ... (see wire.packet.KINDS)
    value: Any  # typed value (HandshakeV10, ComBinlogDump, BinlogPacket...) or None on error
    node: Node | None  # the packet tree: packet_header(s) + payload (None in fast mode)
    phase: Phase  # the phase the packet was read in
    semi_sync: SemiSyncHeader | None = None
    binlog_event: DecodedEvent | None = None
    error: str | None = None  # set when (part of) the payload could not be decoded
    wire_length: int = 0  # bytes on the wire, headers included
    #: the joined payload (continuation fragments merged, headers excluded); secrets inside
    #: are still there: redact with binlogscope.wire.fields before showing or storing
    payload: bytes = b""
    #: when the packet was seen: capture time (pcap) or arrival/sending time (live), seconds
    #: since the epoch; None when not known
    wire_time: float | None = None
    #: the session's decode environment for this packet (None: not decoded by a session)
    env: DecodeEnv | None = None

    @property
    def end(self) -> int:
        return self.offset + self.wire_length


@dataclass(frozen=True, slots=True)
class DecodeError:
    """Something could not be decoded; the session carries on at the next packet."""

    direction: Peer
    offset: int
    message: str
    node: Node | None = None


@dataclass(frozen=True, slots=True)
class SequenceMismatch:
    """A packet's sequence id is not the expected one (lost/duplicated packet or a bug)."""

    direction: Peer
    offset: int
    expected: int
    got: int


@dataclass(frozen=True, slots=True)
class PhaseChanged:
    old: Phase
    new: Phase
    reason: str


@dataclass(frozen=True, slots=True)
class TlsStarted:
    """After an SSLRequest the connection is encrypted; nothing more is decoded, unless the
    driver terminates the TLS itself (``terminated``: a proxy that feeds the decrypted bytes)."""

    direction: Peer
    offset: int  # first encrypted byte in the client direction
    node: Node  # a zero-length "encrypted" node marking the switch
    terminated: bool = False


@dataclass(frozen=True, slots=True)
class ResultSetComplete:
    """A whole text result set (columns, rows, terminator), for drivers that act on answers."""

    offset: int
    columns: tuple[Any, ...]  # ColumnDefinition41
    rows: tuple[Any, ...]  # TextRow (at most Session.max_result_rows)
    status_flags: int
    truncated: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    direction: Peer
    offset: int


@dataclass(frozen=True, slots=True)
class CompressedFrame:
    """A frame of the compressed protocol (:mod:`binlogscope.wire.compressed`), emitted before
    the packets it carries. ``offset``: its wire offset; the packets of a compressed session
    have offsets in the direction's plain (inflated) stream, ``frame.plain_offset`` on."""

    direction: Peer
    offset: int
    frame: Frame
    node: Node | None = None
    #: when its bytes were seen (as :attr:`PacketDecoded.wire_time`)
    wire_time: float | None = None


@dataclass(frozen=True, slots=True)
class LinesWritten:
    """The ``--json`` lines of ``count`` server event packets, written by the native kernel
    where their :class:`PacketDecoded` would have been (only when the driver gave the
    session's decoder a line writer: :class:`~binlogscope.session.packets.StreamLines`), in
    their place among the other events. ``offset``: the first packet's; ``end``: the offset
    after the last one; ``wire_time``: their arrival time (as the packets' would be);
    ``events``: when the writer keeps them (``StreamLines.keep``), each packet's event as
    (type code, its start in the file, log_pos, its own GTID or None), for a driver that
    follows positions (the live replica's restart point)."""

    direction: Peer
    offset: int
    end: int
    count: int
    data: bytes
    wire_time: float | None = None
    events: list[tuple[int, int, int, str | None]] | None = None


SessionEvent = (PacketDecoded | DecodeError | SequenceMismatch | PhaseChanged | TlsStarted
                | ResultSetComplete | ConnectionClosed | CompressedFrame | LinesWritten)
