"""``live`` and SIGPIPE: the output's reader going away ends the run quietly (exit 0, no
traceback), and ``main()`` called in-process leaves the process's SIGPIPE handling as it found
it (it used to set SIG_DFL for good: a thread of the same process that then wrote to a closed
socket killed the whole process - pytest itself, when the mock master served in-process)."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def _conn(mm: Any) -> list[str]:
    return ["--host", mm.host, "--port", str(mm.port), "-u", "repl", "--ssl-mode", "DISABLED",
            "--no-reconnect"]


def test_in_process_main_keeps_sigpipe_ignored(mock_master: Callable[..., Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    mm = mock_master(binlogs=[CAPTURE])
    before = signal.getsignal(signal.SIGPIPE)
    rc = main(["live", "--json", *_conn(mm), "--start", "mysql-bin.000001:4", "--count", "3"],
              out=io.StringIO(), err=io.StringIO())
    assert rc == 0
    assert signal.getsignal(signal.SIGPIPE) == before == signal.SIG_IGN


def test_reader_gone_ends_quietly(mock_master: Callable[..., Any], tmp_path: Path) -> None:
    mm = mock_master(binlogs=[CAPTURE])
    proc = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "live", "--json", *_conn(mm),
         "--start", "mysql-bin.000001:4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**__import__("os").environ, "MYSQL_PWD": "replpass", "HOME": str(tmp_path)})
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first.startswith(b"{")
    proc.stdout.close()  # as `| head -1` does after its line
    try:
        rc = proc.wait(timeout=30)
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    assert rc == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
