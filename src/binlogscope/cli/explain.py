"""``binlogscope explain 'TEXT' --source FILES|CAPTURE|mysql://URL``: why did my replica stop
here? (docs/explain.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from binlogscope.cli.common import PROG

_EPILOG = """\
TEXT is the error as a client printed it (a replica's Last_SQL_Error or Last_IO_Error, an
error-log line, a Debezium/binlog-connector-java exception, a go-mysql EventError, a
python-mysql-replication traceback, an ERR 1236 message) or a coordinate: end:FILE:POS (the
event that ends there), start:FILE:POS or FILE:POS (the one that starts there). '-' reads it
from standard input. Exit status: 0 the event (or the answer) was found, 1 not found or the
source could not be read, 2 nothing in TEXT was recognised."""


def add_explain_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("explain", help="find the event an error line points at and explain it",
                       description="Recognise a pasted error line, find the event it points "
                       "at (its end or start position, said which) and show it with its "
                       "transaction, TABLE_MAP, FORMAT_DESCRIPTION and what is unusual.",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("text", metavar="TEXT", help="the error line(s), or '-' for stdin")
    e.add_argument("--source", nargs="+", metavar="SOURCE", default=[],
                   help="binlog files or directories, one capture, or mysql://[USER@]HOST[:PORT]")
    e.add_argument("--defaults-file", metavar="FILE", help="MySQL option file to read instead "
                   "of ~/.my.cnf ([client] group) for a mysql:// source: the password comes from "
                   "there, MYSQL_PWD or a prompt (a password in the URL is refused)")
    e.add_argument("--file", metavar="FILE", help="the binlog file the position is in, when "
                   "the line does not name it")
    e.add_argument("--json", action="store_true", help="one JSON document")
    e.add_argument("--brief", action="store_true", help="without the byte-by-byte dump")


def cmd_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.diagnose.explain import Finding, explain
    from binlogscope.diagnose.patterns import best, recognise
    from binlogscope.diagnose.report import clue_json, clue_lines
    from binlogscope.diagnose.walk import SourceError, is_capture, shown, walk
    from binlogscope.render.json_out import dumps_pretty

    text = sys.stdin.read() if args.text == "-" else args.text
    clues = recognise(text)
    clue = best(clues)
    if clue is None:
        print(f"{PROG}: explain: nothing recognised in the text (docs/explain.md lists the "
              "patterns); a position can be given as end:FILE:POS or start:FILE:POS", file=err)
        return 2
    if args.file and clue.binlog_file is None:
        clue.binlog_file = args.file
    if not args.source:
        if args.json:
            out.write(dumps_pretty({"clues": [clue_json(c) for c in clues]}).decode())
        else:
            for c in clues:
                for line in clue_lines(c):
                    print(line, file=out)
            print("(give --source FILES|CAPTURE|mysql://URL to find the event)", file=out)
        return 0
    live_start = f"{clue.binlog_file}:4" if clue.binlog_file else None
    if args.source[0].startswith(("mysql://", "mariadb://")) and live_start is None:
        print(f"{PROG}: explain: the line names no binlog file: give --file FILE to read "
              "from a server", file=err)
        return 2
    source = shown(list(args.source))  # (a server URL's password is never shown)
    single = len(args.source) == 1 and Path(args.source[0]).is_file() and not is_capture(
        args.source[0])
    if single and clue.binlog_file is not None and _base(clue.binlog_file) != _base(
            args.source[0]):
        # one file given: it is the file the line speaks of, whatever it is called now
        print(f"{PROG} explain: the line names {clue.binlog_file}; {args.source[0]} is taken "
              "as that file", file=err)
        clue.binlog_file = None
    finding: Finding
    try:
        finding = explain(clue, walk(list(args.source), live_start=live_start,
                                     defaults_file=args.defaults_file), source)
    except SourceError as exc:
        print(f"{PROG}: explain: {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"{PROG}: explain: {exc.strerror or exc}", file=err)
        return 1
    try:
        _write(args, finding, clues, clue, out)
    except BrokenPipeError:  # a reader that went away (| head): no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0 if finding.found is not None or finding.answered else 1


def _base(name: str) -> str:
    b = name.replace("\\", "/").rsplit("/", 1)[-1]
    return b[:-3] if b.endswith(".gz") else b


def _write(args: argparse.Namespace, finding: Any, clues: list[Any], clue: Any,
           out: TextIO) -> None:
    from binlogscope.diagnose.report import clue_json, finding_json, finding_lines
    from binlogscope.render.json_out import dumps_pretty

    if args.json:
        doc: dict[str, Any] = finding_json(finding)
        doc["other_clues"] = [clue_json(c) for c in clues if c is not clue]
        out.write(dumps_pretty(doc).decode())
    else:
        for line in finding_lines(finding, tree=not args.brief):
            print(line, file=out)
        for c in clues:
            if c is not clue:
                print(f"also recognised: {c.pattern} ({c.where})", file=out)


__all__ = ["add_explain_parser", "cmd_explain"]
