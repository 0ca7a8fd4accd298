"""The prompts in a real terminal: ``binlogscope file`` in a tmux pane, keys sent as a person
types them, the pane captured as text (what tmux shows, not widget values)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pty_support import terminal_env
from tests.tui.conftest import CRC

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")]


class Pane:
    def __init__(self, socket: str, target: str) -> None:
        self.socket = socket
        self.target = target

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=True, timeout=20).stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.target, *(["-l"] if literal else []), *keys)

    def processes(self) -> list[int]:
        """The pane's process and every process under it (by pid)."""
        pids = [int(x) for x in self.tmux("list-panes", "-t", self.target, "-F",
                                           "#{pane_pid}").split()]
        seen: list[int] = []
        while pids:
            pid = pids.pop()
            seen.append(pid)
            try:
                kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            pids += [int(k) for k in kids]
        return seen

    def kill_server(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=20)

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.target)

    def wait(self, text: str, timeout: float = 30.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = self.text()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not in the pane:\n{self.text()}")


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    socket = f"binlogscope-test-{uuid.uuid4().hex[:8]}"
    env = terminal_env()
    cmd = f"{sys.executable} -m binlogscope file {CRC}; exec sleep 30"
    subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "t",
                    "-x", "110", "-y", "30", cmd], check=True, env=env, timeout=20)
    p = Pane(socket, "t")
    pids: list[int] = []
    try:
        yield p
        try:
            pids = p.processes()
        except subprocess.CalledProcessError:  # (the test killed the server itself)
            pass
    finally:
        p.kill_server()
    # a killed tmux leaves nothing behind: the binlogscope process under the pane ends too
    # (its terminal hung up; only the pane's shell gets the kernel's SIGHUP)
    assert _gone(pids, 10.0) == [], pids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # (a zombie has ended; its parent reaps it)


def _gone(pids: list[int], timeout: float) -> list[int]:
    """The pids of ``pids`` still alive after up to ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if _alive(pid)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def test_killing_tmux_ends_the_tui(pane: Pane) -> None:
    """The TUI under a pane whose tmux server is killed ends within seconds (it stayed alive
    for ever, blocked on its dead terminal)."""
    pane.wait("303 events")
    pids = pane.processes()
    tui = [pid for pid in pids
           if b"-m\x00binlogscope\x00" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(tui) == 1, pids
    pane.kill_server()
    assert _gone(tui, 5.0) == []


def test_prompts_show_typed_text_in_a_real_terminal(pane: Pane, tmp_path: Path) -> None:
    shown = pane.wait("303 events")
    assert "─" * 110 in shown, f"the TUI did not draw the whole 110-column pane:\n{shown}"
    pane.keys("f")
    pane.wait("Filter: empty: every row")  # the hint of an empty prompt
    pane.keys("type:WRITE", literal=True)
    first = pane.wait("Filter: type:WRITE").splitlines()[0]
    assert first.strip() == "Filter: type:WRITE"
    pane.keys("Enter")
    pane.wait("filter: type:WRITE (34 shown)")
    pane.keys("g")
    pane.wait("Go to: 1234")
    pane.keys("nonsense", literal=True)
    pane.wait("Go to: nonsense")
    pane.keys("Enter")
    pane.wait("is not a position")
    out = tmp_path / "typo.jsonl"
    pane.keys("x")
    pane.wait("Export view to: mysql-bin.checksum-crc32.view.jsonl")
    pane.keys(str(out), literal=True)
    pane.wait(f"Export view to: {out}")
    pane.keys("Enter")
    pane.wait("exported 34 event(s)")
    assert len(out.read_text().splitlines()) == 34
    pane.keys("q")
