"""The ``binlogscope`` command line.

Subcommands: ``file`` (binlog files on disk), ``demo`` (the bundled capture), and the ones still
being built (``live``, ``pcap``, ``export``, ``analyze``, ``mock-master``), which say so and exit 2.

Contract: a CLI never shows a traceback for bad input or a refused connection - one clear line
on stderr and a non-zero exit (1: the input is damaged or missing, 2: usage).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from binlogscope import __version__
from binlogscope.cli.common import PROG
from binlogscope.cli.explain import add_explain_parser, cmd_explain
from binlogscope.cli.file import add_file_parser, cmd_file, file_args
from binlogscope.cli.live import (
    COUNT_HELP,
    add_live_connection_options,
    add_live_parser,
    cmd_live,
)
from binlogscope.cli.locate import add_locate_parser, cmd_locate
from binlogscope.cli.pcap import add_pcap_parser, cmd_pcap
from binlogscope.cli.plugins import add_plugin_parsers, run_demo, run_plugin
from binlogscope.cli.proxy import add_proxy_parser, cmd_proxy
from binlogscope.cli.redact import add_redact_parser, cmd_redact
from binlogscope.cli.signals import flag_on_signals, restore_signals, stop_on_signals
from binlogscope.cli.sniff import add_sniff_parser, cmd_sniff
from binlogscope.cli.terminal import FILE_OUTPUTS, wants_tui
from binlogscope.render.escape import EscapingText

#: subcommands still being built (name -> what it will do); each says so and exits 2
_PENDING: dict[str, str] = {}


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

    add_file_parser(sub)

    d = sub.add_parser("demo", help="watch a replica session over the bundled real MariaDB binlog "
                       "(in-process mock master; no server needed)")
    d.add_argument("--json", action="store_true", help="one JSON object per line instead of "
                   "the TUI")
    d.add_argument("--plain", action="store_true", help="plain text instead of the TUI")
    d.add_argument("--brief", action="store_true", help="one line per packet or event")
    d.add_argument("--live", action="store_true",
                   help="(the default) serve the capture with the in-process mock master and "
                   "watch it with `binlogscope live`")
    d.add_argument("--file", action="store_true",
                   help="decode the bundled binlog file instead (`binlogscope file` on it)")
    d.add_argument("--tour", action="store_true",
                   help="a guided walk through the session in the TUI: the cursor moves from "
                   "the greeting to the login, the dump request and the events, each step "
                   "explained (] next, [ back)")
    d.add_argument("--teach", action="store_true",
                   help="with --tour: show the demo's own login scramble and recompute "
                   "mysql_native_password from it by hand (the in-process demo only: every "
                   "other surface masks scrambles and auth responses)")

    _add_export_parsers(sub)

    add_live_parser(sub)
    add_plugin_parsers(sub)  # subcommands of installed packages (mock-master)
    add_pcap_parser(sub)
    add_sniff_parser(sub)
    add_proxy_parser(sub)
    add_explain_parser(sub)
    add_locate_parser(sub)
    add_redact_parser(sub)

    for name, what in _PENDING.items():
        sp = sub.add_parser(name, help=f"{what} - not built yet")
        sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _add_export_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("export", help="export decoded binlogs to a Parquet dataset",
                       description="Export to a Parquet dataset (tables packets, events, rows; "
                       "schema in docs/export-schema.md), crash-safe and resumable.")
    e.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="binlog file(s) or directories of binlog files")
    e.add_argument("--out", required=True, metavar="DIR", help="dataset directory")
    e.add_argument("--pcap", action="store_true", help="SOURCE is a pcap/pcapng capture")
    e.add_argument("--live", action="store_true",
                   help="export a live replication stream (the live options below; until "
                   "Ctrl-C, --count, --until-position or the end of a --non-blocking dump)")
    e.add_argument("--port", type=int, action="append", default=[],
                   help="with --pcap: MySQL server port(s); with --live: the server port")
    e.add_argument("--count", type=int, metavar="N",
                   help="with --live: " + COUNT_HELP.replace("shown", "exported"))
    e.add_argument("--until-position", metavar="FILE:POS", help="with --live: stop there")
    add_live_connection_options(e, port=False)
    e.add_argument("--resume", action="store_true",
                   help="finish an interrupted export in DIR (SOURCE may be left out)")
    e.add_argument("--no-raw", action="store_true", help="leave raw packet payloads out")
    e.add_argument("--checkpoint-events", type=int, default=200_000, metavar="N",
                   help="make completed data visible every N events (default 200000)")
    e.add_argument("--spark", action="store_true", help="decode on Spark, one task per "
                   "input; SOURCE may also be a glob or a Hadoop-FS URI (docs/spark-cluster.md)")
    e.add_argument("--master", help="with --spark: Spark master URL (default: spark-submit's, "
                   "else local[*])")
    e.add_argument("--conf", action="append", default=[], metavar="K=V",
                   help="with --spark: Spark configuration, repeatable")
    e.add_argument("--checkpoint-files", type=int, metavar="N", help="with --spark: make "
                   "completed data visible every N inputs (default 4 per core)")
    e.add_argument("--writer", choices=("spark", "tasks"), default="spark", help="with "
                   "--spark: Parquet written by Spark (default) or by each task itself")

    a = sub.add_parser("analyze", help="reports over an export, computed on Spark",
                       description="Run the reports (or --sql) over an export with PySpark.")
    a.add_argument("dir", metavar="DIR", help="an export directory")
    a.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    a.add_argument("--conf", action="append", default=[], metavar="K=V",
                   help="Spark configuration, repeatable")
    a.add_argument("--sql", metavar="QUERY",
                   help="run this Spark SQL over the views packets, events, rows, transactions")
    a.add_argument("--reports", metavar="DIR",
                   help="write each report as Parquet and CSV here (default DIR/_reports)")
    a.add_argument("--plots", metavar="DIR", help="draw PNG charts into this directory")
    a.add_argument("--limit", type=int, default=20, metavar="N", help="rows printed per report")


def _stream_source(args: argparse.Namespace, err: TextIO) -> Any:
    """The export source for ``--pcap CAPTURE...`` / ``--live [live options]`` (or an exit code
    after a one-line error)."""
    from binlogscope.cli.live import live_settings
    from binlogscope.export.records import SourceError
    from binlogscope.export.sources import LiveRecordSource, PcapRecordSource

    try:
        if args.pcap:
            if not args.sources:
                print(f"{PROG}: export: --pcap needs a capture file", file=err)
                return 2
            return PcapRecordSource(list(args.sources), args.port or None)
        settings = live_settings(args, err)
        if settings is None:
            return 2
        return LiveRecordSource(settings, count=args.count, until_position=args.until_position)
    except SourceError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 1


def _cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.export.records import BinlogFileSource, SourceError

    if args.spark:

        from binlogscope.export.spark.export import cmd_export_spark

        previous = stop_on_signals()  # SIGTERM and SIGHUP end the export as Ctrl-C does
        try:
            return cmd_export_spark(args, out, err, PROG)
        finally:
            restore_signals(previous)
    source: Any
    if args.pcap or args.live:
        source = _stream_source(args, err)
        if isinstance(source, int):
            return source
        return _run_export(args, source, out, err)
    sources = list(args.sources)
    if not sources and args.resume:
        from binlogscope.export.arrow import read_state

        if not Path(args.out).is_dir():  # (nothing to resume: say that, not "no SOURCE")
            what = "does not exist" if not Path(args.out).exists() else "is not a directory"
            print(f"{PROG}: export: --resume: {args.out} {what}: there is no export to go on "
                  "with (give the SOURCE to start one)", file=err)
            return 2
        state = read_state(args.out)
        if state is None:
            print(f"{PROG}: export: --resume: {args.out} holds no export checkpoint to go on "
                  "from (give the SOURCE to start one)", file=err)
            return 2
        if state.get("source_kind") == "live":  # reconnect with the recorded options
            from binlogscope.cli.live import live_resume_source

            source = live_resume_source(state, args, err)
            if isinstance(source, int):
                return source
            return _run_export(args, source, out, err)
        sources = list(state.get("inputs") or [])
    if not sources:
        print(f"{PROG}: export: no SOURCE given", file=err)
        return 2
    try:
        source = BinlogFileSource(sources)
    except SourceError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 1
    return _run_export(args, source, out, err)


def _run_export(args: argparse.Namespace, source: Any, out: TextIO, err: TextIO) -> int:
    """Run an export from any source; progress on a terminal, one line per problem."""

    from binlogscope.export.run import ExportError, run_export

    tty = err.isatty()

    def progress(events: int, done: int, total: int | None, secs: float) -> None:
        rate = events / secs if secs > 0 else 0.0
        pct = f" {100 * done / total:5.1f}%" if total else ""
        err.write(f"\r{PROG} export:{pct} {events:,} events, {rate:,.0f} events/s ")
        err.flush()

    # a live source stops at the next transaction and keeps everything received (a second
    # signal: at once); files and captures: SIGTERM and SIGHUP end it as Ctrl-C does
    fired: list[int] = []
    live = getattr(source, "kind", "") == "live"
    if live:
        source.should_stop = lambda: bool(fired)
    previous = flag_on_signals(fired) if live else stop_on_signals()
    try:
        res = run_export(source, args.out, resume=args.resume, no_raw=args.no_raw,
                         checkpoint_events=max(1, args.checkpoint_events),
                         progress=progress if tty else None,
                         stop=(lambda: bool(fired)) if live else None)
    except ExportError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 2
    finally:
        restore_signals(previous)
        if tty:
            err.write("\n")
    if res.resumed:
        print(f"{PROG}: export: {args.out} held an unfinished export of the same input(s); "
              "went on from its last checkpoint (as --resume does)", file=err)
    if res.already_complete:
        print(f"{PROG}: export: {args.out} is already complete; nothing to do", file=err)
        return 0
    if res.interrupted:
        for msg in res.input_errors:
            print(f"{PROG}: export: {msg}", file=err)
        code = 128 + fired[0] if fired else 1
        if res.removed:
            print(f"{PROG}: export: nothing was exported; {args.out} removed again (the same "
                  "command can simply be run again)", file=err)
            return code
        if live and (fired or res.input_errors):
            where = (res.resume or {}).get("position") or {}
            at = f" (up to {where['log_file']}:{where['log_pos']})" if where else ""
            how = "stopped" if fired else "the stream failed"
            print(f"{PROG}: export: {how}; {args.out} holds everything received{at}; go "
                  f"on with: {PROG} export --resume --out {args.out}", file=err)
            return code
        print(f"{PROG}: export: interrupted; {args.out} holds everything up to the last "
              f"checkpoint; finish with: {PROG} export --resume --out {args.out}", file=err)
        return 130
    c = res.counts
    print(f"exported {c['events']} events, {c['rows']} rows, {c['packets']} packets to "
          f"{args.out} in {res.seconds:.1f} s", file=out)
    for msg in res.input_errors:
        print(f"{PROG}: export: {msg}", file=err)
    for line in res.damage_lines():  # damaged binlogs: exported up to and around the damage
        print(f"{PROG}: export: {line}", file=err)
    return 1 if res.input_errors or res.damage or res.gaps else 0


def _cmd_analyze(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    conf: list[tuple[str, str]] = []
    for item in args.conf:
        k, sep, v = item.partition("=")
        if not sep or not k:
            print(f"{PROG}: analyze: --conf expects K=V, got {item!r}", file=err)
            return 2
        conf.append((k.strip(), v))
    from binlogscope.export.spark.analyze import AnalyzeError, analyze

    reports = args.reports if args.reports else str(Path(args.dir) / "_reports")
    if err.isatty():  # the JVM takes seconds to start: say so instead of a silent terminal
        print(f"{PROG} analyze: starting Spark ({args.master}) ...", file=err, flush=True)
    try:
        res = analyze(args.dir, master=args.master, conf=conf, sql=args.sql,
                      report_dir=reports, plots=args.plots, limit=args.limit,
                      emit=lambda line: print(line, file=out))
    except AnalyzeError as exc:
        print(f"{PROG}: analyze: {exc}", file=err)
        return 1
    except Exception as exc:  # the JVM did not start, the cluster refused, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"{PROG}: analyze: Spark failed: {first}", file=err)
        return 1
    print(f"reports written to {reports}" + (f", charts to {args.plots}" if args.plots else "")
          + f" (Spark start-up {res.startup_seconds:.1f} s of {res.total_seconds:.1f} s)",
          file=out)
    return 0


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    # every text line of every command is escaped: no raw control character from a statement,
    # a name or a peer reaches the terminal (render/escape.py; JSON is written under it)
    out = cast("TextIO", EscapingText(out or sys.stdout))
    err = cast("TextIO", EscapingText(err or sys.stderr))
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "file":
            return cmd_file(args, out, err)
        if args.command is None and not (_isatty(out) and _isatty(sys.stdin)):
            # no command into a pipe or a file: the usage, not a demo session's output
            parser.print_usage(err)
            print(f"{PROG}: no command given (`{PROG} --help` lists them; `{PROG} demo` "
                  "runs the demo; with no command on a terminal the demo opens)", file=err)
            return 2
        if args.command == "demo" or args.command is None:
            cap = _bundled_capture()
            if cap is None:
                print(f"{PROG}: error: no bundled capture found (captures/ is missing)", file=err)
                return 1
            ns = file_args([str(cap)], json=getattr(args, "json", False),
                           brief=getattr(args, "brief", False), plain=getattr(args, "plain", False))
            tui = wants_tui(ns, out, FILE_OUTPUTS)
            tour = getattr(args, "tour", False)
            if (tour or getattr(args, "teach", False)) and not tui:
                print(f"{PROG}: demo: --tour and --teach need the TUI (a terminal, without "
                      "--plain/--json)", file=err)
                return 2
            if getattr(args, "teach", False) and not tour:
                print(f"{PROG}: demo: --teach goes with --tour", file=err)
                return 2
            if not getattr(args, "file", False):  # the live demo, when one is installed
                extra = {"tour": True, "teach": bool(args.teach)} if tour else {}
                rc = run_demo(cap, out, err, plain=not tui, json_output=ns.json, brief=ns.brief,
                              **extra)
                if rc is not None:
                    return rc
            return cmd_file(ns, out, err)
        if args.command == "export":
            return _cmd_export(args, out, err)
        if args.command == "analyze":
            return _cmd_analyze(args, out, err)
        if args.command == "live":
            return cmd_live(args, out, err)
        rc = run_plugin(args.command, args, out, err)
        if rc is not None:
            return rc
        if args.command == "pcap":
            return cmd_pcap(args, out, err)
        if args.command == "sniff":
            return cmd_sniff(args, out, err)
        if args.command == "proxy":
            return cmd_proxy(args, out, err)
        if args.command == "explain":
            return cmd_explain(args, out, err)
        if args.command == "locate":
            return cmd_locate(args, out, err)
        if args.command == "redact":
            return cmd_redact(args, out, err)
        if args.command in _PENDING:
            print(f"{PROG}: {args.command}: not built yet ({_PENDING[args.command]})", file=err)
            return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help(err)
    return 2
