"""``binlogscope export --spark``: the export decoded on a Spark cluster, one task per input.

The driver side (the executor side is :mod:`binlogscope.export.spark.tasks`):

* the inputs: local paths, directories and globs (expanded here, named as the local export
  names them; executors open them at the same path), and URIs (``file:``, ``hdfs://``,
  ``s3a://``; listed and globbed here with the session's Hadoop configuration, their bytes
  read in the tasks as the ``binlog`` data source reads a URI);
* the checkpoints: the inputs go in groups of ``checkpoint_files`` (default: 4 per core), in
  input order. A group is one read of the ``binlog`` data source
  (:mod:`binlogscope.export.spark.datasource`, its export table: every table of an input in
  one pass, one task per input, the biggest first), persisted on the executors' disks, then
  one Spark Parquet write per table into
  ``DIR/_spark_staging``. When every write of the group succeeded its files are renamed into
  the dataset as ``part-<checkpoint>-<n>.parquet`` and ``_export_state.json`` records the
  checkpoint: the local export's layout, state file and crash-safety contract
  (:mod:`binlogscope.export.arrow`), so ``--resume`` removes the parts of a checkpoint that did
  not complete and goes on with the next input (an export started with ``--spark`` can be
  finished without it and the other way round, at an input boundary);
* the ``errors`` table: ``DIR/errors`` (``path``, ``message``), one row per input that could not
  be decoded; the export goes on without it; the ``health`` table (``DIR/health``: each
  capture's replication connections' health timeline): both collected from the tasks' report
  rows and written at the checkpoint as the local export writes them (the same rows);
* progress from Spark's status tracker (tasks done; the bytes of a running group counted in
  proportion to its tasks done).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlogscope.export.arrow import (
    ERRORS_SCHEMA,
    ERRORS_TABLE,
    HEALTH_SCHEMA,
    HEALTH_TABLE,
    TABLES,
    partition_columns,
)
from binlogscope.export.core import ExportError, ExportResult, Ledger, publish_parts
from binlogscope.export.records import BinlogFileSource, ResumePoint, SourceError
from binlogscope.export.task import TaskOptions

STAGING = "_spark_staging"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: who writes the Parquet files (see :func:`run_spark_export`)
WRITERS = ("spark", "tasks")
#: Parquet row groups of the written parts (each open part file holds one in memory)
ROW_GROUP_BYTES = 32 << 20
#: the driver's heap when the export starts a local Spark (local mode runs the tasks in it);
#: ``--conf spark.driver.memory=...`` overrides it
LOCAL_DRIVER_MEMORY = "2g"
#: phase, inputs done, inputs in all, bytes done, bytes in all, seconds since the start
Progress = Callable[[str, int, int, int, int, float], None]


#: the export cannot start or go on (one line for the CLI): the local export's error
SparkExportError = ExportError


@dataclass(slots=True)
class SparkInput:
    index: int
    source: str  # as the dataset names it: the local export's path string, or the URI
    size: int
    uri: bool  # read through Spark (Hadoop FS), not opened by path on the executor


def is_uri(source: str) -> bool:
    """A Hadoop-FS URI (``hdfs://...``, ``s3a://...``, ``file:/...``), not a local path."""
    return bool(_URI.match(source)) and not re.match(r"^[A-Za-z]:[\\/]", source)


# ----------------------------------------------------------------------------- inputs

def _hadoop(spark: Any, uri: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _list_uri(spark: Any, raw: str) -> list[tuple[str, int]]:
    """The files a URI names (a file, a directory's files, or a glob's matches), in order."""
    fs, path = _hadoop(spark, raw)
    statuses = fs.globStatus(path)
    if statuses is None or len(statuses) == 0:
        raise SourceError(f"{raw}: no such file or directory")
    out: list[tuple[str, int]] = []
    for st in statuses:
        if st.isDirectory():
            inner = sorted(((s.getPath().toString(), int(s.getLen()))
                            for s in fs.listStatus(st.getPath()) if s.isFile()), key=lambda x: x[0])
            found = [(p, n) for p, n in inner if not _hidden_or_index(p)]
            if not found:
                raise SourceError(f"{raw}: no files in this directory")
            out += found
        else:
            out.append((st.getPath().toString(), int(st.getLen())))
    return out


def _hidden_or_index(uri: str) -> bool:
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name.startswith((".", "_")) or name.endswith((".index", ".state"))


def _local_inputs(raw: str, kind: str) -> list[str]:
    """A local path, directory or glob as the local export names its inputs (a missing file
    stays: its task reports it in ``errors``)."""
    names = sorted(glob.glob(raw)) if glob.has_magic(raw) else [raw]
    if not names:
        raise SourceError(f"{raw}: no file matches")
    out: list[str] = []
    for name in names:
        if kind == "file" and Path(name).is_dir():
            out += BinlogFileSource([name]).inputs()
        elif kind == "file":
            out.append(str(Path(name)))
        else:
            out.append(name)
    return out


def _size(spark: Any, source: str, uri: bool) -> int:
    try:
        if not uri:
            return Path(source).stat().st_size
        fs, path = _hadoop(spark, source)
        return int(fs.getFileStatus(path).getLen())
    except Exception:
        return 0


def expand_inputs(spark: Any, sources: Sequence[str], kind: str) -> list[SparkInput]:
    """Every input of ``sources``, numbered in order."""
    found: list[tuple[str, int | None, bool]] = []
    for raw in sources:
        if is_uri(raw):
            found += [(p, n, True) for p, n in _list_uri(spark, raw)]
        else:
            found += [(p, None, False) for p in _local_inputs(raw, kind)]
    return [SparkInput(i, s, n if n is not None else _size(spark, s, u), u)
            for i, (s, n, u) in enumerate(found)]


# ----------------------------------------------------------------------------- the Spark side

def _s3_endpoint(spark: Any) -> str | None:
    """The session's ``fs.s3a.endpoint`` (an address, no secret), for the source's S3 reads."""
    try:
        value = spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.endpoint")
    except Exception:
        return None
    return str(value) if value else None


def _decoded(spark: Any, inputs: list[SparkInput], opts: TaskOptions) -> Any:
    """The group's inputs through the ``binlog`` data source's export table (one partition
    per input, the biggest first; every table of an input in one pass)."""
    from binlogscope.export.spark import register
    from binlogscope.export.spark.datasource import EXPORT_TABLE, NAME

    register(spark)
    reader = (spark.read.format(NAME).option("table", EXPORT_TABLE).option("listed", "true")
              .option("firstIndex", str(inputs[0].index)).option("kind", opts.kind)
              .option("noRaw", str(opts.no_raw).lower())
              .option("ports", ",".join(map(str, opts.ports or []))))
    if opts.write_dir is not None:
        reader = reader.option("writeDir", opts.write_dir)
    endpoint = _s3_endpoint(spark)
    if endpoint and any(is_uri(i.source) for i in inputs):
        reader = reader.option("s3Endpoint", endpoint)
    return reader.load([i.source for i in inputs])


def _export_conf(spark: Any) -> dict[str, str | None]:
    """Session settings the export needs (returned: what to put back)."""
    want = {
        # the dataset's timestamps as the local export writes them (INT64 micros, UTC)
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # a task's rows go to their partition files as they come (no sort by partition)
        "spark.sql.maxConcurrentOutputFileWriters": "16",
        "spark.sql.session.timeZone": "UTC",
    }
    before: dict[str, str | None] = {}
    for k, v in want.items():
        before[k] = spark.conf.get(k, None)
        spark.conf.set(k, v)
    return before


def _restore_conf(spark: Any, before: dict[str, str | None]) -> None:
    for k, v in before.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


class _Watcher(threading.Thread):
    """Polls Spark's status tracker for the decode job's finished tasks and reports progress."""

    def __init__(self, spark: Any, progress: Progress, files_before: int,
                 files_total: int, bytes_before: int, bytes_total: int, t0: float) -> None:
        super().__init__(daemon=True, name="binlogscope-spark-progress")
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        #: the bytes of the running group (its tasks' share of them counts as done)
        self.group_bytes = 0
        self.group_files = 1
        self.files_before = files_before
        self.files_total = files_total
        self.bytes_before = bytes_before
        self.bytes_total = bytes_total
        self.t0 = t0
        self.group: str | None = None
        self.phase = "decode"
        self.stop_event = threading.Event()

    def tasks_done(self) -> int:
        if self.group is None:
            return 0
        done = 0
        for jid in self.tracker.getJobIdsForGroup(self.group) or []:
            info = self.tracker.getJobInfo(jid)
            for sid in (info.stageIds if info is not None else []):
                st = self.tracker.getStageInfo(sid)
                if st is not None:
                    done += st.numCompletedTasks
        return done

    def report(self) -> None:
        try:
            tasks = min(self.tasks_done(), self.group_files)
        except Exception:  # the context is going away
            return
        files = self.files_before + tasks
        done = self.bytes_before + self.group_bytes * tasks // max(1, self.group_files)
        self.progress(self.phase, min(files, self.files_total), self.files_total,
                      min(done, self.bytes_total), self.bytes_total,
                      time.monotonic() - self.t0)

    def run(self) -> None:
        while not self.stop_event.wait(0.5):
            self.report()


# ----------------------------------------------------------------------------- the export

def _write_table(df: Any, table: str, target: Path) -> None:
    from pyspark.sql import functions as fn

    from binlogscope.export.arrow import data_schema

    pcols = partition_columns(table)
    cols = [fn.col(table).getField(c).alias(c) for c in data_schema(table).names]
    (df.where(fn.col("table") == table).select(*cols, *[fn.col(c) for c in pcols])
     .write.mode("overwrite").partitionBy(*pcols).option("compression", "zstd")
     .option("parquet.block.size", str(ROW_GROUP_BYTES)).parquet(str(target)))


def run_spark_export(
    sources: Sequence[str],
    out: str | Path,
    *,
    kind: str = "file",
    master: str | None = None,
    conf: Sequence[tuple[str, str]] = (),
    resume: bool = False,
    no_raw: bool = False,
    ports: list[int] | None = None,
    checkpoint_files: int | None = None,
    progress: Progress | None = None,
    spark: Any = None,
    writer: str = "spark",
) -> ExportResult:
    """Export ``sources`` into ``out`` on Spark (see the module doc). ``spark``: a session to
    use (kept open); else the active one (``spark-submit``, a notebook), else one is started
    on ``master`` (None: ``spark-submit``'s, else ``local[*]``) with ``conf``, and stopped at
    the end. ``writer``: ``spark`` (Spark's Parquet writer) or ``tasks`` (each task writes
    its input's parts with the local exporter's writer; Spark schedules and collects).

    The checkpoint note, the resume rules and the ``errors`` rows are the local export's
    (:class:`~binlogscope.export.core.Ledger`); a new dataset that fails or is interrupted
    before its first checkpoint is removed again, so the same command can simply be rerun."""
    if writer not in WRITERS:
        raise SparkExportError(f"--writer {writer}: expected one of {', '.join(WRITERS)}")
    from binlogscope.export.spark.analyze import require

    require("pyspark")
    if is_uri(str(out)):
        raise SparkExportError(f"--out {out}: the dataset directory must be a local path "
                               "(on a cluster: a shared filesystem mounted on every node)")
    ledger = Ledger.prepare(out, resume=resume)
    root = ledger.root
    if ledger.already_complete:
        return ExportResult(ledger.counts, complete=True, already_complete=True)
    if ledger.state:
        start_at = ledger.start
        if start_at is not None and start_at.offset is not None:
            raise SparkExportError(f"{root}: the export stopped inside an input; finish it "
                                   "without --spark")
        if ledger.kind != kind:
            raise SparkExportError(f"{root}: the export is of {ledger.kind} inputs")
        no_raw = ledger.no_raw

    from pyspark import StorageLevel
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    own = spark is None
    if own:
        existing = SparkSession.getActiveSession()
        if existing is not None:
            spark, own = existing, False
        else:
            from binlogscope.export.spark.analyze import spark_session

            settings = list(conf)
            launched = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit's JVM is running
            if not launched and (master or "local").startswith("local") and not any(
                    k == "spark.driver.memory" for k, _ in settings):
                settings.insert(0, ("spark.driver.memory", LOCAL_DRIVER_MEMORY))
            spark = spark_session(master, settings, app_name="binlogscope-export")
    result = ExportResult(dict.fromkeys(TABLES, 0),
                               startup_seconds=time.monotonic() - t0)
    before = _export_conf(spark)
    watcher: _Watcher | None = None
    mapped: Any = None
    try:
        if ledger.state and not sources:
            inputs = [SparkInput(i, s, _size(spark, s, is_uri(s)), is_uri(s))
                      for i, s in enumerate(ledger.recorded_inputs)]
        else:
            try:
                inputs = expand_inputs(spark, sources, kind)
            except SourceError as exc:
                raise SparkExportError(str(exc)) from None
            if not inputs:
                raise SparkExportError("no inputs")
        ledger.begin([i.source for i in inputs], kind=kind, no_raw=no_raw, engine="spark")
        result.resumed = ledger.resumed
        shutil.rmtree(root / STAGING, ignore_errors=True)
        for t in TABLES:
            (root / t).mkdir(parents=True, exist_ok=True)

        start = (ledger.start or ResumePoint(0)).input_index
        result.skipped_inputs = start
        result.counts = ledger.counts
        result.errors = ledger.errors
        todo = inputs[start:]
        sc = spark.sparkContext
        per_group = checkpoint_files or max(1, 4 * int(sc.defaultParallelism))
        bytes_total = sum(i.size for i in inputs)
        bytes_before = sum(i.size for i in inputs[:start])
        opts = TaskOptions(kind, no_raw, ports)
        order = {i.source: i.index for i in inputs}
        if progress is not None:
            watcher = _Watcher(spark, progress, start, len(inputs), bytes_before,
                               bytes_total, time.monotonic())
            watcher.start()
        from pyspark.sql import functions as fn

        done = start
        for g in range(0, len(todo), per_group):
            group = todo[g:g + per_group]
            checkpoint = ledger.checkpoint + 1
            staging = root / STAGING / f"checkpoint-{checkpoint:06d}"
            gid = f"binlogscope-export-{os.getpid()}-{checkpoint}"
            sc.setJobGroup(gid, f"binlogscope export: checkpoint {checkpoint}", True)
            if watcher is not None:
                watcher.group_bytes = sum(i.size for i in group)
                watcher.group_files = len(group)
                watcher.files_before, watcher.group, watcher.phase = done, gid, "decode"
            t_phase = time.monotonic()
            if writer == "tasks":
                opts.write_dir = str((staging / "tasks").resolve())
            mapped = _decoded(spark, group, opts)
            if writer == "spark":
                mapped = mapped.persist(StorageLevel.DISK_ONLY)
            # (a health row's time as microseconds: a collected timestamp is a naive datetime
            # in the session's time zone)
            meta = (mapped.where(fn.col("table").isin("stats", ERRORS_TABLE, HEALTH_TABLE))
                    .select("table", "stats", ERRORS_TABLE, HEALTH_TABLE,
                            fn.unix_micros(fn.col(f"{HEALTH_TABLE}.time")).alias("_time"))
                    .collect())
            stats = [r["stats"] for r in meta if r["table"] == "stats"]
            errors = sorted(
                ({f.name: r[ERRORS_TABLE][f.name] for f in ERRORS_SCHEMA}
                 for r in meta if r["table"] == ERRORS_TABLE),
                key=lambda e: (order.get(e["path"], -1), e["kind"] != "failed"))
            health = sorted(  # (input order; each input's rows in their order: one task's)
                ({f.name: r["_time"] if f.name == "time" else r[HEALTH_TABLE][f.name]
                  for f in HEALTH_SCHEMA} for r in meta if r["table"] == HEALTH_TABLE),
                key=lambda h: order.get(h["source"], -1))
            if watcher is not None:
                watcher.group = None
                watcher.files_before = done + len(group)
                watcher.bytes_before += watcher.group_bytes
                watcher.group_bytes = 0
            counts = {t: sum(int(s[t]) for s in stats) for t in ("events", "rows", "packets")}
            t_write = time.monotonic()
            result.phases["decode"] += t_write - t_phase
            for table in TABLES:
                if counts[table] and writer == "spark":
                    if watcher is not None:
                        watcher.phase = f"write {table}"
                    _write_table(mapped, table, staging / table)
            mapped.unpersist()
            mapped = None
            t_publish = time.monotonic()
            result.phases["write"] += t_publish - t_write
            publish_parts(staging, root, checkpoint)
            done += len(group)
            for t in TABLES:
                result.counts[t] += counts[t]
            result.errors += errors
            result.task_times += [(s["path"], int(s["bytes"]), float(s["seconds"]))
                                  for s in stats]
            ledger.commit(checkpoint, ResumePoint(done), result.counts, errors, health)
            shutil.rmtree(staging, ignore_errors=True)
            result.phases["publish"] += time.monotonic() - t_publish
        ledger.commit(ledger.checkpoint, None, result.counts)
        shutil.rmtree(root / STAGING, ignore_errors=True)
        result.complete = True
        if watcher is not None:
            watcher.phase = "done"
            watcher.report()
    except KeyboardInterrupt:
        try:
            spark.sparkContext.cancelAllJobs()
        except Exception:
            pass
        result.interrupted = True
        result.removed = ledger.discard()  # nothing kept: nothing in the way of a rerun
    except BaseException:
        ledger.discard()  # a failed new export leaves nothing in the way of a rerun
        raise
    finally:
        if watcher is not None:
            watcher.stop_event.set()
            watcher.join(2)
        if mapped is not None:
            try:
                mapped.unpersist()
            except Exception:
                pass
        try:
            _restore_conf(spark, before)
        except Exception:
            pass
        if own:
            spark.stop()
        result.seconds = time.monotonic() - t0
    return result


def _requested(spark: Any, sources: Sequence[str], kind: str) -> list[str]:
    try:
        return [i.source for i in expand_inputs(spark, sources, kind)]
    except SourceError as exc:
        raise SparkExportError(str(exc)) from None


__all__ = ["SparkExportError", "SparkInput", "expand_inputs", "is_uri",
           "run_spark_export"]
