"""The live screen shows the connection's state changes (issue 29 item 4, drivers/live/states.py)
as a person sees them: a HEALTH row for each of streaming, idle, stalled, recovered and
reconnect, its text in the row and, in the detail pane, why the row is there.

The live source runs against the in-process mock master (real MariaDB binlog); the state items
are the ones :class:`~binlogscope.drivers.live.states.StateWatch` and
:func:`~binlogscope.drivers.live.states.reconnect_item` make, yielded through the live source's
``produce`` as ``LiveSource.produce`` yields its own (a stall needs a frozen server, which
tests/drivers/live/test_live_states_mariadb.py does with SIGSTOP on a real MariaDB)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.states import StateWatch, reconnect_item, state_item
from binlogscope.inspector.sources.live import LiveSource
from binlogscope.session.events import PacketDecoded
from binlogscope.tui.app import BinlogScopeApp
from mock_master.serve.server import ThreadedMockMaster
from tests.tui.conftest import screen_lines, sync, wait_for
from tests.tui.test_live import _ended, _screen, _settings, master  # noqa: F401

pytestmark = pytest.mark.timeout(120)

WHY = "the connection's state changed"


class _StatesLive(LiveSource):
    """The live source; after the dump's rows, the state changes of a stall and a reconnect."""

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        last: SourceItem | None = None
        for item in super().produce(cancelled):
            ev = item.event
            if type(ev) is PacketDecoded and ev.binlog_event is not None:
                last = item
            yield item
        assert last is not None and type(last.event) is PacketDecoded
        t = last.event.wire_time or 0.0
        watch = StateWatch(1.0, lambda: t - 5.0)
        watch.state = "idle"
        yield state_item("idle", t - 6.0, "idle: heartbeats arriving (every 1 s asked), no events",
                         heartbeat_period_s=1.0)
        yield from watch.tick(now=t)  # stalled: 5 s without a byte, heartbeats every 1 s
        yield from watch.after(last)  # recovered (and streaming again)
        yield reconnect_item("server closed the connection", 1, "mariadb-bin.000001:4")


@sync
async def test_live_screen_shows_each_state_row_and_why(master: ThreadedMockMaster) -> None:  # noqa: F811
    src = _StatesLive(_settings(master))
    src.replica.state.slave_uuid = "00000000-0000-4000-8000-000000000001"
    app = BinlogScopeApp(src)
    async with app.run_test(size=(200, 60)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        health = [i for i in range(len(src)) if src.row(i).event_type == "HEALTH"]
        want = ["streaming: events arriving",
                "idle: heartbeats arriving (every 1 s asked), no events",
                "stalled or half-open: no byte from the server for 5.0 s",
                "recovered: bytes from the server again after 5.0 s of silence",
                "reconnect 1: connection lost (server closed the connection); resuming at "
                "mariadb-bin.000001:4"]
        assert len(health) >= len(want)
        for text in want:
            rows = [i for i in health if text in src.row(i).summary]
            assert rows, (text, [src.row(i).summary for i in health])
            scr.events.cursor = rows[-1]
            await pilot.pause()

            def shown(text: str = text) -> bool:
                lines = screen_lines(app)
                return (any("HEALTH" in x and text[:40] in x for x in lines)
                        and any(WHY in x for x in lines))
            await wait_for(shown, 10)
        await pilot.press("q")
