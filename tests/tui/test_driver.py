"""Textual's writer thread survives a terminal that refuses writes (EIO after a hang-up): the
TUI's driver hands it :class:`TerminalOut`. With the terminal's own stream, the thread ended at
the first refused write, its queue of 30 filled, and the app's shutdown blocked for ever on
putting its stop marker (a TUI of a killed tmux, in a futex 20 min later)."""

from __future__ import annotations

import errno
import threading

import pytest
from textual.drivers._writer_thread import WriterThread

from binlogscope.tui.driver import HangupSafeDriver, TerminalOut

pytestmark = pytest.mark.timeout(60)


class DeadTerminal:
    """A stream every write and flush of which fails as a hung-up terminal's do."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def fileno(self) -> int:
        return 2

    def isatty(self) -> bool:
        return False


def _stops(file: object) -> bool:
    """Whether a writer thread over ``file`` takes 100 frames and stops within 5 s."""
    writer = WriterThread(file)  # type: ignore[arg-type]
    writer.start()

    def frames() -> None:
        for n in range(100):
            writer.write(f"frame {n}")
        writer.stop()

    t = threading.Thread(target=frames, daemon=True)
    t.start()
    t.join(5)
    stopped = not t.is_alive()
    while t.is_alive():  # (blocked: drain the queue the dead thread left, so it ends)
        while not writer._queue.empty():
            writer._queue.get_nowait()
        t.join(0.05)
    return stopped


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_the_writer_thread_survives_a_dead_terminal() -> None:
    assert _stops(TerminalOut(DeadTerminal()))  # type: ignore[arg-type]
    assert not _stops(DeadTerminal())  # (the terminal's own stream: the thread died, blocked)


def test_the_tui_runs_on_that_driver() -> None:
    from textual.drivers.linux_driver import LinuxDriver

    from binlogscope.inspector.sources.binlog_file import BinlogFileSource
    from binlogscope.tui.app import BinlogScopeApp
    from tests.tui.conftest import CRC

    app = BinlogScopeApp(BinlogFileSource(CRC))
    cls = app.get_driver_class()
    assert cls is HangupSafeDriver and issubclass(cls, LinuxDriver)
