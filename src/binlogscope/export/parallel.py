"""``export --jobs N``: N worker processes over the inputs (architecture amendment 10).

Each worker runs :func:`binlogscope.export.task.decode_input` - the very function a Spark task
of ``export --spark --writer tasks`` runs - on one unit of work: a binlog file or capture, or
a range of a binlog file cut at transaction starts so that the workers share the work evenly
(:mod:`binlogscope.export.split`: where the cuts are, how a unit's read is checked against
the next one's start, and the read of the whole input when a check fails), and writes that
unit's Parquet parts with the local exporter's writer into its input's staging directory
(``DIR/_jobs_staging/<index>/``). The parent takes the units in order
(:func:`binlogscope.pipeline.jobs.run_in_order`); at an input's last unit it renames the
input's parts (every unit's, in unit order) into the dataset as one checkpoint
(:func:`~binlogscope.export.core.publish_parts`, named as the local export names them) and
records that checkpoint in ``_export_state.json`` with the input's ``errors`` rows, so the
dataset, its note and ``--resume`` are the local export's. An input's data becomes visible
only once every input before it is published.

What differs from one process (``--jobs 1``, :func:`binlogscope.export.run.run_export`): the
checkpoints are per input (not every ``--checkpoint-events`` events inside an input), so an
interrupted export goes on from the first input not published (a cut input is read again
whole from its first unit); the rows of the tables are the same, in the same order of inputs.
One input that is not cut is exported by one process, as ``--jobs 1`` does.

Ctrl-C (or SIGTERM/SIGHUP, which the command turns into it): the workers are stopped, the
staging directory is removed, and the dataset keeps every published input (an input is either
published whole or not at all: parts renamed before the note recorded their checkpoint are
removed by the resume); the command says so and exits 130, as the one process export does.
While the parent reads a cut input whole again (a unit's check failed: rare) the signal waits
for that read.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from binlogscope.export.arrow import TABLES, clean_incomplete
from binlogscope.export.core import JOBS_STAGING, ExportError, Ledger, publish_parts
from binlogscope.export.records import ResumePoint
from binlogscope.export.run import ExportResult, Progress, run_export
from binlogscope.export.split import Unit, merged, plan_units, verified
from binlogscope.export.task import InputReport, TaskOptions, decode_input
from binlogscope.pipeline.jobs import run_in_order


def _input_job(opts: TaskOptions, staging: str, item: Unit, _spool: str) -> InputReport:
    """A worker's unit: decoded and written into ``staging/<index>/tasks/input-<index>/``
    (a range: ``input-<index>-<part>/``); its report (counts, failure, damage, where a range's
    read stopped) comes back to the parent."""
    own = dataclasses.replace(opts, write_dir=str(Path(staging) / str(item.index) / "tasks"))
    report: InputReport | None = None
    for item_out in decode_input(item.index, item.path, item.size, None, own, span=item.span,
                                 unit=item.part):
        if isinstance(item_out, InputReport):
            report = item_out
    assert report is not None  # (decode_input always ends with its report)
    report._noted.clear()  # (a copy of .damage: not sent back twice)
    return report


#: the signals that stop an export (cli/signals.py turns SIGTERM and SIGHUP into Ctrl-C)
_STOP_SIGNALS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}


@contextmanager
def _whole() -> Iterator[None]:
    """Ctrl-C held back while an input is published: its parts are renamed and its checkpoint
    recorded, or neither (the signal is delivered, and the export stopped, right after)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def run_export_jobs(source: Any, out: str | Path, *, jobs: int, kind: str,
                    inputs: list[str], ports: list[int] | None = None, resume: bool = False,
                    no_raw: bool = False, progress: Progress | None = None,
                    fallback: dict[str, Any] | None = None) -> ExportResult:
    """Export ``inputs`` (binlog files, or captures with ``kind="pcap"``) into ``out`` with
    ``jobs`` worker processes (see the module doc). ``source`` is the record source the one
    process export would read: an export to resume inside an input (left by ``--jobs 1``)
    goes on with :func:`run_export` on it (``fallback``: its keyword arguments)."""
    ledger = Ledger.prepare(out, resume=resume)
    if ledger.already_complete:
        if ledger.recorded_inputs != inputs:
            raise ExportError(f"{ledger.root}: the export was started with other inputs "
                              f"({', '.join(ledger.recorded_inputs)})")
        return ExportResult(ledger.counts, complete=True, already_complete=True)
    start_at = ledger.start if ledger.state else None
    if start_at is not None and start_at.offset is not None:  # stopped inside an input
        return run_export(source, out, resume=resume, no_raw=no_raw, progress=progress,
                          **(fallback or {}))
    first = (ledger.start or ResumePoint(0)).input_index if ledger.state else 0
    todo = [(i, p, _size(p)) for i, p in enumerate(inputs) if i >= first]
    units = plan_units(todo, jobs, kind)
    if len(inputs) == 1 and len(units) == 1 and not ledger.state:
        # (one input that is not cut: the one process export, its checkpoints inside it)
        return run_export(source, out, resume=resume, no_raw=no_raw, progress=progress,
                          **(fallback or {}))
    if ledger.state:
        no_raw = ledger.no_raw
    ledger.begin(inputs, kind=kind, no_raw=no_raw, engine="local")
    root = ledger.root
    staging = root / JOBS_STAGING
    shutil.rmtree(staging, ignore_errors=True)
    result = ExportResult(ledger.counts, resumed=ledger.resumed)
    total = sum(s for _, _, s in todo)
    done_bytes = 0
    t0 = time.monotonic()
    opts = TaskOptions(kind, no_raw, ports)
    job = functools.partial(_input_job, opts, str(staging))
    #: the units of the input being published, done so far
    held: list[tuple[Unit, InputReport]] = []

    def publish(unit: Unit, report: InputReport) -> None:
        nonlocal done_bytes
        if unit.part is not None:
            held.append((unit, report))
            done_bytes += unit.bytes
            if progress is not None:
                events = sum(r.counts.get("events", 0) for _, r in held)
                progress(result.events_seen + events, done_bytes, total, time.monotonic() - t0)
            if not unit.last:
                return
            parts = held[:]
            held.clear()
            done_bytes -= unit.size
            if verified(parts) is None:
                report = merged(parts)
            else:  # (the rows of one read of the whole input: read it whole, here)
                shutil.rmtree(staging / str(unit.index), ignore_errors=True)
                report = job(unit.whole(), "")
        index, size = unit.index, unit.size
        checkpoint = ledger.checkpoint + 1
        nxt = ResumePoint(index + 1) if index + 1 < len(inputs) else None
        with _whole():
            publish_parts(staging / str(index), root, checkpoint)
            for t in TABLES:
                result.counts[t] += report.counts.get(t, 0)
            ledger.commit(checkpoint, nxt, result.counts, report.error_rows(), report.health)
        shutil.rmtree(staging / str(index), ignore_errors=True)
        result.events_seen += report.counts.get("events", 0)
        if report.failure:
            result.input_errors.append(report.failure)
        if report.damage is not None:
            result.damage[index] = report.damage
        done_bytes += size
        if progress is not None:
            progress(result.events_seen, done_bytes, total, time.monotonic() - t0)

    try:
        run_in_order(units, job, max(1, min(jobs, len(units))), None, publish)
        if not todo:  # (a resume after the last input: nothing left but the note)
            ledger.commit(ledger.checkpoint, None, result.counts)
        result.complete = True
        if (ledger.made_here and result.input_errors and not any(ledger.counts.values())
                and len(result.input_errors) >= len(inputs)):
            result.removed = ledger.discard(after_checkpoints=True)  # (as run_export does)
    except KeyboardInterrupt:
        result.interrupted = True
        result.resume = ledger.state.get("resume")
        shutil.rmtree(staging, ignore_errors=True)
        clean_incomplete(root, ledger.checkpoint)  # (nothing is there past the note: a check)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        ledger.discard()
        raise
    finally:
        result.seconds = time.monotonic() - t0
    shutil.rmtree(staging, ignore_errors=True)
    return result


__all__ = ["run_export_jobs", "verified"]
