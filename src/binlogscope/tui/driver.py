"""Textual's terminal driver, kept alive when the terminal hangs up.

Textual writes every frame through one writer thread (``textual.drivers._writer_thread``) that
takes them from a queue of 30. A write the hung-up terminal refuses (EIO) ends that thread with
an exception; the queue then fills and the next write - at the latest the app's shutdown,
which puts its stop marker - blocks the main thread for ever (seen: a ``binlogscope file`` TUI
of a killed tmux, blocked in a futex 20 min later). :class:`HangupSafeDriver` gives the writer
thread a stream that drops what the gone terminal refuses, after pointing the hung-up streams
at ``/dev/null`` (``drivers/hangup.py``, whose watcher then ends the TUI as SIGHUP does).
"""

from __future__ import annotations

from typing import IO, Any, cast

from textual.drivers.linux_driver import LinuxDriver

from binlogscope.drivers.hangup import terminal_hung_up


class TerminalOut:
    """The stream Textual's writer thread writes to: ``file``, where an OSError (a terminal
    that hung up) drops the text instead of ending the thread."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file

    def write(self, text: str) -> int:
        try:
            return self._file.write(text)
        except OSError as exc:
            terminal_hung_up(exc)  # (its streams now go to /dev/null)
            return len(text)

    def flush(self) -> None:
        try:
            self._file.flush()
        except OSError as exc:
            terminal_hung_up(exc)

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return self._file.isatty()


class HangupSafeDriver(LinuxDriver):
    """Textual's Linux driver whose writer thread survives a terminal that hung up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        file: Any = self._file
        if file is not None:
            self._file = cast(Any, TerminalOut(file))
