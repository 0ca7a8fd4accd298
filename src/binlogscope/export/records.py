"""Source-agnostic records: what a source (binlog files, captures, live streams) hands the exporter.

A source is an iterator of records:

* :class:`EventRecord` - one decoded binlog event with where it came from;
* :class:`PacketRecord` - one wire packet (pcap/live);
* :class:`InputDone` - an input (file, capture, connection) has ended: a place to checkpoint.

:class:`BinlogFileSource` is the source of binlog files (the capture and live sources are in
:mod:`binlogscope.export.sources`); :class:`binlogscope.export.mapper.TableMapper` turns the
records into table rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from binlogscope.drivers.binlog_file import (
    STDIN_PATH,
    BinlogFileError,
    FileEvents,
    looks_like_binlog,
    read_binlog_file,
    read_binlog_values,
)
from binlogscope.render.line_context import LineContext, event_values
from binlogscope.wire.binlog.context import DecodeContext, TableMap
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent

if TYPE_CHECKING:
    from binlogscope._native._kernel import EventLines

# ----------------------------------------------------------------------------- records


@dataclass(slots=True)
class EventRecord:
    """One decoded binlog event and where it was seen."""

    event: DecodedEvent
    ctx: DecodeContext  # the decoding context (TABLE_MAP metadata for column names and types)
    input_index: int  # which input of the source (for resume)
    source: str
    binlog_file: str
    source_kind: str = "file"
    session_id: str | None = None
    capture_time: float | None = None  # seconds since the epoch (pcap/live)
    #: where an export resumes after this event (live: the replica's restart point); None:
    #: the input and the event's end offset
    resume: ResumePoint | None = None


@dataclass(slots=True)
class WrittenRun:
    """Consecutive events the native kernel read by their declared layouts without decoding
    them (never empty): each one's values (``_line.c`` event_values: type code, log_pos, GTID,
    flags2, None, offset, timestamp, server id, size, flags, and per body the xid, statement
    text, TableMap and (buffer, image positions)), in order, and where they were seen; the
    mapper makes the same rows of them as of the decoded events
    (:meth:`binlogscope.export.mapper.TableMapper.written`). One record per run, not per
    event: the export hands a run on in one step."""

    values: list[tuple[Any, ...]]
    ctx: DecodeContext
    input_index: int
    source: str
    binlog_file: str
    source_kind: str = "file"
    session_id: str | None = None

    @property
    def end(self) -> int:
        """Where the run's last event ends in its input."""
        v = self.values[-1]
        return int(v[5] + v[8])


@dataclass(slots=True)
class PacketRecord:
    """One wire packet (the pcap and live sources produce these)."""

    input_index: int
    source: str
    source_kind: str
    direction: str  # "server" | "client"
    seq: int
    payload_length: int
    kind: str
    session_id: str | None = None
    flow: str | None = None
    frame: int | None = None
    time: float | None = None
    semi_sync: bool = False
    ack_request: bool = False
    command: str | None = None
    binlog_file: str | None = None
    log_pos: int | None = None
    payload: bytes | None = None


@dataclass(slots=True)
class InputDone:
    """The input ``input_index`` is finished (a checkpoint is possible here)."""

    input_index: int
    source: str
    error: str | None = None
    #: a read of a range of the input (``export --jobs``' units) that stopped at its end: the
    #: offset of the first event not read (the range's end when an event starts there)
    stopped_at: int | None = None
    #: a range read without the events before it met what needs them (a rows event whose
    #: TABLE_MAP it did not see, a MariaDB table whose hi-res temporal columns an earlier
    #: event may have settled): its rows may differ from a read of the whole input
    doubt: str | None = None


@dataclass(slots=True)
class HealthRecord:
    """Rows of the ``health`` table (the connection's health timeline: drivers/health.py),
    written at the export's next checkpoint."""

    input_index: int
    source: str
    rows: list[dict[str, Any]]


def health_rows(timeline: list[dict[str, Any]], source: str, session_id: str | None,
                flow: str | None) -> list[dict[str, Any]]:
    """A :class:`~binlogscope.drivers.health.Health` timeline as ``health`` table rows."""
    out = []
    for r in timeline:
        row = dict(r)
        row["time"] = round(float(r["time"]) * 1_000_000)  # (timestamp[us])
        row["source"], row["session_id"], row["flow"] = source, session_id, flow
        out.append(row)
    return out


Record = EventRecord | WrittenRun | PacketRecord | InputDone | HealthRecord


@dataclass(slots=True)
class ResumePoint:
    """Where a resumed export continues: input index and byte offset (None: its start)."""

    input_index: int
    offset: int | None = None
    #: a live source's restart point (log_file, log_pos, skip, gtid_set)
    position: dict[str, Any] | None = None


class RecordSource(Protocol):
    """What the exporter needs from a source."""

    kind: str

    def inputs(self) -> list[str]:
        """The inputs in order (recorded in the resume note)."""
        ...

    def total_bytes(self) -> int | None:
        """Input size for a progress percentage, None when unknown (live)."""
        ...

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        ...


class SourceError(Exception):
    """The source cannot be opened (one line for the CLI)."""


class BinlogFileSource:
    """Binlog files: files and directories (every binlog file inside, by name) in order."""

    kind = "file"

    def __init__(self, paths: list[str], *, kernel: bool = True) -> None:
        #: False: every event decoded (no :class:`WrittenRun`, even with the kernel on)
        self.kernel = kernel
        files: list[Path] = []
        for raw in paths:
            p = Path(raw)
            if p.is_dir():
                found = sorted(q for q in p.iterdir() if q.is_file() and looks_like_binlog(q))
                if not found:
                    raise SourceError(f"{p}: no binlog files in this directory")
                files += found
            elif p.is_file():
                files.append(p)
            else:
                raise SourceError(f"{p}: no such file or directory")
        self.files = files

    def inputs(self) -> list[str]:
        return [str(p) for p in self.files]

    def total_bytes(self) -> int | None:
        return sum(p.stat().st_size for p in self.files)

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        for i, path in enumerate(self.files):
            start: int | None = None
            if resume is not None:
                if i < resume.input_index:
                    continue
                if i == resume.input_index:
                    start = resume.offset
            yield from binlog_file_records(i, str(path), start=start, kernel=self.kernel)


def binlog_file_records(index: int, source: str, *, start: int | None = None,
                        stop: int | None = None, trusted: bool = False,
                        data: bytes | None = None, kernel: bool = True) -> Iterator[Record]:
    """The records of one binlog file (input ``index``), from ``start`` (an event boundary)
    on, ending with its :class:`InputDone`; ``data``: its bytes when they were read elsewhere
    (a Spark task's input), ``source`` then only names them. With the native kernel (and
    ``kernel``) the events its declared layouts cover come as :class:`WrittenRun`.

    ``stop``: up to the first event at or after it (``InputDone.stopped_at``); ``trusted``:
    ``start`` is where a transaction starts (``export --jobs``' units): only the
    FORMAT_DESCRIPTION is read before it, and ``InputDone.doubt`` says when the range met
    what the events before it would have settled."""
    ctx = DecodeContext()
    name = Path(source).name
    info = FileEvents(source)
    values = event_values() if kernel else None
    doubts: list[str] = []
    if trusted and start is not None and start > 4:
        ctx.table_map_hook = functools.partial(_context_doubt, ctx, doubts)
    try:
        if values is not None:
            yield from _with_values(values, index, source, start, stop, trusted, data, ctx,
                                    info)
        else:
            for ev in read_binlog_file(source, record=False, ctx=ctx, start_position=start,
                                       stop_position=stop, start_trusted=trusted, info=info,
                                       data=data):
                yield EventRecord(ev, ctx, index, source, name)
    except BinlogFileError as exc:
        yield InputDone(index, source, str(exc), doubt=str(exc) if trusted else None)
        return
    yield InputDone(index, source, None if info.stopped_at is not None else info.fatal,
                    info.stopped_at, doubts[0] if doubts else None)


#: the old TIME, DATETIME and TIMESTAMP type codes (MariaDB writes its hi-res columns so)
_OLD_TEMPORAL = frozenset({7, 11, 12})


def _context_doubt(ctx: DecodeContext, doubts: list[str], tm: TableMap) -> None:
    """The TABLE_MAP hook of a range read without the events before it: a MariaDB table with
    old-format temporal columns takes their decimals from a CREATE TABLE or from earlier rows
    (``wire/binlog/rows_hires.py``), which such a read may not have seen."""
    if not doubts and ctx.is_mariadb and any(c.type in _OLD_TEMPORAL for c in tm.columns):
        doubts.append(f"{tm.schema}.{tm.table}: MariaDB temporal columns of the old format")


def _with_values(values: EventLines, index: int, source: str, start: int | None,
                 stop: int | None, trusted: bool, data: bytes | None, ctx: DecodeContext,
                 info: FileEvents) -> Iterator[Record]:
    """The records of :func:`binlog_file_records` read with the kernel's ``values``: what it
    takes as :class:`WrittenRun`, what it declines decoded, each seen by the kernel's
    :class:`LineContext` (it takes no event that changes the decoder's context)."""
    name = Path(source).name
    # (its events' binlog_file, as the decoder's coordinates give it: a .gz name without it)
    file = name if source == STDIN_PATH else CoordTracker.file_name(source)
    seen = LineContext(values, distinct_labels=True).seen
    for ev in read_binlog_values(source, values, seen, ctx=ctx, start_position=start,
                                 stop_position=stop, start_trusted=trusted, info=info,
                                 data=data):
        if type(ev) is list:
            yield WrittenRun(ev, ctx, index, source, file)
        else:
            yield EventRecord(ev, ctx, index, source, name)  # type: ignore[arg-type]
