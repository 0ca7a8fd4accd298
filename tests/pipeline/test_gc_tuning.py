"""fewer_gc_passes() raises the collector's thresholds and freezes what is alive for the
duration of a run, and puts both back afterwards, also when the run fails."""

from __future__ import annotations

import gc

import pytest

from binlogscope.pipeline.gc_tuning import fewer_gc_passes


def test_thresholds_raised_then_restored() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with fewer_gc_passes(young=60_000, middle=30, old=200):
        t = gc.get_threshold()
        assert t == (max(before[0], 60_000), max(before[1], 30), max(before[2], 200))
        assert gc.get_freeze_count() > frozen
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_restored_when_the_run_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_gc_passes():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
