"""Streaming benchmark (issue 28): ``spark.readStream.format("binlog")`` against
``binlogscope live --json`` on the same server, same run, and the commit-to-sink latency.

    python bench/stream_spark.py                        # 200,000 row changes, 30 s of latency
    python bench/stream_spark.py --rows 50000 --latency-seconds 20

A throw-away MariaDB (scripts/mariadb.sh) gets ``--rows`` row changes (inserts of 100 rows a
transaction), then:

* **rate**: ``binlogscope live --json --non-blocking`` from the first change to the end, output
  to /dev/null (a child process: wall, CPU user+sys), against a running streaming query
  (``local[2]``, Parquet sink with a checkpoint, default trigger, its first batch done) while
  the same number of row changes is committed: from the first INSERT to the sink holding them
  all (and the CPU of the whole process tree: driver, JVM, Python workers); also a cold
  ``trigger(availableNow=True)`` query over the first range (the query's start included);
* **latency**: a query with the default trigger (micro-batches back to back) follows the
  server while one client commits single-row transactions at ``--commit-rate`` per second;
  a row's latency is from its COMMIT returning to the moment the file sink committed the
  micro-batch that holds it (the mtime of the sink's ``_spark_metadata/N`` entry, the same
  clock). Median and p99.

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


def _sql(db: Any, *stmts: str) -> list[Any]:
    c = db.connect()
    try:
        with c.cursor() as cur:
            rows: list[Any] = []
            for s in stmts:
                cur.execute(s)
                rows = list(cur.fetchall() or [])
            return rows
    finally:
        c.close()


def _fill(db: Any, rows: int, base: int = 0) -> None:
    c = db.connect()
    with c.cursor() as cur:
        for i in range(base, base + rows, 100):
            cur.execute("INSERT INTO bs (id, v, n) VALUES " + ",".join(
                f"({j}, 'value-{j}-xxxxxxxxxxxxxxxx', {j}.5)" for j in range(i, i + 100)))
    c.close()


def run_live(db: Any, start: str, env: dict[str, str]) -> dict[str, Any]:
    r0 = os.times()
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run([sys.executable, "-m", "binlogscope", "live", "--json", "--non-blocking",
                        "--host", db.host, "--port", str(db.port), "-u", "repl",
                        "--ssl-mode", "DISABLED", "--start", start], stdout=null, env=env,
                       check=True)
    wall = time.perf_counter() - t0
    r1 = os.times()
    return {"wall": wall, "cpu": (r1.children_user - r0.children_user)
            + (r1.children_system - r0.children_system)}


def _reader(spark: Any, db: Any, start: str) -> Any:
    return (spark.readStream.format("binlog")
            .option("url", f"mysql://repl@{db.host}:{db.port}")
            .option("sslMode", "DISABLED").option("start", start).load())


def run_stream(spark: Any, db: Any, start: str, out: Path, fill: int | None = None
               ) -> dict[str, Any]:
    """``fill`` None: an ``availableNow`` query over what is there (cold: the query's start
    included). Else a running query (default trigger, warm: its first batch done) while
    ``fill`` row changes are committed: from the fill's start to the sink holding them all."""
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    w = (_reader(spark, db, start).writeStream.format("parquet")
         .option("checkpointLocation", str(out / "checkpoint")))
    if fill is None:
        q = w.trigger(availableNow=True).start(str(out / "sink"))
        q.awaitTermination()
        wall = time.perf_counter() - t0
        rows = sum(int(p["numInputRows"]) for p in q.recentProgress)
        return {"wall": wall, "cpu": tree_cpu() - cpu0, "rows": rows,
                "batches": len(q.recentProgress)}
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
    status = _sql(db, "SHOW MASTER STATUS")[0]
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
    return {"commits": len(committed), "in_sink": len(seen),
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
        _sql(db, "CREATE TABLE bs (id BIGINT PRIMARY KEY, v VARCHAR(64), n DECIMAL(12,1))")
        status = _sql(db, "SHOW MASTER STATUS")[0]
        start = f"{status[0]}:{status[1]}"
        t = time.perf_counter()
        _fill(db, a.rows)
        print(f"{a.rows} row changes committed in {time.perf_counter() - t:.1f} s", flush=True)
        live = run_live(db, start, env)
        print(f"live --json: {live['wall']:.2f} s wall, {live['cpu']:.2f} s CPU", flush=True)
        from binlogscope.export.spark.analyze import spark_session
        from binlogscope.spark import register

        t = time.perf_counter()
        spark = spark_session("local[2]", [("spark.sql.shuffle.partitions", "2")])
        register(spark)
        startup = time.perf_counter() - t
        cold = run_stream(spark, db, start, tmp / "cold")
        print(f"stream (availableNow, cold): {cold}; Spark start-up {startup:.1f} s", flush=True)
        status = _sql(db, "SHOW MASTER STATUS")[0]
        stream = run_stream(spark, db, f"{status[0]}:{status[1]}", tmp / "warm", fill=a.rows)
        print(f"stream (running, warm): {stream}", flush=True)
        latency = run_latency(spark, db, tmp / "latency", a.latency_seconds, a.commit_rate)
        spark.stop()
    finally:
        mariadb_server.stop(tmp / "server")
        shutil.rmtree(tmp, ignore_errors=True)
    n = a.rows
    print(json.dumps({
        "rows": n,
        "live_rows_per_s": round(n / live["wall"]), "live_cpu_s": round(live["cpu"], 2),
        "stream_rows_per_s": round(n / stream["wall"]), "stream_cpu_s": round(stream["cpu"], 2),
        "stream_batches": stream["batches"], "stream_fill_s": round(stream["fill_seconds"], 2),
        "stream_batch_rows_per_s": stream["batch_rows_per_s"],
        "stream_batch_rows": stream["batch_rows"], "stream_batch_ms": stream["batch_ms"],
        "cold_availablenow_s": round(cold["wall"], 1), "cold_rows": cold["rows"],
        "spark_startup_s": round(startup, 1),
        "stream_over_live_wall": round(live["wall"] / stream["wall"], 2),
        "stream_over_live_cpu": round(stream["cpu"] / max(live["cpu"], 1e-9), 2),
        "latency": latency}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
