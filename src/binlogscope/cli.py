"""The ``binlogscope`` command line.

Subcommands: ``file`` (binlog files on disk), ``demo`` (the bundled capture), and the ones still
being built (``live``, ``pcap``, ``export``, ``analyze``, ``mock-master``), which say so and exit 2.

Contract: a CLI never shows a traceback for bad input or a refused connection - one clear line
on stderr and a non-zero exit (1: the input is damaged or missing, 2: usage).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from binlogscope import __version__
from binlogscope.drivers.binlog_file import BinlogFileError, FileEvents, read_binlog_file
from binlogscope.render.text import render_node
from binlogscope.summary import event_summary, event_table, short_summary
from binlogscope.wire.binlog.decode import DecodedEvent

PROG = "binlogscope"
_PENDING = {
    "live": "connect to a server as a replica (issue 3)",
    "pcap": "decode replication traffic from pcap/pcapng captures (issue 4)",
    "export": "export decoded sessions to Parquet (issue 7)",
    "analyze": "analyse exported sessions on Spark (issue 7)",
    "mock-master": "a scriptable mock primary (issue 6)",
}


def _bundled_capture() -> Path | None:
    """The small real MariaDB binlog that ships in captures/ (used by ``demo``)."""
    here = Path(__file__).resolve()
    for root in (here.parents[2], Path.cwd()):
        cap = root / "captures"
        if cap.is_dir():
            files = sorted(p for p in cap.iterdir() if p.name.startswith("mariadb-")
                           and not p.name.endswith((".md", ".pcap", ".pcapng")))
            if files:
                return files[0]
    return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="See and test the MySQL/MariaDB replication protocol byte by byte.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    f = sub.add_parser("file", help="decode binlog or relay-log files on disk",
                       description="Decode binlog files: per event the header and every field "
                       "with offset, hex bytes, value and what it means.")
    f.add_argument("paths", nargs="+", metavar="PATH", help="binlog file(s); .gz is read too")
    out = f.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help="one JSON object per event (file, offset, event_type, rows, ...)")
    out.add_argument("--tree", action="store_true",
                     help="one JSON object per event: the full annotated tree")
    out.add_argument("--summary", action="store_true", help="one line per event")
    f.add_argument("--brief", action="store_true", help="leave out the field explanations")
    f.add_argument("--start-position", type=int, metavar="N",
                   help="first event offset to show (the FORMAT_DESCRIPTION is still read)")
    f.add_argument("--stop-position", type=int, metavar="N",
                   help="stop before the event at or after this offset")
    f.add_argument("--table", metavar="REGEX",
                   help=r"only events on tables whose 'schema.table' matches (e.g. 'shop\.orders')")

    d = sub.add_parser("demo", help="decode the bundled real MariaDB binlog (no server needed)")
    d.add_argument("--json", action="store_true")
    d.add_argument("--brief", action="store_true")

    for name, what in _PENDING.items():
        sp = sub.add_parser(name, help=f"{what} - not built yet")
        sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _filter_table(events: Iterable[DecodedEvent], pattern: re.Pattern[str] | None
                  ) -> Iterable[DecodedEvent]:
    if pattern is None:
        yield from events
        return
    for ev in events:
        schema, table = event_table(ev)
        if table is not None and pattern.fullmatch(f"{schema}.{table}"):
            yield ev


def _cmd_file(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    pattern = None
    if args.table:
        try:
            pattern = re.compile(args.table)
        except re.error as exc:
            print(f"{PROG}: error: --table: bad regular expression: {exc}", file=err)
            return 2
    record = not (args.json or args.summary)
    status = 0
    for path in args.paths:
        info = FileEvents(path)
        try:
            events = read_binlog_file(path, record=record, start_position=args.start_position,
                                      stop_position=args.stop_position, info=info)
            first = True
            errors: list[str] = []
            for ev in _filter_table(events, pattern):
                if ev.error:
                    errors.append(ev.error)
                if args.json:
                    out.write(json.dumps(event_summary(ev, file=path), ensure_ascii=False) + "\n")
                elif args.tree:
                    assert ev.node is not None
                    obj = {"file": path, **ev.node.to_dict()}
                    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
                elif args.summary:
                    out.write(f"{ev.offset:>10}  {short_summary(ev)}\n")
                else:
                    if first and info.magic_node is None and args.start_position is None:
                        out.write(f"# {path}\n")
                    first = False
                    assert ev.node is not None
                    for line in render_node(ev.node, ev.raw, base=ev.offset, explain=not args.brief):
                        out.write(line + "\n")
                    out.write("\n")
            if info.fatal:
                errors.append(info.fatal)
        except BinlogFileError as exc:
            print(f"{PROG}: error: {exc}", file=err)
            status = 1
            continue
        except BrokenPipeError:
            return 0
        if errors:
            status = 1
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            print(f"{PROG}: {path}: damaged: {errors[0]}{more}", file=err)
    return status


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "file":
            return _cmd_file(args, out, err)
        if args.command == "demo" or args.command is None:
            cap = _bundled_capture()
            if cap is None:
                print(f"{PROG}: error: no bundled capture found (captures/ is missing)", file=err)
                return 1
            ns = argparse.Namespace(
                paths=[str(cap)], json=getattr(args, "json", False), tree=False, summary=False,
                brief=getattr(args, "brief", False), start_position=None, stop_position=None,
                table=None)
            return _cmd_file(ns, out, err)
        if args.command in _PENDING:
            print(f"{PROG}: {args.command}: not built yet ({_PENDING[args.command]})", file=err)
            return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help(err)
    return 2
