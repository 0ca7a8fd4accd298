"""A command on a terminal that can hang up: ``binlogscope ARGS`` with a pty's slave side as its
standard streams, in a session of its own that has no controlling terminal - as a command
started by a tmux pane's ``sh -c`` or an ssh session's shell is after the kernel detached the
terminal: when the terminal goes away (the master side closed), the kernel signals only the
session leader, so nothing but the dead terminal itself tells the command."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def terminal_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command on a (pseudo-)terminal of its own: this process's, less
    ``COLUMNS`` and ``LINES``: they override the terminal's own size. pytest imports GNU
    readline, which setenv()s COLUMNS=80 LINES=24 when there is no terminal - in the C
    environment, which children inherit, not in ``os.environ`` - so a pytest-xdist worker has
    them in ``os.environ``, and under xdist the TUI in a 110x30 tmux pane drew 80x24 and its
    toasts never showed in the captured pane."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **(extra or {}), "TERM": "xterm-256color",
            "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


class Terminal:
    def __init__(self, args: list[str], env: dict[str, str] | None = None,
                 cols: int = 160, rows: int = 40, stderr: Path | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full = terminal_env(env)
        self.proc = subprocess.Popen([sys.executable, "-m", "binlogscope", *args],
                                     stdin=slave, stdout=slave,
                                     stderr=slave if stderr is None else stderr.open("wb"),
                                     env=full, cwd=ROOT, start_new_session=True)
        os.close(slave)
        self.out = b""
        self.closed = False

    def read(self, wait: float = 0.2) -> None:
        if self.closed:
            return
        r, _, _ = select.select([self.master], [], [], wait)
        if r:
            try:
                self.out += os.read(self.master, 65536)
            except OSError:
                pass

    def wait_for(self, ready: bytes | Callable[[bytes], bool], timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.read()
            if ready(self.out) if callable(ready) else ready in self.out:
                return
            if self.proc.poll() is not None:
                break
        self.kill()
        raise AssertionError(f"not shown (exit {self.proc.returncode}): {self.out[-2000:]!r}")

    def hang_up(self) -> None:
        """The terminal goes away (a killed tmux server, a closed ssh connection)."""
        self.closed = True
        os.close(self.master)

    def ended_within(self, seconds: float) -> tuple[int, float]:
        """The exit status and how long the command took to end after now; fails (and kills
        it) if it is still alive after ``seconds``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            self.read(0.05)
            rc = self.proc.poll()
            if rc is not None:
                took = time.monotonic() - t0
                while not self.closed and self.proc.poll() is not None:
                    before = len(self.out)
                    self.read(0.1)
                    if len(self.out) == before:
                        break
                return rc, took
        self.kill()
        raise AssertionError(f"still running {seconds} s after the hang-up: "
                             f"{self.out[-2000:]!r}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if not self.closed:
            self.hang_up()
