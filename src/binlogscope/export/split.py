"""``export --jobs N``'s units of work: binlog files cut at transaction starts, so that N
workers share the work evenly whatever the sizes of the inputs (issue 26).

With one process per input, 5 files over 2 processes split 3:2 and the wall time is at least
3/5 of one process's CPU. Here a unit is a byte range ``[start, stop)`` of one input:

* **where to cut** (:func:`plan_units`, in the parent before the workers start): the units'
  count per input is the one that gives the shortest run when the units are handed in order to
  the first free worker (:func:`_makespan`: each unit's cost its bytes plus :data:`UNIT_COST`,
  the fixed cost of a unit: its start, its writer, its own part files), among cutting every
  input into pieces of about ``total / (jobs * k)`` bytes for a few ``k`` (no cut at all is
  one of the choices, and wins on a tie); no piece is smaller than :data:`MIN_UNIT`. The cut
  offsets are then moved on to the next transaction start, found without reading the events
  before it (:func:`binlogscope.drivers.binlog_file.transaction_starts`: a GTID event of the
  file's flavour that chains like a binlog file's events, CRC32 verified when checksums are in
  force, a longer chain when not). Captures, ``.gz`` files, standard input, relay logs and
  files without GTID events (MySQL before 5.6, MariaDB before 10.0) are never cut.
* **a unit's read** (:func:`binlogscope.export.task.decode_input` with its span): the
  FORMAT_DESCRIPTION at offset 4, then the range only (``read_binlog_values`` with a trusted
  start and ``stop_position``); it stops before the first event at or after its stop.
* **the checks** (:func:`verified`, in the parent when the input's last unit is done): every
  unit but the last must have stopped at an event that starts exactly where the next unit
  starts (a cut that was no event boundary - bytes in a row value that look like a GTID event -
  shows there: the event that spans the cut ends elsewhere), and no unit may have met damage, a
  failure or what the events before it would have settled (a rows event without its TABLE_MAP,
  a MariaDB table with old-format temporal columns whose decimals an earlier CREATE TABLE or
  earlier rows give: ``InputDone.doubt``). Then the units' parts are the rows of one read of
  the whole input: a unit starts where a transaction starts, so the decoder's context there is
  the FORMAT_DESCRIPTION's and the transaction's own events'. On any doubt the units' parts are
  dropped and the input is read whole, in the parent, as one unit (the rows of ``--jobs 1``
  either way; a damaged file costs its read twice, and Ctrl-C waits for that read).
* **publishing**: an input's units are published together, as one checkpoint (its parts in
  unit order), so the dataset, the ``errors`` rows, the resume points (whole inputs) and Ctrl-C
  are as with one process per input (:mod:`binlogscope.export.parallel`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from binlogscope.drivers.binlog_file import transaction_starts
from binlogscope.export.task import InputReport

#: the smallest piece an input is cut into (the 32 MB bench file in 8 units of 4 MB costs no
#: more CPU than in 2 of 16 MB; in 32 units of 1 MB about 0.4-0.6 CPU-s more: bench/README.md)
MIN_UNIT = 4 << 20
#: a unit's fixed cost in bytes of decoding (its start, its writer, its part files): measured
#: ~15-20 ms a unit, what ~0.2 MB of decoding costs; counted at 256 KB
UNIT_COST = 1 << 18
#: the pieces per worker tried (0: no cut)
_PER_JOB = (0, 1, 2, 3, 4, 6, 8)


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of work: input ``index`` whole (``part`` None) or its range ``[start, stop)``
    (None: the file's start, its end), part ``part`` of ``parts``."""

    index: int
    path: str
    size: int  # the input's size in bytes
    start: int | None = None
    stop: int | None = None
    part: int | None = None
    parts: int = 1

    @property
    def span(self) -> tuple[int | None, int | None] | None:
        return None if self.part is None else (self.start, self.stop)

    @property
    def bytes(self) -> int:
        """Its share of the input's bytes (for the progress line)."""
        return (self.size if self.stop is None else self.stop) - (self.start or 0)

    @property
    def last(self) -> bool:
        return self.part is None or self.part == self.parts - 1

    def whole(self) -> Unit:
        return Unit(self.index, self.path, self.size)


def _makespan(costs: list[int], jobs: int) -> int:
    """When the last of ``costs`` ends, each started in order on the first free worker."""
    free = [0] * jobs
    end = 0
    for c in costs:
        t = heapq.heappop(free) + c
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def _pieces(sizes: list[int], jobs: int) -> list[int]:
    """How many pieces each input is cut into (see the module doc)."""
    total = sum(sizes)
    best: tuple[int, int, list[int]] | None = None
    for per_job in _PER_JOB:
        counts = [1] * len(sizes)
        if per_job:
            target = max(MIN_UNIT, total // (jobs * per_job) or 1)
            counts = [max(1, min(s // MIN_UNIT, round(s / target))) for s in sizes]
        costs = [s // n + UNIT_COST for s, n in zip(sizes, counts, strict=True)
                 for _ in range(n)]
        key = (_makespan(costs, jobs), len(costs))
        if best is None or key < best[:2]:
            best = (*key, counts)
    assert best is not None
    return best[2]


def plan_units(inputs: list[tuple[int, str, int]], jobs: int, kind: str) -> list[Unit]:
    """The units of ``inputs`` ((index, path, size) each) for ``jobs`` workers, in input and
    offset order (see the module doc)."""
    whole = [Unit(i, p, s) for i, p, s in inputs]
    if kind != "file" or jobs < 2:
        return whole
    out: list[Unit] = []
    for (index, path, size), n in zip(inputs, _pieces([s for _, _, s in inputs], jobs),
                                      strict=True):
        starts = (transaction_starts(path, [size * k // n for k in range(1, n)])
                  if n > 1 else None)
        if not starts:
            out.append(Unit(index, path, size))
            continue
        bounds: list[int | None] = [None, *starts, None]
        for k in range(len(starts) + 1):
            out.append(Unit(index, path, size, bounds[k], bounds[k + 1], k, len(starts) + 1))
    return out


def verified(units: list[tuple[Unit, InputReport]]) -> str | None:
    """None when the reports of an input's units (all of them, in order) make the rows of one
    read of the whole input; otherwise why not (see the module doc)."""
    for k, (_unit, report) in enumerate(units):
        if report.doubt or report.failure or report.damage is not None:
            return report.doubt or report.failure or "damaged"
        nxt = units[k + 1][0].start if k + 1 < len(units) else None
        if report.stopped_at != nxt:
            return (f"unit {k} stopped at {report.stopped_at}, the next starts at {nxt}")
    return None


def merged(units: list[tuple[Unit, InputReport]]) -> InputReport:
    """One report of an input from its verified units' reports."""
    first = units[0][1]
    out = InputReport(first.index, first.path, units[0][0].size)
    for _, r in units:
        for t, n in r.counts.items():
            out.counts[t] = out.counts.get(t, 0) + n
        out.seconds += r.seconds
        out.health += r.health
    return out


__all__ = ["MIN_UNIT", "UNIT_COST", "Unit", "merged", "plan_units", "verified"]
