"""What the inspector shows, independent of where it comes from: rows, details, a source protocol.

A :class:`RowSource` is the one interface between a driver and its consumers (the Textual TUI,
the CLI's exports). Binlog files (:mod:`binlogscope.inspector.sources.binlog_file`), live sessions
and pcap captures (:mod:`binlogscope.inspector.sources.packets`) implement the same few methods.
Rules for implementers:

- ``run()`` is called once, in a worker thread; it produces rows until the input ends (or forever
  for a live stream) and must return soon after ``cancelled()`` turns true.
- ``__len__``/``row``/``search_text`` are called from the UI thread while ``run()`` appends: publish
  a row only after all its columns are stored (the length is the last thing to change).
- ``detail(i)`` may block (it re-reads and decodes one event); the TUI calls it from a worker
  thread and decodes the tree of a row only when the row is selected.
- A source with a ``changed`` attribute (a :class:`RowSignal`) calls it after it published a row
  or changed what ``info()`` says (done, fatal): the TUI then takes the rows in on a message
  instead of polling. At most one notification is pending: the listener re-arms the signal before
  it reads the source, so nothing published after that read goes unannounced.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO, runtime_checkable

from binlogscope.wire.fields import is_sensitive, redact, redact_bytes
from binlogscope.wire.node import Node

#: optional columns a source may fill (files leave them empty; live sessions and captures don't):
#: ``wire_time`` says the row times are capture/arrival times with microseconds, ``frame`` and
#: ``flow`` are a capture's frame number and flow (connection) number; ``binlog_file``: rows
#: come from several binlog files (a file column by default)
OPTIONAL_COLUMNS = frozenset({"direction", "seq", "semi_sync", "wire_time", "frame", "flow",
                              "binlog_file"})

#: row kinds: each has a colour in app.tcss (``event-list--kind-<kind>``)
KINDS = (
    "control", "gtid", "query", "table_map", "write", "update", "delete", "commit", "heartbeat",
    "handshake", "result", "ack", "other", "error", "dump", "step", "note", "health",
)

#: the phase strip, in session order
PHASES = ("connect", "auth", "setup", "register", "dump", "stream")
PHASE_DOCS = {
    "connect": "TCP (or Unix socket) connect; the server speaks first with its greeting "
               "(HandshakeV10: version, capabilities, a one-time nonce)",
    "auth": "the replica logs in like any client: HandshakeResponse41, maybe an auth switch, "
            "then OK or ERR",
    "setup": "plain queries that prepare the session for replication (checksums, heartbeat, "
             "semi-sync, GTID state) and ask where the binlog is",
    "register": "COM_REGISTER_SLAVE: the replica announces its server_id (SHOW REPLICAS)",
    "dump": "COM_BINLOG_DUMP(_GTID): from here the connection is one-way",
    "stream": "the source pushes one binlog event per packet (0x00 + [0xEF flag] + event); "
              "heartbeats when idle; the replica only ever sends semi-sync ACKs",
}


class RowSignal:
    """"Rows were published" from the producing thread to one listener (the TUI).

    Calling it costs one attribute test while a notification is pending, so a source can call
    it after every row; the listener (which posts a message to the UI) runs at most once until
    :meth:`rearm`.
    """

    __slots__ = ("_listener", "_pending")

    def __init__(self) -> None:
        self._listener: Callable[[], object] | None = None
        self._pending = False

    def listen(self, listener: Callable[[], object] | None) -> None:
        """Call ``listener`` (from the producing thread) when rows come; None: nobody."""
        self._listener = listener
        self._pending = False

    def rearm(self) -> None:
        """The listener is about to read the source: the next change notifies again."""
        self._pending = False

    def __call__(self) -> None:
        if self._pending:
            return
        listener = self._listener
        if listener is not None:
            self._pending = True
            listener()


@dataclass(slots=True)
class Row:
    """One line of the packet/event list."""

    index: int  # 0-based position in the source
    time: float | None  # seconds since the epoch (event timestamp or capture time)
    length: int  # bytes of the packet / event
    event_type: str  # "WRITE_ROWS_EVENT", "COM_BINLOG_DUMP", ...
    offset: int  # absolute offset of the first byte (file position for binlog files)
    summary: str = ""
    table: str | None = None  # "schema.table"
    log_pos: int | None = None
    error: bool = False
    kind: str = "other"
    direction: str | None = None  # "->" client to server, "<-" server to client; None: files
    seq: int | None = None
    semi_sync: str | None = None  # "ack?" / "ef" / "ACK 1234"
    #: the binlog event's coordinates (docs/coordinates.md): the file it is in and its start
    #: offset there (None: not a binlog event, or an event in no file)
    binlog_file: str | None = None
    file_pos: int | None = None
    #: capture sources: the frame the packet starts in and its flow (connection) number
    frame: int | None = None
    flow: int | None = None
    #: the GTID of the transaction the event belongs to (None: outside one, or not seen)
    gtid: str | None = None

    @property
    def number(self) -> int:
        return self.index + 1


@dataclass(frozen=True, slots=True)
class Detail:
    """The decoded tree of one row and the bytes its node offsets point into.

    Build it with :func:`masked_detail` when the tree may hold secrets: then ``node`` and
    ``raw`` are redacted and ``masked`` lists the absolute [start, end) spans of the secret
    bytes (the hex pane shows ``**`` there).
    """

    node: Node
    raw: bytes
    base: int  # absolute offset of raw[0]
    error: str | None = None
    masked: tuple[tuple[int, int], ...] = ()

    def slice(self, node: Node) -> bytes:
        return self.raw[node.offset - self.base : node.end - self.base]

    def is_masked(self, offset: int) -> bool:
        """True when the byte at absolute ``offset`` is part of a secret."""
        return any(lo <= offset < hi for lo, hi in self.masked)

    def hex_text(self, node: Node) -> str:
        """The bytes of ``node`` as hex pairs, ``**`` for secret bytes."""
        raw = self.slice(node)
        return " ".join("**" if self.is_masked(node.offset + i) else f"{b:02x}"
                        for i, b in enumerate(raw))


def secret_spans(node: Node) -> tuple[tuple[int, int], ...]:
    """Absolute [start, end) spans of the secret leaves of ``node`` (scrambles, auth data)."""
    return tuple((n.offset, n.end) for _, n in node.walk()
                 if is_sensitive(n) and not n.children and n.length)


def masked_detail(node: Node, raw: bytes, base: int, error: str | None = None) -> Detail:
    """A :class:`Detail` with every secret masked by the shared rule of
    :mod:`binlogscope.wire.fields` (the one the CLI, JSON and recordings use): values and
    display strings redacted, the secret bytes overwritten, their spans kept for the hex pane.
    """
    spans = secret_spans(node)
    if spans and raw:
        raw = redact_bytes(node, raw) if base == node.offset else _mask_at(raw, base, spans)
    return Detail(node=redact(node), raw=raw, base=base, error=error, masked=spans)


def _mask_at(raw: bytes, base: int, spans: tuple[tuple[int, int], ...]) -> bytes:
    out = bytearray(raw)
    for lo, hi in spans:
        a, b = max(lo - base, 0), min(hi - base, len(out))
        if a < b:
            out[a:b] = b"*" * (b - a)
    return bytes(out)


@dataclass(slots=True)
class SourceInfo:
    """What the status bar shows about the source."""

    label: str
    server_version: str = ""
    checksum: str = ""
    events: int = 0  # binlog events
    rows: int | None = None  # packet streams: rows (packets, notes, steps); None: = events
    errors: int = 0
    done: bool = False
    progress: float | None = None  # 0..1 while indexing, None when unknown
    fatal: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class RowSource(Protocol):
    """Rows for the list, details on demand."""

    #: which of :data:`OPTIONAL_COLUMNS` this source fills
    columns: frozenset[str]

    def __len__(self) -> int: ...

    def row(self, index: int) -> Row: ...

    def search_text(self, index: int) -> str:
        """Lower-case text that search and the free-text filter look in."""
        ...

    def position(self, index: int) -> str:
        """Where a row is, for the status bar: ``mysql-bin.000001:1234``."""
        ...

    def find_offset(self, offset: int) -> int | None:
        """Index of the row that contains byte ``offset`` (jump to position), None if none."""
        ...

    def detail(self, index: int) -> Detail: ...

    def info(self) -> SourceInfo: ...

    def run(self, cancelled: Callable[[], bool]) -> None: ...

    def export_jsonl(self, indices: Sequence[int], out: TextIO, *, tree: bool = False,
                     cancelled: Callable[[], bool] = lambda: False) -> int:
        """Write one JSON object per row in ``indices`` (ascending); return how many."""
        ...


@runtime_checkable
class SessionSource(Protocol):
    """What a packet stream (live session, capture) adds: the phase strip; live ones pause/stop.

    ``phase_at(i)`` returns (phase of the session now, phase at row ``i``, the setup step whose
    packets row ``i`` belongs to, or None) with phases indexing :data:`PHASES`.
    ``set_paused``/``stop`` are called on the UI thread and must not block; ``pause_doc`` says
    what pausing does (shown when the user pauses).
    """

    live: bool
    paused: bool
    pause_doc: str

    def phase_at(self, index: int | None) -> tuple[int, int, Any]: ...

    def set_paused(self, paused: bool) -> None: ...

    def stop(self) -> None: ...


def format_time(ts: float | None, wide: bool, usec: bool = False) -> str:
    """UTC time of day (``wide``: with the date); ``usec`` adds ``.ffffff``."""
    if ts is None:
        return ""
    sec = math.floor(ts)
    t = time.gmtime(sec)
    text = time.strftime("%Y-%m-%d %H:%M:%S" if wide else "%H:%M:%S", t)
    if usec:
        us = round((ts - sec) * 1_000_000)
        if us >= 1_000_000:  # rounding up to the next second
            return format_time(float(sec + 1), wide, usec)
        text += f".{us:06d}"
    return text


def format_seconds(delta: float | None) -> str:
    """A time difference in seconds with microseconds (``0.000213``, ``-1.5`` -> ``-1.500000``)."""
    if delta is None:
        return ""
    return f"{delta:.6f}"


def event_kind(type_name: str, error: bool = False) -> str:
    """Colour class of a binlog event type name."""
    if error:
        return "error"
    n = type_name
    if "WRITE_ROWS" in n:
        return "write"
    if "UPDATE_ROWS" in n:
        return "update"
    if "DELETE_ROWS" in n:
        return "delete"
    if n == "TABLE_MAP_EVENT":
        return "table_map"
    if "GTID" in n and "PREVIOUS" not in n and "LIST" not in n:
        return "gtid"
    if n in ("XID_EVENT", "XA_PREPARE_LOG_EVENT"):
        return "commit"
    if "HEARTBEAT" in n:
        return "heartbeat"
    if n in ("QUERY_EVENT", "ROWS_QUERY_LOG_EVENT", "ANNOTATE_ROWS_EVENT",
             "QUERY_COMPRESSED_EVENT", "USER_VAR_EVENT", "INTVAR_EVENT", "RAND_EVENT"):
        return "query"
    if n in ("FORMAT_DESCRIPTION_EVENT", "ROTATE_EVENT", "STOP_EVENT", "START_EVENT_V3",
             "PREVIOUS_GTIDS_LOG_EVENT", "GTID_LIST_EVENT", "BINLOG_CHECKPOINT_EVENT",
             "START_ENCRYPTION_EVENT", "INCIDENT_EVENT"):
        return "control"
    return "other"
