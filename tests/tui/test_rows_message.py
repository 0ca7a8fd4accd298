"""New rows reach the TUI by a message (issue 25 item 7): the source's RowSignal posts one
RowsAdded, a newer one replaces a pending one, and the screen polls nothing for a file."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from binlogscope.inspector.source import RowSignal
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.messages import RowsAdded
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import CRC, screen_lines, sync, wait_for

pytestmark = pytest.mark.timeout(120)


def test_the_signal_notifies_once_until_rearmed() -> None:
    calls: list[int] = []
    sig = RowSignal()
    sig()  # nobody listens: nothing
    sig.listen(lambda: calls.append(1))
    for _ in range(1000):
        sig()
    assert calls == [1]
    sig.rearm()
    sig()
    assert calls == [1, 1]
    assert RowsAdded().can_replace(RowsAdded())


class GatedFile(BinlogFileSource):
    """Indexes its file only once the test opens the gate."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()

    def run(self, cancelled: Callable[[], bool]) -> None:
        while not self.gate.wait(0.05):
            if cancelled():
                return
        super().run(cancelled)


@sync
async def test_rows_arrive_by_message_without_a_polling_timer() -> None:
    src = GatedFile(CRC)
    app = BinlogScopeApp(src)
    handled: list[RowsAdded] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        original = scr._tick

        def counting_tick() -> None:
            handled.append(RowsAdded())
            original()

        scr._tick = counting_tick  # type: ignore[method-assign]
        await pilot.pause(0.6)
        assert handled == []  # nothing published: nothing happens (no 0.2 s tick)
        # no interval timer of ours (Textual keeps its screen_update one)
        assert not [t for t in scr._timers if t._repeat is None and t.name != "screen_update"]
        src.gate.set()
        await wait_for(lambda: scr.events.row_count == 303)
        await wait_for(lambda: "303 events" in "\n".join(screen_lines(app)))
        # 303 rows published one by one: a handful of updates, not one per row
        assert 1 <= len(handled) < 50
        # idle again: nothing ticks without new rows. The last coalesced update may still be on
        # its way (late on a loaded machine), so wait for a quiet 0.6 s; a polling timer (one
        # tick every 0.2 s) never gives one.
        for _ in range(20):
            n = len(handled)
            await pilot.pause(0.6)
            if len(handled) == n:
                break
        assert len(handled) == n
        assert n < 50

