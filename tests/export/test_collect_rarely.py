"""Every export engine runs the cycle collector rarely while it decodes (the writer's buffers
hold many small containers the default thresholds walk again and again) and gives the process
its thresholds back after, also when a task is abandoned half-way or tasks interleave."""

from __future__ import annotations

import gc
from pathlib import Path

from binlogscope.export.core import collect_as_before, collect_rarely
from binlogscope.export.task import InputReport, TaskOptions, decode_input

WORKLOAD = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def test_tasks_collect_rarely_and_restore_the_thresholds() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        first = decode_input(0, str(WORKLOAD), 0, None, TaskOptions("file"))
        second = decode_input(1, str(WORKLOAD), 0, None, TaskOptions("file"))
        next(first)
        assert gc.get_threshold()[0] >= 500_000  # while a task runs
        next(second)
        first.close()  # abandoned half-way: the other still runs rarely
        assert gc.get_threshold()[0] >= 500_000
        items = list(second)
        assert isinstance(items[-1], InputReport) and items[-1].failure is None
        assert gc.get_threshold() == (700, 10, 10)
        collect_rarely()
        collect_rarely()
        collect_as_before()
        assert gc.get_threshold()[0] >= 500_000
        collect_as_before()
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
