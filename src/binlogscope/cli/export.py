"""``binlogscope export``: the command's options and handlers (the local export, ``--pcap``,
``--live`` and ``--spark``). The exports themselves are :mod:`binlogscope.export.run` and
:mod:`binlogscope.export.spark.export`; this module only reads the options, shows progress and
prints one line per problem (exit 1: an input failed or is damaged, 2: usage)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from binlogscope.cli.common import PROG, expand_globs, skip_index_files
from binlogscope.cli.live import COUNT_HELP, add_live_connection_options
from binlogscope.cli.signals import flag_on_signals, restore_signals, stop_on_signals
from binlogscope.drivers.hangup import terminal_hung_up

if TYPE_CHECKING:  # (the export modules load pyarrow: imported when a command needs them)
    from binlogscope.export.spark.export import Progress as SparkProgress


def add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    e.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="files and captures: export with N processes, one input each (binlog "
                   "files also cut at transaction starts when that shares the work more "
                   "evenly), published in input order, a checkpoint per input (default: the "
                   "cores not busy: usable cores less the load average, at least 1, at most "
                   "one per input or per 8 MB of binlog files; 1: one process, a checkpoint "
                   "every --checkpoint-events)")
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


def stream_source(args: argparse.Namespace, err: TextIO) -> Any:
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
            captures = expand_globs(args.sources, "export", err)
            if captures is None:
                return 2
            return PcapRecordSource(captures, args.port or None)
        settings = live_settings(args, err)
        if settings is None:
            return 2
        return LiveRecordSource(settings, count=args.count, until_position=args.until_position)
    except SourceError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 1


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.export.records import BinlogFileSource, SourceError

    if args.spark:
        previous = stop_on_signals()  # SIGTERM and SIGHUP end the export as Ctrl-C does
        try:
            return cmd_export_spark(args, out, err)
        finally:
            restore_signals(previous)
    source: Any
    if args.pcap or args.live:
        source = stream_source(args, err)
        if isinstance(source, int):
            return source
        return run_export_command(args, source, out, err)
    sources = expand_globs(args.sources, "export", err)  # (a quoted glob, as --spark takes)
    if sources is None:
        return 2
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
            return run_export_command(args, source, out, err)
        sources = list(state.get("inputs") or [])
    if not sources:
        print(f"{PROG}: export: no SOURCE given", file=err)
        return 2
    if not args.resume:
        sources = skip_index_files(sources, "export", err)
        if not sources:
            print(f"{PROG}: export: no binlog file among the SOURCEs (only index files)",
                  file=err)
            return 2
    try:
        source = BinlogFileSource(sources)
    except SourceError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 1
    return run_export_command(args, source, out, err)


def _jobs(args: argparse.Namespace, source: Any) -> int:
    """How many processes export ``source``: 1 for a live stream; at most one per input
    unless ``--jobs`` asks for more and the inputs are binlog files (they may be cut into
    more units than inputs: export/split.py). By default the free cores
    (:func:`~binlogscope.pipeline.jobs.default_jobs`), counting binlog files as one input per
    two of the smallest pieces they are cut into, so one big file is cut too (the 67 MB file
    of the bench set: 23-37 % less wall on two cores, bench/README.md "jobsplit")."""
    if getattr(source, "kind", "") == "live":
        return 1
    inputs = len(source.inputs())
    jobs = getattr(args, "jobs", None)
    if jobs is None:
        from binlogscope.pipeline.jobs import default_jobs

        units = inputs
        if getattr(source, "kind", "") == "file":
            from binlogscope.export.split import MIN_UNIT

            try:
                units = max(inputs, (source.total_bytes() or 0) // (2 * MIN_UNIT))
            except OSError:  # (a file gone: the export says so with its own message)
                pass
        jobs = default_jobs(units)
    return jobs if getattr(source, "kind", "") == "file" else min(jobs, inputs)


def run_export_command(args: argparse.Namespace, source: Any, out: TextIO, err: TextIO) -> int:
    """Run an export from any source; progress on a terminal, one line per problem."""
    from binlogscope.export.arrow import without_pandas

    # the export converts only its own values: pyarrow need not import pandas (from the
    # import of the export's modules on, which build a few constant scalars)
    with without_pandas():
        return _run_export_command(args, source, out, err)


def _run_export_command(args: argparse.Namespace, source: Any, out: TextIO, err: TextIO
                        ) -> int:
    from binlogscope.export.run import ExportError, run_export

    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        print(f"{PROG}: export: --jobs must be at least 1", file=err)
        return 2
    jobs = _jobs(args, source)

    tty = err.isatty()

    def progress(events: int, done: int, total: int | None, secs: float) -> None:
        rate = events / secs if secs > 0 else 0.0
        pct = f" {100 * done / total:5.1f}%" if total else ""
        try:
            err.write(f"\r{PROG} export:{pct} {events:,} events, {rate:,.0f} events/s ")
            err.flush()
        except OSError as exc:  # the terminal hung up (its SIGHUP follows): keep exporting
            if not terminal_hung_up(exc):
                raise

    # a live source stops at the next transaction and keeps everything received (a second
    # signal: at once); files and captures: SIGTERM and SIGHUP end it as Ctrl-C does
    fired: list[int] = []
    live = getattr(source, "kind", "") == "live"
    if live:
        source.should_stop = lambda: bool(fired)
    previous = flag_on_signals(fired) if live else stop_on_signals()
    try:
        if jobs > 1:
            from binlogscope.export.parallel import run_export_jobs

            res = run_export_jobs(source, args.out, jobs=jobs, kind=source.kind,
                                  inputs=source.inputs(), ports=args.port or None,
                                  resume=args.resume, no_raw=args.no_raw,
                                  progress=progress if tty else None,
                                  fallback={"checkpoint_events": max(1, args.checkpoint_events)})
        else:
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
        for warning in getattr(source, "warnings", ()):  # (exit status unchanged)
            print(f"{PROG}: export: {warning}", file=err)
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
    if res.removed:  # every input failed: no dataset, no success line
        *first, last = res.input_errors
        for msg in first:
            print(f"{PROG}: export: {msg}", file=err)
        print(f"{PROG}: export: {last}; nothing was exported, {args.out} removed again (run "
              "the command again with the right input)", file=err)
        return 1
    failed = (f"; {len(res.input_errors)} input(s) failed (a row each in the errors table; "
              "export them on their own into another directory)" if res.input_errors else "")
    print(f"exported {c['events']} events, {c['rows']} rows, {c['packets']} packets to "
          f"{args.out} in {res.seconds:.1f} s{failed}", file=out)
    for msg in res.input_errors:
        print(f"{PROG}: export: {msg}", file=err)
    for line in res.damage_lines():  # damaged binlogs: exported up to and around the damage
        print(f"{PROG}: export: {line}", file=err)
    return 1 if res.input_errors or res.damage else 0


def parse_conf(items: Sequence[str]) -> list[tuple[str, str]]:
    """``--conf K=V`` items (ValueError naming a bad one)."""
    conf: list[tuple[str, str]] = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"--conf expects K=V, got {item!r}")
        conf.append((k.strip(), v))
    return conf


def progress_bar(err: TextIO, prog: str) -> SparkProgress:
    """A one-line progress bar on ``err``: inputs done, MB done and MB/s."""

    def show(phase: str, files: int, total: int, done: int, total_bytes: int,
             secs: float) -> None:
        width = 24
        filled = int(width * files / total) if total else width
        rate = done / secs / 1e6 if secs > 0 else 0.0
        err.write(f"\r{PROG} export --spark: [{'#' * filled}{'.' * (width - filled)}] "
                  f"{files}/{total} files, {done / 1e6:,.1f}/{total_bytes / 1e6:,.1f} MB, "
                  f"{rate:,.1f} MB/s ({phase})\x1b[K")  # (erase what a longer line left)
        err.flush()

    return show


def cmd_export_spark(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``binlogscope export ... --spark``: run, print the summary and the errors."""
    from binlogscope.export.spark.export import SparkExportError, run_spark_export

    if getattr(args, "live", False):
        print(f"{PROG}: export: --spark exports files and captures, not --live", file=err)
        return 2
    kind = "pcap" if args.pcap else "file"
    sources = list(args.sources)
    if not sources and not args.resume:
        print(f"{PROG}: export: no SOURCE given", file=err)
        return 2
    try:
        conf = parse_conf(args.conf or [])
    except ValueError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 2
    tty = err.isatty()
    try:
        res = run_spark_export(sources, args.out, kind=kind, master=args.master, conf=conf,
                               resume=args.resume, no_raw=args.no_raw,
                               ports=args.port or None,
                               checkpoint_files=args.checkpoint_files,
                               writer=getattr(args, "writer", "spark"),
                               progress=progress_bar(err, PROG) if tty else None)
    except SparkExportError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 2
    except Exception as exc:  # the JVM did not start, the cluster refused, a worker died ...
        from binlogscope.export.spark.analyze import spark_failure_line

        print(f"{PROG}: export: Spark failed: {spark_failure_line(exc)}", file=err)
        from binlogscope.export.arrow import read_state

        if read_state(args.out) is not None:  # checkpoints were kept: the rerun goes on
            print(f"{PROG}: export: {args.out} holds every completed checkpoint; the same "
                  "command (or --resume) goes on from there", file=err)
        return 1
    finally:
        if tty:
            err.write("\n")
    if res.already_complete:
        print(f"{PROG}: export: {args.out} is already complete; nothing to do", file=err)
        return 0
    if res.resumed:
        print(f"{PROG}: export: {args.out} held an unfinished export of the same input(s); "
              "went on from its last checkpoint (as --resume does)", file=err)
    if res.interrupted:
        if res.removed:
            print(f"{PROG}: export: interrupted; nothing was exported; {args.out} removed "
                  "again (the same command can simply be run again)", file=err)
            return 130
        print(f"{PROG}: export: interrupted; {args.out} holds every completed checkpoint; "
              f"finish with: {PROG} export --spark --resume --out {args.out}", file=err)
        return 130
    c = res.counts
    skipped = f", {res.skipped_inputs} inputs exported before" if res.skipped_inputs else ""
    print(f"exported {c['events']} events, {c['rows']} rows, {c['packets']} packets to "
          f"{args.out} in {res.seconds:.1f} s (Spark start-up {res.startup_seconds:.1f} s"
          f"{skipped})", file=out)
    for row in res.errors:  # (as the local export prints them: failures, then damage)
        if row["kind"] == "failed":
            print(f"{PROG}: export: {row['message'] or row['path']}", file=err)
    for row in res.errors:
        if row["kind"] != "failed":
            print(f"{PROG}: export: {row['message']}", file=err)
    return 1 if res.errors else 0


