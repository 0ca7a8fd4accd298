"""Streaming benchmark (issue 28): ``spark.readStream.format("binlog")`` against
``binlogscope live --json`` on the same server, same run, and the commit-to-sink latency.

    python bench/stream_spark.py                        # 200,000 row changes, 30 s of latency
    python bench/stream_spark.py --rows 50000 --latency-seconds 20

A throw-away MariaDB (scripts/mariadb.sh) gets ``--rows`` row changes (inserts of 100 rows a
transaction), then:

* **catch-up** (the same backlog for each): ``binlogscope live --json --non-blocking`` from
  the first change to the end, output read and dropped (a child process: wall, CPU user+sys);
  the source's task outside Spark (``read_slice`` over the range: replica, decoder, mapper,
  Arrow batches; and a one-transaction slice: the per-task floor of a new replica); a cold
  ``trigger(availableNow=True)`` query into Parquet (the Spark session's first query), then
  the same query in the warm session into the ``noop`` sink (the source's own cost) and into
  Parquet, each with its micro-batch's ``triggerExecution`` (the query's start left out);
* **following** (the same fill for each): ``live --json`` (blocking, ``--count`` the events of
  one fill) and a running query (default trigger, Parquet sink, warm: its first batch done)
  while ``--rows`` row changes are committed: from the first INSERT to live's exit / the sink
  holding them all, CPU of the whole process tree (driver, JVM, Python workers);
* **latency**: a query with the default trigger (micro-batches back to back) follows the
  server while one client commits single-row transactions at ``--commit-rate`` per second;
  a row's latency is from its COMMIT returning to the moment the file sink committed the
  micro-batch that holds it (the mtime of the sink's ``_spark_metadata/N`` entry, the same
  clock). Median and p99, and the median stage times of its small micro-batches (the
  per-batch floor).

Benchmarks are not tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "src"), str(REPO)]

from export_spark import tree_cpu  # noqa: E402

import tests.mariadb_server as mariadb_server  # noqa: E402
from tests.watch_support import run_sql  # noqa: E402

#: the JVM's threads by what they do (their names, as /proc shows them: 15 characters)
_JVM_THREADS = (("Executor task", "executor tasks: Arrow from the worker -> rows -> the sink"),
                ("CompilerThre", "JIT compiler"), ("GC Thread", "garbage collector"),
                ("G1 ", "garbage collector"), ("stream executi", "micro-batch loop (driver)"),
                ("writer for py", "feeding the Python worker"))


def cpu_split() -> dict[str, float]:
    """CPU seconds (user + sys) so far of this process's tree by role, from /proc: this
    driver process, each JVM thread group (:data:`_JVM_THREADS`; the rest "JVM, other
    threads"), the Python workers (``pyspark.daemon`` and its forks, the exited ones
    included) and the driver-side Python runners the JVM starts (the stream reader's offsets
    and partitions)."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict[int, list[int]] = {}
    stat: dict[int, list[str]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(st[1]), []).append(int(d))
            stat[int(d)] = st
    out: dict[str, float] = {}

    def add(key: str, seconds: float) -> None:
        out[key] = out.get(key, 0.0) + seconds

    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        st = stat.get(pid)
        if st is None:
            continue
        own, waited = (int(st[11]) + int(st[12])) / tick, (int(st[13]) + int(st[14])) / tick
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if pid == os.getpid():
            add("driver process (this script, py4j)", own)
        elif "java" in cmd.split(" ")[0]:
            add("processes the JVM started and reaped (Hadoop's chmod/readlink)", waited)
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        t = f.read()
                except OSError:
                    continue
                name = t[t.index("(") + 1:t.rindex(")")]
                f2 = t.rsplit(")", 1)[1].split()
                role = next((r for k, r in _JVM_THREADS if k in name), "JVM, other threads")
                add(role, (int(f2[11]) + int(f2[12])) / tick)
        elif "pyspark.daemon" in cmd or "pyspark/daemon" in cmd:
            add("Python workers (the source's read())", own + waited)
        else:
            add("other Python runners (offsets, partitions, sink commit)", own + waited)
    return out


def split_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(after.get(k, 0.0) - before.get(k, 0.0), 2)
            for k in sorted(set(before) | set(after), key=lambda k: -after.get(k, 0.0))
            if round(after.get(k, 0.0) - before.get(k, 0.0), 2)}


_FILLS = itertools.count(1)


def _fill(db: Any, rows: int, base: int = 0) -> None:
    """``rows`` row changes, 100 a transaction (ids from ``base``; 0: a range no fill used)."""
    base = base or 100_000_000 * next(_FILLS)
    c = db.connect()
    with c.cursor() as cur:
        for i in range(base, base + rows, 100):
            cur.execute("INSERT INTO bs (id, v, n) VALUES " + ",".join(
                f"({j}, 'value-{j}-xxxxxxxxxxxxxxxx', {j}.5)" for j in range(i, i + 100)))
    c.close()


def _live_cmd(db: Any, start: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "binlogscope", "live", "--json", "--host", db.host, "--port",
            str(db.port), "-u", "repl", "--ssl-mode", "DISABLED", "--start", start, *extra]


def run_live(db: Any, start: str, env: dict[str, str]) -> dict[str, Any]:
    """``live --json --non-blocking`` over what is there (catch-up); also how many binlog
    events it showed (for :func:`follow_live`'s ``--count``)."""
    r0 = os.times()
    t0 = time.perf_counter()
    events = 0
    with subprocess.Popen(_live_cmd(db, start, "--non-blocking"), stdout=subprocess.PIPE,
                          env=env) as p:
        assert p.stdout is not None
        for line in p.stdout:
            events += line.startswith(b'{"kind":"binlog_event"')
    wall = time.perf_counter() - t0
    r1 = os.times()
    return {"wall": wall, "events": events, "cpu": (r1.children_user - r0.children_user)
            + (r1.children_system - r0.children_system)}


def follow_live(db: Any, env: dict[str, str], rows: int, events: int) -> dict[str, Any]:
    """``live --json`` following the server (blocking dump, output to /dev/null) while
    ``rows`` row changes are committed: from the first INSERT to its exit after ``events``
    binlog events (a fill of the same shape as the one :func:`run_live` read)."""
    status = run_sql(db, "SHOW MASTER STATUS")[0]
    r0 = os.times()
    with open(os.devnull, "wb") as null, subprocess.Popen(
            _live_cmd(db, f"{status[0]}:{status[1]}", "--count", str(events)), stdout=null,
            env=env) as p:
        time.sleep(2)  # connected, the dump waiting at the end
        t0 = time.perf_counter()
        _fill(db, rows)
        filled = time.perf_counter() - t0
        p.wait()
        wall = time.perf_counter() - t0
    r1 = os.times()
    return {"wall": wall, "fill_seconds": filled, "cpu": (r1.children_user - r0.children_user)
            + (r1.children_system - r0.children_system)}


def run_task(db: Any, start: str) -> dict[str, Any]:
    """The streaming source's task outside Spark (``read_slice``: the live replica dumping the
    range, the export's decoder and mapper, the Arrow batches): over the whole range, and the
    floor of a one-transaction slice (connect, log in, dump, stop), median of 5."""
    from binlogscope.export.arrow import full_schema
    from binlogscope.export.spark.stream import StreamSlice, read_slice
    from binlogscope.export.spark.stream_options import parse_stream_options

    opts = parse_stream_options({"url": f"mysql://repl@{db.host}:{db.port}",
                                 "sslMode": "DISABLED"})
    schema = full_schema("rows")
    name, _, pos = start.rpartition(":")
    status = run_sql(db, "SHOW MASTER STATUS")[0]

    def read(end_file: str, end_pos: int) -> tuple[float, float, int]:
        c0, t0 = time.process_time(), time.perf_counter()
        n = sum(b.num_rows for b in read_slice(
            opts, StreamSlice(0, name, int(pos), end_file, end_pos, None), schema))
        return time.perf_counter() - t0, time.process_time() - c0, n
    wall, cpu, n = read(str(status[0]), int(status[1]))
    # (ends after the first transaction; in the first file, where the backlog spans several)
    one = [read(name, int(pos) + 1)[0] for _ in range(5)]
    return {"wall": wall, "cpu": cpu, "rows": n, "slice_floor_s": statistics.median(one)}


def _reader(spark: Any, db: Any, start: str, options: dict[str, str] | None = None) -> Any:
    """The stream; ``options`` are the source's, except ``select``: the columns kept (a
    comma-separated list) before the sink."""
    opts = dict(options or {})
    select = opts.pop("select", "")
    r = (spark.readStream.format("binlog").option("url", f"mysql://repl@{db.host}:{db.port}")
         .option("sslMode", "DISABLED").option("start", start))
    for k, v in opts.items():
        r = r.option(k, v)
    df = r.load()
    return df.select(*select.split(",")) if select else df


def run_stream(spark: Any, db: Any, start: str, out: Path, fill: int | None = None,
               sink: str = "parquet", options: dict[str, str] | None = None) -> dict[str, Any]:
    """``fill`` None: an ``availableNow`` query over what is there (the query's start
    included). Else a running query (default trigger, warm: its first batch done) while
    ``fill`` row changes are committed: from the fill's start to the sink holding them all."""
    cpu0, split0 = tree_cpu(), cpu_split()
    t0 = time.perf_counter()
    w = (_reader(spark, db, start, options).writeStream.format(sink)
         .option("checkpointLocation", str(out / "checkpoint")))
    if fill is None:
        q = w.trigger(availableNow=True).start(str(out / "sink"))
        q.awaitTermination()
        wall = time.perf_counter() - t0
        rows = sum(int(p["numInputRows"]) for p in q.recentProgress)
        return {"wall": wall, "cpu": tree_cpu() - cpu0, "rows": rows,
                "cpu_split": split_delta(split0, cpu_split()),
                "batches": len(q.recentProgress),
                "batch_ms": [p["durationMs"] for p in q.recentProgress]}
    q = w.start(str(out / "sink"))
    while not q.recentProgress:  # up: a first (empty) batch planned
        time.sleep(0.2)
    time.sleep(2)
    cpu0, split0 = tree_cpu(), cpu_split()
    t0 = time.perf_counter()
    _fill(db, fill)
    filled = time.perf_counter() - t0
    while sum(int(p["numInputRows"]) for p in q.recentProgress) < fill:
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    cpu, split = tree_cpu() - cpu0, split_delta(split0, cpu_split())
    batches = [p for p in q.recentProgress if int(p["numInputRows"])]
    q.stop()
    return {"wall": wall, "cpu": cpu, "rows": fill, "fill_seconds": filled, "cpu_split": split,
            "batches": len(batches),
            "batch_rows_per_s": [round(float(p["processedRowsPerSecond"])) for p in batches],
            "batch_rows": [int(p["numInputRows"]) for p in batches],
            "batch_ms": [p["durationMs"] for p in batches]}


def run_latency(spark: Any, db: Any, out: Path, seconds: float, rate: float,
                options: dict[str, str] | None = None) -> dict[str, Any]:
    status = run_sql(db, "SHOW MASTER STATUS")[0]
    q = (_reader(spark, db, f"{status[0]}:{status[1]}", options).writeStream.format("parquet")
         .option("checkpointLocation", str(out / "checkpoint")).start(str(out / "sink")))
    time.sleep(5)  # the query is up (its first latestOffset came back)
    committed: dict[int, float] = {}

    def commit() -> None:
        c = db.connect()
        with c.cursor() as cur:
            t_end = time.time() + seconds
            i = 10_000_000
            while time.time() < t_end:
                cur.execute(f"INSERT INTO bs (id, v, n) VALUES ({i}, 'latency', 0)")
                committed[i] = time.time()  # autocommit: the COMMIT has returned
                i += 1
                time.sleep(1.0 / rate)
        c.close()

    th = threading.Thread(target=commit)
    split0, n0 = cpu_split(), len(q.recentProgress)
    th.start()
    th.join()
    split, n1 = split_delta(split0, cpu_split()), len(q.recentProgress)
    import pyarrow.parquet as pq

    meta = out / "sink" / "_spark_metadata"
    deadline = time.time() + 120
    seen: dict[int, float] = {}
    while time.time() < deadline and len(seen) < len(committed):
        time.sleep(0.5)
        # (every 10th batch's entry is a compaction holding the earlier ones: "19.compact")
        entries = [e for e in meta.iterdir() if e.name.split(".")[0].isdigit()
                   and not e.name.startswith(".")] if meta.is_dir() else []
        for entry in sorted(entries, key=lambda e: int(e.name.split(".")[0])):
            when = entry.stat().st_mtime
            for line in entry.read_text().splitlines()[1:]:
                path = json.loads(line)["path"]
                for r in pq.read_table(path.removeprefix("file://"), columns=["after"]
                                       ).to_pylist():
                    rid = int(dict(r["after"] or {}).get("id", -1))
                    if rid in committed and rid not in seen:
                        seen[rid] = when
    q.stop()
    lat = sorted(seen[i] - committed[i] for i in seen)
    small = [p["durationMs"] for p in q.recentProgress if 0 < int(p["numInputRows"]) < 100]
    floor = {k: statistics.median(int(d.get(k, 0)) for d in small)
             for k in ("triggerExecution", "addBatch", "latestOffset", "walCommit",
                       "commitOffsets", "queryPlanning")} if small else {}
    per_batch = {k: round(v * 1000 / max(n1 - n0, 1)) for k, v in split.items()}
    return {"commits": len(committed), "in_sink": len(seen), "batch_floor_ms": floor,
            "batch_cpu_ms_by_role": per_batch, "rate": rate,
            "median": statistics.median(lat) if lat else None,
            "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            "max": lat[-1] if lat else None, "batches": len(q.recentProgress)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--latency-seconds", type=float, default=30.0)
    ap.add_argument("--commit-rate", type=float, default=20.0)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=K:V;K:V",
                    help="a following run with these source options (``select:COLS`` keeps "
                    "only those columns); the default run and each variant are followed in "
                    "turn, twice, alternated; the latency part uses the default")
    ap.add_argument("--no-catch-up", action="store_true",
                    help="leave out the catch-up queries (cold, warm noop, warm Parquet)")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    db = mariadb_server.start(tmp / "server")
    env = dict(os.environ, MYSQL_PWD="replpass", PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), str(REPO)]))
    os.environ["MYSQL_PWD"] = "replpass"  # (before the JVM starts: its workers inherit it)
    try:
        run_sql(db, "CREATE TABLE bs (id BIGINT PRIMARY KEY, v VARCHAR(64), n DECIMAL(12,1))")
        status = run_sql(db, "SHOW MASTER STATUS")[0]
        start = f"{status[0]}:{status[1]}"
        t = time.perf_counter()
        _fill(db, a.rows, base=1)
        print(f"{a.rows} row changes committed in {time.perf_counter() - t:.1f} s", flush=True)
        live = run_live(db, start, env)
        print(f"live --json (catch-up): {live}", flush=True)
        task = run_task(db, start)
        print(f"the source's task outside Spark: {task}", flush=True)
        from binlogscope.export.spark.analyze import spark_session
        from binlogscope.spark import register

        t = time.perf_counter()
        spark = spark_session("local[2]", [("spark.sql.shuffle.partitions", "2")])
        register(spark)
        startup = time.perf_counter() - t
        if not a.no_catch_up:
            cold = run_stream(spark, db, start, tmp / "cold")
            print(f"stream (availableNow, cold): {cold}; Spark start-up {startup:.1f} s",
                  flush=True)
            warm = {sink: run_stream(spark, db, start, tmp / f"warm-{sink}", sink=sink)
                    for sink in ("noop", "parquet")}
            print(f"stream (availableNow, warm session): {warm}", flush=True)
        variants: list[tuple[str, dict[str, str]]] = [("default", {})]
        for text in a.variant:
            name, _, opts = text.partition("=")
            variants.append((name, dict(kv.split(":", 1) for kv in opts.split(";") if kv)))
        follows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for rnd in range(2 if len(variants) > 1 else 1):
            for name, opts in variants:
                follow = follow_live(db, env, a.rows, live["events"])
                print(f"live --json (following): {follow}", flush=True)
                status = run_sql(db, "SHOW MASTER STATUS")[0]
                stream = run_stream(spark, db, f"{status[0]}:{status[1]}",
                                    tmp / f"follow-{rnd}-{name}", fill=a.rows, options=opts)
                print(f"stream (running, following, {name}): {stream}", flush=True)
                follows.append((name, follow, stream))
        latency = run_latency(spark, db, tmp / "latency", a.latency_seconds, a.commit_rate)
        spark.stop()
    finally:
        mariadb_server.stop(tmp / "server")
        shutil.rmtree(tmp, ignore_errors=True)
    n = a.rows

    def batch(r: dict[str, Any]) -> dict[str, Any]:
        ms = r["batch_ms"][-1] if r["batch_ms"] else {}
        return {"wall_s": round(r["wall"], 2), "cpu_s": round(r["cpu"], 2),
                "rows_per_s": round(n / r["wall"]),
                "batch_trigger_ms": ms.get("triggerExecution"),
                "batch_add_ms": ms.get("addBatch"),
                "batch_rows_per_s": round(n / max(int(ms.get("triggerExecution", 0)), 1) * 1000),
                "cpu_split": r["cpu_split"]}
    catch_up: dict[str, Any] = {
        "live": {"wall_s": round(live["wall"], 2), "cpu_s": round(live["cpu"], 2),
                 "rows_per_s": round(n / live["wall"])},
        "task_outside_spark": {"wall_s": round(task["wall"], 2), "cpu_s": round(task["cpu"], 2),
                               "rows_per_s": round(n / task["wall"]),
                               "one_transaction_slice_s": round(task["slice_floor_s"], 3)}}
    if not a.no_catch_up:
        catch_up |= {"stream_cold_parquet": batch(cold) | {"spark_startup_s": round(startup, 1)},
                     "stream_warm_noop": batch(warm["noop"]),
                     "stream_warm_parquet": batch(warm["parquet"])}
    print(json.dumps({"rows": n, "catch_up": catch_up, "following": [{
        "variant": v,
        "live": {"wall_s": round(fl["wall"], 2), "cpu_s": round(fl["cpu"], 2),
                 "fill_s": round(fl["fill_seconds"], 2), "rows_per_s": round(n / fl["wall"])},
        "stream_parquet": {"wall_s": round(st["wall"], 2), "cpu_s": round(st["cpu"], 2),
                           "fill_s": round(st["fill_seconds"], 2),
                           "rows_per_s": round(n / st["wall"]),
                           "rate_vs_live": round(fl["wall"] / st["wall"], 2),
                           "cpu_vs_live": round(st["cpu"] / max(fl["cpu"], 0.01), 1),
                           "batch_rows": st["batch_rows"], "batch_ms": st["batch_ms"],
                           "cpu_split": st["cpu_split"]}} for v, fl, st in follows],
        "latency": latency}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
