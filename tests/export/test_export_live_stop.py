"""``export --live`` ended with Ctrl-C keeps everything received (it stops at the next
transaction boundary and checkpoints there), and the printed ``--resume`` reconnects with the
recorded options and goes on from that position: every event once."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import BinlogSource, Scenario

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def _positions(ds: Path) -> list[int]:
    out: list[int] = []
    for p in sorted((ds / "events").rglob("*.parquet")):
        t = pq.read_table(p, columns=["log_pos", "flags"])
        out += [pos for pos, fl in zip(t.column("log_pos").to_pylist(),
                                        t.column("flags").to_pylist(), strict=True)
                if pos and not (fl or 0) & 0x20]
    return out


def _expected() -> list[int]:
    buf = io.StringIO()
    main(["file", "--json", str(CAPTURE)], out=buf, err=io.StringIO())
    return [int(o["log_pos"]) for o in map(json.loads, buf.getvalue().splitlines())]


def test_ctrl_c_keeps_everything_received_and_resume_goes_on(
        mock_master: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    # the first events at once, then the rest slowly: Ctrl-C arrives mid-stream
    mm = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
        Action("slow_drip", at=120, args={"bytes_per_second": 20_000})]))
    ds = tmp_path / "ds"
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    err = io.StringIO()
    try:
        rc = main(["export", "--live", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
                   "--ssl-mode", "DISABLED", "--start", "mysql-bin.000001:4", "--out", str(ds)],
                  out=io.StringIO(), err=err)
    finally:
        timer.cancel()
    text = err.getvalue()
    assert rc == 130, text
    assert "stopped" in text and "export --resume --out" in text and "Traceback" not in text
    kept = _positions(ds)
    want = _expected()
    assert 50 <= len(kept) < len(want)  # what was received, not the last 200,000-checkpoint
    assert sorted(kept) == want[:len(kept)]  # (one binlog file: positions grow)
    state = json.loads((ds / "_export_state.json").read_text())
    assert state["resume"]["position"]["log_file"] == "mysql-bin.000001"
    assert "replpass" not in json.dumps(state)
    # the printed command (plus --non-blocking, to end at the end of the binlog)
    err = io.StringIO()
    rc = main(["export", "--resume", "--out", str(ds), "--non-blocking"], out=io.StringIO(),
              err=err)
    assert rc == 0, err.getvalue()
    assert sorted(_positions(ds)) == want  # every event exactly once
