"""The list's columns: at 80 columns a binlog file keeps '# at', log_pos and the summary; a set of
files has a file column; ``C`` chooses the columns and the choice is saved and used next time."""

from __future__ import annotations

import json
from typing import Any

import pytest
from textual.widgets import SelectionList

from binlogscope.inspector.columns import config_path
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.columns import ColumnScreen
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import CRC, screen_lines, sync, wait_for
from tests.tui.test_file_set import FILES

pytestmark = pytest.mark.timeout(120)


async def _ready(app: BinlogScopeApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    assert isinstance(scr, MainScreen)
    await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
    return scr


def _line(app: Any, text: str) -> str:
    return next(line for line in screen_lines(app) if text in line)


@sync
async def test_eighty_columns_keep_position_log_pos_and_summary() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app)
        await pilot.pause(0.2)
        head = _line(app, " no. ")
        assert head.split() == ["no.", "time", "type", "table", "#", "at", "log_pos", "summary"]
        row = _line(app, " 5.7.21-log")  # the FORMAT_DESCRIPTION row: its summary
        assert row.split()[:5] == ["1", "08:23:58", "FORMAT_DESCRI…", "4", "123"]


@sync
async def test_a_set_of_files_has_a_file_column() -> None:
    app = BinlogScopeApp(BinlogSetSource(FILES))
    async with app.run_test(size=(120, 60)) as pilot:
        scr = await _ready(app)
        await pilot.pause(0.2)
        assert _line(app, " no. ").split()[:4] == ["no.", "time", "(UTC)", "file"]
        k = next(i for i in range(len(scr.source))
                 if scr.source.row(i).binlog_file == "binlog.000002")
        scr.events.cursor = k
        await wait_for(lambda: "binlog.000002" in _line(app, f" {k + 1} "))
        assert "binlog.000001" in "\n".join(screen_lines(app))


@sync
async def test_columns_are_chosen_saved_and_used_next_time() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        scr = await _ready(app)
        assert "gtid" not in _line(app, " no. ").split()
        await pilot.press("C")
        await wait_for(lambda: isinstance(app.screen, ColumnScreen))
        await pilot.pause(0.2)
        assert "Space shows / hides" in "\n".join(screen_lines(app))
        sl = app.screen.query_one(SelectionList)
        sl.select("gtid")
        sl.deselect("length")
        await pilot.press("enter")
        await wait_for(lambda: app.screen is scr)
        await wait_for(lambda: "gtid" in _line(app, " no. ").split())
        assert "len" not in _line(app, " no. ").split()
    saved = json.loads(config_path().read_text())
    assert "gtid" in saved["columns"]["file"] and "length" not in saved["columns"]["file"]
    # the next session over a binlog file starts with them
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(160, 30)) as pilot:
        scr = await _ready(app)
        await pilot.pause(0.2)
        assert "gtid" in _line(app, " no. ").split()
        assert "ANONYMOUS" in _line(app, " 3 ")
