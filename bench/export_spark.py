"""``export --spark`` benchmark (issue 19, Performance): local[2] against local[1] and the local
exporter, in one run.

    python bench/export_spark.py                 # the binlog set of bench/make_binlog.py
    python bench/export_spark.py --files 2       # the first two files only (quicker)
    python bench/export_spark.py --data DIR      # another bench/data directory (manifest.json)

Each run is a child process (a fresh JVM for each Spark run): the local exporter
(``run_export``), then ``run_spark_export`` on ``local[1]`` and on ``local[2]``. Reports:

* the local[2] / local[1] speed-up of the export (Spark start-up excluded, and included);
* the per-task rate (a file's bytes / its decode task's seconds, from the tasks' own clocks)
  against the local exporter's rate (bytes / seconds, decode and Parquet writing);
* Spark's start-up share of the whole command, MB/s per core;
* where the time goes (decode job, Spark's Parquet writes, publish);
* a projection to N executor cores from the per-file task times: the decode tasks scheduled
  biggest first (as the export schedules them) plus the write time spread the same way.
Inputs are never committed: the binlogs live in bench/data/ (gitignored), outputs in a temp dir.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))


def _files(data: Path, n: int | None) -> list[Path]:
    manifest = data / "manifest.json"
    if not manifest.exists():
        raise SystemExit(f"{manifest} is missing: run python bench/make_binlog.py first")
    m = json.loads(manifest.read_text())
    files = [data / f for f in m["files"]]
    return files[:n] if n else files


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def child_local(files: list[Path], out: Path) -> dict[str, Any]:
    from binlogscope.export.records import BinlogFileSource
    from binlogscope.export.run import run_export

    t0 = time.perf_counter()
    res = run_export(BinlogFileSource([str(f) for f in files]), out)
    return {"seconds": time.perf_counter() - t0, "cpu": _cpu(), "counts": res.counts}


def tree_cpu() -> float:
    """CPU seconds of this process and every live descendant (the JVM, Spark's Python
    workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict[int, list[int]] = {}
    own: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(st[1]), []).append(int(d))
        # utime, stime, and the children it has waited for
        own[int(d)] = sum(int(x) for x in st[11:15]) / tick
    total, todo = 0.0, [os.getpid()]
    while todo:
        p = todo.pop()
        total += own.get(p, 0.0)
        todo += kids.get(p, [])
    return total


def child_spark(files: list[Path], out: Path, master: str, writer: str) -> dict[str, Any]:
    from binlogscope.export.spark.analyze import spark_session
    from binlogscope.export.spark.export import LOCAL_DRIVER_MEMORY, run_spark_export

    t0 = time.perf_counter()
    spark = spark_session(master, [("spark.driver.memory", LOCAL_DRIVER_MEMORY)],
                          app_name="binlogscope-export")
    startup = time.perf_counter() - t0
    cpu0 = tree_cpu()
    try:
        t1 = time.perf_counter()
        res = run_spark_export([str(f) for f in files], out, spark=spark, writer=writer)
        export = time.perf_counter() - t1
        cpu = tree_cpu() - cpu0
    finally:
        spark.stop()
    return {"startup": startup, "export": export, "total": time.perf_counter() - t0,
            "phases": res.phases, "tasks": res.task_times, "counts": res.counts,
            "errors": res.errors, "cpu": cpu}


def _run_child(mode: str, files: list[Path], tmp: Path) -> dict[str, Any]:
    out = tmp / ("out-" + "".join(c for c in mode if c.isalnum()))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, __file__, "--child", mode, "--out", str(out),
                           *map(str, files)], capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def lpt(times: list[float], n: int) -> float:
    """The makespan of ``times`` on ``n`` workers, longest first (the export's order)."""
    loads = [0.0] * n
    for t in sorted(times, reverse=True):
        heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--files", type=int, help="only the first N files")
    ap.add_argument("--tasks-writer", action="store_true",
                    help="also run --writer tasks (each task writes its parts with pyarrow)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        files = [Path(p) for p in args.paths]
        master, _, writer = args.child.partition("/")
        res = (child_local(files, args.out) if args.child == "local"
               else child_spark(files, args.out, master, writer or "spark"))
        print(json.dumps(res))
        return 0

    files = _files(args.data, args.files)
    size = sum(f.stat().st_size for f in files)
    mb = size / 1e6
    print(f"{len(files)} files, {mb:,.1f} MB; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-export-spark-") as t:
        tmp = Path(t)
        loc = _run_child("local", files, tmp)
        s1 = _run_child("local[1]", files, tmp)
        s2 = _run_child("local[2]", files, tmp)
        w1 = _run_child("local[1]/tasks", files, tmp) if args.tasks_writer else None
        w2 = _run_child("local[2]/tasks", files, tmp) if args.tasks_writer else None
    assert s1["counts"] == s2["counts"] == loc["counts"], (s1["counts"], loc["counts"])
    local_rate = mb / loc["seconds"]
    print(f"local exporter: {loc['seconds']:.1f} s, {local_rate:.1f} MB/s "
          f"(CPU {loc['cpu']:.1f} s); counts {loc['counts']}")
    for name, r in (("local[1]", s1), ("local[2]", s2)):
        ph = r["phases"]
        print(f"--spark {name}: total {r['total']:.1f} s = start-up {r['startup']:.1f} s + "
              f"export {r['export']:.1f} s (decode {ph['decode']:.1f}, write {ph['write']:.1f}"
              f", publish {ph['publish']:.1f}); {mb / r['export']:.1f} MB/s; CPU "
              f"{r['cpu']:.1f} s = {r['cpu'] / r['export']:.2f} cores busy")
    print(f"CPU per MB: local exporter {loc['cpu'] / mb * 1000:.0f} ms, --spark "
          f"{s1['cpu'] / mb * 1000:.0f} ms ({s1['cpu'] / loc['cpu']:.2f}x)")
    speedup = s1["export"] / s2["export"]
    speedup_total = s1["total"] / s2["total"]
    print(f"\nlocal[2] / local[1]: {speedup:.2f}x on the export, {speedup_total:.2f}x with "
          f"start-up (target >= 1.8x)")
    # a task's clock: the decode of one file (its mapInArrow task, in the Python worker)
    for name, r in (("local[1]", s1), ("local[2]", s2)):
        rates = [n / 1e6 / s for _, n, s in r["tasks"] if s > 0]
        total_task = sum(s for _, _, s in r["tasks"])
        print(f"per-task decode rate {name}: {min(rates):.1f}-{max(rates):.1f} MB/s "
              f"(all tasks {mb / total_task:.1f} MB/s) vs the local exporter "
              f"{local_rate:.1f} MB/s: {mb / total_task / local_rate:.2f}x")
        print(f"  task seconds: {', '.join(f'{s:.1f}' for _, _, s in r['tasks'])}")
    for name, r, cores in (("local[1]", s1, 1), ("local[2]", s2, 2)):
        print(f"Spark start-up share {name}: {100 * r['startup'] / r['total']:.0f} % of "
              f"{r['total']:.1f} s; {mb / r['export'] / cores:.1f} MB/s per core "
              f"({mb / r['total'] / cores:.1f} with start-up)")
    if w1 is not None and w2 is not None:
        print(f"\n--writer tasks: local[1] export {w1['export']:.1f} s ({mb / w1['export']:.1f}"
              f" MB/s, CPU {w1['cpu']:.1f} s), local[2] {w2['export']:.1f} s "
              f"({mb / w2['export']:.1f} MB/s, CPU {w2['cpu']:.1f} s): "
              f"{w1['export'] / w2['export']:.2f}x")
        for name, r in (("local[1]", w1), ("local[2]", w2)):
            total_task = sum(s for _, _, s in r["tasks"])
            print(f"  per-task rate {name}: {mb / total_task:.1f} MB/s "
                  f"({mb / total_task / local_rate:.2f}x the local exporter); task seconds "
                  f"{', '.join(f'{s:.1f}' for _, _, s in r['tasks'])}")
    # projection: the decode tasks of local[1] (one core, no contention between tasks) on N
    # cores biggest first; the write time spread over the files by size, the same way
    ph = s1["phases"]
    tasks = [s for _, _, s in s1["tasks"]]
    sizes = [n for _, n, _ in s1["tasks"]]
    write = [ph["write"] * n / max(1, sum(sizes)) for n in sizes]
    fixed = s1["export"] - ph["decode"] - ph["write"]
    print("\nprojection from local[1]'s per-file times (decode tasks + writes, biggest first;"
          f" fixed {fixed:.1f} s per run + start-up):")
    for n in (1, 2, 4, 8, 16):
        t_n = lpt(tasks, n) + lpt(write, n) + fixed
        print(f"  {n:>2} cores: {t_n:6.1f} s export, {mb / t_n:6.1f} MB/s"
              f"{'  (capped by the biggest file)' if n >= len(files) else ''}")
    per_file = (sum(tasks) + ph["write"]) / len(files)
    mb_file = mb / len(files)
    print(f"  a year of such files (500 x {mb_file:.0f} MB) on N cores: "
          f"~{per_file * 500 / 60:.0f} min / N + start-up (per file {per_file:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
