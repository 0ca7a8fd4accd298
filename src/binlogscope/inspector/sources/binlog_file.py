"""Binlog files as a :class:`~binlogscope.inspector.source.RowSource`.

``run()`` walks the file once with the fast decoder (``record=False``: no Node trees) and keeps a
few compact columns per event (offset, size, type, timestamp, log_pos, table, summary) plus a
:class:`DecodeContext` checkpoint every few hundred events. ``detail(i)`` re-reads from the
nearest checkpoint, replays the events in between without trees (they only update the context:
FORMAT_DESCRIPTION, TABLE_MAP, ROTATE) and decodes event ``i`` with its tree
(:func:`~binlogscope.inspector.redecode.redecode_event`). Memory is a few tens
of bytes per event plus its summary text.
"""

from __future__ import annotations

import bisect
import gzip
import threading
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from binlogscope.drivers.binlog_file import BinlogFileError, FileEvents, read_binlog_file
from binlogscope.inspector.redecode import copy_context, redecode_event
from binlogscope.inspector.source import Detail, Row, RowSignal, SourceInfo, event_kind
from binlogscope.inspector.text_column import TextColumn
from binlogscope.pipeline.filter import event_table
from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import (
    AnnotateRowsEvent,
    FormatDescriptionEvent,
    RotateEvent,
    RowsQueryEvent,
    StartEventV3,
    XidEvent,
)
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ChecksumAlg, event_type_name
from binlogscope.wire.node import Node

#: a context checkpoint at least every this many events / bytes
CHECKPOINT_EVENTS = 256
CHECKPOINT_BYTES = 1 << 20
_SUMMARY_MAX = 100


def _rows_part(body: RowsEvent) -> str:
    n = body.row_count  # (not len(body.rows): that reads every value)
    return f"{n} row{'s' if n != 1 else ''}"


def _gtid_part(body: GtidEvent | MariadbGtidEvent) -> str:
    return " ".join(body.gtid.split())


def _query_part(body: QueryEvent) -> str:
    text = " ".join(body.query.split())
    return text if body.xid is None else f"{text} COMMIT xid={body.xid}"  # DDL with an XID


def _text_part(body: RowsQueryEvent | AnnotateRowsEvent) -> str:
    return " ".join(body.query.split())


#: what a body's summary says, by its class (the first that it is an instance of)
_PARTS: tuple[tuple[type, Callable[[Any], str]], ...] = (
    (RowsEvent, _rows_part),
    (GtidEvent, _gtid_part),
    (MariadbGtidEvent, _gtid_part),
    (QueryEvent, _query_part),
    (RowsQueryEvent, _text_part),
    (AnnotateRowsEvent, _text_part),
    (RotateEvent, lambda b: f"{b.next_log_name}:{b.position}"),
    (XidEvent, lambda b: f"COMMIT xid={b.xid}"),
    (FormatDescriptionEvent,
     lambda b: f"{b.server_version} checksum={_alg_name(b.checksum_alg)}"),
    (StartEventV3, lambda b: str(b.server_version)),
    (TableMapEvent, lambda b: f"table_id={b.table_id} {len(b.columns)} columns"),
)
#: the part by the body's exact type, found in _PARTS once per type (None: says nothing)
_PART_BY_TYPE: dict[type, Callable[[Any], str] | None] = {}
_UNSEEN: Any = object()


def summary_part(body_type: type) -> Callable[[Any], str] | None:
    """What makes the summary of a body of this exact type (None: it says nothing)."""
    try:
        return _PART_BY_TYPE[body_type]
    except KeyError:
        part = _PART_BY_TYPE[body_type] = next(
            (f for cls, f in _PARTS if issubclass(body_type, cls)), None)
        return part


def row_summary(ev: DecodedEvent) -> str:
    """The list's summary column: what is in the event besides its type and table."""
    body = ev.body
    part = _PART_BY_TYPE.get(type(body), _UNSEEN)
    if part is _UNSEEN:
        part = summary_part(type(body))
    text = part(body) if part is not None else None
    if ev.error:
        text = f"ERROR {ev.error}" if text is None else f"{text} ERROR {ev.error}"
    elif text is None:
        return ""
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 3] + "..."


def _alg_name(alg: int) -> str:
    try:
        return ChecksumAlg(alg).name.removeprefix("BINLOG_CHECKSUM_ALG_")
    except ValueError:
        return str(alg)


class BinlogFileSource:
    """One binlog (or relay log) file, ``.gz`` too."""

    columns: frozenset[str] = frozenset()

    def __init__(self, path: str | Path, *, start_position: int | None = None,
                 stop_position: int | None = None) -> None:
        self.path = Path(path)
        self._name = CoordTracker.for_file(self.path.name).file  # the rows' binlog_file
        self.start_position = start_position
        self.stop_position = stop_position
        self._offsets = array("q")
        self._sizes = array("q")
        self._types = array("B")
        self._times = array("I")
        self._log_pos = array("I")
        self._table_ids = array("i")  # index into _tables, -1: none
        self._tables: list[str] = []
        self._table_index: dict[str, int] = {}
        self._summaries = TextColumn()
        self._gtid = array("i")  # index into _gtids, -1: none
        self._gtids: list[str] = []
        self._errors: set[int] = set()
        self._n = 0
        # checkpoints: (offset of the next event, context before it); sorted by offset
        self._cp_offsets: list[int] = []
        self._cp_ctx: list[DecodeContext] = []
        self._ctx = DecodeContext()
        self._done = False
        self._fatal: str | None = None
        self._size_on_disk = 0
        self._lock = threading.Lock()
        #: called after each row and at the end (the TUI takes rows in on a message)
        self.changed = RowSignal()
        try:
            self._size_on_disk = self.path.stat().st_size
        except OSError:
            pass

    # ----- RowSource
    def __len__(self) -> int:
        return self._n

    def row(self, index: int) -> Row:
        code = self._types[index]
        name = event_type_name(code)
        err = index in self._errors
        t = self._table_ids[index]
        return Row(index=index, time=float(self._times[index]), length=self._sizes[index],
                   event_type=name, offset=self._offsets[index], summary=self._summaries[index],
                   table=self._tables[t] if t >= 0 else None, log_pos=self._log_pos[index],
                   error=err, kind=event_kind(name, err), binlog_file=self._name,
                   file_pos=self._offsets[index],
                   gtid=self._gtids[g] if (g := self._gtid[index]) >= 0 else None)

    def search_text(self, index: int) -> str:
        t = self._table_ids[index]
        table = self._tables[t] if t >= 0 else ""
        return f"{event_type_name(self._types[index])} {table} {self._summaries[index]}".lower()

    def position(self, index: int) -> str:
        return f"{self.path.name}:{self._offsets[index]}"

    def find_offset(self, offset: int) -> int | None:
        n = self._n
        i = bisect.bisect_right(self._offsets, offset, 0, n) - 1
        if i < 0:
            return 0 if n else None
        if offset >= self._offsets[i] + self._sizes[i]:
            return None  # past the last event: not "the last row"
        return i

    def info(self) -> SourceInfo:
        ctx = self._ctx
        progress = None
        if not self._done and self._size_on_disk and self.path.suffix != ".gz" and self._n:
            progress = min(1.0, (self._offsets[self._n - 1] + self._sizes[self._n - 1])
                           / self._size_on_disk)
        return SourceInfo(
            label=str(self.path), server_version=ctx.server_version,
            checksum=_alg_name(ctx.checksum_alg) if ctx.fde_seen else "",
            events=self._n, errors=len(self._errors), done=self._done, progress=progress,
            fatal=self._fatal)

    def run(self, cancelled: Callable[[], bool]) -> None:
        """Index the whole file (call once, from a worker thread)."""
        ctx = self._ctx
        info = FileEvents(str(self.path))
        self._add_checkpoint(4, ctx)
        since_cp = 0
        cp_bytes = 0
        try:
            for ev in read_binlog_file(self.path, record=False, ctx=ctx,
                                       stop_position=self.stop_position, info=info):
                if cancelled():
                    return
                if self.start_position is None or ev.offset >= self.start_position:
                    self._add(ev, ctx)
                since_cp += 1
                cp_bytes += ev.size
                if since_cp >= CHECKPOINT_EVENTS or cp_bytes >= CHECKPOINT_BYTES:
                    self._add_checkpoint(ev.end, ctx)
                    since_cp = cp_bytes = 0
            self._fatal = info.fatal
        except BinlogFileError as exc:
            self._fatal = str(exc)
        finally:
            self._done = True
            self.changed()

    def detail(self, index: int) -> Detail:
        offset = self._offsets[index]
        size = self._sizes[index]
        k = bisect.bisect_right(self._cp_offsets, offset) - 1
        cp_off = self._cp_offsets[k]
        ctx = copy_context(self._cp_ctx[k])
        with self._lock, self._open() as f:
            if cp_off <= 4:
                f.seek(0)
                dec = BinlogStreamDecoder(ctx, record=False)
                prefix = f.read(offset)
            else:
                f.seek(cp_off)
                dec = BinlogStreamDecoder(ctx, record=False, start_offset=cp_off,
                                          expect_magic=False)
                prefix = f.read(offset - cp_off)
            event_bytes = f.read(size)
        dec.receive_data(prefix)  # the events before it only update the context
        for _ in dec.events():
            pass
        if dec.offset != offset:
            raise RuntimeError(f"could not re-read the event at {offset} (stopped at {dec.offset})")
        ev = redecode_event(event_bytes, ctx, base=offset)
        node = ev.node
        if node is None:
            node = Node("event", offset, len(event_bytes), error=ev.error or "no tree")
        raw = ev.raw if ev.raw is not None and len(ev.raw) >= node.length else event_bytes
        return Detail(node=node, raw=raw, base=ev.offset, error=ev.error)

    def export_jsonl(self, indices: Sequence[int], out: TextIO, *, tree: bool = False,
                     cancelled: Callable[[], bool] = lambda: False) -> int:
        if tree:
            written = 0
            for i in indices:
                if cancelled():
                    break
                d = self.detail(i)
                out.write(dumps_line({"file": str(self.path), **d.node.to_dict()}).decode())
                written += 1
            return written
        wanted = [self._offsets[i] for i in indices]
        if not wanted:
            return 0
        written = 0
        k = 0
        for ev in read_binlog_file(self.path, record=False, stop_position=wanted[-1] + 1):
            if cancelled():
                break
            while k < len(wanted) and wanted[k] < ev.offset:
                k += 1
            if k < len(wanted) and wanted[k] == ev.offset:
                out.write(dumps_line(binlog_event_json(ev, str(self.path))).decode())
                written += 1
                k += 1
        return written

    # ----- helpers
    def _open(self) -> BinaryIO:
        f: BinaryIO = self.path.open("rb")
        if self.path.suffix == ".gz":
            return gzip.open(f, "rb")  # type: ignore[return-value]
        return f

    def _add_checkpoint(self, offset: int, ctx: DecodeContext) -> None:
        if self._cp_offsets and self._cp_offsets[-1] >= offset:
            return
        self._cp_ctx.append(copy_context(ctx))
        self._cp_offsets.append(offset)

    def _table_of(self, ev: DecodedEvent, ctx: DecodeContext) -> int:
        schema, table = event_table(ev)
        if table is None:
            tid = bodies.table_id(ev)
            tm = ctx.tables.get(tid) if tid is not None else None
            if tm is None:
                return -1
            schema, table = tm.schema, tm.table
        name = f"{schema}.{table}"
        i = self._table_index.get(name)
        if i is None:
            i = self._table_index[name] = len(self._tables)
            self._tables.append(name)
        return i

    def _add(self, ev: DecodedEvent, ctx: DecodeContext) -> None:
        h = ev.header
        n = self._n
        self._offsets.append(ev.offset)
        self._sizes.append(ev.size)
        self._types.append(h.type_code if h else 0)
        self._times.append(h.timestamp if h else 0)
        self._log_pos.append(h.log_pos if h else 0)
        self._table_ids.append(self._table_of(ev, ctx))
        self._summaries.append(row_summary(ev))
        g = ev.trx_gtid
        if g is None:
            self._gtid.append(-1)
        else:
            if not self._gtids or self._gtids[-1] != g:
                self._gtids.append(g)
            self._gtid.append(len(self._gtids) - 1)
        if ev.error:
            self._errors.add(n)
        self._n = n + 1
        self.changed()
