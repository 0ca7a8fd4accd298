"""Snapshot tests (pytest-textual-snapshot) of the main screen and the help screen at 120x40.

Update the SVG baselines with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and review
them (open the report) before committing.
"""

from __future__ import annotations

from typing import Any

import pytest

from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.help import HelpScreen
from binlogscope.tui.screens.main import MainScreen
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


# ----------------------------------------------------------------------------- live session
def _live_app() -> tuple[BinlogScopeApp, Any]:
    """The live TUI over the mock master, with everything that varies pinned (times, ids)."""
    from binlogscope.inspector.sources.live import LiveSource
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster
    from tests.tui.test_live import CAPTURE, _settings

    # every replayed transaction asks for an ACK (the ACK rows and flags on screen)
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([CAPTURE])],
                                     ack_every_transaction=True)).start()

    class PinnedLive(LiveSource):
        def _item(self, item: Any) -> Any:
            it = super()._item(item)
            it.time = None  # (a packet's arrival time: pinned by the clock below)
            return it

        def info(self) -> Any:
            si = super().info()
            si.extra["events/s"] = "0"  # a rate: masked
            return si

    src = PinnedLive(_settings(mm))
    src.replica.state.slave_uuid = "00000000-0000-4000-8000-000000000001"
    src.label = "repl@mock-master"
    src.clock = lambda: 1_700_000_000.0
    return BinlogScopeApp(src), mm


async def _live_ack_event(pilot: Any) -> None:
    """Wait for the session to end; select the first event that asked for an ACK, its flag."""
    app = pilot.app
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    src = scr.source
    await wait_for(lambda: src.info().done and scr.events.row_count == len(src), 30)
    scr.follow = False
    row = next(i for i in range(len(src)) if src.row(i).semi_sync == "ef ACK?")
    scr.events.cursor = row
    await wait_for(lambda: scr.detail_row == row and scr.field is not None)
    flag = scr.detail.node.find("binlog_event.semi_sync_header.semi_sync_flag")
    tree = scr.query_one(FieldTree)
    tree.select_field(flag)
    await wait_for(lambda: scr.field is flag)
    # on a loaded machine the tree's expansion and cursor land a few refreshes later: wait
    # for them (not a fixed pause) before the screenshot
    await wait_for(lambda: tree.cursor_node is not None and tree.cursor_node.data is flag)
    scr.events.focus()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.5)
    await wait_for(lambda: tree.cursor_node is not None and tree.cursor_node.data is flag)
    # the tree's scroll offset depended on when its scroll-to-cursor ran (a short pane at
    # 80x24): start from the top and scroll the selected field into view once, without animation
    tree.scroll_home(animate=False, immediate=True)
    assert tree.cursor_node is not None
    tree.scroll_to_node(tree.cursor_node, animate=False)
    await pilot.pause(0.2)


def test_live_main_screen(snap_compare: Any) -> None:
    app, mm = _live_app()
    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=_live_ack_event)
    finally:
        mm.stop()


def test_live_main_screen_narrow(snap_compare: Any) -> None:
    app, mm = _live_app()
    try:
        assert snap_compare(app, terminal_size=(80, 24), run_before=_live_ack_event)
    finally:
        mm.stop()


# ----------------------------------------------------------------------------- prompts
def _typing(keys: tuple[str, ...]) -> Any:
    async def run(pilot: Any) -> None:
        await _write_rows_table_id(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
    return run


@pytest.mark.parametrize("keys", [
    ("f", *"type:WRITE table:simu"),  # typed text on the filter prompt
    ("g",),  # an empty prompt: its hint
    ("x", *"out.pcapng"),  # an export name (a typo must be visible)
], ids=["filter-typed", "goto-hint", "export-typed"])
def test_prompt_shows_what_is_typed(snap_compare: Any, keys: tuple[str, ...]) -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    assert snap_compare(app, terminal_size=SIZE, run_before=_typing(keys))


# ----------------------------------------------------------------------------- the tour
def _tour_step(k: int) -> Any:
    """The tour (``demo --tour``'s walk) over the semi-sync capture, moved to step ``k``:
    its row selected, its field lit, its explanation under the panes."""
    async def run(pilot: Any) -> None:
        from binlogscope.inspector.tour import STEPS
        from binlogscope.tui.widgets.tour_bar import TourBar

        app = pilot.app
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
        bar = scr.query_one(TourBar)
        await wait_for(lambda: bar.at == 0)
        for i in range(k):
            await pilot.press("right_square_bracket")

            def moved(i: int = i) -> bool:
                return bool(bar.at == i + 1)

            await wait_for(moved)
        step = STEPS[k]
        await wait_for(lambda: scr.detail_row == bar.rows[-1])
        if step.field:
            await wait_for(lambda: scr.field is not None and scr.detail is not None
                           and scr.field is scr.detail.node.find(step.field))
        tree = scr.query_one(FieldTree)
        await wait_for(lambda: tree.cursor_node is not None and tree.cursor_node.data is scr.field)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.3)
        tree.scroll_home(animate=False, immediate=True)
        if tree.cursor_node is not None:
            tree.scroll_to_node(tree.cursor_node, animate=False)
        await pilot.pause(0.2)
    return run


@pytest.mark.parametrize(("step", "size"), [(0, SIZE), (5, SIZE), (10, SIZE), (12, (80, 24))],
                         ids=["greeting", "dump-request", "rows", "semi-sync-80x24"])
def test_tour_step(snap_compare: Any, step: int, size: tuple[int, int]) -> None:
    from binlogscope.inspector.sources.pcap import PcapSource
    from tests.tui.test_tour import SEMISYNC

    app = BinlogScopeApp(PcapSource(SEMISYNC), tour=True)
    assert snap_compare(app, terminal_size=size, run_before=_tour_step(step))
