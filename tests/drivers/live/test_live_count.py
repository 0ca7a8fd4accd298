"""``--count N`` shows exactly N binlog events in ``live`` (plain and JSON) and writes exactly N
event rows in ``export --live``: the dump's artificial Rotate / Format_description count,
heartbeats do not (``drivers.live_items.counted_event``)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


@pytest.fixture
def mm(mock_master: Callable[..., Any], tmp_path: Path,
       monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    return mock_master(binlogs=[CAPTURE])


def _conn(mm: Any) -> list[str]:
    return ["--host", mm.host, "--port", str(mm.port), "-u", "repl", "--ssl-mode", "DISABLED",
            "--no-reconnect"]


def _live_events(mm: Any, *args: str) -> list[tuple[str, int, int]]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", *_conn(mm), *args], out=out, err=err)
    assert rc == 0, err.getvalue()
    return [(o["event_type"], int(o["log_pos"]), int(o["flags"]))
            for o in map(json.loads, out.getvalue().splitlines())
            if o.get("kind") == "binlog_event" and o.get("direction") == "server"]


@pytest.mark.parametrize("n", [1, 3, 40])
def test_live_count_shows_exactly_n_events(mm: Any, n: int) -> None:
    got = _live_events(mm, "--start", "mysql-bin.000001:4", "--count", str(n))
    assert len(got) == n
    assert got[0] == ("ROTATE_EVENT", 0, 0x20)  # the artificial Rotate is the first one


def test_live_count_from_the_current_position_counts_the_artificial_events(mm: Any) -> None:
    # no --start: the dump starts at the end; the source sends the artificial Rotate and the
    # Format_description (log_pos 0), then nothing: --count 2 must end the run right there
    got = _live_events(mm, "--count", "2")
    assert [(t, p) for t, p, _ in got] == [("ROTATE_EVENT", 0), ("FORMAT_DESCRIPTION_EVENT", 0)]


def test_live_plain_count(mm: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--plain", "--brief", *_conn(mm), "--start", "mysql-bin.000001:4",
               "--count", "5"], out=out, err=err)
    assert rc == 0, err.getvalue()
    lines = [ln for ln in out.getvalue().splitlines() if "_EVENT" in ln and "<-" in ln]
    assert len(lines) == 5, out.getvalue()


def test_heartbeats_are_shown_but_not_counted(mock_master: Callable[..., Any], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    from mock_master.scenario.faults import Action
    from mock_master.scenario.scenarios import BinlogSource, Scenario

    # three heartbeats before the source's 3rd event
    m = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
        Action("heartbeat", at=3, args={"count": 3})]))
    got = _live_events(m, "--start", "mysql-bin.000001:4", "--count", "5")
    beats = [e for e in got if e[0] == "HEARTBEAT_LOG_EVENT"]
    assert len(beats) == 3, got
    assert len(got) - len(beats) == 5


def test_export_live_count_writes_exactly_n_events(mm: Any, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    err = io.StringIO()
    rc = main(["export", "--live", *_conn(mm), "--port", str(mm.port),
               "--start", "mysql-bin.000001:4", "--count", "7", "--out", str(ds)],
              out=io.StringIO(), err=err)
    assert rc == 0, err.getvalue()
    rows = [r for p in sorted((ds / "events").rglob("*.parquet"))
            for r in pq.read_table(p, columns=["event_type", "log_pos"]).to_pylist()]
    assert len(rows) == 7, rows
    assert sorted(r["log_pos"] for r in rows)[0] == 0  # the artificial Rotate is one of them
