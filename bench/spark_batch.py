"""The ``binlog`` Spark data source in batch, command against command (issue 28, Performance).

    python bench/spark_batch.py                    # the set of bench/make_binlog.py (bench/data)
    python bench/spark_batch.py --data DIR         # another set (its manifest.json)
    python bench/spark_batch.py --files 2          # the first two files only
    python bench/spark_batch.py --json             # the figures as one JSON object too
    python bench/spark_batch.py --analyze-before /old/checkout/src
                                  # only ``analyze FILES``: that tree's against this one's

In one run, each side a child process (a fresh JVM for each Spark side), on the same files:

(a) ``source``: ``spark.read.format("binlog").option("table", T).load(FILES)`` then
    ``.write.parquet(...)`` for each of the export's tables (``packets``, ``events``, ``rows``:
    three reads, each decoding every file for its table), ``local[2]``;
(b) ``export --spark``: ``binlogscope export --spark --master local[2] FILES --out DIR``
    (one decoding pass for every table, Hive-partitioned, checkpointed);
(c) ``export``: ``binlogscope export FILES --out DIR`` (the local exporter, its default --jobs);
(d) one task's rate on one file (the first): the source's task times for that file alone
    (a ``local[2]`` run over that file only, each table read and written twice: the first
    task of a table in a cold JVM, the second warm), from Spark's event log, against the
    local exporter on that file in one process (``run_export``, every table, interpreter
    start-up excluded, as a task's clock excludes it); and the same file's tasks in (a);
(e) Spark's start-up share of (a), and the projection of (a) to N executor cores from its
    per-file task times (Spark's event log: ``SparkListenerTaskEnd``), biggest file first.

CPU is user + system of the whole process tree (the command, the JVM, Spark's Python workers):
:func:`run_tree` polls /proc for every descendant while the command runs and takes the larger
of that and what ``wait4`` reports for the reaped tree. Ratios are (a)/(b), (a)/(c) and
(b)/(c) of wall and CPU. Benchmarks are not tests: nothing here asserts a target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from export_spark import _files, _run_child, lpt  # (bench/export_spark.py)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TABLES = ("packets", "events", "rows")
MASTER = "local[2]"


# ----------------------------------------------------------------------------- measuring

def _proc_cpu(pid: int, tick: float) -> tuple[int, float] | None:
    """(parent pid, own user+system seconds) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(st[1]), (int(st[11]) + int(st[12])) / tick


def run_tree(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` (stdout kept, stderr's tail on failure): wall seconds and the CPU seconds
    of its whole process tree. Every 0.2 s the tree under the child is walked in /proc and
    each process's own user+system time kept (its last reading); at the end RUSAGE_CHILDREN
    gives the child's time plus that of every descendant that was reaped. The larger of the
    two is the figure (the poll misses at most the last 0.2 s of each process; the rusage
    misses descendants nobody reaped)."""
    tick = float(os.sysconf("SC_CLK_TCK"))
    before = _children_cpu()
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        seen, peak_procs = _watch(p, tick)
        wall = time.perf_counter() - t0
        reaped = _children_cpu() - before  # (Popen.poll reaped the child: RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    polled = sum(seen.values())
    rc = p.returncode
    res: dict[str, Any] = {"seconds": round(wall, 2), "cpu_polled": round(polled, 2),
                           "cpu_reaped": round(reaped, 2), "procs": peak_procs, "rc": rc,
                           "stdout": stdout}
    if rc:
        res["stderr"] = stderr[-3000:]
    return res


def _watch(p: subprocess.Popen[bytes], tick: float) -> tuple[dict[int, float], int]:
    """Until ``p`` ends: each tree process's last own CPU reading, and the most processes."""
    seen: dict[int, float] = {}
    peak_procs = 0
    while p.poll() is None:
        kids: dict[int, list[int]] = {}
        own: dict[int, float] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                r = _proc_cpu(int(d), tick)
                if r is not None:
                    kids.setdefault(r[0], []).append(int(d))
                    own[int(d)] = r[1]
        tree: set[int] = set()
        todo = [p.pid]
        while todo:
            q = todo.pop()
            tree.add(q)
            todo += [c for c in kids.get(q, []) if c not in tree]
        for q in tree:
            if q in own:
                seen[q] = max(seen.get(q, 0.0), own[q])
        peak_procs = max(peak_procs, len(tree))
        time.sleep(0.2)
    return seen, peak_procs


def _children_cpu() -> float:
    import resource

    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def measured(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """:func:`run_tree`, its CPU figure the larger reading; a failure stops the run."""
    res = run_tree(cmd, env)
    res["cpu"] = max(res["cpu_polled"], res["cpu_reaped"])
    if res["rc"]:
        raise SystemExit(f"{' '.join(cmd[:6])} ... failed (exit {res['rc']}):\n"
                         f"{res.get('stderr', '')}")
    return res


# ----------------------------------------------------------------------------- Spark's event log

def event_log_tasks(log_dir: Path) -> list[dict[str, Any]]:
    """Every finished task of the application(s) logged in ``log_dir``: its job description
    (the bench sets one per table), stage, partition index, launch/finish times (ms) and
    executor run time (ms)."""
    stage_desc: dict[int, str] = {}
    tasks: list[dict[str, Any]] = []
    for f in sorted(log_dir.rglob("*")):
        if not f.is_file() or f.name.startswith((".", "appstatus")):
            continue
        with _open_log(f) as fh:
            for line in fh:
                ev = json.loads(line)
                kind = ev.get("Event")
                if kind == "SparkListenerJobStart":
                    desc = (ev.get("Properties") or {}).get("spark.job.description", "")
                    for sid in ev.get("Stage IDs", []):
                        stage_desc[int(sid)] = desc
                elif kind == "SparkListenerTaskEnd":
                    info = ev["Task Info"]
                    metrics = ev.get("Task Metrics") or {}
                    tasks.append({"stage": int(ev["Stage ID"]), "index": int(info["Index"]),
                                  "launch": int(info["Launch Time"]),
                                  "finish": int(info["Finish Time"]),
                                  "run_ms": int(metrics.get("Executor Run Time", 0)),
                                  "failed": bool(info.get("Failed"))})
    for t in tasks:
        t["job"] = stage_desc.get(t["stage"], "")
    return tasks


def _open_log(f: Path) -> Any:
    """An event log file as text (Spark 4 writes them zstd-compressed by default)."""
    if f.suffix in (".zstd", ".zst", ".lz4", ".snappy"):
        import io

        import pyarrow as pa

        codec = {".zst": "zstd", ".zstd": "zstd"}.get(f.suffix, f.suffix[1:])
        return io.TextIOWrapper(pa.input_stream(str(f), compression=codec))
    return f.open()


def partition_order(files: list[Path]) -> list[int]:
    """The source's partition order (biggest first, then input order) as input indexes:
    ``partition_order(files)[task index]`` is the input a task read."""
    return sorted(range(len(files)), key=lambda i: (-files[i].stat().st_size, i))


# ----------------------------------------------------------------------------- the children

def child_source(files: list[Path], out: Path, log_dir: Path, rounds: int = 1
                 ) -> dict[str, Any]:
    """(a): one local[2] session, one read + Parquet write per table, timed (``rounds`` > 1,
    for (d): the same again, the later rounds in a JVM whose JIT has seen the work)."""
    sys.path.insert(0, str(REPO / "src"))
    from binlogscope.export.spark import register
    from binlogscope.export.spark.analyze import spark_session
    from binlogscope.export.spark.export import LOCAL_DRIVER_MEMORY

    t0 = time.perf_counter()
    spark = spark_session(MASTER, [("spark.driver.memory", LOCAL_DRIVER_MEMORY),
                                   ("spark.eventLog.enabled", "true"),
                                   ("spark.eventLog.dir", log_dir.as_uri())],
                          app_name="binlogscope-bench-source")
    register(spark)
    startup = time.perf_counter() - t0
    paths = [str(f) for f in files]
    tables: dict[str, float] = {}
    try:
        for r in range(rounds):
            for t in TABLES:
                job = f"table {t}" if rounds == 1 else f"round {r} table {t}"
                spark.sparkContext.setJobDescription(job)
                t1 = time.perf_counter()
                (spark.read.format("binlog").option("table", t).load(paths)
                 .write.mode("overwrite").parquet(str(out / t)))
                tables[job] = time.perf_counter() - t1
    finally:
        spark.stop()
    return {"startup": startup, "tables": tables, "total": time.perf_counter() - t0}


# ----------------------------------------------------------------------------- the run

def analyze_pair(files: list[Path], before: Path) -> int:
    """``binlogscope analyze --master local[2] FILES`` (the built-in reports, straight from the
    inputs) from ``before`` and from this checkout, alternated twice; each side's fastest."""
    mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"analyze {len(files)} files, {mb:,.1f} MB; load average {os.getloadavg()[0]:.1f}",
          flush=True)
    reports = Path(tempfile.mkdtemp(prefix="bench-analyze-"))  # (not ./binlogscope-reports)
    cmd = [sys.executable, "-m", "binlogscope", "analyze", "--master", MASTER,
           "--reports", str(reports), *map(str, files)]
    sides = {"before": before, "after": REPO / "src"}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in sides}
    outputs: dict[str, str] = {}
    for _ in range(2):
        for name, src in sides.items():
            env = dict(os.environ, PYTHONPATH=str(src))
            r = measured(cmd, env)
            outputs[name] = "\n".join(ln for ln in r.pop("stdout").splitlines()
                                       if "Spark start-up" not in ln)
            runs[name].append(r)
            print(f"  {name}: {r['seconds']:.1f} s wall, {r['cpu']:.1f} s CPU", flush=True)
    shutil.rmtree(reports, ignore_errors=True)
    best = {k: (min(r["seconds"] for r in v), min(r["cpu"] for r in v))
            for k, v in runs.items()}
    print(f"after / before: wall {best['after'][0] / best['before'][0]:.2f} "
          f"({best['after'][0]:.1f} / {best['before'][0]:.1f} s), CPU "
          f"{best['after'][1] / best['before'][1]:.2f} ({best['after'][1]:.1f} / "
          f"{best['before'][1]:.1f} s); reports identical: "
          f"{outputs['after'] == outputs['before']}")
    return 0


def _pct(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--files", type=int, help="only the first N files")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    ap.add_argument("--analyze-before", type=Path, metavar="SRC",
                    help="only compare `binlogscope analyze FILES` run from SRC (another "
                         "checkout's src/, e.g. before a change) with this checkout's")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child in ("source", "one"):
        print(json.dumps(child_source([Path(p) for p in args.paths], args.out, args.log_dir,
                                      2 if args.child == "one" else 1)))
        return 0

    files = _files(args.data, args.files)
    if args.analyze_before is not None:
        return analyze_pair(files, args.analyze_before.resolve())
    sizes = [f.stat().st_size for f in files]
    mb = sum(sizes) / 1e6
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    py = [sys.executable]
    print(f"{len(files)} files, {mb:,.1f} MB; load average {os.getloadavg()[0]:.1f}; "
          f"Spark master {MASTER}", flush=True)
    res: dict[str, Any] = {"files": [str(f) for f in files], "mb": mb}
    with tempfile.TemporaryDirectory(prefix="bench-spark-batch-") as t:
        tmp = Path(t)
        src_log = tmp / "events-source"
        exp_log = tmp / "events-export"
        src_log.mkdir()
        exp_log.mkdir()
        names = [str(f) for f in files]
        a = measured([*py, __file__, "--child", "source", "--out", str(tmp / "a"),
                      "--log-dir", str(src_log), *names], env)
        a.update(json.loads(a.pop("stdout").strip().splitlines()[-1]))
        print(f"(a) source x{len(TABLES)} tables: {a['seconds']:.1f} s wall, {a['cpu']:.1f} s "
              f"CPU; start-up {a['startup']:.1f} s; "
              + ", ".join(f"{k} {v:.1f} s" for k, v in a["tables"].items()), flush=True)
        b = measured([*py, "-m", "binlogscope", "export", "--spark", "--master", MASTER,
                      "--conf", "spark.eventLog.enabled=true",
                      "--conf", f"spark.eventLog.dir={exp_log.as_uri()}",
                      *names, "--out", str(tmp / "b")], env)
        b.pop("stdout")
        print(f"(b) export --spark: {b['seconds']:.1f} s wall, {b['cpu']:.1f} s CPU", flush=True)
        c = measured([*py, "-m", "binlogscope", "export", *names, "--out", str(tmp / "c")], env)
        c.pop("stdout")
        print(f"(c) export (local): {c['seconds']:.1f} s wall, {c['cpu']:.1f} s CPU", flush=True)
        one = _run_child("local", files[:1], tmp)  # (d): run_export in one process, one file
        print(f"(d) local exporter on {files[0].name}: {one['seconds']:.1f} s "
              f"({one['cpu']:.1f} s CPU)", flush=True)
        one_log = tmp / "events-one"
        one_log.mkdir()
        d = measured([*py, __file__, "--child", "one", "--out", str(tmp / "d"),
                      "--log-dir", str(one_log), names[0]], env)
        d.update(json.loads(d.pop("stdout").strip().splitlines()[-1]))
        print(f"(d) source on {files[0].name} alone, each table twice: {d['seconds']:.1f} s "
              "wall", flush=True)
        one_tasks = event_log_tasks(one_log)
        # the local exporter on the file again, right after the source's run on it: on a
        # shared machine the load moves, and noise only ever adds time (the faster one counts)
        shutil.rmtree(tmp / "out-local")  # (_run_child's output directory for "local")
        again = _run_child("local", files[:1], tmp)
        print(f"(d) local exporter on {files[0].name} again: {again['seconds']:.1f} s "
              f"({again['cpu']:.1f} s CPU)", flush=True)
        if again["seconds"] < one["seconds"]:
            one = again
        src_tasks = event_log_tasks(src_log)
        exp_tasks = event_log_tasks(exp_log)
    order = partition_order(files)
    res.update({"source": a, "export_spark": b, "export": c, "local_one_file": one})

    # (d) one task's rate: the first file's task of each table, and their sum (the three
    # tables of that file, as the local exporter writes them)
    first = order.index(0)
    per_table = {t: [x for x in src_tasks if x["job"] == f"table {t}" and x["index"] == first
                     and not x["failed"]] for t in TABLES}
    task_s = {t: (v[0]["finish"] - v[0]["launch"]) / 1000 for t, v in per_table.items() if v}
    f_mb = sizes[0] / 1e6
    local_rate = f_mb / one["seconds"]
    alone = {x["job"]: (x["finish"] - x["launch"]) / 1000 for x in one_tasks
             if not x["failed"] and x["job"].startswith("round ")}
    res["one_task"] = {"seconds": task_s, "alone": alone, "file_mb": f_mb,
                       "local_rate": local_rate}
    # export --spark's decode task for the first file (the _export table: every table, one pass)
    exp_first = [x for x in exp_tasks if x["index"] == first and not x["failed"]]

    # (e) projection from the source's per-file task times (each file's three table tasks)
    per_file = [0.0] * len(files)
    for x in src_tasks:
        if x["job"].startswith("table ") and not x["failed"] and x["index"] < len(files):
            per_file[order[x["index"]]] += (x["finish"] - x["launch"]) / 1000
    work = sum(a["tables"].values())
    fixed = max(0.0, work - lpt(per_file, 2))  # what local[2]'s run spent outside the tasks
    res["projection"] = {"per_file": per_file, "fixed": fixed}

    print("\n| figure | measured | target | met |\n|---|---|---|---|")
    rows = [
        ("(a) source -> Parquet, 3 tables / (b) export --spark, wall",
         _pct(a["seconds"], b["seconds"]), "<= 1.0", a["seconds"] <= b["seconds"]),
        ("(a) / (b), CPU (process tree)", _pct(a["cpu"], b["cpu"]), "<= 1.0",
         a["cpu"] <= b["cpu"]),
        ("(a) / (c) export (local), wall", _pct(a["seconds"], c["seconds"]), "-", None),
        ("(a) / (c), CPU", _pct(a["cpu"], c["cpu"]), "-", None),
        ("(b) / (c), wall", _pct(b["seconds"], c["seconds"]), "-", None),
        ("(b) / (c), CPU", _pct(b["cpu"], c["cpu"]), "-", None),
    ]
    for t in TABLES:
        cold, warm = alone.get(f"round 0 table {t}"), alone.get(f"round 1 table {t}")
        if cold and warm:
            rows.append((f"(d) one task alone, table {t}, the JVM warm (cold): rate / the "
                         "local exporter's on the file (all tables)",
                         f"{f_mb / warm:.1f} ({f_mb / cold:.1f}) / {local_rate:.1f} MB/s = "
                         f"{f_mb / warm / local_rate:.2f}x ({f_mb / cold / local_rate:.2f}x)",
                         ">= 0.9x", f_mb / warm / local_rate >= 0.9))
    for t in TABLES:
        if t in task_s:
            rows.append((f"(d) the same task in (a) (two at once), table {t}",
                         f"{f_mb / task_s[t]:.1f} / {local_rate:.1f} MB/s = "
                         f"{f_mb / task_s[t] / local_rate:.2f}x", "-", None))
    if len(task_s) == len(TABLES):
        s = sum(task_s.values())
        rows.append(("(d) the file's three table tasks together (the export's tables) / "
                     "local exporter", f"{s:.1f} s vs {one['seconds']:.1f} s: "
                     f"{one['seconds'] / s:.2f}x", ">= 0.9x", one["seconds"] / s >= 0.9))
    if exp_first:
        s = (exp_first[0]["finish"] - exp_first[0]["launch"]) / 1000
        rows.append(("(d) export --spark's task on the file (all tables, one pass, no write) "
                     "/ local exporter (with writes)", f"{s:.1f} s vs {one['seconds']:.1f} s: "
                     f"{one['seconds'] / s:.2f}x", "-", None))
    rows.append(("(e) Spark start-up share of (a)", f"{a['startup']:.1f} s of "
                 f"{a['seconds']:.1f} s: {100 * a['startup'] / a['seconds']:.0f} %", "-", None))
    for label, value, target, met in rows:
        flag = "-" if met is None else ("met" if met else "**not met**")
        print(f"| {label} | {value} | {target} | {flag} |")
    print(f"\nper-file task seconds of (a) (three tables each): "
          f"{', '.join(f'{s:.1f}' for s in per_file)}; outside the tasks {fixed:.1f} s")
    print("projection of (a) to N executor cores (the files' tasks biggest first, plus the "
          "time outside them, plus start-up):")
    for n in (1, 2, 4, 8, 16):
        t_n = lpt(per_file, n) + fixed + a["startup"]
        print(f"  {n:>2} cores: {t_n:6.1f} s, {mb / t_n:6.1f} MB/s"
              f"{'  (one task per file: bounded by the biggest)' if n >= len(files) else ''}")
    if args.json:
        print(json.dumps(res, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
