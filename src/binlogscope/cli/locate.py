"""``binlogscope locate QUERY... --source FILES|DIR|mysql://URL``: FILE:POS <-> GTID <-> time."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from binlogscope.cli.common import PROG

_EPILOG = """\
QUERY: [end:]FILE:POS (the event that starts - or ends - there, and the GTID position there, as
MariaDB's BINLOG_GTID_POS(FILE, POS) gives it), a GTID (0-1-42, or UUID:N) (its transaction's
start and end), or a time (@EPOCH, or ISO 8601 such as 2026-11-27T22:52:43, UTC unless it says)
(the first event at or after it). --catalog prints the per-file catalog instead. Exit status:
0 every query was answered, 1 one was not found or the source could not be read."""


def add_locate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("locate", help="translate binlog coordinates: FILE:POS <-> GTID <-> time",
                       description="Translate coordinates over an archive of binlog files or a "
                       "live server, backed by a small per-file catalog.", epilog=_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("queries", nargs="*", metavar="QUERY",
                   help="what to translate: [end:]FILE:POS, a GTID or a time (below)")
    p.add_argument("--source", nargs="+", required=True, metavar="SOURCE",
                   help="binlog files or directories, or mysql://[USER@]HOST[:PORT]")
    p.add_argument("--defaults-file", metavar="FILE", help="MySQL option file to read instead "
                   "of ~/.my.cnf ([client] group) for a mysql:// source: the password comes from "
                   "there, MYSQL_PWD or a prompt (a password in the URL is refused)")
    p.add_argument("--json", action="store_true", help="one JSON line per answer")
    p.add_argument("--catalog", action="store_true", help="print the catalog of each file")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the catalog cache (~/.cache/binlogscope)")


def cmd_locate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.diagnose import catalog as cat
    from binlogscope.diagnose.locate import (
        Answer,
        Archive,
        answer_json,
        answer_lines,
        locate_in_archive,
        locate_live,
        parse_query,
    )
    from binlogscope.diagnose.walk import SourceError, parse_url
    from binlogscope.render.json_out import dumps_line

    if not args.queries and not args.catalog:
        print(f"{PROG}: locate: give a QUERY or --catalog", file=err)
        return 2
    cache: Path | None = None if args.no_cache else cat.cache_dir()
    answers: list[Answer] = []
    try:
        for q in args.queries:
            parse_query(q)  # a bad query is refused before anything is read
        live = args.source[0].startswith(("mysql://", "mariadb://"))
        if live:
            if args.catalog:
                print(f"{PROG}: locate: --catalog reads files, not a server", file=err)
                return 2
            answers = locate_live(parse_url(args.source[0], args.defaults_file),
                                  list(args.queries))
        else:
            arch = Archive(list(args.source), cache)
            if args.catalog:
                for path in arch.paths:
                    entry = cat.entry_json(arch.entry(path))
                    if args.json:
                        out.write(dumps_line(entry).decode())
                    else:
                        print(_entry_text(entry), file=out)
            answers = [locate_in_archive(arch, q) for q in args.queries]
    except SourceError as exc:
        print(f"{PROG}: locate: {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"{PROG}: locate: {exc.strerror or exc}", file=err)
        return 1
    for a in answers:
        if args.json:
            out.write(dumps_line(answer_json(a)).decode())
        else:
            for line in answer_lines(a):
                print(line, file=out)
    ok = all(a.found or (a.kind == "position" and a.boundary) for a in answers)
    return 0 if ok else 1


def _entry_text(e: dict[str, Any]) -> str:
    ranges: dict[str, list[int]] = e.get("gtid_ranges") or {}
    gt = ", ".join(f"{k}-{v[0]}..{v[1]}" for k, v in ranges.items()) or "no GTIDs"
    return (f"{e['name']}: {e['size']} bytes, events {e['events']}, transactions "
            f"{e['transactions']}, time {e['first_time']}..{e['last_time']}, server ids "
            f"{e['server_ids']}, {e['server_version']}, checksum {e['checksum']}, starts from "
            f"[{e['start_state'] or ''}], GTIDs {gt}, next {e['next_file']}"
            + (f", {e['damaged']} damaged" if e["damaged"] else ""))


__all__ = ["add_locate_parser", "cmd_locate"]
