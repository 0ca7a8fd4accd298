"""drivers/hangup.py: a terminal that hangs up ends the run as SIGHUP does - also when a write
sees the dead terminal (EIO) before the watcher thread sees its POLLHUP, as happens when the
watcher is starved on a loaded machine (seen: a proxy TUI that lived on after the hang-up)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the command's side: a watch on its terminal (stdout), a SIGHUP handler that notes the signal,
# and a watcher thread whose poll runs only once a write has seen EIO and terminal_hung_up has
# pointed the stream at /dev/null (the order a starved watcher thread sees things in)
_CHILD = r"""
import os, select, signal, sys, threading, time, types
from binlogscope.drivers import hangup

got = []
signal.signal(signal.SIGHUP, lambda signum, frame: got.append(signum))
eio_seen = threading.Event()


class LatePoll:
    def __init__(self):
        self._poll = select.poll()
    def register(self, fd, mask):
        self._poll.register(fd, mask)
    def unregister(self, fd):
        self._poll.unregister(fd)
    def poll(self, ms):
        if threading.current_thread().name == "binlogscope-hangup":
            eio_seen.wait(20)
        return self._poll.poll(ms)


hangup.select = types.SimpleNamespace(poll=LatePoll, POLLHUP=select.POLLHUP,
                                      POLLNVAL=select.POLLNVAL)
unwatch = hangup.watch_hangup()
print("ready", file=sys.stderr, flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        os.write(1, b"x")
    except OSError as exc:
        print("eio" if hangup.terminal_hung_up(exc) else f"other {exc}", file=sys.stderr,
              flush=True)
        break
    time.sleep(0.01)
eio_seen.set()
end = time.monotonic() + 10
while not got and time.monotonic() < end:
    time.sleep(0.02)
os.write(1, b"still writable")  # (/dev/null now: no EIO)
print("sighup" if got else "no sighup", file=sys.stderr, flush=True)
unwatch()
"""


def test_a_hang_up_first_seen_by_a_write_still_ends_the_run_as_sighup() -> None:
    master, slave = os.openpty()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    os.close(slave)
    assert proc.stderr is not None
    try:
        assert proc.stderr.readline() == b"ready\n"
        time.sleep(0.1)  # (a few writes reach the terminal first)
        os.close(master)  # the terminal goes away
        master = -1
        said = proc.stderr.read().decode()
        assert proc.wait(30) == 0, said
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert said.splitlines() == ["eio", "sighup"], said
