"""``binlogscope file``: binlog and relay-log files on disk (or standard input), decoded.

Outputs: the annotated text dump (``--plain``; ``--brief`` without explanations), ``--json``
(one :func:`~binlogscope.render.shapes.binlog_event_json` line per event), ``--tree`` (the full
annotated tree per event) and ``--summary`` (one line per event: file, start offset, end
position, server id, time, event). On a terminal without an output option the TUI opens.

Selections as mysqlbinlog users know them: ``--start-position``/``--stop-position``,
``--start-datetime``/``--stop-datetime``, ``--database`` (:mod:`binlogscope.pipeline.select`),
plus ``--table REGEX``. ``--verbose`` adds the SQL-like row view
(:mod:`binlogscope.render.sql_rows`) under each rows event in the text and summary outputs.
``-`` reads one binlog from standard input (``zcat binlog.gz | binlogscope file -``).
"""

from __future__ import annotations

import argparse
import functools
import io
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from binlogscope.cli.common import (
    PROG,
    BadPatternError,
    expand_globs,
    jobs_option,
    run_jobs_in_order,
    spool_output,
    table_pattern,
)
from binlogscope.cli.terminal import FILE_OUTPUTS, wants_tui
from binlogscope.drivers.binlog_file import (
    STDIN_PATH,
    BinlogFileError,
    FileEvents,
    read_binlog_file,
)
from binlogscope.pipeline.filter import event_table
from binlogscope.pipeline.gc_tuning import fewer_gc_passes
from binlogscope.pipeline.select import (
    GtidWindow,
    MysqlGtidFilter,
    SelectionError,
    only_database,
    parse_datetime,
    parse_gtid_position,
    time_range,
)
from binlogscope.render.escape import EscapingText
from binlogscope.render.json_out import LineWriter, binary_stream, dumps_line
from binlogscope.render.line_layout import LineContext, event_lines, summary_lines
from binlogscope.render.shapes import binlog_event_json
from binlogscope.render.sql_rows import row_lines
from binlogscope.render.text import event_line, render_node
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.table_map import TableMapEvent

if TYPE_CHECKING:
    from binlogscope.inspector.sources.binlog_files import BinlogSetSource


def add_file_parser(sub: Any) -> None:
    f = sub.add_parser("file", help="decode binlog or relay-log files on disk",
                       description="Decode binlog files: per event the header and every field "
                       "with offset, hex bytes, value and what it means.")
    f.add_argument("paths", nargs="+", metavar="PATH",
                   help="binlog file(s); .gz is read too; - reads one from standard input")
    out = f.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help="one JSON object per event (file, offset, event_type, rows, ...)")
    out.add_argument("--tree", action="store_true",
                     help="one JSON object per event: the full annotated tree")
    out.add_argument("--summary", action="store_true",
                     help="one line per event: file, offset, end_log_pos, server id, time, event")
    out.add_argument("--plain", action="store_true",
                     help="the annotated text dump (the default when stdout is not a terminal)")
    f.add_argument("--brief", action="store_true", help="leave out the field explanations")
    f.add_argument("-v", "--verbose", action="count", default=0,
                   help="add the rows as SQL-like '### INSERT INTO db.t SET ...' lines (text "
                   "and --summary outputs), column names when the binlog has them; -vv: each "
                   "value followed by mysqlbinlog -vv's type comment "
                   "(/* INT meta=0 nullable=0 is_null=0 */)")
    f.add_argument("--start-position", type=_position, metavar="N|GTIDS",
                   help="first event offset to show (the FORMAT_DESCRIPTION is still read); "
                   "must be an event boundary. Or, as mariadb-binlog, a MariaDB GTID list "
                   "(0-1-40,1-2-7): per domain only the transactions after it (every file)")
    f.add_argument("--stop-position", type=_position, metavar="N|GTIDS",
                   help="stop before the event at or after this offset; or a MariaDB GTID "
                   "list: per domain up to and including it (domains not listed are left "
                   "out), the output ends when every one is reached")
    f.add_argument("--include-gtids", metavar="SET", help="only the transactions whose MySQL "
                   "GTID is in SET (uuid:1-5,uuid2:tag:3, as mysqlbinlog --include-gtids)")
    f.add_argument("--exclude-gtids", metavar="SET", help="leave out the transactions whose "
                   "MySQL GTID is in SET (as mysqlbinlog --exclude-gtids)")
    f.add_argument("--start-datetime", metavar="TIME",
                   help="start at the first event at or after TIME ('YYYY-MM-DD hh:mm:ss', "
                   "local time as in mysqlbinlog, or ISO-8601 with a zone)")
    f.add_argument("--stop-datetime", metavar="TIME",
                   help="stop before the first event at or after TIME")
    f.add_argument("-d", "--database", metavar="DB",
                   help="only events of this database, as mysqlbinlog --database (transaction "
                   "keywords and events of no database are kept)")
    f.add_argument("--table", metavar="REGEX",
                   help=r"only events on tables whose 'schema.table' matches (e.g. 'shop\.orders')")
    f.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="decode up to N files at once, one process each (default: one for one "
                   "file, else the cores not busy: usable cores less the load average, at least "
                   "1); the output is in the order of the files, each written when it is "
                   "done; 1, one file, standard input or a terminal: one at a time, as it comes")


def _gtid_window(args: argparse.Namespace, events: Iterable[DecodedEvent],
                 start: dict[int, int] | None, stop: dict[int, int] | None
                 ) -> Iterator[DecodedEvent]:
    """The GTID window of the command (one across its files: :class:`GtidWindow`)."""
    window = args.__dict__.get("gtid_window")
    if window is None:
        window = args.gtid_window = GtidWindow(start, stop)
    return window.filter(events)


def _position(text: str) -> int | dict[int, int]:
    """A byte position or a MariaDB GTID list (argparse type of --start/--stop-position)."""
    if text.strip().isdigit():
        return int(text)
    try:
        gtids = parse_gtid_position(text)
    except SelectionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if gtids is None:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a byte position nor a MariaDB "
                                         "GTID list (domain-server-seq[,...])")
    return gtids


def file_args(paths: list[str], **kw: Any) -> argparse.Namespace:
    """A ``file`` namespace with every option at its default (for ``demo``)."""
    ns = argparse.Namespace(
        paths=paths, json=False, tree=False, summary=False, plain=False, brief=False,
        verbose=False, start_position=None, stop_position=None, start_datetime=None,
        stop_datetime=None, database=None, table=None, jobs=None)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def cmd_file(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    paths = expand_globs(args.paths, "file", err)  # a quoted glob, as export takes
    if paths is None:
        return 2
    args.paths = paths
    # GTID lists apart from byte positions (the reader takes the byte ones)
    args.start_gtids = args.start_position if isinstance(args.start_position, dict) else None
    args.stop_gtids = args.stop_position if isinstance(args.stop_position, dict) else None
    if args.start_gtids is not None:
        args.start_position = None
    if args.stop_gtids is not None:
        args.stop_position = None
        args.jobs = 1  # the window spans the files: one reader, in order
    include = getattr(args, "include_gtids", None)
    exclude = getattr(args, "exclude_gtids", None)
    args.mysql_gtids = None
    if include is not None or exclude is not None:
        try:
            args.mysql_gtids = MysqlGtidFilter(include, exclude)
        except SelectionError as exc:
            print(f"{PROG}: file: {exc}", file=err)
            return 2
        args.jobs = 1  # a transaction's flag may span files (relay logs): one reader
    start, stop = args.start_position, args.stop_position
    if start is not None and stop is not None and stop <= start:
        # mysqlbinlog prints nothing and exits 0 here: an empty selection is an error
        print(f"{PROG}: file: --stop-position {stop} is not after --start-position {start}: "
              "nothing would be selected", file=err)
        return 2
    if wants_tui(args, out, FILE_OUTPUTS, reads_stdin=not args.paths or STDIN_PATH in args.paths):
        return run_tui(args, err)
    return _cmd_file(args, out, err)


def _filter_table(events: Iterable[DecodedEvent], pattern: re.Pattern[str] | None
                  ) -> Iterable[DecodedEvent]:
    if pattern is None:
        yield from events
        return
    for ev in events:
        schema, table = event_table(ev)
        if table is not None and pattern.fullmatch(f"{schema}.{table}"):
            yield ev


def _times(args: argparse.Namespace, err: TextIO) -> tuple[int | None, int | None] | None:
    try:
        start = parse_datetime(args.start_datetime) if args.start_datetime else None
        stop = parse_datetime(args.stop_datetime) if args.stop_datetime else None
    except SelectionError as exc:
        print(f"{PROG}: file: {exc}", file=err)
        return None
    return start, stop


def _cmd_file(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        pattern = table_pattern(args.table, err)
    except BadPatternError:
        return 2
    times = _times(args, err)
    if times is None:
        return 2
    if args.paths.count(STDIN_PATH) > 1:
        print(f"{PROG}: file: standard input (-) can be read only once", file=err)
        return 2
    if times != (None, None) and STDIN_PATH not in args.paths and not args.summary:
        _skip_by_catalog(args, times, err)
    jobs = jobs_option(args, "file", len(args.paths), err)
    if jobs is None:
        return 2
    raw = spool_output(jobs, args.paths, out)
    if raw is not None:
        return run_jobs_in_order("file", args.paths,
                                 functools.partial(_file_job, args, pattern, times), jobs,
                                 out, raw, err)
    status = 0
    lines = LineWriter(out, interactive=out.isatty())
    with fewer_gc_passes():  # (gc_tuning: a long stream of short-lived objects)
        for path in args.paths:
            try:
                status = max(status, _one_file(path, args, pattern, times, out, lines, err))
            except BrokenPipeError:
                return 0
    return status


Times = tuple[int | None, int | None]


def _skip_by_catalog(args: argparse.Namespace, times: Times, err: TextIO) -> None:
    """Leave out the files whose cached catalog entry (``locate``'s, ~/.cache) shows they hold
    no event of the time window: nothing of them would be printed; said on stderr."""
    from binlogscope.diagnose.catalog import files_covering

    keep, skipped = files_covering([Path(p) for p in args.paths], *times)
    if skipped:
        print(f"{PROG}: file: {len(skipped)} file(s) hold no event of the time window (their "
              f"catalog says so, not read): {', '.join(p.name for p in skipped)}", file=err)
        args.paths = [str(p) for p in keep]


def _one_file(path: str, args: argparse.Namespace, pattern: re.Pattern[str] | None,
              times: Times, out: TextIO, lines: LineWriter, err: TextIO) -> int:
    """One input, written to ``out`` (its messages to ``err``): 0, or 1 when it is damaged or
    cannot be read. The same function runs in the command and in each ``--jobs`` worker."""
    record = not (args.json or args.summary)
    info = FileEvents(path)
    errors: list[str] = []
    try:
        events: Iterable[DecodedEvent] = read_binlog_file(
            path, record=record, start_position=args.start_position,
            stop_position=args.stop_position, info=info)
        if times != (None, None):
            events = time_range(events, *times)
        start_gtids = getattr(args, "start_gtids", None)
        stop_gtids = getattr(args, "stop_gtids", None)
        if start_gtids is not None or stop_gtids is not None:
            events = _gtid_window(args, events, start_gtids, stop_gtids)
        mysql_gtids = getattr(args, "mysql_gtids", None)
        if mysql_gtids is not None:
            events = mysql_gtids.filter(events)
        if args.database is not None:
            events = only_database(events, args.database)
        if pattern is not None:
            events = _filter_table(events, pattern)
        if args.json and _plain_read(args, pattern, times) and _json_by_kernel(
                path, info, lines, errors):
            pass
        elif args.json:
            _write_json(events, path, lines, errors)
        elif args.tree:
            for ev in events:
                if ev.error:
                    errors.append(ev.error)
                assert ev.node is not None
                lines.write({"file": path, **ev.node.to_dict()})
        elif args.summary and not args.verbose and not out.isatty() and _plain_read(
                args, pattern, times) and _summary_by_kernel(path, info, out, errors):
            pass
        elif args.summary:
            _write_summary(events, path, out, errors, verbose=args.verbose)
        else:
            _write_text(events, path, info, args, out, errors)
        lines.flush()
        if info.fatal:
            errors.append(info.fatal)
    except BinlogFileError as exc:
        lines.flush()
        print(f"{PROG}: error: {exc}", file=err)
        return 1
    except SelectionError as exc:  # (a GTID start list the file's binlog state refuses)
        lines.flush()
        print(f"{PROG}: file: {path}: {exc}", file=err)
        return 1
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        # an encrypted rest of file is not damage: say what it is
        what = "not decoded" if "is encrypted" in errors[0] else "damaged"
        print(f"{PROG}: {path}: {what}: {errors[0]}{more}", file=err)
        return 1
    return 0


def _file_job(args: argparse.Namespace, pattern: re.Pattern[str] | None, times: Times,
              encoding: str, text_errors: str, escape: bool, path: str, spool: str
              ) -> tuple[int, str]:
    """A ``--jobs`` worker's input: :func:`_one_file` into the spool file (encoded and, when
    the command's output is an :class:`EscapingText`, escaped as it is); returns its status
    and its messages."""
    err = io.StringIO()
    with open(spool, "w", encoding=encoding, errors=text_errors) as spooled, fewer_gc_passes():
        out = cast("TextIO", EscapingText(spooled)) if escape else spooled
        lines = LineWriter(out)
        status = _one_file(path, args, pattern, times, out, lines, err)
        lines.flush()
    return status, err.getvalue()


def _plain_read(args: argparse.Namespace, pattern: re.Pattern[str] | None, times: Times
                ) -> bool:
    """Every event of the file, none left out: no position, time, GTID, database or table
    selection."""
    return (args.start_position is None and args.stop_position is None
            and times == (None, None) and getattr(args, "start_gtids", None) is None
            and getattr(args, "stop_gtids", None) is None
            and getattr(args, "mysql_gtids", None) is None and args.database is None
            and pattern is None)


def _json_by_kernel(path: str, info: FileEvents, lines: LineWriter, errors: list[str]
                    ) -> bool:
    """``file --json`` of a whole file with the native kernel writing the lines of the
    events it knows (:mod:`binlogscope.render.line_layout`); the others as
    :func:`_write_json` writes them, into the same buffer, in order. False: no kernel (nothing
    was read)."""
    name = None if path == STDIN_PATH else CoordTracker.file_name(path)
    line = event_lines(path, name)
    if line is None:
        return False
    line.sink = lines.add
    add = line.add
    seen = LineContext(line).seen
    try:
        for ev in read_binlog_file(path, record=False, info=info, line=line, line_seen=seen):
            if ev.error:
                errors.append(ev.error)
            add(dumps_line(binlog_event_json(ev, path)))
    finally:
        line.flush()
    return True


def _write_json(events: Iterable[DecodedEvent], path: str, lines: LineWriter,
                errors: list[str]) -> None:
    """``file --json``: one :func:`binlog_event_json` line per event."""
    add = lines.add
    for ev in events:
        if ev.error:
            errors.append(ev.error)
        add(dumps_line(binlog_event_json(ev, path)))
    lines.flush()


class _Clock:
    """``YYYY-MM-DD hh:mm:ss`` of header timestamps in local time (as mysqlbinlog prints
    them), one conversion per distinct second."""

    def __init__(self) -> None:
        self._last = -1
        self._text = ""

    def __call__(self, ts: int) -> str:
        if ts != self._last:
            self._last = ts
            self._text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
        return self._text


#: the --summary column titles (a comment line, so tools reading the columns can skip it)
SUMMARY_TITLE = (f"# {'file':<24}  {'offset':>10}  {'end_log_pos':>11}  {'server_id':>10}  "
                 f"{'time (local)':<19}  event")


class _Maps:
    """The last TABLE_MAP of each table id (``-vv``: the rows' column types)."""

    def __init__(self, verbose: int) -> None:
        self.on = verbose >= 2
        self.maps: dict[int, TableMapEvent] = {}

    def rows(self, ev: DecodedEvent) -> Iterator[str]:
        body = ev.body
        if self.on and isinstance(body, TableMapEvent):
            self.maps[body.table_id] = body
        tid = bodies.table_id(ev) if self.on else None
        return row_lines(body, self.maps.get(tid) if tid is not None else None)


def _summary_line(name: str, ev: DecodedEvent, clock: _Clock) -> str:
    """One ``--summary`` line (columns: :data:`SUMMARY_TITLE`; ``name`` the path's column;
    the kernel writes the same columns: ``render/line_layout.py`` ``summary_lines``)."""
    h = ev.header
    if h is None:
        return f"{name}{ev.offset:>10}  {'-':>11}  {'-':>10}  {'-':<19}  {event_line(ev)}\n"
    return (f"{name}{ev.offset:>10}  {h.log_pos:>11}  {h.server_id:>10}  "
            f"{clock(h.timestamp)}  {event_line(ev)}\n")


def _summary_by_kernel(path: str, info: FileEvents, out: TextIO, errors: list[str]) -> bool:
    """``file --summary`` of a whole file with the native kernel writing the lines of the
    events it knows (:func:`binlogscope.render.line_layout.summary_lines`); the others as
    :func:`_write_summary` writes them, in order. False: no kernel (nothing was written)."""
    clock = _Clock()
    line = summary_lines(path, clock)
    if line is None:
        return False
    add = line.add
    name = f"  {path:<24}  "
    seen = LineContext(line, summary=True).seen
    out.write(SUMMARY_TITLE + "\n")
    line.sink = _summary_sink(out, line.text_plain)
    try:  # (what was read is written when the reading stops with an error, too)
        for ev in read_binlog_file(path, record=False, info=info, line=line, line_seen=seen):
            if ev.error:
                errors.append(ev.error)
            add(_summary_line(name, ev, clock).encode("utf-8", "surrogatepass"))
    finally:
        line.flush()
    return True


def _summary_sink(out: TextIO, plain: Callable[[bytes], bool]) -> Callable[[bytes], object]:
    """Where the kernel's summary lines (UTF-8) go: the text stream, which escapes them
    (render/escape.py) and encodes them; straight into its byte buffer when it encodes UTF-8
    and ``plain`` says nothing in them is escaped - the same bytes without decoding,
    checking and encoding the text again."""
    raw = binary_stream(out)
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    if raw is None or encoding != "utf8" or os.linesep != "\n":
        return lambda text: out.write(text.decode("utf-8", "surrogatepass"))
    out.flush()  # (the title first)

    def sink(text: bytes) -> None:
        if plain(text):
            raw.write(text)
        else:
            out.write(text.decode("utf-8", "surrogatepass"))
            out.flush()  # (in order with the next bytes)
    return sink


def _write_summary(events: Iterable[DecodedEvent], path: str, out: TextIO,
                   errors: list[str], *, verbose: int = 0) -> None:
    """``file --summary``: one line per event (columns: :data:`SUMMARY_TITLE`)."""
    chunk: list[str] = [SUMMARY_TITLE + "\n"]
    add = chunk.append
    size = 1 if out.isatty() else 2048
    n = 0
    name = f"  {path:<24}  "
    clock = _Clock()
    maps = _Maps(verbose)
    try:  # (what was read is written when the reading stops with an error, too)
        for ev in events:
            if ev.error:
                errors.append(ev.error)
            add(_summary_line(name, ev, clock))
            if verbose:
                for line in maps.rows(ev):
                    add(line + "\n")
            n += 1
            if n >= size:
                out.write("".join(chunk))
                chunk.clear()
                n = 0
    finally:
        out.write("".join(chunk))


def _write_text(events: Iterable[DecodedEvent], path: str, info: FileEvents,
                args: argparse.Namespace, out: TextIO, errors: list[str]) -> None:
    """The annotated dump of every event (``--plain``, ``--brief``)."""
    first = True
    maps = _Maps(args.verbose or 0)
    for ev in events:
        if ev.error:
            errors.append(ev.error)
        if first and info.magic_node is None and args.start_position is None:
            out.write(f"# {path}\n")
        first = False
        assert ev.node is not None
        out.write("\n".join(render_node(ev.node, ev.raw, base=ev.offset,
                                         explain=not args.brief)))
        if args.verbose:
            for line in maps.rows(ev):
                out.write("\n" + line)
        out.write("\n\n")


def file_set_source(paths: list[str], *, start_position: int | None = None,
                    stop_position: int | None = None) -> BinlogSetSource:
    """The TUI's source over several binlog files, with the catalog: a go-to by GTID or time
    walks only the files whose catalog entry does not rule it out, and builds (and caches) the
    entries the cache lacks first."""
    from binlogscope.diagnose.catalog import build_missing, files_for_gtid, files_for_time
    from binlogscope.inspector.sources.binlog_files import BinlogSetSource

    files = [Path(p) for p in paths]
    source = BinlogSetSource(paths, start_position=start_position, stop_position=stop_position)
    source.may_hold_gtid = functools.partial(files_for_gtid, files)
    source.may_reach_time = functools.partial(files_for_time, files)
    source.catalogue = lambda cancelled, progress: build_missing(
        files, cancelled=cancelled, progress=progress)
    return source


def run_tui(args: argparse.Namespace, err: TextIO) -> int:
    """Open the Textual inspector on the binlog files (imported lazily: textual is heavy)."""
    from binlogscope.drivers.binlog_file import looks_like_binlog

    for path in args.paths:
        if not Path(path).is_file():
            print(f"{PROG}: error: cannot open {path}: no such file", file=err)
            return 1
        if not looks_like_binlog(path):
            print(f"{PROG}: error: {path} is not a binlog file (no fe 62 69 6e magic)",
                  file=err)
            return 1
    from binlogscope.inspector.source import RowSource
    from binlogscope.inspector.sources.binlog_file import BinlogFileSource
    from binlogscope.tui import run_tui as _run

    source: RowSource
    if len(args.paths) == 1:
        source = BinlogFileSource(args.paths[0], start_position=args.start_position,
                                  stop_position=args.stop_position)
    else:  # the whole set, as the text outputs read it
        source = file_set_source(args.paths, start_position=args.start_position,
                                 stop_position=args.stop_position)
    try:
        table_pattern(args.table, err)
    except BadPatternError:
        return 2
    return _run(source, table_regex=args.table, err=err)
