"""A streaming query's driver program for the crash tests (``python -m
tests.export.spark.stream_driver``): ``spark.readStream.format("binlog")`` from a server into
a Parquet sink with a checkpoint, on ``local[2]``, with Spark's event log on. The password comes
from ``MYSQL_PWD`` (as for ``live``). ``--available-now`` runs until the server's current end
and exits; otherwise it runs until it is killed. The query plan's strings go to
``OUT/plan.txt`` (the tests look for the password there)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--start", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--available-now", action="store_true")
    p.add_argument("--trigger", default="1 second")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)

    from binlogscope.export.spark import register
    from binlogscope.export.spark.analyze import spark_session

    events = a.out / "events"
    events.mkdir(parents=True, exist_ok=True)
    spark = spark_session("local[2]", [
        ("spark.sql.shuffle.partitions", "2"), ("spark.eventLog.enabled", "true"),
        ("spark.eventLog.dir", events.resolve().as_uri())])
    register(spark)
    r = (spark.readStream.format("binlog").option("url", a.url).option("start", a.start)
         .option("sslMode", "DISABLED"))
    for kv in a.option:
        k, _, v = kv.partition("=")
        r = r.option(k, v)
    df = r.load()
    w = (df.writeStream.format("parquet")
         .option("checkpointLocation", str(a.out / "checkpoint")))
    w = w.trigger(availableNow=True) if a.available_now else w.trigger(processingTime=a.trigger)
    q = w.start(str(a.out / "sink"))
    plan = df._jdf.queryExecution().toString() + "\n" + q._jsq.toString()
    with open(a.out / "plan.txt", "a", encoding="utf-8") as f:
        f.write(plan + "\n")
    print("started", flush=True)
    while q.isActive and q.lastProgress is None:  # the executed plan, once there is one
        q.awaitTermination(0.5)
    with open(a.out / "plan.txt", "a", encoding="utf-8") as f:
        f.write(str(q._jsq.explainInternal(True)) + "\n")
    while not q.awaitTermination(5):  # what it is doing, in the driver's log
        lp = q.lastProgress or {}
        src = (lp.get("sources") or [{}])[0]
        print(f"{time.strftime('%H:%M:%S')} {q.status.get('message')} batch "
              f"{lp.get('batchId')} rows {lp.get('numInputRows')} end {src.get('endOffset')}",
              flush=True)
    if q.exception() is not None:
        print(f"query failed: {q.exception()}", file=sys.stderr, flush=True)
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
