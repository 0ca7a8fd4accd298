"""The test run's guards (tests/suite_guards.py): the deadline stops a hung run, says where it
stood and ends the processes it started; SIGPIPE left changed by a test is caught."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import suite_guards

ROOT = Path(__file__).resolve().parents[1]

HUNG = textwrap.dedent("""
    import subprocess, sys, time
    from tests import suite_guards
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    suite_guards.arm(1.0)
    def stuck_here():
        time.sleep(120)
    stuck_here()
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_deadline_stops_a_hung_run_and_its_children() -> None:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", HUNG], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    took = time.monotonic() - t0
    assert done.returncode == suite_guards.EXIT_STATUS, (done.returncode, done.stderr)
    assert took < 30, took
    assert "BINLOGSCOPE_TEST_DEADLINE: the test run is still going after 1 s" in done.stderr
    assert "stuck_here" in done.stderr  # where the main thread stood
    child = int(done.stdout.split()[0])
    end = time.monotonic() + 10
    while _alive(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(child), "the run's child process outlived the deadline"


def test_the_deadline_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for text, seconds in (("", None), ("0", None), (" 2700 ", 2700.0), ("1.5", 1.5)):
        monkeypatch.setenv(suite_guards.ENV, text)
        assert suite_guards.deadline() == seconds
    monkeypatch.delenv(suite_guards.ENV)
    assert suite_guards.deadline() is None
    monkeypatch.setenv(suite_guards.ENV, "45m")
    with pytest.raises(ValueError, match="number of seconds"):
        suite_guards.deadline()


def test_sigpipe_left_at_its_default_is_caught_and_put_back() -> None:
    before = signal.getsignal(signal.SIGPIPE)
    with pytest.raises(suite_guards.SigpipeChangedError, match="SIGPIPE left at"), \
            suite_guards.sigpipe_kept():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    assert signal.getsignal(signal.SIGPIPE) == before
    with suite_guards.sigpipe_kept():  # changed and put back: nothing to say
        old = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, old)
