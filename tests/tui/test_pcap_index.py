"""The pcap command's TUI: what it does to the process while a capture is indexed."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def test_the_pcap_tui_indexes_with_fewer_gc_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    import binlogscope.tui

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def fake_run_tui(source: Any, **kw: Any) -> int:
        source.run(lambda: False)  # (the worker's index, in the process the TUI runs in)
        assert source.fatal is None and len(source) > 100
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr("binlogscope.cli.pcap.wants_tui", lambda *a, **k: True)
    monkeypatch.setattr(binlogscope.tui, "run_tui", fake_run_tui)
    assert main(["pcap", str(CAPTURES / "pcap-semisync.pcap")]) == 0
    # the command's own thresholds while the TUI ran (pipeline.gc_tuning), given back after
    assert seen and seen[0][0] >= 50_000 and seen[0][0] > before[0]
    assert gc.get_threshold() == before
