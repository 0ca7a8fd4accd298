"""``binlogscope analyze``: reports over an export, computed on Spark through PySpark.

PySpark is imported lazily (only here, only when analysing); it and matplotlib come with the
``spark`` extra (``pip install 'binlogscope[spark]'``), and without them :func:`analyze` raises
an :class:`AnalyzeError` saying so in one line. The three tables are registered as
temp views ``packets``, ``events`` and ``rows`` (plus the derived ``transactions``) with the
schema from :mod:`binlogscope.export.arrow`, so the same SQL runs on ``local[*]`` or a cluster.

Every report is computed by Spark, collected (reports are small aggregates), printed as a table,
and written as Parquet and CSV; ``--plots DIR`` draws PNG charts with matplotlib.
"""

from __future__ import annotations

import atexit
import importlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.export.arrow import (
    HEALTH,
    HEALTH_TABLE,
    NULL_PARTITION,
    TABLES,
    partition_columns,
)
from binlogscope.export.report_output import (
    SILENCE_SECONDS,
    Report,
    format_report,
    write_plots,
    write_report,
)
from binlogscope.export.spark.spark_types import spark_type

#: SQL names of the registered views
VIEWS = ("packets", "events", "rows")

_LOG4J = """\
status = error
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.snappy.name = org.apache.spark.util.Utils
logger.snappy.level = error
"""


class AnalyzeError(Exception):
    """The analysis cannot run (one line for the CLI)."""


#: how to get what ``analyze`` needs beyond the base install
EXTRA_HINT = "pip install 'binlogscope[spark]'"


def require(module: str) -> None:
    """Import ``module`` (pyspark, matplotlib) or raise an :class:`AnalyzeError` naming the extra
    that brings it."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise AnalyzeError(f"{module} is not installed (analyze needs the spark extra): "
                           f"{EXTRA_HINT}") from None


# ----------------------------------------------------------------------------- session

def log_config_dir() -> Path:
    """A fresh private directory (mode 0700, its own random name) holding the log4j2
    configuration (and the JVM's stderr) of one Spark start; never a fixed shared path another
    user could pre-create or point elsewhere with a symlink. The caller removes it."""
    log_dir = Path(tempfile.mkdtemp(prefix="binlogscope-spark-"))
    fd = os.open(log_dir / "log4j2.properties", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(_LOG4J)
    return log_dir


def spark_session(master: str | None = "local[*]", conf: Sequence[tuple[str, str]] = (),
                  app_name: str = "binlogscope") -> Any:
    """A quiet Spark session (Spark's WARN lines and the JVM's stderr kept off the terminal),
    UI off, few shuffle partitions; ``conf`` overrides all. ``master`` None: the one
    ``spark-submit`` was given, else Spark's default ``local[*]``."""
    from pyspark.sql import SparkSession

    log_dir = log_config_dir()
    log_conf = log_dir / "log4j2.properties"
    settings: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{log_conf}",
    }
    settings.update(dict(conf))
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for k, v in settings.items():
        builder = builder.config(k, v)
    pin_worker_python(master)
    # The JVM's own stderr (its launcher warnings, e.g. "Using incubator modules") goes to a
    # private log file, not the user's terminal: Spark's errors still reach Python as
    # exceptions. The directory goes when the process ends.
    jvm_log = os.open(log_dir / "spark-jvm.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = os.dup(2)
    os.dup2(jvm_log, 2)
    try:
        spark = builder.getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(jvm_log)
        log_conf.unlink(missing_ok=True)  # the JVM read its logging configuration at start
        atexit.register(shutil.rmtree, log_dir, True)
    spark.sparkContext.setLogLevel("WARN")  # (the console shows ERROR lines only: _LOG4J)
    return spark


def pin_worker_python(master: str | None) -> None:
    """Spark's Python workers run this interpreter (``sys.executable``) when the master is
    local: they start on this machine, and ``python3`` from PATH (Spark's default) is another
    Python without binlogscope when the command runs from a venv that is not activated (cron,
    systemd, a script run by path). ``PYSPARK_PYTHON`` set by the user wins; on a cluster the
    executors' Python is the cluster's (docs/spark-cluster.md)."""
    if "PYSPARK_PYTHON" in os.environ:
        return
    local = (master or "").startswith("local") or (
        master is None and "PYSPARK_GATEWAY_PORT" not in os.environ)
    if local and sys.executable:
        os.environ["PYSPARK_PYTHON"] = sys.executable


_WORKER_BANNER = re.compile(r"An exception was thrown from the Python worker|Traceback \(most "
                            r"recent call last\)|^\s*$|^\s*File \"|^\s{4}")
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")


def spark_failure_line(exc: BaseException) -> str:
    """What went wrong in a Spark failure, in one line: the worker's own error (the last
    ``XError: message`` of a Python worker's traceback, e.g. ``ModuleNotFoundError: No module
    named 'binlogscope'``), a JVM cause (``Cannot run program "python3"``), else the first
    line of the message."""
    text = str(exc)
    lines = [ln.rstrip() for ln in text.splitlines()]
    errors = [ln.strip() for ln in lines if _ERROR_LINE.match(ln.strip())
              and not ln.strip().startswith(("org.apache.spark.SparkException: Job aborted",
                                             "py4j.protocol.Py4JJavaError"))]
    python_errors = [e for e in errors if not e.startswith(("org.", "java.", "scala.", "py4j"))]
    if python_errors:
        return python_errors[-1]
    for ln in lines:
        if "Cannot run program" in ln or "Python worker exited unexpectedly" in ln:
            return ln.strip()
    for ln in lines:
        if not _WORKER_BANNER.search(ln):
            return ln.strip()
    return type(exc).__name__


def spark_schema(table: str) -> Any:
    """The Spark schema of one table: data columns then partition columns, as documented."""
    from pyspark.sql import types as st

    cols = TABLES[table]
    ordered = [c for c in cols if not c.partition] + [c for c in cols if c.partition]
    return st.StructType([st.StructField(c.name, spark_type(c.type), True) for c in ordered])


#: the columns the built-in reports read, per view (``register_tables(reports_only=True)``)
REPORT_COLUMNS: dict[str, tuple[str, ...]] = {
    "packets": ("source_kind", "source", "session_id", "time", "direction", "kind",
                "ack_request", "binlog_file", "log_pos"),
    "events": ("source_kind", "source", "session_id", "binlog_file", "offset", "event_size",
               "timestamp", "event_type", "gtid", "xid", "trx_offset", "query", "rows",
               "capture_time", "schema"),
    "rows": ("schema", "table", "operation"),
}


def register_tables(spark: Any, root: str | Path, *, reports_only: bool = False
                    ) -> dict[str, Any]:
    """Register ``packets``, ``events``, ``rows`` and ``transactions`` as temp views.

    By default the views hold every column, read from the files when a query runs (``--sql``).
    ``reports_only``: each view holds just the columns the built-in reports read
    (:data:`REPORT_COLUMNS`) and is cached, since the reports scan ``events`` again and again.
    Caching whole tables does not fit: the row images and their JSON are most of an export
    (a 1.6 M-event export's ``rows`` ran a default 1 GB driver out of heap).
    """
    base = Path(root)
    if not is_export(base):
        raise AnalyzeError(f"{base} is not a binlogscope export (no events/ or rows/ directory)")
    frames = _register(spark, lambda name, schema: _export_frame(spark, base / name, schema),
                       reports_only)
    frames[HEALTH_TABLE] = _register_health(spark, base)
    return frames


def _register_health(spark: Any, base: Path | None, read: Any = None) -> Any:
    """The export's ``health`` table as a view (empty where there is none: exports without a
    replication connection); ``read``: inputs read directly, the ``health`` rows of the
    source's export table (the rows ``export`` writes)."""
    from pyspark.sql import functions as fn
    from pyspark.sql import types as st

    schema = st.StructType([st.StructField(c.name, spark_type(c.type), True) for c in HEALTH])
    if read is not None:
        df = read.where(fn.col("table") == HEALTH_TABLE).select(
            *[fn.col(HEALTH_TABLE).getField(c.name).alias(c.name) for c in HEALTH])
    elif base is not None:
        df = _export_frame(spark, base / HEALTH_TABLE, schema)
    else:
        df = spark.createDataFrame([], schema)
    df.createOrReplaceTempView(HEALTH_TABLE)
    return df


def is_export(path: Path) -> bool:
    """An export's directory (its ``events`` or ``rows`` table is there)."""
    return (path / "events").is_dir() or (path / "rows").is_dir()


def register_inputs(spark: Any, sources: Sequence[str], *, reports_only: bool = False
                    ) -> dict[str, Any]:
    """Register the views over binlog files, directories of them, globs and captures, read
    through the ``binlog`` data source (no export first): the same views and columns.

    Each input is decoded once: one read of the source's export table (every table of an
    input in one pass, as ``export --spark`` reads it) is kept - the reports' columns cached
    (``reports_only``), every column on the executors' disks otherwise - and each view is its
    table's rows of it. (Three reads, one per view, decoded every input three times.)"""
    from pyspark import StorageLevel
    from pyspark.sql import functions as fn

    from binlogscope.export.spark import register
    from binlogscope.export.spark.datasource import EXPORT_TABLE

    register(spark)
    paths = [str(s) for s in sources]
    wanted = {name: REPORT_COLUMNS[name] if reports_only
              else tuple(f.name for f in spark_schema(name).fields) for name in VIEWS}
    flat = [fn.col(name).getField(c).alias(f"{name}__{c}") for name in VIEWS
            for c in wanted[name] if c not in partition_columns(name)]
    read = (spark.read.format("binlog").option("table", EXPORT_TABLE)
            .load(paths if len(paths) > 1 else paths[0]))
    one = (read.where(fn.col("table").isin(*VIEWS, HEALTH_TABLE))
           .select("table", *flat, "date", "schema", HEALTH_TABLE))
    one = one.cache() if reports_only else one.persist(StorageLevel.DISK_ONLY)

    def frame(name: str, schema: Any) -> Any:
        pcols = partition_columns(name)
        return one.where(fn.col("table") == name).select(
            *[fn.col(c if c in pcols else f"{name}__{c}").alias(c) for c in wanted[name]])

    frames = _register(spark, frame, reports_only, cache_views=False)
    frames[HEALTH_TABLE] = _register_health(spark, None, one)
    return frames


def _export_frame(spark: Any, path: Path, schema: Any) -> Any:
    if path.is_dir() and any(path.rglob("*.parquet")):
        return spark.read.schema(schema).option("basePath", str(path)).parquet(str(path))
    return spark.createDataFrame([], schema)


def _register(spark: Any, read: Callable[[str, Any], Any], reports_only: bool,
              cache_views: bool = True) -> dict[str, Any]:
    """The views from ``read(name, schema)``; ``cache_views``: with ``reports_only``, each
    view's columns cached (not when what ``read`` gives is cached already)."""
    frames: dict[str, Any] = {}
    for name in VIEWS:
        schema = spark_schema(name)
        df = read(name, schema)
        if reports_only:
            df = df.select(*[f"`{c}`" for c in REPORT_COLUMNS[name]])
            df = df.cache() if cache_views else df
        else:  # Spark reads a NULL partition back as NULL already; keep the documented order
            df = df.select(*[f"`{c.name}`" for c in schema.fields])
        df.createOrReplaceTempView(name)
        frames[name] = df
    trx = spark.sql(_TRANSACTIONS_SQL)
    (trx.cache() if reports_only else trx).createOrReplaceTempView("transactions")
    frames["transactions"] = spark.table("transactions")
    return frames


# one row per transaction *as seen by one session*: a capture of two replicas (or a live run that
# reconnected) holds the same transaction twice, and pooling them doubled its events, rows, bytes
_TRANSACTIONS_SQL = """
SELECT source, session_id, binlog_file, trx_offset,
       max(gtid) AS gtid, max(xid) AS xid,
       count(*) AS events,
       CAST(coalesce(sum(rows), 0) AS BIGINT) AS rows,
       sum(event_size) AS bytes,
       min(timestamp) AS first_timestamp,
       max_by(timestamp, offset) AS commit_timestamp
FROM events
WHERE trx_offset IS NOT NULL
GROUP BY source, session_id, binlog_file, trx_offset
"""


# ----------------------------------------------------------------------------- reports

def _collect(name: str, title: str, df: Any, note: str | None = None) -> Report:
    rows = df.collect()
    return Report(name, title, list(df.columns), [tuple(r) for r in rows], note)


def _is_file_only(spark: Any) -> bool:
    kinds = {r[0] for r in spark.sql(
        "SELECT DISTINCT source_kind FROM events UNION SELECT DISTINCT source_kind FROM packets"
    ).collect()}
    return bool(kinds) and kinds <= {"file"}


def _distribution(spark: Any, view_sql: str, value: str) -> str:
    return f"""
SELECT count({value}) AS n, min({value}) AS min, percentile({value}, 0.5) AS p50,
       percentile({value}, 0.9) AS p90, percentile({value}, 0.99) AS p99,
       max({value}) AS max, avg({value}) AS mean
FROM ({view_sql})"""


def report_changes(spark: Any) -> Report:
    df = spark.sql("""
SELECT schema, `table`, operation, count(*) AS changes
FROM rows GROUP BY schema, `table`, operation
ORDER BY changes DESC, schema, `table`, operation""")
    return _collect("changes_per_table", "Row changes per schema.table and operation", df)


_BUCKETS = [(0, 0, "0"), (1, 1, "1"), (2, 10, "2-10"), (11, 100, "11-100"),
            (101, 1000, "101-1000"), (1001, 10000, "1001-10000"),
            (10001, 100000, "10001-100000"), (100001, None, ">100000")]


def report_transaction_sizes(spark: Any) -> Report:
    cases = " ".join(
        f"WHEN rows >= {lo}" + (f" AND rows <= {hi}" if hi is not None else "")
        + f" THEN {i}" for i, (lo, hi, _) in enumerate(_BUCKETS))
    labels = ", ".join(f"{i}, '{label}'" for i, (_, _, label) in enumerate(_BUCKETS))
    df = spark.sql(f"""
SELECT element_at(map({labels}), b) AS rows_bucket, count(*) AS transactions,
       sum(rows) AS rows, sum(bytes) AS bytes,
       min(bytes) AS min_bytes, max(bytes) AS max_bytes
FROM (SELECT CASE {cases} END AS b, rows, bytes FROM transactions)
GROUP BY b ORDER BY b""")
    return _collect("transaction_sizes", "Transaction sizes: distribution by rows", df)


def report_transaction_summary(spark: Any) -> Report:
    rows_sql = _distribution(spark, "SELECT rows AS v FROM transactions", "v")
    bytes_sql = _distribution(spark, "SELECT bytes AS v FROM transactions", "v")
    df = spark.sql(f"SELECT 'rows' AS metric, * FROM ({rows_sql}) "
                   f"UNION ALL SELECT 'bytes' AS metric, * FROM ({bytes_sql})")
    return _collect("transaction_summary", "Transaction sizes: summary (rows, bytes)", df)


def report_events_per_second(spark: Any) -> Report:
    """Per source and session: a capture of two replicas, or a binlog beside a capture of its
    stream, holds the same events twice, and one pooled figure per second doubled them."""
    df = spark.sql("""
SELECT date_trunc('second', coalesce(capture_time, timestamp)) AS second, source, session_id,
       count(*) AS events, CAST(coalesce(sum(rows), 0) AS BIGINT) AS rows,
       sum(event_size) AS bytes
FROM events
WHERE coalesce(capture_time, timestamp) > TIMESTAMP '1970-01-01 00:00:00'
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return _collect("events_per_second", "Events per second over time, per source and session "
                    "(capture time, else the event timestamp; artificial events with timestamp 0 "
                    "left out)", df)


def report_largest_transactions(spark: Any, limit: int = 20) -> Report:
    df = spark.sql(f"""
SELECT gtid, xid, binlog_file, trx_offset, rows, bytes, events, commit_timestamp, source,
       session_id
FROM transactions ORDER BY rows DESC, bytes DESC, source, session_id, binlog_file, trx_offset
LIMIT {int(limit)}""")
    return _collect("largest_transactions", f"Largest transactions (top {limit} by rows)", df)


def report_largest_transactions_by_bytes(spark: Any, limit: int = 20) -> Report:
    """By bytes: a transaction of one row with a 17 MB BLOB stalls a replica (and a CDC
    pipeline) as much as a million small rows, and a ranking by rows never shows it."""
    df = spark.sql(f"""
SELECT gtid, xid, binlog_file, trx_offset, bytes, rows, events, commit_timestamp, source,
       session_id
FROM transactions ORDER BY bytes DESC, rows DESC, source, session_id, binlog_file, trx_offset
LIMIT {int(limit)}""")
    return _collect("largest_transactions_by_bytes",
                    f"Largest transactions (top {limit} by bytes)", df)


def report_heartbeat_gaps(spark: Any, file_only: bool) -> Report:
    df = spark.sql("""
SELECT session_id, source, capture_time,
       (unix_micros(capture_time) - unix_micros(prev)) / 1e6 AS gap_seconds
FROM (SELECT session_id, source, capture_time,
             lag(capture_time) OVER (PARTITION BY source, session_id ORDER BY capture_time)
               AS prev
      FROM events WHERE event_type LIKE 'HEARTBEAT%' AND capture_time IS NOT NULL)
WHERE prev IS NOT NULL ORDER BY gap_seconds DESC, capture_time""")
    rep = _collect("heartbeat_gaps", "Heartbeat gaps (largest first)", df)
    if not rep.rows:
        rep.note = ("not applicable: heartbeats exist only on a replication stream (pcap/live); "
                    "binlog files contain none" if file_only else
                    "no two heartbeats with a capture time in this export")
    return rep


def _per_session(values_sql: str) -> str:
    """The distribution of ``v`` per (source, session_id) of ``values_sql``: one row per TCP
    session, never several replicas' sessions pooled into one figure."""
    return f"""
SELECT source, session_id, count(v) AS n, min(v) AS min, percentile(v, 0.5) AS p50,
       percentile(v, 0.9) AS p90, percentile(v, 0.99) AS p99, max(v) AS max, avg(v) AS mean
FROM (SELECT source, session_id, CAST(v AS DOUBLE) AS v FROM ({values_sql}))
GROUP BY source, session_id ORDER BY source, session_id"""


def report_ack_latency(spark: Any, file_only: bool) -> Report:
    lat = """
SELECT q.source, q.session_id, (unix_micros(a.time) - unix_micros(q.time)) / 1000.0 AS v
FROM packets q JOIN packets a
  ON q.session_id = a.session_id AND q.log_pos = a.log_pos
     AND q.source <=> a.source
     AND coalesce(q.binlog_file, '') = coalesce(a.binlog_file, '')
WHERE q.ack_request AND q.direction = 'server'
  AND upper(a.kind) = 'SEMI_SYNC_ACK' AND a.direction = 'client' AND a.time >= q.time"""
    df = spark.sql(_per_session(lat))
    rep = _collect("semi_sync_ack_latency",
                   "Semi-sync ACK latency in ms per session (ACK-requested event -> replica "
                   "ACK)", df)
    if not rep.rows or not any(r[2] for r in rep.rows):
        rep.rows = []
        n_packets = spark.table("packets").count()
        rep.note = ("not applicable: the export has no wire packets (binlog files carry none; "
                    "ACK latency needs a pcap or live capture of a semi-sync replica)"
                    if n_packets == 0 or file_only else
                    "no semi-sync ACK-requested events with a matching ACK in the packets")
    return rep


#: the ACK-requested event -> its ACK, per acknowledged event (what report_ack_latency reads)
_ACK_PAIRS = """
SELECT q.source, q.session_id, q.time AS t,
       (unix_micros(a.time) - unix_micros(q.time)) / 1000.0 AS ms
FROM packets q JOIN packets a
  ON q.session_id = a.session_id AND q.log_pos = a.log_pos
     AND q.source <=> a.source
     AND coalesce(q.binlog_file, '') = coalesce(a.binlog_file, '')
WHERE q.ack_request AND q.direction = 'server'
  AND upper(a.kind) = 'SEMI_SYNC_ACK' AND a.direction = 'client' AND a.time >= q.time"""


def report_ack_latency_over_time(spark: Any) -> Report:
    """The semi-sync ACK latency per second of capture time, per session (its mean, its
    largest and how many ACKs): what ``--plots`` draws over time (issue 29: the health of a
    session, from the wire)."""
    df = spark.sql(f"""
SELECT date_trunc('second', t) AS second, source, session_id, count(*) AS acks,
       avg(ms) AS mean_ms, max(ms) AS max_ms
FROM ({_ACK_PAIRS}) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return _collect("ack_latency_over_time", "Semi-sync ACK latency over time (ms, per second "
                    "of capture time and session)", df)


def report_lag_over_time(spark: Any) -> Report:
    """The position lag per second and session from the ``health`` table (the server's head -
    heartbeats, ``live --lag-every`` polls - against what was consumed): samples, mean and
    largest bytes behind, most files behind."""
    df = spark.sql("""
SELECT date_trunc('second', time) AS second, source, session_id, count(*) AS samples,
       avg(coalesce(bytes_behind, 0)) AS mean_bytes, max(coalesce(bytes_behind, 0)) AS max_bytes,
       max(files_behind) AS max_files
FROM health WHERE kind = 'lag' AND files_behind IS NOT NULL
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    rep = _collect("lag_over_time", "Position lag over time (bytes behind the server's head "
                   "in the same file, per second and session; files behind)", df)
    if not rep.rows:
        rep.note = "no lag samples (the export's health table: heartbeats, live --lag-every)"
    return rep


def report_delay_over_time(spark: Any) -> Report:
    """How far behind the stream ran, per second of capture time and session: capture time
    minus the event's header time (mean and largest) - the lag a replica or CDC consumer had."""
    df = spark.sql("""
SELECT date_trunc('second', capture_time) AS second, source, session_id, count(*) AS events,
       avg((unix_micros(capture_time) - unix_micros(timestamp)) / 1e6) AS mean_s,
       max((unix_micros(capture_time) - unix_micros(timestamp)) / 1e6) AS max_s
FROM events
WHERE capture_time IS NOT NULL AND timestamp > TIMESTAMP '1970-01-01 00:00:00'
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return _collect("replication_delay_over_time", "Replication delay over time (s: capture "
                    "time - event timestamp, per second and session)", df)


def report_replication_delay(spark: Any, file_only: bool) -> Report:
    delay = """
SELECT source, session_id, (unix_micros(capture_time) - unix_micros(timestamp)) / 1e6 AS v
FROM events
WHERE capture_time IS NOT NULL AND timestamp > TIMESTAMP '1970-01-01 00:00:00'"""
    df = spark.sql(_per_session(delay))
    rep = _collect("replication_delay",
                   "Replication delay in s per session (capture time - event timestamp)", df)
    if not rep.rows or not any(r[2] for r in rep.rows):
        rep.rows = []
        rep.note = ("not applicable: a binlog file has no capture time (delay needs a pcap or "
                    "live capture)" if file_only else "no events with a capture time")
    return rep


DDL_PATTERN = r"(?is)^\s*(/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME|TRUNCATE|GRANT|REVOKE)\b"


def report_ddl_timeline(spark: Any) -> Report:
    """One row per DDL statement, with where it was seen: the same statement read from a
    binlog and from a capture of its stream (or by two replicas' sessions) is one row whose
    ``seen_in`` names every source (and session) and where it was there, not the same line
    repeated unexplained. A statement is known by its GTID (a copy of a binlog under another
    file name holds the same transaction), else by its file and offset; ``binlog_file`` and
    ``offset`` are those of the first sighting in ``seen_in``'s order."""
    from pyspark.sql import functions as f

    ev = spark.table("events")
    who = f.when(f.col("session_id").isNull(), f.col("source")).otherwise(
        f.concat(f.col("source"), f.lit(" session "), f.col("session_id")))
    where = f.concat(who, f.lit(" at "), f.coalesce(f.col("binlog_file"), f.lit("?")),
                     f.lit(":"), f.coalesce(f.col("offset").cast("string"), f.lit("?")))
    key = f.coalesce(f.col("gtid"), f.concat(f.coalesce(f.col("binlog_file"), f.lit("")),
                                             f.lit(":"), f.col("offset").cast("string")))
    df = (ev.where(f.col("event_type").isin("QUERY_EVENT", "QUERY_COMPRESSED_EVENT")
                   & f.col("query").rlike(DDL_PATTERN))
          .withColumn("where", where).withColumn("key", key)
          .groupBy("key", "query")
          .agg(f.min("timestamp").alias("timestamp"), f.max("schema").alias("schema"),
               f.min_by("binlog_file", "where").alias("binlog_file"),
               f.min_by("offset", "where").alias("offset"), f.max("gtid").alias("gtid"),
               f.sort_array(f.collect_set("where")).alias("seen_in"),
               f.count(f.lit(1)).alias("sightings"))
          .select("timestamp", "schema", "binlog_file", "offset", "gtid",
                  f.upper(f.regexp_extract("query", r"(?is)^\s*(?:/\*.*?\*/\s*)*(\w+\s+\w+)", 1))
                  .alias("statement"),
                  "query", "seen_in", "sightings")
          .orderBy("timestamp", "gtid", "binlog_file", "offset", "query"))
    return _collect("ddl_timeline", "DDL timeline (seen_in: the sources and sessions that "
                    "carried each statement, and where)", df)


def report_silences(spark: Any, threshold: float = SILENCE_SECONDS) -> Report:
    """The stretches without any event (heartbeats count: a live or captured stream sends
    them when idle), per source and session, longest first: where a stream went quiet, which
    the events-per-second chart shows as a gap rather than a line across it."""
    df = spark.sql(f"""
SELECT source, session_id, prev AS silent_from, t AS silent_until,
       (unix_micros(t) - unix_micros(prev)) / 1e6 AS seconds
FROM (SELECT source, session_id, t,
             lag(t) OVER (PARTITION BY source, session_id ORDER BY t) AS prev
      FROM (SELECT source, session_id, coalesce(capture_time, timestamp) AS t FROM events
            WHERE coalesce(capture_time, timestamp) > TIMESTAMP '1970-01-01 00:00:00'))
WHERE prev IS NOT NULL AND unix_micros(t) - unix_micros(prev) > {float(threshold)} * 1e6
ORDER BY seconds DESC, source, session_id, silent_from""")
    rep = _collect("silences", f"Silences: stretches of more than {threshold:g} s without an "
                   "event, per source and session (capture time, else the event timestamp)",
                   df)
    if not rep.rows:
        rep.note = f"no stretch of more than {threshold:g} s without an event"
    return rep


def run_reports(spark: Any, limit: int = 20) -> list[Report]:
    file_only = _is_file_only(spark)
    return [
        report_changes(spark),
        report_transaction_sizes(spark),
        report_transaction_summary(spark),
        report_events_per_second(spark),
        report_silences(spark),
        report_largest_transactions(spark, limit),
        report_largest_transactions_by_bytes(spark, limit),
        report_heartbeat_gaps(spark, file_only),
        report_ack_latency(spark, file_only),
        report_replication_delay(spark, file_only),
        report_ack_latency_over_time(spark),
        report_lag_over_time(spark),
        report_delay_over_time(spark),
        report_ddl_timeline(spark),
    ]


def run_sql(spark: Any, sql: str) -> Report:
    try:
        df = spark.sql(sql)
        return _collect("sql", sql.strip(), df)
    except Exception as exc:  # AnalysisException, ParseException: the user's SQL is wrong
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AnalyzeError(f"--sql: {msg}") from None


# ----------------------------------------------------------------------------- the command

@dataclass(slots=True)
class AnalyzeResult:
    reports: list[Report]
    startup_seconds: float
    total_seconds: float
    written: list[Path] = field(default_factory=list)


def analyze(root: str | Path | Sequence[str], *, master: str | None = None,
            conf: Sequence[tuple[str, str]] = (),
            sql: str | None = None, report_dir: str | Path | None = None,
            plots: str | Path | None = None, limit: int = 20,
            emit: Callable[[str], None] | None = None) -> AnalyzeResult:
    """Run the reports (or the user's ``sql``) over an export, or over binlog files and
    captures read through the ``binlog`` data source; print through ``emit``. ``master``
    None: the one ``spark-submit`` was given (a cluster), else ``local[*]``."""
    sources = [str(root)] if isinstance(root, (str, Path)) else [str(r) for r in root]
    base = Path(sources[0])
    export = len(sources) == 1 and base.is_dir() and is_export(base)
    if not export:
        import glob as _glob

        for s in sources:
            if not _glob.has_magic(s) and not Path(s).exists():
                raise AnalyzeError(f"{s}: no such file or directory")
        if base.is_dir() and len(sources) == 1 and not any(
                p.is_file() for p in base.iterdir()):
            raise AnalyzeError(f"{base} is not a binlogscope export (no events/ or rows/ "
                               "directory) and holds no binlog files or captures")
    require("pyspark")
    if plots is not None:
        require("matplotlib")
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    existing = SparkSession.getActiveSession()  # embedding (tests, notebooks): reuse, keep it
    spark = existing if existing is not None else spark_session(master, conf)
    startup = time.monotonic() - t0
    try:
        if export:
            register_tables(spark, base, reports_only=sql is None)
        else:
            register_inputs(spark, sources, reports_only=sql is None)
        reports = [run_sql(spark, sql)] if sql is not None else run_reports(spark, limit)
        written: list[Path] = []
        for rep in reports:
            if emit is not None:
                for line in format_report(rep, limit):
                    emit(line)
        if report_dir is not None:
            for rep in reports:
                written += write_report(rep, report_dir)
        if plots is not None:
            written += write_plots(reports, plots)
    finally:
        if existing is None:
            spark.stop()
    return AnalyzeResult(reports, startup, time.monotonic() - t0, written)


__all__ = ["NULL_PARTITION", "REPORT_COLUMNS", "AnalyzeError", "Report", "analyze",
           "is_export", "register_inputs", "register_tables", "run_reports", "run_sql",
           "spark_schema", "spark_session"]
