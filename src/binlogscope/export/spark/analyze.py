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
    Report,
    format_report,
    write_plots,
    write_report,
)
from binlogscope.export.spark.reports import collect, run_reports
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


def run_sql(spark: Any, sql: str) -> Report:
    try:
        df = spark.sql(sql)
        return collect("sql", sql.strip(), df)
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
