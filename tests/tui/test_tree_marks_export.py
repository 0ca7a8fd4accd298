"""Pilot tests: expand all / collapse all in the field tree, previous bookmark and the bookmark
list, ``x`` never overwriting a file, copy also saving the value to a file (no OSC 52)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlogscope.inspector.actions import free_path
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.bookmarks import BookmarkScreen
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_tree import FieldTree
from tests.tui.conftest import CRC, sync, wait_for

pytestmark = pytest.mark.timeout(120)

WRITE_ROW = 5  # WRITE_ROWS_EVENT at 384


async def _ready(app: BinlogScopeApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    assert isinstance(scr, MainScreen)
    await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
    await wait_for(lambda: scr.detail is not None)
    return scr


async def _select(scr: MainScreen, row: int) -> None:
    scr.events.cursor = row
    await wait_for(lambda: scr.detail_row == row and scr.field is not None)


def _visible(tree: FieldTree) -> int:
    return len(tree._tree_lines)


@sync
async def test_expand_all_and_collapse_all() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select(scr, WRITE_ROW)
        tree = scr.query_one(FieldTree)
        assert scr.detail is not None
        every = sum(1 for _ in scr.detail.node.walk())
        before = _visible(tree)
        assert before < every
        await pilot.press("plus")
        await pilot.pause()
        assert _visible(tree) == every  # every field of the event on its own line
        await pilot.press("minus")
        await pilot.pause()
        assert _visible(tree) == 1 + len(scr.detail.node.children)
        assert tree.cursor_node is tree.root
        await pilot.press("asterisk")
        await pilot.pause()
        assert _visible(tree) == every


@sync
async def test_previous_bookmark_and_bookmark_list() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        for r in (3, 10, 20):
            scr.events.cursor = r
            await pilot.press("b")
        assert scr.events.bookmarks == {3, 10, 20}
        scr.events.cursor = 15
        await pilot.press("ctrl+b")
        await wait_for(lambda: scr.events.current_row == 10)
        await pilot.press("ctrl+b")
        await wait_for(lambda: scr.events.current_row == 3)
        await pilot.press("ctrl+b")  # wraps to the last one
        await wait_for(lambda: scr.events.current_row == 20)
        await pilot.press("B")
        await wait_for(lambda: scr.events.current_row == 3)
        await pilot.press("m")
        await wait_for(lambda: isinstance(app.screen, BookmarkScreen))
        await pilot.press("down", "enter")  # from #4 (row 3) to #11 (row 10)
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        await wait_for(lambda: scr.events.current_row == 10)


def test_free_path(tmp_path: Path) -> None:
    p = tmp_path / "view.jsonl"
    assert free_path(p) == p
    p.write_text("x")
    assert free_path(p) == tmp_path / "view-1.jsonl"
    (tmp_path / "view-1.jsonl").write_text("x")
    assert free_path(p) == tmp_path / "view-2.jsonl"
    d = tmp_path / "ds"
    d.mkdir()
    assert free_path(d) == tmp_path / "ds-1"


@sync
async def test_export_does_not_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "view.jsonl"
    out.write_text("precious\n")
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await pilot.press("x")
        scr.query_one("#prompt-input").value = str(out)  # type: ignore[attr-defined]
        await pilot.press("enter")
        new = tmp_path / "view-1.jsonl"
        await wait_for(lambda: new.exists() and len(new.read_text().splitlines()) == 303)
        await wait_for(lambda: any(str(new) in str(n.message) and "not overwritten"
                                   in str(n.message) for n in app._notifications))
    assert out.read_text() == "precious\n"
    assert json.loads(new.read_text().splitlines()[0])["offset"] == 4


@sync
async def test_copy_also_saves_and_shows_the_value(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    clip = run / "binlogscope" / "clipboard.txt"
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select(scr, WRITE_ROW)
        assert scr.detail is not None
        scr.query_one(FieldTree).select_field(scr.detail.node.find("header.event_size"))
        await wait_for(lambda: scr.field is not None and scr.field.name == "event_size")
        await pilot.press("c")
        assert app.clipboard == "66 00 00 00"
        assert clip.read_text() == "66 00 00 00\n"
        assert clip.stat().st_mode & 0o777 == 0o600
        assert clip.parent.stat().st_mode & 0o777 == 0o700
        await pilot.press("v")
        assert clip.read_text() == "102\n"
        msgs = [str(n.message) for n in app._notifications]
        assert any("event_size value: 102" in m and str(clip) in m for m in msgs)
