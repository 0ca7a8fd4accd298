"""``binlogscope analyze``: reports over an export, computed on Spark (the reports are
:mod:`binlogscope.export.spark.analyze`; this module reads the options and prints)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from binlogscope.cli.common import PROG


def add_analyze_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    a = sub.add_parser("analyze", help="reports over an export or binlog files, on Spark",
                       description="Run the reports (or --sql) with PySpark over an export, "
                       "or over binlog files and captures read through the binlog data source "
                       "(docs/spark.md).")
    a.add_argument("dir", metavar="DIR", nargs="+",
                   help="an export directory, or binlog files, directories of them, globs and "
                   "captures")
    a.add_argument("--master", help="Spark master URL (default: spark-submit's master when "
                   "run by spark-submit, else local[*])")
    a.add_argument("--conf", action="append", default=[], metavar="K=V",
                   help="Spark configuration, repeatable")
    a.add_argument("--sql", metavar="QUERY",
                   help="run this Spark SQL over the views packets, events, rows, transactions")
    a.add_argument("--reports", metavar="DIR",
                   help="write each report as Parquet and CSV here (default DIR/_reports; "
                   "for binlog files: ./binlogscope-reports)")
    a.add_argument("--plots", metavar="DIR", help="draw PNG charts into this directory")
    a.add_argument("--limit", type=int, default=20, metavar="N", help="rows printed per report")


def cmd_analyze(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    conf: list[tuple[str, str]] = []
    for item in args.conf:
        k, sep, v = item.partition("=")
        if not sep or not k:
            print(f"{PROG}: analyze: --conf expects K=V, got {item!r}", file=err)
            return 2
        conf.append((k.strip(), v))
    from binlogscope.export.spark.analyze import AnalyzeError, analyze, is_export

    sources = list(args.dir)
    export = len(sources) == 1 and is_export(Path(sources[0]))
    reports = args.reports or (str(Path(sources[0]) / "_reports") if export
                               else "binlogscope-reports")
    if err.isatty():  # the JVM takes seconds to start: say so instead of a silent terminal
        print(f"{PROG} analyze: starting Spark ({args.master or 'local[*]'}) ...", file=err,
              flush=True)
    try:
        res = analyze(sources[0] if export else sources, master=args.master, conf=conf,
                      sql=args.sql, report_dir=reports, plots=args.plots, limit=args.limit,
                      emit=lambda line: print(line, file=out))
    except AnalyzeError as exc:
        print(f"{PROG}: analyze: {exc}", file=err)
        return 1
    except Exception as exc:  # the JVM did not start, the cluster refused, ...
        from binlogscope.export.spark.analyze import spark_failure_line

        print(f"{PROG}: analyze: Spark failed: {spark_failure_line(exc)}", file=err)
        return 1
    print(f"reports written to {reports}" + (f", charts to {args.plots}" if args.plots else "")
          + f" (Spark start-up {res.startup_seconds:.1f} s of {res.total_seconds:.1f} s)",
          file=out)
    return 0
