"""The Textual inspector: only Textual code (app, screens, widgets, messages, app.tcss).

What it shows comes from :mod:`binlogscope.inspector` (sources, view, exports), which has no UI.
"""

from __future__ import annotations

import signal
import sys
from typing import Any, TextIO

from binlogscope.inspector.source import Detail, Row, RowSource, SourceInfo

__all__ = ["Detail", "Row", "RowSource", "SourceInfo", "exit_status", "run_tui"]


def run_tui(source: RowSource, *, table_regex: str | None = None, err: TextIO | None = None,
            tour: bool = False, teach: str | None = None) -> int:
    """Run the inspector on ``source`` until the user quits; returns the exit status: 1 when
    the source ended on a fatal error (shown in the status bar; repeated on ``err``, default
    stderr, once the terminal is back), else 0.

    ``table_regex`` (the CLI's ``--table``) starts the view filtered on schema.table (full match).
    ``tour`` starts the guided tour; ``teach`` (the in-process demo's own password, nowhere
    else) lets the tour recompute the login proof from the scramble.
    """
    import re

    from binlogscope.inspector.view import RowFilter
    from binlogscope.tui.app import BinlogScopeApp

    flt = RowFilter(table=re.compile(f"^(?:{table_regex})$")) if table_regex else None
    app = BinlogScopeApp(source, flt, tour=tour, teach=teach)
    from binlogscope.drivers.hangup import watch_hangup

    previous = _quit_on_signals(app)
    # a terminal that hangs up without a SIGHUP for this process (a killed tmux, a closed ssh
    # session under `sh -c`) sends it one: Textual alone takes the dead terminal's end-of-file
    # for piped input and runs on for ever
    unwatch = watch_hangup() if previous else (lambda: None)
    try:
        app.run()
    finally:
        unwatch()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        stop = getattr(source, "stop", None)
        if callable(stop):
            stop()  # a live session: close the connection (never blocks)
    return exit_status(source, err)


def _quit_on_signals(app: Any) -> dict[int, Any]:
    """SIGINT (a ``kill``: Ctrl-C is a key while the TUI runs), SIGTERM and SIGHUP quit the TUI
    as ``q`` does: the terminal is restored and the command ends cleanly. Returns the handlers
    to put back."""
    import asyncio
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def quit_app(_signum: int, _frame: object) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # (not running yet or any more)
        loop.call_soon_threadsafe(app.exit)

    previous: dict[int, Any] = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, quit_app)
    return previous


def exit_status(source: RowSource, err: TextIO | None) -> int:
    """1 (and the error repeated on ``err``, default stderr) when ``source`` ended on a fatal
    error, else 0."""
    fatal = source.info().fatal
    if fatal:
        print(f"binlogscope: error: {fatal}", file=err or sys.stderr)
        return 1
    return 0
