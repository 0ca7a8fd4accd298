"""The export loop: records from a source -> :class:`TableMapper` -> :class:`DatasetWriter`.

Checkpoints happen at transaction boundaries: at the end of every input and every
``checkpoint_events`` events. A checkpoint makes the part files written since the previous one
visible and then records, in ``_export_state.json``, its number and where to resume. An export
that is killed (even with SIGKILL) therefore leaves a readable dataset of every completed
checkpoint and a note saying where ``--resume`` continues; parts of a checkpoint that did not
complete are removed by the resume, so nothing is written twice.
"""

from __future__ import annotations

import datetime as _dt
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope import __version__
from binlogscope.export.arrow import (
    SCHEMA_VERSION,
    STATE_FILE,
    TABLES,
    clean_incomplete,
    read_state,
    write_state,
)
from binlogscope.export.images import COLUMN_BUILDERS
from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import (
    EventRecord,
    InputDone,
    PacketRecord,
    RecordSource,
    ResumePoint,
)
from binlogscope.export.writer import DatasetWriter
from binlogscope.wire.binlog.rows import UNKNOWN_CONTEXT

STATE_FORMAT = "binlogscope-export"


class ExportError(Exception):
    """The export cannot start (one line for the CLI)."""


@dataclass(slots=True)
class ExportResult:
    counts: dict[str, int]
    events_seen: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    complete: bool = False
    already_complete: bool = False
    resume: dict[str, Any] | None = None
    input_errors: list[str] = field(default_factory=list)
    #: per damaged input: [source, damaged events, first damaged offset, first error]
    damage: dict[int, list[Any]] = field(default_factory=dict)
    #: per input with lost bytes (TCP gaps, capture errors): [source, items, bytes, first]
    gaps: dict[int, list[Any]] = field(default_factory=dict)
    #: the dataset was new and nothing was kept: it was removed again
    removed: bool = False
    #: the directory held an unfinished export of the same inputs, resumed without --resume
    resumed: bool = False

    def damage_lines(self) -> list[str]:
        """One line per damaged input: how many events, where the damage starts, what."""
        out = []
        for src, n, offset, error in self.damage.values():
            out.append(f"{src}: damaged: {n} event(s) with errors, the first at offset {offset}"
                       f" ({error}); everything readable exported, the damaged events with "
                       "their error")
        for src, n, lost, first in self.gaps.values():
            out.append(f"{src}: {n} gap(s) in the capture, {lost} bytes lost (the first: "
                       f"{first}); the packets table has a TCP_GAP row for each")
        return out


Progress = Callable[[int, int, int | None, float], None]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def run_export(
    source: RecordSource,
    out: str | Path,
    *,
    resume: bool = False,
    no_raw: bool = False,
    checkpoint_events: int = 200_000,
    row_group_size: int = 65536,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> ExportResult:
    """Export ``source`` into ``out``; see the module doc for the crash-safety contract.

    ``stop()`` true (Ctrl-C, SIGTERM, SIGHUP on a live source): the export stops at the next
    transaction boundary, checkpoints there and ends as interrupted, keeping everything
    received up to it (``--resume`` goes on from there)."""
    root = Path(out)
    if root.exists() and not root.is_dir():  # never touch a file given as the dataset
        raise ExportError(f"{root} exists and is not a directory; --out names the dataset "
                          "directory (new or empty)")
    inputs = source.inputs()
    auto_resumed = False
    if not resume and root.is_dir() and any(root.iterdir()):
        # the same command run again after a failure or a stop: go on where it ended
        old = read_state(root)
        if old is not None and old.get("format") == STATE_FORMAT \
                and old.get("schema_version") == SCHEMA_VERSION \
                and old.get("inputs") == inputs and not old.get("complete"):
            resume = auto_resumed = True
    state = read_state(root) if resume else None
    if resume:
        if state is None or state.get("format") != STATE_FORMAT:
            raise ExportError(f"{root}: no export to resume (no readable {STATE_FILE})")
        if state.get("schema_version") != SCHEMA_VERSION:
            raise ExportError(f"{root}: written with schema version {state.get('schema_version')}"
                              f", this binlogscope writes {SCHEMA_VERSION}")
        if state.get("inputs") != inputs:
            raise ExportError(f"{root}: the export was started with other inputs "
                              f"({', '.join(state.get('inputs') or [])})")
        if state.get("complete"):
            return ExportResult(dict(state.get("counts") or {}), complete=True,
                                already_complete=True)
        no_raw = bool(state.get("options", {}).get("no_raw", no_raw))
    elif root.exists() and any(root.iterdir()):
        raise ExportError(f"{root} is not empty; use --resume to finish an interrupted export "
                          "or choose an empty directory")

    #: a new dataset: one that fails before its first checkpoint is removed again, so the
    #: same command can simply be run again
    made_here = not resume and not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    if state is None:
        state = {
            "format": STATE_FORMAT, "schema_version": SCHEMA_VERSION,
            "binlogscope_version": __version__, "source_kind": source.kind, "inputs": inputs,
            "options": {"no_raw": no_raw, "source": _source_options(source)}, "checkpoint": 0,
            "resume": {"input_index": 0, "offset": None}, "complete": False,
            "counts": dict.fromkeys(TABLES, 0), "started": _now(), "updated": _now(),
        }
        write_state(root, state)
        start_point: ResumePoint | None = None
    else:
        clean_incomplete(root, int(state["checkpoint"]))
        r = state.get("resume") or {"input_index": 0, "offset": None}
        start_point = ResumePoint(int(r["input_index"]), r.get("offset"), r.get("position"))

    counts: dict[str, int] = {t: int(state["counts"].get(t, 0)) for t in TABLES}
    writer = DatasetWriter(root, checkpoint_no=int(state["checkpoint"]) + 1,
                           row_group_size=row_group_size, builders=COLUMN_BUILDERS)
    mapper = TableMapper(no_raw=no_raw, emit_values=writer.add_values,
                         emit_many=writer.add_many)
    result = ExportResult(counts, resumed=auto_resumed)
    total = source.total_bytes()
    sizes = _input_sizes(inputs) if source.kind == "file" else None
    starts = [0]
    for n in sizes or []:
        starts.append(starts[-1] + n)
    done_before = 0
    if sizes is not None and start_point is not None:
        done_before = starts[min(start_point.input_index, len(sizes))] + (start_point.offset or 0)
    t0 = time.monotonic()
    last_progress = t0
    since_checkpoint = 0
    byte_pos = done_before

    def checkpoint(resume_at: ResumePoint | None) -> None:
        writer.checkpoint()
        for t in TABLES:
            counts[t] += writer.rows_written[t]
            writer.rows_written[t] = 0
        state["checkpoint"] = writer.checkpoint_no - 1
        state["resume"] = (None if resume_at is None else
                           {"input_index": resume_at.input_index, "offset": resume_at.offset,
                            "position": resume_at.position})
        state["complete"] = resume_at is None
        state["counts"] = dict(counts)
        state["updated"] = _now()
        write_state(root, state)

    # the row buffers hold up to row_group_size rows of small lists, dicts and tuples per
    # open part: with the default thresholds the cycle collector walks all of them again and
    # again (~20% of the export's CPU). Nothing the exporter builds is cyclic; collect rarely.
    gc_threshold = gc.get_threshold()
    gc.set_threshold(max(gc_threshold[0], 100_000), max(gc_threshold[1], 50),
                     max(gc_threshold[2], 100))
    last_event: EventRecord | None = None
    stopped = ended = False
    try:
        for rec in source.records(start_point):
            if isinstance(rec, EventRecord):
                mapper.event(rec)
                result.events_seen += 1
                since_checkpoint += 1
                if sizes is not None:
                    byte_pos = starts[rec.input_index] + rec.event.end
                last_event = rec
                if rec.event.error and not rec.event.error.startswith(UNKNOWN_CONTEXT):
                    _note_damage(result.damage, rec)  # (missing context is not damage)
                if since_checkpoint >= checkpoint_events and mapper.at_boundary:
                    checkpoint(_resume_after(rec))
                    since_checkpoint = 0
                if stop is not None and mapper.at_boundary and stop():
                    stopped = True
                    break
            elif isinstance(rec, PacketRecord):
                mapper.packet(rec)
                if rec.kind in ("TCP_GAP", "CAPTURE_ERROR"):
                    g = result.gaps.setdefault(rec.input_index, [rec.source, 0, 0, None])
                    g[1] += 1
                    g[2] += rec.payload_length
                    if g[3] is None and rec.payload:
                        g[3] = f"frame {rec.frame}: {rec.payload.decode(errors='replace')}"
            elif isinstance(rec, InputDone):
                ended = True
                if rec.error and source.kind == "live":  # the stream failed: not complete
                    result.input_errors.append(rec.error)
                    stopped = True
                    break
                mapper.input_done()
                if rec.error:
                    result.input_errors.append(rec.error)
                checkpoint(ResumePoint(rec.input_index + 1, None))
                since_checkpoint = 0
            if progress is not None:
                now = time.monotonic()
                if now - last_progress >= 0.5:
                    last_progress = now
                    progress(result.events_seen, byte_pos, total, now - t0)
        if stop is not None and not ended and stop():
            stopped = True  # (the source ended early: a stop while it waited)
        if stopped:
            if mapper.at_boundary and last_event is not None:  # keep everything up to here
                checkpoint(_resume_after(last_event))
            else:  # nothing yet, or idle inside a transaction: keep the last checkpoint
                writer.abort()
            result.interrupted = True
            result.resume = state.get("resume")
            if made_here and int(state["checkpoint"]) == 0:
                writer.close()
                _remove_dataset(root)  # nothing was kept: nothing left in the way
                result.removed = True
        else:
            mapper.input_done()
            checkpoint(None)
            result.complete = True
    except KeyboardInterrupt:
        writer.abort()
        result.interrupted = True
        result.resume = state.get("resume")
    except BaseException:
        writer.abort()
        writer.close()
        if made_here and int(state["checkpoint"]) == 0:
            _remove_dataset(root)  # a failed new export leaves nothing in the way of a rerun
        raise
    finally:
        gc.set_threshold(*gc_threshold)
        writer.close()
        result.seconds = time.monotonic() - t0
    if progress is not None and not result.interrupted:
        progress(result.events_seen, byte_pos, total, result.seconds)
    return result


def _note_damage(damage: dict[int, list[Any]], rec: EventRecord) -> None:
    d = damage.get(rec.input_index)
    if d is None:
        damage[rec.input_index] = [rec.source, 1, rec.event.offset, rec.event.error]
    else:
        d[1] += 1


def _remove_dataset(root: Path) -> None:
    """Remove a dataset this run made and kept nothing in (its state file, the empty table
    directories, hidden unfinished parts): only files an export writes."""
    import shutil

    for t in TABLES:
        shutil.rmtree(root / t, ignore_errors=True)
    try:
        (root / STATE_FILE).unlink()
    except OSError:
        pass
    try:
        root.rmdir()
    except OSError:  # something else is in there: leave it
        pass


def _resume_after(rec: EventRecord) -> ResumePoint:
    """Where an export resumes after ``rec`` (a live source's own restart point, or the
    event's end in its input)."""
    return rec.resume if rec.resume is not None else ResumePoint(rec.input_index, rec.event.end)


def _source_options(source: RecordSource) -> dict[str, Any] | None:
    """What a source needs to be made again on ``--resume`` (a live source's connection and
    replication options; never a password)."""
    options = getattr(source, "options", None)
    return options() if callable(options) else None


def _input_sizes(inputs: list[str]) -> list[int]:
    out = []
    for p in inputs:
        try:
            out.append(Path(p).stat().st_size)
        except OSError:
            out.append(0)
    return out
