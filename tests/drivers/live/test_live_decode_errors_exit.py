"""A decode error in a live stream is an item and a non-zero exit (docs/architecture):
``live`` shows the event with its error, ends with one summary line on stderr and status 1;
``export --live`` exports everything and exits 1 too. A clean stream still exits 0."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from mock_master.scenario.faults import Action

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def _conn(mm: Any) -> list[str]:
    return ["--host", mm.host, "--port", str(mm.port), "-u", "repl", "--ssl-mode", "DISABLED",
            "--no-reconnect", "--start", "mysql-bin.000001:4", "--non-blocking"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_live_exits_1_after_a_corrupt_event(mock_master: Callable[..., Any], env: Path) -> None:
    mm = mock_master(binlogs=[CAPTURE], actions=[Action("corrupt_checksum_at", at=15)])
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", *_conn(mm)], out=out, err=err)
    items = [json.loads(line) for line in out.getvalue().splitlines()]
    assert any(i.get("checksum_ok") is False or i.get("kind") == "decode_error"
               for i in items)
    assert rc == 1, err.getvalue()
    lines = [ln for ln in err.getvalue().splitlines() if "could not be decoded" in ln]
    assert len(lines) == 1 and lines[0].startswith("binlogscope: error: 1 event"), lines
    assert "Traceback" not in err.getvalue()
    # the stream went on to its end after the bad event (it is shown, not the end of the run)
    assert items[-1].get("event_type") != "ROTATE_EVENT" or len(items) > 20


def test_export_live_exits_1_after_a_corrupt_event(mock_master: Callable[..., Any],
                                                   env: Path) -> None:
    mm = mock_master(binlogs=[CAPTURE], actions=[Action("corrupt_checksum_at", at=15)])
    err = io.StringIO()
    rc = main(["export", "--live", *_conn(mm), "--out", str(env / "x")], out=io.StringIO(),
              err=err)
    assert rc == 1, err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_live_exits_0_on_a_clean_stream(mock_master: Callable[..., Any], env: Path) -> None:
    mm = mock_master(binlogs=[CAPTURE])
    err = io.StringIO()
    rc = main(["live", "--json", *_conn(mm)], out=io.StringIO(), err=err)
    assert rc == 0, err.getvalue()
    assert "could not be decoded" not in err.getvalue()
