"""The Textual inspector: only Textual code (app, screens, widgets, messages, app.tcss).

What it shows comes from :mod:`binlogscope.inspector` (sources, view, exports), which has no UI.
"""

from __future__ import annotations

import sys
from typing import TextIO

from binlogscope.inspector.source import Detail, Row, RowSource, SourceInfo

__all__ = ["Detail", "Row", "RowSource", "SourceInfo", "exit_status", "run_tui"]


def run_tui(source: RowSource, *, table_regex: str | None = None, err: TextIO | None = None
            ) -> int:
    """Run the inspector on ``source`` until the user quits; returns the exit status: 1 when
    the source ended on a fatal error (shown in the status bar; repeated on ``err``, default
    stderr, once the terminal is back), else 0.

    ``table_regex`` (the CLI's ``--table``) starts the view filtered on schema.table (full match).
    """
    import re

    from binlogscope.inspector.view import RowFilter
    from binlogscope.tui.app import BinlogScopeApp

    flt = RowFilter(table=re.compile(f"^(?:{table_regex})$")) if table_regex else None
    app = BinlogScopeApp(source, flt)
    try:
        app.run()
    finally:
        stop = getattr(source, "stop", None)
        if callable(stop):
            stop()  # a live session: close the connection (never blocks)
    return exit_status(source, err)


def exit_status(source: RowSource, err: TextIO | None) -> int:
    """1 (and the error repeated on ``err``, default stderr) when ``source`` ended on a fatal
    error, else 0."""
    fatal = source.info().fatal
    if fatal:
        print(f"binlogscope: error: {fatal}", file=err or sys.stderr)
        return 1
    return 0
