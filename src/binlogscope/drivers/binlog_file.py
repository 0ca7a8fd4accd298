"""Binlog files on disk -> decoded events (the only place that opens them).

Streams the file in chunks through the sans-IO :class:`BinlogStreamDecoder`, so memory stays flat
whatever the file size. ``.gz`` files are decompressed on the fly. The path ``-`` reads one
binlog from standard input (forward only, in the same chunks). A file's bytes already in
memory (a Spark task's input read by Spark) are decoded the same way with ``data=``.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN
from binlogscope.wire.binlog.resync import transaction_start
from binlogscope.wire.binlog.rows import NO_TABLE_MAP, unknown_context
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.binlog.types import MYSQL_GTIDS, EventType
from binlogscope.wire.node import Node

if TYPE_CHECKING:
    from binlogscope._native._kernel import EventLines

CHUNK = 1 << 20
#: what a read with a stop position reads at a time once it is there
STOP_CHUNK = 1 << 16
#: what a line writer is told of each event it declined, and of the decoder's context after it
LineSeen = Callable[[DecodedEvent, DecodeContext], None]
#: the path that means standard input
STDIN_PATH = "-"


class BinlogFileError(Exception):
    """The file cannot be read as a binlog at all (missing, unreadable, not a binlog)."""


@dataclass(slots=True)
class FileEvents:
    """What :func:`read_binlog_file` found besides the events."""

    path: str
    magic_node: Node | None = None
    fatal: str | None = None
    #: a read with ``stop_position`` that stopped there: the offset of the first event it did
    #: not yield (the stop position itself when an event starts exactly there); None: the
    #: read went on to the end of the file
    stopped_at: int | None = None


class _Stdin:
    """Standard input's bytes, left open when the reader is done with it."""

    def __init__(self) -> None:
        self._f = sys.stdin.buffer

    def read(self, n: int = -1) -> bytes:
        return self._f.read(n)

    def __enter__(self) -> _Stdin:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _open(path: Path, data: bytes | None = None) -> BinaryIO:
    if data is not None:  # the file's bytes, read by someone else: named by ``path``
        buf = io.BytesIO(data)
        if path.suffix == ".gz":
            return gzip.GzipFile(fileobj=buf, mode="rb")  # type: ignore[return-value]
        return buf
    if str(path) == STDIN_PATH:
        return _Stdin()  # type: ignore[return-value]
    try:
        f: BinaryIO = path.open("rb")
    except OSError as exc:
        raise BinlogFileError(f"cannot open {path}: {exc.strerror or exc}") from None
    if path.suffix == ".gz":
        return gzip.open(f, "rb")  # type: ignore[return-value]
    return f


def read_binlog_values(
    path: str | Path,
    values: EventLines,
    line_seen: LineSeen,
    *,
    ctx: DecodeContext | None = None,
    start_position: int | None = None,
    stop_position: int | None = None,
    start_trusted: bool = False,
    info: FileEvents | None = None,
    data: bytes | None = None,
) -> Iterator[DecodedEvent | list[tuple[Any, ...]]]:
    """:func:`read_binlog_file` with ``line`` the kernel's reader of event values
    (``render/line_layout.py`` event_values): the events it takes are yielded as their values
    tuples (``_line.c`` event_values), a list per run of consecutive ones, after their
    coordinates moved on; the others are decoded as always."""
    return _read(path, record=False, ctx=ctx, start_position=start_position,
                 stop_position=stop_position, start_trusted=start_trusted, info=info,
                 data=data, line=values, line_seen=line_seen, keep_written=True)


def read_binlog_file(
    path: str | Path,
    *,
    record: bool = True,
    ctx: DecodeContext | None = None,
    start_position: int | None = None,
    stop_position: int | None = None,
    start_trusted: bool = False,
    info: FileEvents | None = None,
    data: bytes | None = None,
    line: EventLines | None = None,
    line_seen: LineSeen | None = None,
) -> Iterator[DecodedEvent]:
    """Yield every event of a binlog file; damage becomes events with ``error`` set.

    With ``start_position`` the FORMAT_DESCRIPTION at offset 4 is decoded first (it says how to
    read the rest: checksums, post-header lengths) but only events at or after the position are
    yielded; ``start_trusted``: the position is known to be where a transaction starts (a
    unit of ``export --jobs``, found by :func:`transaction_starts`): only the FORMAT_DESCRIPTION
    is decoded first, the bytes between it and the position are not read. With
    ``stop_position`` the read stops before the first event that starts at or after it
    (``info.stopped_at`` says where that event starts). Raises :class:`BinlogFileError` if the
    file cannot be opened or is not a binlog.
    Every event carries its coordinates (:class:`CoordTracker`: the file's name, its offset,
    its transaction's GTID - known from ``start_position`` on only when it is a transaction
    boundary). ``data``: the file's bytes (``path`` then only names them).

    ``line``: the native kernel's writer of the events' ``file --json`` lines
    (``render/line_layout.py``; without a tree, positions or ``ctx``): the events it writes
    are not yielded - their coordinates are moved on here, and it is given the open
    transaction's GTID after every event - and what it has written goes to its sink after
    every chunk; the events it declines are yielded as always (the caller writes their lines
    into it with ``line.add``, in order), each given to ``line_seen(event, ctx)`` first (what
    the writer must know of the decoder's context: ``line_layout.LineContext.seen``).
    """
    return _read(path, record=record, ctx=ctx, start_position=start_position,
                 stop_position=stop_position, start_trusted=start_trusted, info=info,
                 data=data, line=line, line_seen=line_seen, keep_written=False)


def _read(path: str | Path, *, record: bool, ctx: DecodeContext | None,
          start_position: int | None, info: FileEvents | None, data: bytes | None,
          line: EventLines | None, line_seen: LineSeen | None, keep_written: bool,
          stop_position: int | None = None, start_trusted: bool = False) -> Iterator[Any]:
    p = Path(path)
    ctx = ctx if ctx is not None else DecodeContext()
    # (standard input has no file name: its events' binlog_file is unknown)
    tracker = (CoordTracker(None, in_file=True) if str(path) == STDIN_PATH
               else CoordTracker.for_file(p.name))
    track = tracker.stamp
    with _open(p, data) as f:
        try:
            head = f.read(4)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise BinlogFileError(f"cannot read {p}: {exc}") from None
        if head != BINLOG_MAGIC:
            if str(p) == STDIN_PATH and head[:2] == b"\x1f\x8b":
                raise BinlogFileError("standard input is gzip-compressed: pipe it through "
                                      "zcat first")
            shown = head.hex(" ") if head else "empty file"
            raise BinlogFileError(
                f"{p} is not a binlog file (magic {shown}, expected fe 62 69 6e)")
        at = 4  # the offset of the next byte read
        if start_position is not None and start_position > 4 and start_trusted:
            _read_fde(f, p, head, ctx, start_position)
            at = start_position
            dec = BinlogStreamDecoder(ctx, record=record, start_offset=start_position,
                                      expect_magic=False)
        elif start_position is not None and start_position > 4:
            # read the FDE (and anything else before start) only to learn the stream settings
            pre = BinlogStreamDecoder(ctx, record=False)
            pre.receive_data(head)
            need = start_position - 4
            before = 4  # the last event boundary at or before the start
            while need > 0:
                chunk = f.read(min(CHUNK, need))
                if not chunk:
                    break
                need -= len(chunk)
                pre.receive_data(chunk)
                for ev in pre.events():
                    end = ev.offset + (ev.header.event_size if ev.header else len(ev.raw or b""))
                    if end <= start_position:
                        before = end
            if need > 0:
                raise BinlogFileError(
                    f"--start-position {start_position} is beyond the end of {p} "
                    f"({start_position - need} bytes)")
            if before != start_position:
                raise BinlogFileError(
                    f"--start-position {start_position} is not an event boundary in {p}: "
                    f"it falls inside the event at {before}")
            at = start_position
            dec = BinlogStreamDecoder(ctx, record=record, start_offset=start_position,
                                      expect_magic=False)
        else:
            dec = BinlogStreamDecoder(ctx, record=record)
            dec.receive_data(head)
        # (a line writer's read without its runs ignores the stop: its caller stops it)
        stop = stop_position if line is None or keep_written else None
        stopped: list[int] = []
        while True:
            try:  # (up to the stop, then a little at a time: the event there ends the read)
                chunk = f.read(CHUNK if stop is None else
                               min(CHUNK, stop - at) if at < stop else STOP_CHUNK)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                if info is not None:
                    info.fatal = f"cannot read {p}: {exc}"
                chunk = b""
            at += len(chunk)
            dec.receive_data(chunk)
            if line is not None:
                assert line_seen is not None
                yield from _with_lines(dec, line, line_seen, tracker, keep_written, stop,
                                       stopped)
                if stopped:
                    if info is not None:
                        info.stopped_at = stopped[0]
                    return
                line.flush()
                if not chunk:
                    break
                continue
            for ev in dec.events():
                if stop is not None and ev.offset >= stop:
                    if info is not None:
                        info.stopped_at = ev.offset
                    return
                track(ev)
                if ev.error is not None:
                    _context_error(ev, tracker)
                yield ev
            if not chunk:
                break
        if info is not None:
            info.magic_node = dec.magic_node
            if dec.fatal:
                info.fatal = dec.fatal


def _context_error(ev: DecodedEvent, tracker: CoordTracker) -> None:
    """A rows event without its TABLE_MAP outside a transaction this read saw begin: the
    transaction began before what is read (a relay log cut mid-transaction, --start-position
    inside one), its TABLE_MAP is context this read never had: said so."""
    error = ev.error
    if error is not None and NO_TABLE_MAP in error and not tracker.in_transaction:
        ev.error = unknown_context(error)


def _with_lines(dec: BinlogStreamDecoder, line: EventLines, seen: LineSeen,
                tracker: CoordTracker, keep_written: bool = False, stop: int | None = None,
                stopped: list[int] | None = None
                ) -> Iterator[DecodedEvent | list[tuple[Any, ...]]]:
    """The events of what ``dec`` holds, ``line`` offered each first (see
    :func:`read_binlog_file`): the declined ones, stamped (``keep_written``: and the tuples of
    those it took, after their coordinates moved on, as lists: one per run of them). ``stop``
    (``keep_written`` only): none from the first event that starts at or after it on (its
    offset is appended to ``stopped``)."""
    ctx = dec.ctx
    moved, moved_run = tracker.moved, tracker.moved_run
    track = tracker.stamp
    for ev in dec.events(line, runs=keep_written):
        if stop is not None and (cut := _stop_in(ev, stop)) is not None:
            assert stopped is not None
            stopped.append(cut[1])
            if cut[0]:  # (the run's events before the stop)
                assert isinstance(ev, list)
                moved_run(ev[:cut[0]])
                yield ev[:cut[0]]
            return
        if isinstance(ev, list):  # a run the kernel took (keep_written): coordinates move on
            moved_run(ev)
            line.gtid = tracker.open_gtid
            yield ev
            continue
        if isinstance(ev, tuple):  # written by the kernel: its coordinates move on
            moved(ev[0], ev[2], ev[3], ev[4])
            line.gtid = tracker.open_gtid
            continue
        track(ev)
        if ev.error is not None:
            _context_error(ev, tracker)
        line.gtid = tracker.open_gtid
        seen(ev, ctx)
        yield ev


def _stop_in(ev: Any, stop: int) -> tuple[int, int] | None:
    """Where in ``ev`` (a decoded event, or a run of the kernel's event values: their offset
    is index 5, ``_line.c`` event_values) the first event at or after ``stop`` is: (its index
    in the run, its offset); None: not in it."""
    if isinstance(ev, list):
        if ev[-1][5] < stop:
            return None
        i = next(i for i, v in enumerate(ev) if v[5] >= stop)
        return i, int(ev[i][5])
    offset = int(ev.offset)
    return (0, offset) if offset >= stop else None


def looks_like_binlog(path: str | Path) -> bool:
    try:
        with _open(Path(path)) as f:
            return f.read(4 + HEADER_LEN)[:4] == BINLOG_MAGIC
    except (BinlogFileError, OSError, EOFError):
        return False


def _read_fde(f: BinaryIO, p: Path, head: bytes, ctx: DecodeContext, start: int) -> None:
    """Decode the FORMAT_DESCRIPTION at offset 4 into ``ctx`` and move ``f`` to ``start`` (a
    trusted start: the events between them are not read)."""
    try:
        header = f.read(HEADER_LEN)
        size = int.from_bytes(header[9:13], "little") if len(header) == HEADER_LEN else 0
        body = f.read(size - HEADER_LEN) if size > HEADER_LEN else b""
        f.seek(start)
    except (OSError, ValueError, EOFError, gzip.BadGzipFile) as exc:
        raise BinlogFileError(f"cannot read {p} from offset {start}: {exc}") from None
    pre = BinlogStreamDecoder(ctx, record=False)
    pre.receive_data(head + header + body)
    pre.receive_data(b"")
    events = list(pre.events())
    if not ctx.fde_seen or len(events) != 1 or events[0].error is not None:
        raise BinlogFileError(f"cannot read {p} from offset {start}: no FORMAT_DESCRIPTION "
                              "at offset 4")


#: the bytes after the FORMAT_DESCRIPTION :func:`transaction_starts` reads to tell a relay log
PREAMBLE = 1 << 16
_GTIDS = MYSQL_GTIDS | {int(EventType.GTID_EVENT)}
_CONTEXT_EVENTS = frozenset({int(EventType.ROTATE_EVENT), int(EventType.FORMAT_DESCRIPTION_EVENT)})


def _plain_preamble(buf: bytes, ctx: DecodeContext) -> bool:
    """The events after the FORMAT_DESCRIPTION up to the first transaction hold no ROTATE or
    second FORMAT_DESCRIPTION (a relay log has its source's there, and again inside: a unit
    that starts after one would lack the context they set); ``buf``: from the first one on."""
    p = int.from_bytes(buf[9:13], "little") if len(buf) >= HEADER_LEN else 0
    while p + HEADER_LEN <= len(buf):
        code, size = buf[p + 4], int.from_bytes(buf[p + 9:p + 13], "little")
        if code in _GTIDS:
            return True
        if code in _CONTEXT_EVENTS or size < HEADER_LEN:
            return False
        p += size
    return True


def transaction_starts(path: str | Path, offsets: list[int], *, window: int = 8 << 20
                       ) -> list[int] | None:
    """Where transactions start at or after each of ``offsets`` (ascending), each found in
    the ``window`` bytes from it without reading the events before it
    (:func:`binlogscope.wire.binlog.resync.transaction_start`): the distinct starts found, in
    order (an offset with none in its window gives none). None: the file cannot be cut (not
    a plain file: standard input, a ``.gz``; no FORMAT_DESCRIPTION; not a binlog; a relay
    log, by its name or its ROTATE and FORMAT_DESCRIPTION after the first)."""
    p = Path(path)
    if str(path) == STDIN_PATH or p.suffix == ".gz" or "relay" in p.name.lower():
        return None
    ctx = DecodeContext()
    out: list[int] = []
    try:
        with p.open("rb") as f:
            head = f.read(4)
            if head != BINLOG_MAGIC:
                return None
            try:
                _read_fde(f, p, head, ctx, 4)
            except BinlogFileError:
                return None
            if not _plain_preamble(f.read(PREAMBLE), ctx):
                return None
            size = os.fstat(f.fileno()).st_size
            for c in offsets:
                if out and c <= out[-1]:
                    continue
                n = min(window, 1 << 18)
                while True:  # (a start is near, mostly: a small read first)
                    f.seek(c)
                    buf = f.read(n)
                    at = transaction_start(buf, c, ctx, eof=c + len(buf) >= size)
                    if at is not None or n >= window or c + len(buf) >= size:
                        break
                    n = min(window, 4 * n)
                if at is not None and at > 4 and (not out or at > out[-1]):
                    out.append(at)
    except OSError:
        return None
    return out
