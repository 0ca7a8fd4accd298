"""``live --out FILE --state STATE``: the output advances with the state; a restart cuts what a
crash wrote after the last commit and goes on, so every event is in the file exactly once."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.pipeline.state import ReplicaState

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def _events(text: str) -> list[tuple[str, int]]:
    out = []
    for line in text.splitlines():
        o = json.loads(line)
        if o.get("kind") == "binlog_event" and o.get("direction") == "server" \
                and o.get("log_pos") and not int(o.get("flags") or 0) & 0x20:
            out.append((str(o["event_type"]), int(o["log_pos"])))
    return out


def _file_events() -> list[tuple[str, int]]:
    buf = io.StringIO()
    assert main(["file", "--json", str(CAPTURE)], out=buf, err=io.StringIO()) in (0, 1)
    return [(str(o["event_type"]), int(o["log_pos"]))
            for o in map(json.loads, buf.getvalue().splitlines())
            if int(o.get("offset", 0)) >= 4]


def _live(mm: Any, tmp: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--no-reconnect", "--start", "mysql-bin.000001:4",
               *args], out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def test_out_file_resumes_exactly_once_and_cuts_an_uncommitted_tail(
        mock_master: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    mm = mock_master(binlogs=[CAPTURE])
    out, state = tmp_path / "cdc.jsonl", tmp_path / "cdc.state"
    rc, printed, err = _live(mm, tmp_path, "--state", str(state), "--out", str(out),
                             "--count", "40", "--non-blocking")
    assert rc == 0, err
    assert printed == ""  # the output went to the file
    st = ReplicaState.load(state)
    assert st.out_length == out.stat().st_size and st.log_file  # committed together
    first = _events(out.read_text())
    assert 30 <= len(first) <= 45
    # a crash after writing past the last commit: the restart cuts the tail and goes on
    tail = '{"kind":"binlog_event","direction":"server","event_type":"X","log_pos":1}\n{"'
    with open(out, "a") as f:
        f.write(tail)
    rc, printed, err = _live(mm, tmp_path, "--state", str(state), "--out", str(out),
                             "--non-blocking")
    assert rc == 0, err
    assert f"cut {len(tail)} bytes" in err
    got = _events(out.read_text())
    assert got == _file_events()  # every event once, in order
    assert ReplicaState.load(state).out_length == out.stat().st_size


def test_out_file_that_the_state_does_not_account_for_is_one_line(
        mock_master: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    mm = mock_master(binlogs=[CAPTURE])
    out, state = tmp_path / "cdc.jsonl", tmp_path / "cdc.state"
    out.write_text("someone's data\n")
    rc, _, err = _live(mm, tmp_path, "--state", str(state), "--out", str(out), "--count", "3")
    assert rc == 2 and err.count("\n") == 1 and "does not account for" in err, err
    assert out.read_text() == "someone's data\n" and not state.exists()
    rc, _, err = _live(mm, tmp_path, "--out", str(out), "--count", "3")  # without --state
    assert rc == 2 and "exists" in err and out.read_text() == "someone's data\n"
    # shorter than the state says: changed outside binlogscope
    out.write_text("x")
    ReplicaState(log_file="mysql-bin.000001", log_pos=4, out_length=100).save(state)
    rc, _, err = _live(mm, tmp_path, "--state", str(state), "--out", str(out), "--count", "3")
    assert rc == 2 and "fewer than the 100" in err, err
    assert out.read_text() == "x"
