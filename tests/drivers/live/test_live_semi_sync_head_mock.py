"""``live --non-blocking --semi-sync`` against the mock master (a MariaDB-flavoured source that,
unlike MariaDB's semi-sync source, would end a non-blocking dump): binlogscope's blocking dump
ends at the head SHOW MASTER STATUS reported - here the real ROTATE that ends the served file,
as a binlog copied from a server that rotated ends - and every event up to it is shown."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.drivers.live import replica as live_replica
from binlogscope.drivers.live.items import LiveError
from mock_master.serve.server import ThreadedMockMaster
from tests.watch_support import RefusedKill, acking_master

CAPTURE = Path(__file__).resolve().parents[3] / "captures" / "mariadb-10.11-workload.000001"


@pytest.fixture
def master() -> Iterator[ThreadedMockMaster]:
    with acking_master() as mm:
        yield mm


def _live(mm: ThreadedMockMaster, *args: str) -> subprocess.CompletedProcess[str]:
    first = mm.master.stream.files[0].name
    env = dict(os.environ, MYSQL_PWD="replpass")
    return subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1",
                           "--port", str(mm.port), "-u", "repl", "--ssl-mode", "DISABLED",
                           "--json", "--start", f"{first}:4", "--non-blocking", *args],
                          capture_output=True, text=True, timeout=30, env=env,
                          stdin=subprocess.DEVNULL)


def _events(out: str) -> list[tuple[str, int, str]]:
    lines = [json.loads(x) for x in out.splitlines()]
    return [(x["binlog_file"], x["log_pos"], x["event_type"]) for x in lines
            if x.get("kind") == "binlog_event" and x.get("log_pos")]


def test_semi_sync_non_blocking_ends_at_the_rotate_that_ends_the_head_file(
        master: ThreadedMockMaster) -> None:
    plain = _live(master)
    assert plain.returncode == 0, plain.stderr
    # (the old head check passed over every ROTATE: the blocking dump waited past this one
    # for a file that never came, and this timed out)
    semi = _live(master, "--semi-sync")
    assert semi.returncode == 0, semi.stderr
    want, got = _events(plain.stdout), _events(semi.stdout)
    assert got == want and got[-1][2] == "ROTATE_EVENT"
    assert got[-1][1] == CAPTURE.stat().st_size  # the head: the served file's size
    lines = [json.loads(x) for x in semi.stdout.splitlines()]
    notes = [x["text"] for x in lines if x.get("kind") == "note"]
    assert any(f"the head {got[-1][0]}:{got[-1][1]}" in t for t in notes), notes
    assert "end of the binlog" in semi.stderr and "Traceback" not in semi.stderr


class _AlreadyGone(RefusedKill):
    """The dump thread ended before the KILL came (it met the closed socket first)."""

    def __call__(self, sql: str) -> list[list[bytes | None]]:
        raise LiveError("ERR 1094 Unknown thread id: 7", 1094)


@pytest.mark.parametrize("args", [["--count", "3"], ["--non-blocking"]],
                         ids=["count", "head"])
def test_a_refused_kill_is_one_warning_line_and_the_exit_status_stands(
        master: ThreadedMockMaster, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.setattr(live_replica, "InformationSchema", RefusedKill)
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    first = master.master.stream.files[0].name
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--host", "127.0.0.1", "--port", str(master.port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--json", "--semi-sync", "--start", f"{first}:4",
               *args], out, err)
    assert rc == 0, err.getvalue()
    warnings = [x for x in err.getvalue().splitlines() if "could not KILL" in x]
    assert len(warnings) == 1, err.getvalue()
    assert warnings[0].startswith("binlogscope: warning: could not KILL the dump's thread ")
    assert "ERR 1095" in warnings[0] and "Traceback" not in err.getvalue()


@pytest.mark.parametrize("count", [None, "3"], ids=["head", "count"])
def test_the_mock_master_takes_the_kill_of_the_dump_thread(
        master: ThreadedMockMaster, count: str | None) -> None:
    semi = _live(master, "--semi-sync", *(["--count", count] if count else []))
    assert semi.returncode == 0, semi.stderr
    assert "warning" not in semi.stderr and "Traceback" not in semi.stderr
    if count is None:  # (a stop: the consumer reads no more items, the KILL is not listed)
        steps = [json.loads(x) for x in semi.stdout.splitlines() if '"KILL CONNECTION' in x]
        assert len(steps) == 1 and steps[0]["kind"] == "step", steps


@pytest.mark.parametrize("args", [["--count", "3"], ["--non-blocking"]],
                         ids=["count", "head"])
def test_a_dump_thread_that_already_ended_is_no_warning(
        master: ThreadedMockMaster, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    """ERR 1094 (no such thread) to the KILL: the thread is gone, as the KILL wanted (the
    mock master, serving a short file, often closes it first at --count)."""
    monkeypatch.setattr(live_replica, "InformationSchema", _AlreadyGone)
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    first = master.master.stream.files[0].name
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--host", "127.0.0.1", "--port", str(master.port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--json", "--semi-sync", "--start", f"{first}:4",
               *args], out, err)
    assert rc == 0 and "warning" not in err.getvalue(), err.getvalue()
    if "--non-blocking" in args:
        assert "it had already ended" in out.getvalue()
