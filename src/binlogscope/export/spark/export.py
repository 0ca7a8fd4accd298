"""``binlogscope export --spark``: the export decoded on a Spark cluster, one task per input.

The driver side (the executor side is :mod:`binlogscope.export.spark.tasks`):

* the inputs: local paths, directories and globs (expanded here, named as the local export
  names them; executors open them at the same path), and Hadoop-FS URIs (``hdfs://``,
  ``s3a://``, ``file:``; listed and globbed with the session's Hadoop configuration, their
  bytes read on the executors by Spark's ``binaryFile`` source);
* the checkpoints: the inputs go in groups of ``checkpoint_files`` (default: 4 per core), in
  input order. A group is one decode job (``mapInArrow``, one task per input, the biggest
  first), persisted on the executors' disks, then one Spark Parquet write per table into
  ``DIR/_spark_staging``. When every write of the group succeeded its files are renamed into
  the dataset as ``part-<checkpoint>-<n>.parquet`` and ``_export_state.json`` records the
  checkpoint: the local export's layout, state file and crash-safety contract
  (:mod:`binlogscope.export.arrow`), so ``--resume`` removes the parts of a checkpoint that did
  not complete and goes on with the next input (an export started with ``--spark`` can be
  finished without it and the other way round, at an input boundary);
* the ``errors`` table: ``DIR/errors`` (``path``, ``message``), one row per input that could not
  be decoded; the export goes on without it;
* progress from Spark's status tracker (tasks done) and an accumulator of the bytes decoded.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from binlogscope import __version__
from binlogscope.export.arrow import (
    SCHEMA_VERSION,
    STATE_FILE,
    TABLES,
    clean_incomplete,
    partition_columns,
    read_state,
    write_state,
)
from binlogscope.export.records import BinlogFileSource, SourceError
from binlogscope.export.spark.tasks import TaskOptions, decode_partition, union_schema

STATE_FORMAT = "binlogscope-export"  # the local export's (binlogscope.export.run)
STAGING = "_spark_staging"
ERRORS_TABLE = "errors"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: who writes the Parquet files (see :func:`run_spark_export`)
WRITERS = ("spark", "tasks")
#: Parquet row groups of the written parts (each open part file holds one in memory)
ROW_GROUP_BYTES = 32 << 20
#: the driver's heap when the export starts a local Spark (local mode runs the tasks in it);
#: ``--conf spark.driver.memory=...`` overrides it
LOCAL_DRIVER_MEMORY = "2g"
_PART = re.compile(r"^part-(\d{6})-\d{4}\.parquet$")

#: phase, inputs done, inputs in all, bytes done, bytes in all, seconds since the start
Progress = Callable[[str, int, int, int, int, float], None]


class SparkExportError(Exception):
    """The export cannot start or go on (one line for the CLI)."""


@dataclass(slots=True)
class SparkInput:
    index: int
    source: str  # as the dataset names it: the local export's path string, or the URI
    size: int
    uri: bool  # read through Spark (Hadoop FS), not opened by path on the executor


@dataclass(slots=True)
class SparkExportResult:
    counts: dict[str, int]
    seconds: float = 0.0
    startup_seconds: float = 0.0
    interrupted: bool = False
    complete: bool = False
    already_complete: bool = False
    skipped_inputs: int = 0  # exported before (--resume)
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: per decoded input: (source, bytes, seconds of its task)
    task_times: list[tuple[str, int, float]] = field(default_factory=list)
    #: wall seconds per phase: decode (the decode job), write (Spark's Parquet writes),
    #: publish (renames and the state file)
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("decode", "write", "publish"), 0.0))


def is_uri(source: str) -> bool:
    """A Hadoop-FS URI (``hdfs://...``, ``s3a://...``, ``file:/...``), not a local path."""
    return bool(_URI.match(source)) and not re.match(r"^[A-Za-z]:[\\/]", source)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


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

def spark_union_schema() -> Any:
    """The Spark schema of a task's batches (:func:`spark_tasks.union_schema`)."""
    from pyspark.sql import types as st

    from binlogscope.export.spark.analyze import spark_type

    return st.StructType([st.StructField(f.name, spark_type(f.type), True)
                          for f in union_schema()])


def _task_frame(spark: Any, inputs: list[SparkInput]) -> Any:
    """One partition per input, the biggest first (the long tasks start early)."""
    from pyspark.sql import functions as fn
    from pyspark.sql import types as st

    schema = st.StructType([
        st.StructField("input_index", st.IntegerType()), st.StructField("source", st.StringType()),
        st.StructField("bytes", st.LongType()), st.StructField("content", st.BinaryType())])
    ordered = sorted(inputs, key=lambda i: (-i.size, i.index))
    local = [(i.index, i.source, i.size, None) for i in ordered if not i.uri]
    remote = [i for i in ordered if i.uri]
    frames = []
    if local:
        rdd = spark.sparkContext.parallelize(local, len(local))
        frames.append(spark.createDataFrame(rdd, schema))
    if remote:
        raw = spark.read.format("binaryFile").load([i.source for i in remote])
        mapping = spark.createDataFrame([(i.source, i.index) for i in remote],
                                        "path string, input_index int")
        frames.append(
            raw.join(fn.broadcast(mapping), on="path", how="left")
            .select("input_index", fn.col("path").alias("source"),
                    fn.col("length").alias("bytes"), "content"))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df


def _export_conf(spark: Any) -> dict[str, str | None]:
    """Session settings the export needs (returned: what to put back)."""
    want = {
        # one binaryFile input per task
        "spark.sql.files.openCostInBytes": str(1 << 40),
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

    def __init__(self, spark: Any, progress: Progress, acc: Any, files_before: int,
                 files_total: int, bytes_before: int, bytes_total: int, t0: float) -> None:
        super().__init__(daemon=True, name="binlogscope-spark-progress")
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.acc = acc
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
            files = self.files_before + self.tasks_done()
            done = self.bytes_before + int(self.acc.value)
        except Exception:  # the context is going away
            return
        self.progress(self.phase, min(files, self.files_total), self.files_total,
                      min(done, self.bytes_total), self.bytes_total,
                      time.monotonic() - self.t0)

    def run(self) -> None:
        while not self.stop_event.wait(0.5):
            self.report()


# ----------------------------------------------------------------------------- the export

def _publish(staging: Path, root: Path, checkpoint: int) -> None:
    """Move a group's Parquet files from the staging tree (Spark's writes, or the tasks' own
    ``tasks/input-<n>/`` trees) into the dataset, named as the local export names its parts
    (``part-<checkpoint>-<n>.parquet``, n per directory)."""
    tasks = staging / "tasks"
    bases = sorted(tasks.iterdir()) if tasks.is_dir() else [staging]
    seqs: dict[Path, int] = {}
    for top in bases:
        for table in (*TABLES, ERRORS_TABLE):
            base = top / table
            if not base.is_dir():
                continue
            for dirpath, _dirs, files in sorted(os.walk(base)):
                parts = sorted(f for f in files if f.endswith(".parquet")
                               and not f.startswith((".", "_")))
                if not parts:
                    continue
                dest = root / table / os.path.relpath(dirpath, base)
                dest.mkdir(parents=True, exist_ok=True)
                for name in parts:
                    seq = seqs[dest] = seqs.get(dest, 0) + 1
                    os.replace(Path(dirpath) / name,
                               dest / f"part-{checkpoint:06d}-{seq:04d}.parquet")


def _clean_errors(root: Path, checkpoint: int) -> None:
    base = root / ERRORS_TABLE
    if not base.is_dir():
        return
    for p in base.rglob("*"):
        m = _PART.match(p.name)
        if p.is_file() and (p.name.endswith(".inprogress") or
                            (m and int(m.group(1)) > checkpoint)):
            p.unlink()


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
) -> SparkExportResult:
    """Export ``sources`` into ``out`` on Spark (see the module doc). ``spark``: a session to
    use (kept open); else the active one (``spark-submit``, a notebook), else one is started
    on ``master`` (None: ``spark-submit``'s, else ``local[*]``) with ``conf``, and stopped at
    the end. ``writer``: ``spark`` (Spark's Parquet writer) or ``tasks`` (each task writes
    its input's parts with the local exporter's writer; Spark schedules and collects)."""
    if writer not in WRITERS:
        raise SparkExportError(f"--writer {writer}: expected one of {', '.join(WRITERS)}")
    from binlogscope.export.spark.analyze import require

    require("pyspark")
    root = Path(out)
    if is_uri(str(out)):
        raise SparkExportError(f"--out {out}: the dataset directory must be a local path "
                               "(on a cluster: a shared filesystem mounted on every node)")
    if root.exists() and not root.is_dir():
        raise SparkExportError(f"{root} exists and is not a directory; --out names the dataset "
                               "directory (new or empty)")
    state = read_state(root) if resume else None
    if resume:
        if state is None or state.get("format") != STATE_FORMAT:
            raise SparkExportError(f"{root}: no export to resume (no readable {STATE_FILE})")
        if state.get("schema_version") != SCHEMA_VERSION:
            raise SparkExportError(f"{root}: written with schema version "
                                   f"{state.get('schema_version')}, this binlogscope writes "
                                   f"{SCHEMA_VERSION}")
        if state.get("complete"):
            return SparkExportResult(dict(state.get("counts") or {}), complete=True,
                                     already_complete=True)
        r = state.get("resume") or {}
        if r.get("offset") is not None:
            raise SparkExportError(f"{root}: the export stopped inside an input; finish it "
                                   "without --spark")
        if state.get("source_kind", "file") != kind:
            raise SparkExportError(f"{root}: the export is of {state.get('source_kind')} "
                                   "inputs")
        no_raw = bool(state.get("options", {}).get("no_raw", no_raw))
    elif root.exists() and any(root.iterdir()):
        raise SparkExportError(f"{root} is not empty; use --resume to finish an interrupted "
                               "export or choose an empty directory")

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
    result = SparkExportResult(dict.fromkeys(TABLES, 0),
                               startup_seconds=time.monotonic() - t0)
    before = _export_conf(spark)
    watcher: _Watcher | None = None
    mapped: Any = None
    try:
        if resume and state is not None:
            names = list(state.get("inputs") or [])
            if sources and _requested(spark, sources, kind) != names:
                raise SparkExportError(f"{root}: the export was started with other inputs "
                                       f"({', '.join(names)})")
            inputs = [SparkInput(i, s, _size(spark, s, is_uri(s)), is_uri(s))
                      for i, s in enumerate(names)]
        else:
            try:
                inputs = expand_inputs(spark, sources, kind)
            except SourceError as exc:
                raise SparkExportError(str(exc)) from None
            if not inputs:
                raise SparkExportError("no inputs")
        root.mkdir(parents=True, exist_ok=True)
        if state is None:
            state = {
                "format": STATE_FORMAT, "schema_version": SCHEMA_VERSION,
                "binlogscope_version": __version__, "source_kind": kind,
                "inputs": [i.source for i in inputs], "options": {"no_raw": no_raw},
                "checkpoint": 0, "resume": {"input_index": 0, "offset": None},
                "complete": False, "counts": dict.fromkeys(TABLES, 0), "engine": "spark",
                "errors": [], "started": _now(), "updated": _now(),
            }
            write_state(root, state)
        else:
            clean_incomplete(root, int(state["checkpoint"]))
            _clean_errors(root, int(state["checkpoint"]))
        shutil.rmtree(root / STAGING, ignore_errors=True)
        for t in TABLES:
            (root / t).mkdir(parents=True, exist_ok=True)

        start = int((state.get("resume") or {}).get("input_index") or 0)
        result.skipped_inputs = start
        result.counts = {t: int(state["counts"].get(t, 0)) for t in TABLES}
        result.errors = [(str(p), str(m)) for p, m in state.get("errors") or []]
        todo = inputs[start:]
        sc = spark.sparkContext
        per_group = checkpoint_files or max(1, 4 * int(sc.defaultParallelism))
        acc = sc.accumulator(0)
        bytes_total = sum(i.size for i in inputs)
        bytes_before = sum(i.size for i in inputs[:start])
        opts = TaskOptions(kind, no_raw, ports)
        schema = spark_union_schema()
        if progress is not None:
            watcher = _Watcher(spark, progress, acc, start, len(inputs), bytes_before,
                               bytes_total, time.monotonic())
            watcher.start()
        from pyspark.sql import functions as fn

        done = start
        for g in range(0, len(todo), per_group):
            group = todo[g:g + per_group]
            checkpoint = int(state["checkpoint"]) + 1
            staging = root / STAGING / f"checkpoint-{checkpoint:06d}"
            gid = f"binlogscope-export-{os.getpid()}-{checkpoint}"
            sc.setJobGroup(gid, f"binlogscope export: checkpoint {checkpoint}", True)
            if watcher is not None:
                watcher.files_before, watcher.group, watcher.phase = done, gid, "decode"
            t_phase = time.monotonic()
            if writer == "tasks":
                opts.write_dir = str((staging / "tasks").resolve())
            fn_task = partial(decode_partition, opts=opts, added=acc.add)
            mapped = _task_frame(spark, group).mapInArrow(fn_task, schema)
            if writer == "spark":
                mapped = mapped.persist(StorageLevel.DISK_ONLY)
            meta = (mapped.where(fn.col("table").isin("stats", ERRORS_TABLE))
                    .select("table", "stats", ERRORS_TABLE).collect())
            stats = [r["stats"] for r in meta if r["table"] == "stats"]
            errors = [(r[ERRORS_TABLE]["path"], r[ERRORS_TABLE]["message"])
                      for r in meta if r["table"] == ERRORS_TABLE]
            if watcher is not None:
                watcher.group = None
                watcher.files_before = done + len(group)
            counts = {t: sum(int(s[t]) for s in stats) for t in ("events", "rows", "packets")}
            t_write = time.monotonic()
            result.phases["decode"] += t_write - t_phase
            for table in TABLES:
                if counts[table] and writer == "spark":
                    if watcher is not None:
                        watcher.phase = f"write {table}"
                    _write_table(mapped, table, staging / table)
            if errors:
                (spark.createDataFrame(errors, "path string, message string").coalesce(1)
                 .write.mode("overwrite").option("compression", "zstd")
                 .parquet(str(staging / ERRORS_TABLE)))
            mapped.unpersist()
            mapped = None
            t_publish = time.monotonic()
            result.phases["write"] += t_publish - t_write
            _publish(staging, root, checkpoint)
            done += len(group)
            for t in TABLES:
                result.counts[t] += counts[t]
            result.errors += errors
            result.task_times += [(s["path"], int(s["bytes"]), float(s["seconds"]))
                                  for s in stats]
            state["checkpoint"] = checkpoint
            state["resume"] = {"input_index": done, "offset": None}
            state["counts"] = dict(result.counts)
            state["errors"] = [list(e) for e in result.errors]
            state["updated"] = _now()
            write_state(root, state)
            shutil.rmtree(staging, ignore_errors=True)
            result.phases["publish"] += time.monotonic() - t_publish
        if result.errors:
            (root / ERRORS_TABLE).mkdir(exist_ok=True)
        state["resume"] = None
        state["complete"] = True
        state["updated"] = _now()
        write_state(root, state)
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


# ----------------------------------------------------------------------------- the command

def parse_conf(items: Sequence[str]) -> list[tuple[str, str]]:
    """``--conf K=V`` items (ValueError naming a bad one)."""
    conf: list[tuple[str, str]] = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"--conf expects K=V, got {item!r}")
        conf.append((k.strip(), v))
    return conf


def progress_bar(err: TextIO, prog: str) -> Progress:
    """A one-line progress bar on ``err``: inputs done, MB done and MB/s."""

    def show(phase: str, files: int, total: int, done: int, total_bytes: int,
             secs: float) -> None:
        width = 24
        filled = int(width * files / total) if total else width
        rate = done / secs / 1e6 if secs > 0 else 0.0
        err.write(f"\r{prog} export --spark: [{'#' * filled}{'.' * (width - filled)}] "
                  f"{files}/{total} files, {done / 1e6:,.1f}/{total_bytes / 1e6:,.1f} MB, "
                  f"{rate:,.1f} MB/s ({phase})\x1b[K")  # (erase what a longer line left)
        err.flush()

    return show


def cmd_export_spark(args: Any, out: TextIO, err: TextIO, prog: str = "binlogscope") -> int:
    """``binlogscope export ... --spark``: run, print the summary and the errors."""
    if getattr(args, "live", False):
        print(f"{prog}: export: --spark exports files and captures, not --live", file=err)
        return 2
    kind = "pcap" if args.pcap else "file"
    sources = list(args.sources)
    if not sources and not args.resume:
        print(f"{prog}: export: no SOURCE given", file=err)
        return 2
    try:
        conf = parse_conf(args.conf or [])
    except ValueError as exc:
        print(f"{prog}: export: {exc}", file=err)
        return 2
    tty = err.isatty()
    try:
        res = run_spark_export(sources, args.out, kind=kind, master=args.master, conf=conf,
                               resume=args.resume, no_raw=args.no_raw,
                               ports=args.port or None,
                               checkpoint_files=args.checkpoint_files,
                               writer=getattr(args, "writer", "spark"),
                               progress=progress_bar(err, prog) if tty else None)
    except SparkExportError as exc:
        print(f"{prog}: export: {exc}", file=err)
        return 2
    except Exception as exc:  # the JVM did not start, the cluster refused, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"{prog}: export: Spark failed: {first}", file=err)
        return 1
    finally:
        if tty:
            err.write("\n")
    if res.already_complete:
        print(f"{prog}: export: {args.out} is already complete; nothing to do", file=err)
        return 0
    if res.interrupted:
        print(f"{prog}: export: interrupted; {args.out} holds every completed checkpoint; "
              f"finish with: {prog} export --spark --resume --out {args.out}", file=err)
        return 130
    c = res.counts
    skipped = f", {res.skipped_inputs} inputs exported before" if res.skipped_inputs else ""
    print(f"exported {c['events']} events, {c['rows']} rows, {c['packets']} packets to "
          f"{args.out} in {res.seconds:.1f} s (Spark start-up {res.startup_seconds:.1f} s"
          f"{skipped})", file=out)
    for path, message in res.errors:
        print(f"{prog}: export: {message.splitlines()[0] if message else path}", file=err)
    return 1 if res.errors else 0


__all__ = ["SparkExportError", "SparkExportResult", "SparkInput", "cmd_export_spark",
           "expand_inputs", "is_uri", "parse_conf", "run_spark_export"]
