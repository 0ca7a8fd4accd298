"""Snapshot tests (pytest-textual-snapshot) of the main screen and the help screen at 120x40.

Update the SVG baselines with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and review
them (open the report) before committing.
"""

from __future__ import annotations

from typing import Any

import pytest

from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.help import HelpScreen
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.sources.binlog_file import BinlogFileSource
from binlogscope.tui.widgets.field_tree import FieldTree
from tests.tui.conftest import CRC, wait_for

pytestmark = pytest.mark.timeout(120)
SIZE = (120, 40)


async def _write_rows_table_id(pilot: Any) -> None:
    """Select the WRITE_ROWS event at 384 and its body.table_id field."""
    app = pilot.app
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    await wait_for(lambda: scr.source.info().done and scr.events.row_count == 303)
    scr.events.cursor = 5
    await wait_for(lambda: scr.detail_row == 5 and scr.field is not None)
    scr.query_one(FieldTree).select_field(scr.detail.node.find("body.table_id"))
    await wait_for(lambda: scr.field is not None and scr.field.name == "table_id")
    scr.events.focus()
    await pilot.pause()


def test_main_screen(snap_compare: Any) -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    assert snap_compare(app, terminal_size=SIZE, run_before=_write_rows_table_id)


def test_main_screen_narrow(snap_compare: Any) -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_write_rows_table_id)


def test_help_screen(snap_compare: Any) -> None:
    async def open_help(pilot: Any) -> None:
        await _write_rows_table_id(pilot)
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(pilot.app.screen, HelpScreen))
        await pilot.pause()

    app = BinlogScopeApp(BinlogFileSource(CRC))
    assert snap_compare(app, terminal_size=SIZE, run_before=open_help)
