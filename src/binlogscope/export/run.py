"""The export loop: records from a source -> :class:`TableMapper` -> :class:`DatasetWriter`.

Checkpoints happen at transaction boundaries: at the end of every input and every
``checkpoint_events`` events. A checkpoint makes the part files written since the previous one
visible and then records, in ``_export_state.json``, its number and where to resume. An export
that is killed (even with SIGKILL) therefore leaves a readable dataset of every completed
checkpoint and a note saying where ``--resume`` continues; parts of a checkpoint that did not
complete are removed by the resume, so nothing is written twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from copy import copy
from pathlib import Path
from typing import Any

from binlogscope.export.arrow import TABLES
from binlogscope.export.core import (
    LOSS_KINDS,
    ExportError,
    ExportResult,
    Ledger,
    collect_as_before,
    collect_rarely,
    error_rows,
    note_damage,
)
from binlogscope.export.images import COLUMN_BUILDERS
from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import (
    EventRecord,
    HealthRecord,
    InputDone,
    PacketRecord,
    RecordSource,
    ResumePoint,
    WrittenRun,
)
from binlogscope.export.writer import DatasetWriter

Progress = Callable[[int, int, int | None, float], None]


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
    ledger = Ledger.prepare(out, resume=resume)
    root = ledger.root
    inputs = source.inputs()
    if ledger.already_complete:
        if ledger.recorded_inputs != inputs:
            raise ExportError(f"{root}: the export was started with other inputs "
                              f"({', '.join(ledger.recorded_inputs)})")
        return ExportResult(ledger.counts, complete=True, already_complete=True)
    if ledger.state:
        no_raw = ledger.no_raw
    ledger.begin(inputs, kind=source.kind, no_raw=no_raw, engine="local",
                 source_options=_source_options(source))
    start_point = ledger.start if ledger.resume or ledger.resumed else None

    counts = ledger.counts
    writer = DatasetWriter(root, checkpoint_no=ledger.checkpoint + 1,
                           row_group_size=row_group_size, builders=COLUMN_BUILDERS)
    mapper = TableMapper(no_raw=no_raw, emit_values=writer.add_values,
                         emit_rows=writer.add_rows)
    result = ExportResult(counts, resumed=ledger.resumed)
    #: the errors rows of the inputs finished since the last checkpoint
    errors: list[dict[str, Any]] = []
    #: the health rows (drivers/health.py) since the last checkpoint
    health: list[dict[str, Any]] = []
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
        mapper.flush()
        writer.checkpoint()
        for t in TABLES:
            counts[t] += writer.rows_written[t]
            writer.rows_written[t] = 0
        ledger.commit(writer.checkpoint_no - 1, resume_at, counts, errors, health)
        errors.clear()
        health.clear()

    collect_rarely()
    last_event: EventRecord | WrittenRun | None = None
    stopped = ended = False
    try:
        for rec in source.records(start_point):
            end: int | None = None
            if type(rec) is WrittenRun:  # (most events: read by the kernel, never damage)
                rest: WrittenRun | None = rec
                while rest is not None:  # (cut where a checkpoint falls due inside the run)
                    rec, rest = _cut(rest, checkpoint_events - since_checkpoint)
                    mapper.written(rec)
                    n = len(rec.values)
                    if rest is not None:
                        result.events_seen += n
                        since_checkpoint += n
                        if since_checkpoint >= checkpoint_events and mapper.at_boundary:
                            checkpoint(_resume_after(rec))
                            since_checkpoint = 0
                end = rec.end
            elif isinstance(rec, EventRecord):
                mapper.event(rec)
                if rec.event.error:  # (missing context is not damage: note_damage knows)
                    note_damage(result.damage, rec)
                end = rec.event.end
                n = 1
            if end is not None:
                assert isinstance(rec, (WrittenRun, EventRecord))
                result.events_seen += n
                since_checkpoint += n
                if sizes is not None:
                    byte_pos = starts[rec.input_index] + end
                last_event = rec
                if since_checkpoint >= checkpoint_events and mapper.at_boundary:
                    checkpoint(_resume_after(rec))
                    since_checkpoint = 0
                if stop is not None and mapper.at_boundary and stop():
                    stopped = True
                    break
            elif isinstance(rec, PacketRecord):
                mapper.packet(rec)
                if rec.kind in LOSS_KINDS:
                    note_damage(result.damage, rec)
            elif isinstance(rec, HealthRecord):
                health += rec.rows
            elif isinstance(rec, InputDone):
                ended = True
                if rec.error and source.kind == "live":  # the stream failed: not complete
                    result.input_errors.append(rec.error)
                    stopped = True
                    break
                mapper.input_done()
                if rec.error:
                    result.input_errors.append(rec.error)
                errors += error_rows(rec.source, rec.error, result.damage.get(rec.input_index))
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
            result.resume = ledger.state.get("resume")
            if ledger.made_here and ledger.checkpoint == 0:
                writer.close()
                result.removed = ledger.discard()  # nothing was kept: nothing in the way
        else:
            mapper.input_done()
            checkpoint(None)
            result.complete = True
            if (ledger.made_here and result.input_errors and not any(ledger.counts.values())
                    and len(result.input_errors) >= len(ledger.recorded_inputs)):
                # every input failed and nothing was exported: a dataset marked complete here
                # would only stand in the way of the rerun with the right input
                writer.close()
                result.removed = ledger.discard(after_checkpoints=True)
    except KeyboardInterrupt:
        writer.abort()
        result.interrupted = True
        result.resume = ledger.state.get("resume")
    except BaseException:
        writer.abort()
        writer.close()
        ledger.discard()  # a failed new export leaves nothing in the way of a rerun
        raise
    finally:
        collect_as_before()
        writer.close()
        result.seconds = time.monotonic() - t0
    if progress is not None and not result.interrupted:
        progress(result.events_seen, byte_pos, total, result.seconds)
    return result


def _cut(run: WrittenRun, room: int) -> tuple[WrittenRun, WrittenRun | None]:
    """``run`` cut where a checkpoint may be due: after its first ``room`` events, or (none
    left: the checkpoint waits for a transaction boundary) just after its next XID."""
    v = run.values
    if len(v) <= room:
        return run, None
    at = room
    if at <= 0:
        at = TableMapper.run_boundary(v)
    if at >= len(v):
        return run, None
    head, tail = copy(run), copy(run)
    head.values, tail.values = v[:at], v[at:]
    return head, tail


def _resume_after(rec: EventRecord | WrittenRun) -> ResumePoint:
    """Where an export resumes after ``rec`` (a live source's own restart point, or the
    event's end in its input; a run's last event's)."""
    if isinstance(rec, WrittenRun):
        return ResumePoint(rec.input_index, rec.end)
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


__all__ = ["ExportError", "ExportResult", "Progress", "run_export"]
