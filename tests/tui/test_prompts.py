"""The prompts (f filter, / search, g go to, x / X export) as a person sees them: what is typed is
on the screen, the hints show on an empty prompt, history walks visibly; termshark habits
(``G``, ``g`` on a file set, ``g nonsense``, an empty filter clears it)."""

from __future__ import annotations

from typing import Any

import pytest

from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.tui.app import BinlogScopeApp
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


async def _seen(pilot: Any, text: str, line: int | None = None) -> None:
    """Wait until ``text`` is on the screen (on line ``line`` when given); a toast wraps its
    message: look for a part that fits on one of its lines."""
    def there() -> bool:
        lines = screen_lines(pilot.app)
        return text in (lines[line] if line is not None else "\n".join(lines))
    try:
        await wait_for(there, 5)
    except AssertionError:
        raise AssertionError(f"{text!r} not on the screen:\n"
                             + "\n".join(screen_lines(pilot.app))
                             + f"\nnotifications: {list(pilot.app._notifications)}") from None


@sync
async def test_every_prompt_shows_what_is_typed_and_its_hint() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        scr = await _ready(app)
        for key, title, hint in (("f", "Filter:", "empty: every row; type:WRITE"),
                                 ("slash", "Search:", "text in type, table or summary"),
                                 ("g", "Go to:", "1234 (position in this file)")):
            await pilot.press(key)
            await _seen(pilot, f"{title} {hint}", 0)  # the placeholder: an empty prompt
            await pilot.press(*"abc")
            await _seen(pilot, f"{title} abc", 0)
            assert hint not in screen_lines(app)[0]
            await pilot.press("escape")
            await wait_for(lambda: "abc" not in screen_lines(app)[0])
        # the export prompts open with a proposed name, visible and replaced by typing
        await pilot.press("x")
        await _seen(pilot, "Export view to: mysql-bin.checksum-crc32.view.jsonl", 0)
        await pilot.press(*"out.pcapng")
        await _seen(pilot, "Export view to: out.pcapng", 0)
        await pilot.press("escape")
        await pilot.press("X")
        await _seen(pilot, "Export event to: mysql-bin.checksum-crc32.4.json", 0)
        await pilot.press("backspace")
        await _seen(pilot, "Export event to: NAME.json (the tree) or NAME.bin", 0)
        await pilot.press("escape")
        assert scr.events.has_focus


@sync
async def test_filter_history_is_visible_and_an_empty_enter_clears_the_filter() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        scr = await _ready(app)
        await pilot.press("f", *"type:WRITE", "enter")
        await wait_for(lambda: scr.view.filter.active and len(scr.view) == 34)
        await _seen(pilot, "filter: type:WRITE (34 shown)")
        # the filter prompt opens on the current filter, selected: Backspace empties it
        await pilot.press("f")
        await _seen(pilot, "Filter: type:WRITE", 0)
        await pilot.press("backspace")
        await _seen(pilot, "Filter: empty: every row", 0)  # the hint again
        await pilot.press("up")  # history
        await _seen(pilot, "Filter: type:WRITE ", 0)
        await pilot.press("down")
        await _seen(pilot, "Filter: empty: every row", 0)
        await pilot.press("enter")
        await wait_for(lambda: not scr.view.filter.active and len(scr.view) == 303)
        await wait_for(lambda: "filter:" not in "\n".join(screen_lines(app)))


@sync
async def test_goto_nonsense_says_what_g_takes_and_shift_g_goes_to_the_end() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        scr = await _ready(app)
        await pilot.press("G")
        await wait_for(lambda: scr.events.cursor == 302)
        await pilot.press("home")
        await wait_for(lambda: scr.events.cursor == 0)
        await pilot.press("g", *"nonsense", "enter")
        await _seen(pilot, "'nonsense' is not a position")
        assert "int()" not in "\n".join(screen_lines(app))
        await pilot.press("g", *"#999", "enter")
        await _seen(pilot, "no row 999")
        await pilot.press("g", *"384", "enter")
        await wait_for(lambda: scr.events.current_row == 5)


@sync
async def test_goto_a_bare_position_on_a_file_set_is_in_the_selected_rows_file() -> None:
    app = BinlogScopeApp(BinlogSetSource(FILES))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        scr = await _ready(app)
        src = scr.source
        k = next(i for i in range(len(src)) if src.row(i).binlog_file == "binlog.000002")
        target = src.row(k + 3)
        assert target.file_pos is not None
        # in the first file that position is another event (or none): from a row of the
        # second file, the bare number means the second file
        scr.events.cursor = k + 1
        await wait_for(lambda: scr.events.current_row == k + 1)
        await pilot.press("g", *str(target.file_pos), "enter")
        await wait_for(lambda: scr.events.current_row == k + 3)
        big = 10_000_000
        await pilot.press("g", *str(big), "enter")
        await _seen(pilot, "no event at position 10,000,000")
        assert any("in binlog.000002" in str(n.message) for n in app._notifications)
        await pilot.press("g", *"binlog.000009:4", "enter")
        await _seen(pilot, "no file binlog.000009")
