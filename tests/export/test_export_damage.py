"""A damaged binlog exports everything readable and exits non-zero with a summary of the damage;
a failed new export leaves nothing that blocks running the same command again."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export import run as run_mod
from binlogscope.export.mapper import TableMapper

BINLOG = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def _events(out: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "events").rglob("*.parquet"))


def _file_events(path: Path) -> list[dict[str, Any]]:
    buf = io.StringIO()
    main(["file", "--json", str(path)], out=buf, err=io.StringIO())
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def test_damaged_binlog_exports_what_is_readable_and_fails_with_a_summary(
        tmp_path: Path) -> None:
    data = bytearray(BINLOG.read_bytes())
    data[5000] ^= 0xFF  # a checksum mismatch in one event
    bad = tmp_path / "bad.000001"
    bad.write_bytes(bytes(data[: len(data) - 100]))  # and a truncated last event
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", str(bad), "--out", str(tmp_path / "ds")], out=out, err=err)
    assert rc == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "Traceback" not in err.getvalue(), lines
    want = _file_events(bad)
    damaged = [e for e in want if e["error"]]
    assert f"{bad}: damaged: {len(damaged)} event(s) with errors, the first at offset " \
           f"{damaged[0]['offset']}" in lines[0]
    assert _events(tmp_path / "ds") == len(want)  # everything before (and after) the damage
    assert "exported" in out.getvalue()


def test_failed_live_export_leaves_nothing_in_the_way(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    for _ in range(2):  # the same command again: the same one-line error, not "not empty"
        err = io.StringIO()
        rc = main(["export", "--live", "--port", "1", "--no-reconnect", "--ssl-mode",
                   "DISABLED", "--out", str(ds)], out=io.StringIO(), err=err)
        assert rc == 1
        assert "refused" in err.getvalue() and "not empty" not in err.getvalue()
        assert not ds.exists()


def test_export_that_fails_before_its_first_checkpoint_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = tmp_path / "ds"
    original = TableMapper.event

    def event(self: Any, rec: Any) -> None:
        if self.events > 50:
            raise OSError(28, "No space left on device")
        original(self, rec)

    monkeypatch.setattr(TableMapper, "event", event)
    with pytest.raises(OSError):
        run_mod.run_export(run_mod_source(), ds)
    assert not ds.exists()
    monkeypatch.setattr(TableMapper, "event", original)
    assert main(["export", str(BINLOG), "--out", str(ds)], out=io.StringIO(),
                err=io.StringIO()) == 0  # the rerun just works
    assert _events(ds) == len(_file_events(BINLOG))


@pytest.mark.parametrize("again", ["--resume", "the same command"])
def test_failure_after_a_checkpoint_keeps_it_for_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, again: str) -> None:
    ds = tmp_path / "ds"
    original = TableMapper.event

    def event(self: Any, rec: Any) -> None:
        if self.events > 150:
            raise OSError(28, "No space left on device")
        original(self, rec)

    monkeypatch.setattr(TableMapper, "event", event)
    with pytest.raises(OSError):
        run_mod.run_export(run_mod_source(), ds, checkpoint_events=20)
    assert _events(ds) > 0  # the checkpoints made are kept
    monkeypatch.setattr(TableMapper, "event", original)
    err = io.StringIO()
    if again == "--resume":
        rc = main(["export", "--resume", "--out", str(ds)], out=io.StringIO(), err=err)
    else:  # the same command again: it goes on where the failed run ended
        rc = main(["export", str(BINLOG), "--out", str(ds)], out=io.StringIO(), err=err)
        assert "went on from its last checkpoint" in err.getvalue()
    assert rc == 0, err.getvalue()
    assert _events(ds) == len(_file_events(BINLOG))  # every event once


def run_mod_source() -> Any:
    from binlogscope.export.records import BinlogFileSource

    return BinlogFileSource([str(BINLOG)])
