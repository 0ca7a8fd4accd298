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


def _fill(db: Any, rows: int, base: int = 0) -> None:
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
        _fill(db, rows, base=30_000_000)
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

    def read(end_pos: int) -> tuple[float, float, int]:
        c0, t0 = time.process_time(), time.perf_counter()
        n = sum(b.num_rows for b in read_slice(
            opts, StreamSlice(0, name, int(pos), str(status[0]), end_pos, None), schema))
        return time.perf_counter() - t0, time.process_time() - c0, n
    wall, cpu, n = read(int(status[1]))
    one = [read(int(pos) + 1)[0] for _ in range(5)]  # (ends after the first transaction)
    return {"wall": wall, "cpu": cpu, "rows": n, "slice_floor_s": statistics.median(one)}


def _reader(spark: Any, db: Any, start: str) -> Any:
    return (spark.readStream.format("binlog")
            .option("url", f"mysql://repl@{db.host}:{db.port}")
            .option("sslMode", "DISABLED").option("start", start).load())


def run_stream(spark: Any, db: Any, start: str, out: Path, fill: int | None = None,
               sink: str = "parquet") -> dict[str, Any]:
    """``fill`` None: an ``availableNow`` query over what is there (the query's start
    included). Else a running query (default trigger, warm: its first batch done) while
    ``fill`` row changes are committed: from the fill's start to the sink holding them all."""
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    w = (_reader(spark, db, start).writeStream.format(sink)
         .option("checkpointLocation", str(out / "checkpoint")))
    if fill is None:
        q = w.trigger(availableNow=True).start(str(out / "sink"))
        q.awaitTermination()
        wall = time.perf_counter() - t0
        rows = sum(int(p["numInputRows"]) for p in q.recentProgress)
        return {"wall": wall, "cpu": tree_cpu() - cpu0, "rows": rows,
                "batches": len(q.recentProgress),
                "batch_ms": [p["durationMs"] for p in q.recentProgress]}
    q = w.start(str(out / "sink"))
    while not q.recentProgress:  # up: a first (empty) batch planned
        time.sleep(0.2)
    time.sleep(2)
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    _fill(db, fill, base=20_000_000)
    filled = time.perf_counter() - t0
    while sum(int(p["numInputRows"]) for p in q.recentProgress) < fill:
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    cpu = tree_cpu() - cpu0
    batches = [p for p in q.recentProgress if int(p["numInputRows"])]
    q.stop()
    return {"wall": wall, "cpu": cpu, "rows": fill, "fill_seconds": filled,
            "batches": len(batches),
            "batch_rows_per_s": [round(float(p["processedRowsPerSecond"])) for p in batches],
            "batch_rows": [int(p["numInputRows"]) for p in batches],
            "batch_ms": [p["durationMs"] for p in batches]}


def run_latency(spark: Any, db: Any, out: Path, seconds: float, rate: float) -> dict[str, Any]:
    status = run_sql(db, "SHOW MASTER STATUS")[0]
    q = (_reader(spark, db, f"{status[0]}:{status[1]}").writeStream.format("parquet")
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
    th.start()
    th.join()
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
    return {"commits": len(committed), "in_sink": len(seen), "batch_floor_ms": floor,
            "median": statistics.median(lat) if lat else None,
            "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            "max": lat[-1] if lat else None, "batches": len(q.recentProgress)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--latency-seconds", type=float, default=30.0)
    ap.add_argument("--commit-rate", type=float, default=20.0)
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
        _fill(db, a.rows)
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
        cold = run_stream(spark, db, start, tmp / "cold")
        print(f"stream (availableNow, cold): {cold}; Spark start-up {startup:.1f} s", flush=True)
        warm = {sink: run_stream(spark, db, start, tmp / f"warm-{sink}", sink=sink)
                for sink in ("noop", "parquet")}
        print(f"stream (availableNow, warm session): {warm}", flush=True)
        follow = follow_live(db, env, a.rows, live["events"])
        print(f"live --json (following): {follow}", flush=True)
        status = run_sql(db, "SHOW MASTER STATUS")[0]
        stream = run_stream(spark, db, f"{status[0]}:{status[1]}", tmp / "warm", fill=a.rows)
        print(f"stream (running, following): {stream}", flush=True)
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
                "batch_rows_per_s": round(n / max(int(ms.get("triggerExecution", 0)), 1) * 1000)}
    print(json.dumps({
        "rows": n,
        "catch_up": {
            "live": {"wall_s": round(live["wall"], 2), "cpu_s": round(live["cpu"], 2),
                     "rows_per_s": round(n / live["wall"])},
            "task_outside_spark": {"wall_s": round(task["wall"], 2),
                                   "cpu_s": round(task["cpu"], 2),
                                   "rows_per_s": round(n / task["wall"]),
                                   "one_transaction_slice_s": round(task["slice_floor_s"], 3)},
            "stream_cold_parquet": batch(cold) | {"spark_startup_s": round(startup, 1)},
            "stream_warm_noop": batch(warm["noop"]),
            "stream_warm_parquet": batch(warm["parquet"])},
        "following": {
            "live": {"wall_s": round(follow["wall"], 2), "cpu_s": round(follow["cpu"], 2),
                     "fill_s": round(follow["fill_seconds"], 2),
                     "rows_per_s": round(n / follow["wall"])},
            "stream_parquet": {"wall_s": round(stream["wall"], 2),
                               "cpu_s": round(stream["cpu"], 2),
                               "fill_s": round(stream["fill_seconds"], 2),
                               "rows_per_s": round(n / stream["wall"]),
                               "batch_rows": stream["batch_rows"],
                               "batch_ms": stream["batch_ms"]}},
        "latency": latency}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
