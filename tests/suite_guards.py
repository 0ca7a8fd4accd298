"""Guards of the whole test run.

A deadline:  ``BINLOGSCOPE_TEST_DEADLINE=SECONDS`` (scripts/test.sh
sets it; unset or 0: none). A run still going at its deadline - a hung pytest-xdist scheduler, a
test that the per-test ``timeout`` cannot interrupt - prints where every thread of the pytest
process stands, ends the processes it started (the xdist workers) and exits with status 1,
instead of waiting for CI's own limit with nothing said.

Armed in pytest's main process only (tests/conftest.py's ``pytest_configure``), not in an xdist
worker; a thread, not ``faulthandler.dump_traceback_later``, which pytest cancels whenever a
test fails.

SIGPIPE kept (:func:`sigpipe_kept`, around every test): a test that left SIGPIPE at its default
(``pcap`` run in-process did) made a later test's write to a socket whose peer had gone kill the
whole process - under pytest-xdist a dead worker, and xdist's loadgroup scheduler then waited
for ever."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "BINLOGSCOPE_TEST_DEADLINE"
EXIT_STATUS = 1

_timer: threading.Timer | None = None


class SigpipeChangedError(AssertionError):
    pass


@contextmanager
def sigpipe_kept() -> Iterator[None]:
    """Raises :class:`SigpipeChangedError` (after putting it back) when the body leaves SIGPIPE's
    handling other than it found it."""
    before = signal.getsignal(signal.SIGPIPE)
    yield
    after = signal.getsignal(signal.SIGPIPE)
    if after != before:
        signal.signal(signal.SIGPIPE, before)
        raise SigpipeChangedError(f"SIGPIPE left at {after!r} (it was {before!r}): a later "
                                  "write to a socket whose peer has gone would kill the "
                                  "test process")


def deadline() -> float | None:
    """The seconds ``BINLOGSCOPE_TEST_DEADLINE`` gives, None when unset or 0; ValueError for
    anything but a number."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"{ENV}={text!r}: expected a number of seconds (0: no deadline)") from None
    return seconds if seconds > 0 else None


def arm(seconds: float) -> None:
    """Start the deadline (once per process)."""
    global _timer
    if _timer is not None:
        return
    _timer = threading.Timer(seconds, _expired, args=(seconds,))
    _timer.daemon = True
    _timer.name = "binlogscope-test-deadline"
    _timer.start()


def disarm() -> None:
    global _timer
    if _timer is not None:
        _timer.cancel()
        _timer = None


def _children() -> list[int]:
    """This process's child processes (Linux; none found elsewhere)."""
    pids: list[int] = []
    for task in Path("/proc/self/task").glob("*/children"):
        try:
            pids += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    return pids


def _expired(seconds: float) -> None:
    err = sys.__stderr__
    if err is not None:
        err.write(f"\n\n{ENV}: the test run is still going after {seconds:g} s - stopped. "
                  "Where each thread of the pytest process stands:\n")
        err.flush()
        faulthandler.dump_traceback(file=err, all_threads=True)
        err.flush()
    for pid in _children():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(EXIT_STATUS)
