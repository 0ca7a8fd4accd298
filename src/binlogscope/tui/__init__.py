"""The Textual inspector (the only package besides cli.py that may import textual)."""

from __future__ import annotations

from binlogscope.tui.source import Detail, Row, RowSource, SourceInfo

__all__ = ["Detail", "Row", "RowSource", "SourceInfo", "run_tui"]


def run_tui(source: RowSource, *, table_regex: str | None = None) -> int:
    """Run the inspector on ``source`` until the user quits; returns the exit status.

    ``table_regex`` (the CLI's ``--table``) starts the view filtered on schema.table (full match).
    """
    import re

    from binlogscope.tui.app import BinlogScopeApp
    from binlogscope.tui.view import RowFilter

    flt = RowFilter(table=re.compile(f"^(?:{table_regex})$")) if table_regex else None
    app = BinlogScopeApp(source, flt)
    try:
        app.run()
    finally:
        stop = getattr(source, "stop", None)
        if callable(stop):
            stop()  # a live session: close the connection (never blocks)
    return 0
