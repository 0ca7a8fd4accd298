"""``binlogscope export`` ends on SIGTERM and SIGHUP as on Ctrl-C: the export stops at once,
keeps its last checkpoint, says how to resume, and ``--resume`` then completes it (issue #16:
signals must not lose what was received)."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export.records import BinlogFileSource, WrittenRun

BINLOG = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def _events(out: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "events").rglob("*.parquet"))


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_export_stops_on_signal_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            signame: str) -> None:
    full = tmp_path / "full"
    assert main(["export", str(BINLOG), "--out", str(full)], out=io.StringIO(),
                err=io.StringIO()) == 0
    expected = _events(full)

    original = BinlogFileSource.records

    def records(self: BinlogFileSource, *args: Any, **kwargs: Any) -> Iterator[Any]:
        seen = 0  # (events: a run the kernel read counts its events)
        for rec in original(self, *args, **kwargs):
            n = len(rec.values) if isinstance(rec, WrittenRun) else 1
            if seen < 100 <= seen + n:
                os.kill(os.getpid(), getattr(signal, signame))
            seen += n
            yield rec

    monkeypatch.setattr(BinlogFileSource, "records", records)
    before = signal.getsignal(getattr(signal, signame))
    ds = tmp_path / "ds"
    err = io.StringIO()
    rc = main(["export", str(BINLOG), "--out", str(ds), "--checkpoint-events", "20"],
              out=io.StringIO(), err=err)
    assert rc == 130
    assert signal.getsignal(getattr(signal, signame)) == before  # handler put back
    text = err.getvalue()
    assert "interrupted" in text and "--resume" in text and "Traceback" not in text
    monkeypatch.setattr(BinlogFileSource, "records", original)
    assert main(["export", str(BINLOG), "--out", str(ds), "--resume"], out=io.StringIO(),
                err=io.StringIO()) == 0
    assert _events(ds) == expected
