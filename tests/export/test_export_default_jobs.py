"""``export``'s default ``--jobs``: the free cores, at most one process per input - where a
binlog file counts as one input per two of the smallest pieces it is cut into, so one big
file is cut on a machine with a free core (export/split.py), and a small file, a capture or a
live stream stays one process."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from binlogscope.cli.export import _jobs
from binlogscope.export.split import MIN_UNIT
from binlogscope.pipeline import jobs as jobs_module


@dataclass
class _Source:
    kind: str
    sizes: list[int]

    def inputs(self) -> list[str]:
        return [f"in{i}" for i in range(len(self.sizes))]

    def total_bytes(self) -> int | None:
        return sum(self.sizes)


@pytest.mark.parametrize(("kind", "sizes", "cores", "load", "asked", "expected"), [
    ("file", [100 << 20], 2, 0.0, None, 2),          # one big file, two free cores: cut
    ("file", [100 << 20], 4, 0.0, None, 4),
    ("file", [2 * MIN_UNIT - 1], 2, 0.0, None, 1),   # too small to be cut in two
    ("file", [2 * MIN_UNIT], 2, 0.0, None, 1),       # two pieces: one input's worth
    ("file", [4 * MIN_UNIT], 2, 0.0, None, 2),
    ("file", [100 << 20], 2, 1.6, None, 1),          # no core free: one process
    ("file", [1 << 20] * 3, 2, 0.0, None, 2),        # several inputs, as before
    ("pcap", [100 << 20], 2, 0.0, None, 1),          # a capture is never cut
    ("pcap", [1 << 20] * 3, 2, 0.0, 8, 3),           # at most one per capture
    ("file", [1 << 20], 2, 0.0, 3, 3),               # --jobs as asked for files
    ("live", [100 << 20], 2, 0.0, None, 1),
])
def test_default_jobs_of_an_export(monkeypatch: pytest.MonkeyPatch, kind: str,
                                   sizes: list[int], cores: int, load: float,
                                   asked: int | None, expected: int) -> None:
    monkeypatch.setattr(jobs_module, "usable_cores", lambda: cores)
    monkeypatch.setattr(jobs_module, "_load", lambda: load)
    assert _jobs(argparse.Namespace(jobs=asked), _Source(kind, sizes)) == expected
