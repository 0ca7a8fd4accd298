"""The export orchestration core shared by the local export (:mod:`binlogscope.export.run`)
and the Spark export (:mod:`binlogscope.export.spark.export`): the dataset's checkpoint note
and everything that decides where an export starts, what it keeps and what it reports.

* :class:`Ledger`: ``_export_state.json`` (the format, the schema version, the inputs, the last
  completed checkpoint, where to resume, the counts and the errors). It refuses a directory that
  is not an export, resumes an unfinished export of the same inputs when the same command is
  run again, records each checkpoint (with the ``errors`` rows of the inputs it completed) and
  removes a dataset it made and kept nothing in, so a failed first run never blocks a rerun;
* :class:`InputDamage` and :func:`error_rows`: one input's problems as the command prints them
  and as the ``errors`` table stores them (:data:`~binlogscope.export.arrow.ERRORS`), the same
  for every engine.

The per-input work (one input -> Arrow batches) is :func:`binlogscope.export.task.decode_input`.
Crash safety: see :mod:`binlogscope.export.arrow`.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from binlogscope import __version__
from binlogscope.export.arrow import (
    ERRORS_SCHEMA,
    ERRORS_TABLE,
    HEALTH_SCHEMA,
    HEALTH_TABLE,
    SCHEMA_VERSION,
    STATE_FILE,
    TABLES,
    clean_incomplete,
    read_state,
    write_state,
)
from binlogscope.export.records import EventRecord, PacketRecord, ResumePoint
from binlogscope.wire.binlog.rows import UNKNOWN_CONTEXT

#: ``format`` of ``_export_state.json`` (every engine writes the same note)
STATE_FORMAT = "binlogscope-export"
#: ``packets`` rows that stand for bytes a capture lost (export/sources)
LOSS_KINDS = frozenset({"TCP_GAP", "CAPTURE_ERROR"})
#: where ``export --jobs`` workers write their inputs' parts before they are published
JOBS_STAGING = "_jobs_staging"


class ExportError(Exception):
    """The export cannot start or go on (one line for the CLI)."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- errors

@dataclass(slots=True)
class InputDamage:
    """What one input lost: its damaged events (how many, where the first is, what it says)
    and the bytes a capture lost (TCP gaps, capture errors: ``packets`` rows of their own)."""

    source: str
    count: int = 0
    first_offset: int | None = None
    first_error: str | None = None
    gaps: int = 0
    lost_bytes: int = 0
    first_gap: str | None = None

    def note(self, offset: int | None, error: str) -> None:
        if self.count == 0:
            self.first_offset, self.first_error = offset, error
        self.count += 1

    def note_gap(self, rec: PacketRecord) -> None:
        self.gaps += 1
        self.lost_bytes += rec.payload_length
        if self.first_gap is None and rec.payload:
            self.first_gap = f"frame {rec.frame}: {rec.payload.decode(errors='replace')}"

    def line(self) -> str:
        return (f"{self.source}: damaged: {self.count} event(s) with errors, the first at offset "
                f"{self.first_offset} ({self.first_error}); everything readable exported, the "
                "damaged events with their error")

    def gap_line(self) -> str:
        return (f"{self.source}: {self.gaps} gap(s) in the capture, {self.lost_bytes} bytes lost "
                f"(the first: {self.first_gap}); the packets table has a TCP_GAP row for each")

    def lines(self) -> list[str]:
        return ([self.line()] if self.count else []) + ([self.gap_line()] if self.gaps else [])


# ----------------------------------------------------------------------------- the result
@dataclass(slots=True)
class ExportResult:
    """What an export did, for the command's lines and exit code - the one result of the local
    export (:func:`binlogscope.export.run.run_export`, ``--jobs``) and the Spark export
    (:func:`binlogscope.export.spark.export.run_spark_export`); a key one engine does not
    measure keeps its default."""

    counts: dict[str, int]
    seconds: float = 0.0
    interrupted: bool = False
    complete: bool = False
    already_complete: bool = False
    #: the dataset was new and nothing was kept: it was removed again
    removed: bool = False
    #: the directory held an unfinished export of the same inputs, resumed without --resume
    resumed: bool = False
    # ---- the local export
    events_seen: int = 0
    resume: dict[str, Any] | None = None
    input_errors: list[str] = field(default_factory=list)
    #: per damaged input (by index): its damaged events and the bytes a capture lost
    damage: dict[int, InputDamage] = field(default_factory=dict)
    # ---- the Spark export
    startup_seconds: float = 0.0
    skipped_inputs: int = 0  # exported before (--resume)
    #: rows of the ``errors`` table (this run's and those recorded before a resume)
    errors: list[dict[str, Any]] = field(default_factory=list)
    #: per decoded input: (source, bytes, seconds of its task)
    task_times: list[tuple[str, int, float]] = field(default_factory=list)
    #: wall seconds per phase: decode (the decode job), write (Spark's Parquet writes),
    #: publish (renames and the state file)
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("decode", "write", "publish"), 0.0))

    def damage_lines(self) -> list[str]:
        """One line per damaged input: how many events, where the damage starts, what."""
        return [line for d in self.damage.values() for line in d.lines()]


def note_damage(damage: dict[int, InputDamage], rec: EventRecord | PacketRecord) -> None:
    """Count ``rec`` in its input's damage if it is damage: an event with a decode error (not
    one whose context came before the stream began: that is not damage), or a capture's lost
    bytes (a ``TCP_GAP`` or ``CAPTURE_ERROR`` packet row)."""
    if isinstance(rec, EventRecord):
        error = rec.event.error
        if not error or error.startswith(UNKNOWN_CONTEXT):
            return
    elif rec.kind not in LOSS_KINDS:
        return
    d = damage.get(rec.input_index)
    if d is None:
        d = damage[rec.input_index] = InputDamage(rec.source)
    if isinstance(rec, EventRecord):
        d.note(rec.event.offset, str(rec.event.error))
    else:
        d.note_gap(rec)


#: the thresholds before the first :func:`collect_rarely` still in force, and how many are
_rarely: list[Any] = [None, 0]


def collect_rarely() -> None:
    """Make the cycle collector run rarely while inputs are exported (the local loop and
    every task: :func:`binlogscope.export.task.decode_input`), until the matching
    :func:`collect_as_before`. The writer's buffers hold up to a row group of small lists,
    dicts and tuples per open part, which the default thresholds walk again and again (~15-20 %
    of an export's CPU); nothing the exporter builds is cyclic. Nests (tasks that interleave
    in one process): the thresholds come back when the last one ends.

    The young generation's threshold counts objects allocated and still alive since the last
    pass, so the buffers alone reach 100,000: with that threshold the bench's full set (1.6 M
    events) had ~10 young passes of 0.08-0.23 s each over the buffered rows, 1.1 of 31 CPU-s
    (session 22, gc.callbacks); with 500,000 none (0.03 s in all, peak RSS the same). Cyclic
    garbage (a few dozen objects per pass were found) waits for a pass: at most that many
    objects."""
    if _rarely[1] == 0:
        before = _rarely[0] = gc.get_threshold()
        gc.set_threshold(max(before[0], 500_000), max(before[1], 50), max(before[2], 100))
    _rarely[1] += 1


def collect_as_before() -> None:
    """The end of a :func:`collect_rarely`."""
    _rarely[1] -= 1
    if _rarely[1] == 0:
        gc.set_threshold(*_rarely[0])


def error_rows(source: str, failure: str | None, damage: InputDamage | None
               ) -> list[dict[str, Any]]:
    """The ``errors`` rows of one input: its failure (it could not be read to its end), its
    damage (events exported with a decode error) and its lost bytes (capture gaps)."""
    out: list[dict[str, Any]] = []
    if failure:
        out.append({"path": source, "kind": "failed", "message": failure.splitlines()[0],
                    "damaged_events": None, "first_offset": None})
    if damage is not None and damage.count:
        out.append({"path": source, "kind": "damaged", "message": damage.line(),
                    "damaged_events": damage.count, "first_offset": damage.first_offset})
    if damage is not None and damage.gaps:
        out.append({"path": source, "kind": "lost", "message": damage.gap_line(),
                    "damaged_events": None, "first_offset": None})
    return out


def report_table(rows: Sequence[dict[str, Any]], table_name: str = ERRORS_TABLE) -> pa.Table:
    """The ``errors`` rows (``table_name`` HEALTH_TABLE: the ``health`` rows, their ``time`` in
    microseconds as :func:`~binlogscope.export.records.health_rows` gives it) as an Arrow table of
    the table's schema: the one definition of both tables' rows, for the local export's
    checkpoints, ``export --spark``'s and the ``binlog`` data source."""
    schema = HEALTH_SCHEMA if table_name == HEALTH_TABLE else ERRORS_SCHEMA
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows],
                                schema=schema)


def write_errors(root: Path, checkpoint: int, rows: list[dict[str, Any]],
                 table_name: str = ERRORS_TABLE) -> None:
    """A checkpoint's ``errors`` rows as ``errors/part-<checkpoint>-0001.parquet`` (a resume
    removes it with the checkpoint's other parts if the checkpoint does not complete); the
    ``health`` rows (``table_name`` HEALTH_TABLE) the same way."""
    if not rows:
        return
    base = root / table_name
    base.mkdir(exist_ok=True)
    table = report_table(rows, table_name)
    tmp = base / f".part-{checkpoint:06d}-0001.parquet.inprogress"
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(base / f"part-{checkpoint:06d}-0001.parquet")


def publish_parts(staging: Path, root: Path, checkpoint: int) -> None:
    """Move a checkpoint's Parquet files from the staging tree (Spark's writes, or the tasks'
    own ``tasks/input-<n>/`` trees of ``export --spark --writer tasks`` and ``export --jobs``)
    into the dataset, named as the local export names its parts
    (``part-<checkpoint>-<n>.parquet``, n per directory)."""
    tasks = staging / "tasks"
    bases = sorted(tasks.iterdir()) if tasks.is_dir() else [staging]
    seqs: dict[Path, int] = {}
    for top in bases:
        for table in (*TABLES, HEALTH_TABLE, ERRORS_TABLE):
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


# ----------------------------------------------------------------------------- the note

class Ledger:
    """The checkpoint note of one dataset directory (see the module doc).

    :meth:`prepare` checks the directory before anything starts (an engine may take seconds to
    start); :meth:`begin` fixes the inputs (new export, ``--resume``, or the same command run
    again); :meth:`commit` records a checkpoint; :meth:`discard` removes a dataset this run made
    when it kept nothing."""

    def __init__(self, root: Path, state: dict[str, Any] | None, resume: bool) -> None:
        self.root = root
        self.state: dict[str, Any] = state or {}
        self.resume = resume
        #: the directory held an unfinished export of the same inputs: resumed without --resume
        self.resumed = False
        #: this run created the directory (a failure before the first checkpoint removes it)
        self.made_here = False

    @classmethod
    def prepare(cls, out: str | Path, *, resume: bool) -> Ledger:
        root = Path(out)
        if root.exists() and not root.is_dir():  # never touch a file given as the dataset
            raise ExportError(f"{root} exists and is not a directory; --out names the dataset "
                              "directory (new or empty)")
        state = read_state(root) if root.is_dir() else None
        ours = state is not None and state.get("format") == STATE_FORMAT
        if resume:
            if state is None or not ours:
                raise ExportError(f"{root}: no export to resume (no readable {STATE_FILE})")
            if state.get("schema_version") != SCHEMA_VERSION:
                raise ExportError(f"{root}: written with schema version "
                                  f"{state.get('schema_version')}, this binlogscope writes "
                                  f"{SCHEMA_VERSION}")
            return cls(root, state, True)
        if root.is_dir() and any(root.iterdir()):
            if state is not None and ours and state.get("schema_version") == SCHEMA_VERSION \
                    and not state.get("complete"):
                return cls(root, state, False)  # the same command again? begin() decides
            raise ExportError(f"{root} is not empty; use --resume to finish an interrupted "
                              "export or choose an empty directory")
        return cls(root, None, False)

    # ---- what the note says
    @property
    def already_complete(self) -> bool:
        return self.resume and bool(self.state.get("complete"))

    @property
    def recorded_inputs(self) -> list[str]:
        return [str(i) for i in self.state.get("inputs") or []]

    @property
    def kind(self) -> str:
        return str(self.state.get("source_kind", "file"))

    @property
    def no_raw(self) -> bool:
        return bool(self.state.get("options", {}).get("no_raw", False))

    @property
    def checkpoint(self) -> int:
        """The last completed checkpoint (0: none yet)."""
        return int(self.state.get("checkpoint") or 0)

    @property
    def counts(self) -> dict[str, int]:
        return {t: int((self.state.get("counts") or {}).get(t, 0)) for t in TABLES}

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self.state.get("errors") or [] if isinstance(e, dict)]

    @property
    def start(self) -> ResumePoint | None:
        """Where the export goes on (None: at the start)."""
        r = self.state.get("resume")
        if not self.state or not r:
            return None
        return ResumePoint(int(r.get("input_index") or 0), r.get("offset"), r.get("position"))

    # ---- the run
    def begin(self, inputs: list[str], *, kind: str, no_raw: bool, engine: str,
              source_options: dict[str, Any] | None = None) -> None:
        """Start the export of ``inputs``: a new note, or the recorded one checked against
        them (the parts of a checkpoint that did not complete are removed)."""
        root = self.root
        if self.state and not self.resume:
            if self.recorded_inputs != inputs or self.kind != kind:
                raise ExportError(f"{root} is not empty; use --resume to finish an interrupted "
                                  "export or choose an empty directory")
            self.resumed = True
        if self.state:
            if self.recorded_inputs != inputs:
                raise ExportError(f"{root}: the export was started with other inputs "
                                  f"({', '.join(self.recorded_inputs)})")
            if self.kind != kind:
                raise ExportError(f"{root}: the export is of {self.kind} inputs")
            clean_incomplete(root, self.checkpoint)
            return
        self.made_here = not root.exists()
        root.mkdir(parents=True, exist_ok=True)
        self.state = {
            "format": STATE_FORMAT, "schema_version": SCHEMA_VERSION,
            "binlogscope_version": __version__, "source_kind": kind, "inputs": list(inputs),
            "options": {"no_raw": no_raw, "source": source_options}, "checkpoint": 0,
            "resume": {"input_index": 0, "offset": None}, "complete": False,
            "counts": dict.fromkeys(TABLES, 0), "errors": [], "engine": engine,
            "started": _now(), "updated": _now(),
        }
        write_state(root, self.state)

    def commit(self, checkpoint: int, resume_at: ResumePoint | None, counts: dict[str, int],
               errors: Sequence[dict[str, Any]] = (),
               health: Sequence[dict[str, Any]] = ()) -> None:
        """Record checkpoint ``checkpoint`` (its parts already renamed into the dataset):
        ``errors`` rows of the inputs it completed, where to resume (None: the export is
        complete), the counts so far."""
        write_errors(self.root, checkpoint, list(errors))
        write_errors(self.root, checkpoint, list(health), HEALTH_TABLE)
        st = self.state
        st["checkpoint"] = checkpoint
        st["resume"] = (None if resume_at is None else
                        {"input_index": resume_at.input_index, "offset": resume_at.offset,
                         "position": resume_at.position})
        st["complete"] = resume_at is None
        st["counts"] = {t: int(counts.get(t, 0)) for t in TABLES}
        st["errors"] = [*self.errors, *errors]
        st["updated"] = _now()
        write_state(self.root, st)

    def discard(self, *, after_checkpoints: bool = False) -> bool:
        """Remove the dataset if this run made it and no checkpoint completed (or, with
        ``after_checkpoints``, when its checkpoints kept nothing: every input failed): only
        files an export writes (something else in the directory stays, and so does it)."""
        if not self.made_here or (self.checkpoint != 0 and not after_checkpoints):
            return False
        root = self.root
        for t in (*TABLES, HEALTH_TABLE, ERRORS_TABLE, "_spark_staging", JOBS_STAGING):
            shutil.rmtree(root / t, ignore_errors=True)
        for name in (STATE_FILE, f".{STATE_FILE}.tmp"):
            try:
                (root / name).unlink()
            except OSError:
                pass
        try:
            root.rmdir()
        except OSError:  # something else is in there: leave it
            pass
        return True


__all__ = ["JOBS_STAGING", "LOSS_KINDS", "STATE_FORMAT", "ExportError", "ExportResult",
           "InputDamage", "Ledger", "collect_as_before", "collect_rarely",
           "error_rows", "note_damage", "publish_parts", "report_table", "write_errors"]
