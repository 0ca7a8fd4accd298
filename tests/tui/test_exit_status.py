"""The TUI's exit status: non-zero after a fatal error it showed (``binlogscope pcap`` on a
terminal, run in a pseudo-terminal, quit with ``q``), zero after a clean session."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from binlogscope.inspector.source import SourceInfo
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.tui import exit_status
from tests.tui.conftest import CRC

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def run_in_pty(args: list[str], ready: bytes | Callable[[bytes], bool], timeout: float = 60.0,
               key: bytes | int = b"q") -> tuple[int, bytes]:
    """Run ``python -m binlogscope ARGS`` on a pty; press ``key`` (an int: send that signal)
    once ``ready`` shows up in the output (or ``ready(output)`` is true)."""
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.environ["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
        os.environ["TERM"] = "xterm-256color"
        os.environ["COLUMNS"], os.environ["LINES"] = "160", "40"
        os.execv(sys.executable, [sys.executable, "-m", "binlogscope", *args])
    out = b""
    end = time.monotonic() + timeout
    sent = False
    status = None
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            out += chunk
        if not sent and (ready(out) if callable(ready) else ready in out):
            time.sleep(0.5)
            if isinstance(key, int):
                os.kill(pid, key)
            else:
                os.write(fd, key)
            sent = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError(f"the TUI did not end: {out[-2000:]!r}")
    while True:  # what the command wrote last (its summary line)
        r, _, _ = select.select([fd], [], [], 0.2)
        try:
            chunk = os.read(fd, 65536) if r else b""
        except OSError:
            chunk = b""
        if not chunk:
            break
        out += chunk
    os.close(fd)
    assert status is not None
    return os.waitstatus_to_exitcode(status), out


def test_fatal_error_in_the_tui_exits_non_zero(tmp_path: Path) -> None:
    bad = tmp_path / "cut.pcap"
    good = (ROOT / "captures" / "pcap-semisync.pcap").read_bytes()
    bad.write_bytes(good[:24] + b"\xff" * 40)  # a frame header that claims 4 GiB
    rc, out = run_in_pty(["pcap", str(bad)], b"truncated capture")
    assert rc == 1
    assert b"binlogscope: error:" in out and b"truncated capture" in out


def test_clean_session_exits_zero() -> None:
    rc, _ = run_in_pty(["file", str(CRC)], b"303 events")
    assert rc == 0


def test_exit_status_function() -> None:
    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    assert exit_status(src, None) == 0
    info = SourceInfo(label="x", fatal="boom")

    class Broken(BinlogFileSource):
        def info(self) -> SourceInfo:
            return info

    assert exit_status(Broken(CRC), open(os.devnull, "w")) == 1  # noqa: SIM115
