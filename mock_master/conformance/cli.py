"""``binlogscope conformance``: grade a replication client on the case catalogue.

::

    binlogscope conformance run --client 'CMD {host} {port} {user} {password} ...'
        [--adapter schema|binlogscope-live|none] [--flavor mariadb|mysql|both]
        [--cases SECTION/PATTERN,...] [--json FILE] [--html DIR] [--junit FILE] [--jobs N]
    binlogscope conformance run --client binlogscope | python-mysql-replication | mariadb-binlog
    binlogscope conformance list [--json]
    binlogscope conformance compare A.json B.json
    binlogscope conformance card DIR A.json [B.json ...]
    binlogscope conformance fuzz --client C [--count N] [--seconds S] [--out DIR]
        [--json FILE] [--junit FILE] [--html DIR]

Exit status of ``run``: 0 when no case failed (non-strict counts as a pass here), 1 when one
did, 2 on a usage error. ``compare``: 1 when a case got worse from A to B.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

PROG = "binlogscope conformance"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Grade a MySQL/MariaDB replication client on every "
                "case the catalogue has (docs/conformance.md).")
    sub = p.add_subparsers(dest="sub", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run the catalogue against a client")
    r.add_argument("--client", required=True,
                   help="a command with {host} {port} {user} {password} (and {file} {pos} "
                   "{gtid} {flavor} {server_id} {semi_sync} {heartbeat} {tls} {gtid_strict}) "
                   "placeholders, or a preset: "
                   "binlogscope, python-mysql-replication, mariadb-binlog, mariadb-replica "
                   "(CONFORMANCE_REPLICA=host:port:user names the replica server)")
    r.add_argument("--adapter", choices=("schema", "binlogscope-live", "none"),
                   help="how the client's stdout is read (default: schema for a command)")
    r.add_argument("--name", help="the client's name in the reports")
    r.add_argument("--semi-sync", action="store_true",
                   help="the command negotiates semi-sync (its semi-sync cases are graded)")
    r.add_argument("--flavor", choices=("mariadb", "mysql", "both"), default="both")
    r.add_argument("--cases", help="SECTION or SECTION/PATTERN, comma-separated")
    r.add_argument("--json", metavar="FILE", help="write the JSON report here")
    r.add_argument("--html", metavar="DIR", help="write the HTML report card here")
    r.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    r.add_argument("--jobs", type=int, default=4, help="cases at once (default 4)")
    r.add_argument("--quiet", action="store_true", help="no line per case")
    r.add_argument("--corpus", metavar="DIR", help="also run the mutants `fuzz --out DIR` kept")
    fz = sub.add_parser("fuzz", help="serve mutated streams, keep what hung, crashed or "
                        "silently changed the client's output")
    fz.add_argument("--client", required=True)
    fz.add_argument("--adapter", choices=("schema", "binlogscope-live", "none"))
    fz.add_argument("--flavor", choices=("mariadb", "mysql", "both"), default="both")
    fz.add_argument("--count", type=int, default=50, help="mutants at most (default 50)")
    fz.add_argument("--seconds", type=float, default=120.0,
                    help="time budget (default 120 s)")
    fz.add_argument("--seed", type=int, default=1)
    fz.add_argument("--out", metavar="DIR", help="write each kept mutant here as a case")
    fz.add_argument("--json", metavar="FILE", help="every mutant's result (a row each), as "
                    "`run --json` writes them")
    fz.add_argument("--junit", metavar="FILE", help="every mutant's result as JUnit XML")
    fz.add_argument("--html", metavar="DIR", help="every mutant's result as a report card")
    ls = sub.add_parser("list", help="the catalogue")
    ls.add_argument("--json", action="store_true")
    c = sub.add_parser("compare", help="what changed between two JSON reports")
    c.add_argument("a")
    c.add_argument("b")
    card = sub.add_parser("card", help="one HTML report card of several JSON reports")
    card.add_argument("dir")
    card.add_argument("reports", nargs="+")
    return p


def main(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        if args.sub == "list":
            return _list(args, out)
        if args.sub == "compare":
            return _compare(args, out, err)
        if args.sub == "card":
            return _card(args, out, err)
        if args.sub == "fuzz":
            return _fuzz(args, out, err)
        return _run(args, out, err)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=err)
        return 130


def _list(args: argparse.Namespace, out: TextIO) -> int:
    from mock_master.conformance.catalogue import catalogue

    cases = catalogue()
    if args.json:
        out.write(json.dumps([{"case": c.id, "section": c.section, "title": c.title,
                               "expect": c.expect, "flavors": list(c.flavors),
                               "needs": list(c.needs), "links": list(c.links),
                               "informational": c.informational} for c in cases], indent=2))
        out.write("\n")
        return 0
    for c in cases:
        fl = "/".join(c.flavors)
        out.write(f"{c.id:<44} {fl:<13} {c.title}\n")
    n = sum(len(c.flavors) for c in cases)
    out.write(f"{len(cases)} cases ({n} runs over the flavours)\n")
    return 0


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mock_master.conformance.report import compare, load_json, summary

    try:
        a, b = load_json(args.a), load_json(args.b)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    lines, worse = compare(a, b)
    for ln in lines:
        out.write(ln + "\n")
    out.write(f"A: {summary(a)}\nB: {summary(b)}\n{worse} case(s) worse\n")
    return 1 if worse else 0


def _card(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mock_master.conformance.report import load_json, write_html

    reports = {}
    try:
        for p in args.reports:
            items = load_json(p)
            name = str(items[0].get("client", Path(p).stem)) if items else Path(p).stem
            reports[name] = items
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    path = write_html(args.dir, reports)
    out.write(f"report card: {path}\n")
    return 0


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import time

    from mock_master.conformance.catalogue import catalogue, select
    from mock_master.conformance.clients import ClientError, make_client
    from mock_master.conformance.model import Result
    from mock_master.conformance.report import (
        summary,
        to_json,
        write_html,
        write_json,
        write_junit,
    )
    from mock_master.conformance.runner import run_cases

    try:
        client = make_client(args.client, args.adapter, semi_sync=args.semi_sync,
                             name=args.name)
    except ClientError as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    cases = select(catalogue(), args.cases)
    if args.corpus:
        from mock_master.conformance.fuzz import load_corpus

        try:
            cases += load_corpus(args.corpus)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"{PROG}: --corpus {args.corpus}: {exc}", file=err)
            return 2
    flavors = ("mariadb", "mysql") if args.flavor == "both" else (args.flavor,)
    todo = [(c, f) for c in cases for f in flavors if f in c.flavors]
    if not todo:
        print(f"{PROG}: no case matches --cases {args.cases!r}", file=err)
        return 2
    t0 = time.monotonic()

    def progress(r: Result) -> None:
        if not args.quiet:
            first = next((c.text for c in r.checks if c.verdict == r.verdict),
                         r.checks[0].text if r.checks else "")
            out.write(f"{r.verdict.value:<14} {r.case} [{r.flavor}] {first[:150]}\n")
            out.flush()

    results = run_cases(todo, client, jobs=args.jobs, progress=progress)
    took = time.monotonic() - t0
    items = to_json(results, client.name)
    out.write(f"{client.name}: {len(results)} case runs in {took:.1f} s: {summary(items)}\n")
    if args.json:
        write_json(args.json, results, client.name)
    if args.junit:
        write_junit(args.junit, results, client.name)
    if args.html:
        path = write_html(args.html, {client.name: items})
        out.write(f"report card: {path}\n")
    return 1 if any(r.verdict.value == "fail" for r in results) else 0


def _fuzz(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mock_master.conformance.clients import ClientError, make_client
    from mock_master.conformance.fuzz import Mutation, fuzz
    from mock_master.conformance.fuzz import kept as kept_of
    from mock_master.conformance.report import (
        summary,
        to_json,
        write_html,
        write_json,
        write_junit,
    )

    try:
        client = make_client(args.client, args.adapter)
    except ClientError as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    flavors = ("mariadb", "mysql") if args.flavor == "both" else (args.flavor,)

    def progress(m: Mutation, what: str | None) -> None:
        tag = "ok  " if what is None else ("info" if what.startswith("(") else "KEPT")
        out.write(f"{tag} {m.name}{': ' + what if what else ''}\n")
        out.flush()

    done = fuzz(client, flavors=flavors, count=args.count, seconds=args.seconds,
                seed=args.seed, out=Path(args.out) if args.out else None, progress=progress)
    results = [r for _, r in done]
    kept = kept_of(done)
    if args.json:
        write_json(args.json, results, client.name)
    if args.junit:
        write_junit(args.junit, results, client.name)
    items = to_json(results, client.name)
    if args.html:
        out.write(f"report card: {write_html(args.html, {client.name: items})}\n")
    out.write(f"{client.name}: {len(done)} mutant(s): {summary(items)}; "
              f"{len(kept)} kept" + (f" in {args.out}" if args.out and kept else "") + "\n")
    return 1 if kept else 0


class ConformanceCommand:
    """``binlogscope conformance ...`` (an argv plugin: it has its own subcommands)."""

    name = "conformance"
    help = "grade a replication client on the conformance case catalogue"
    description = ("Run the conformance catalogue (setup, events, values, framing, stream "
                   "control, semi-sync, GTID, incidents) against a replication client through "
                   "the mock master and grade each case: pass, non-strict, fail, "
                   "informational, unimplemented.")

    def main(self, argv: list[str], out: TextIO, err: TextIO) -> int:
        return main(argv, out, err)


CONFORMANCE = ConformanceCommand()

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
