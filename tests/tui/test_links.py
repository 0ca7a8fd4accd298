"""Cross-links (Wireshark's "[Response in frame N]"): an event that asks for an ACK -> its ACK
with the latency, the ACK -> its event, a rows event -> its TABLE_MAP; ``L`` follows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.inspector.links import links
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import CRC, screen_lines, sync, wait_for

SEMISYNC = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
pytestmark = pytest.mark.timeout(120)


def test_ack_links_both_ways_with_the_latency() -> None:
    src = PcapSource(SEMISYNC)
    src.run(lambda: False)
    asks = [i for i in range(len(src)) if src.row(i).semi_sync == "ef ACK?"]
    acks = [i for i in range(len(src)) if (src.row(i).semi_sync or "").startswith("ACK")]
    assert asks and len(asks) == len(acks)
    for ask, ack in zip(asks, acks, strict=True):
        (fwd,) = links(src, ask)
        assert fwd.row == ack
        lat = src.row(ack).time - src.row(ask).time  # type: ignore[operator]
        assert fwd.latency == pytest.approx(lat) and lat > 0
        assert f"after {lat * 1000:.3f} ms" in fwd.text
        (back,) = links(src, ack)
        assert back.row == ask and f"log_pos {src.row(ask).log_pos}" in back.text


def test_rows_event_links_to_its_table_map() -> None:
    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    for i in range(len(src)):
        row = src.row(i)
        if row.kind in ("write", "update", "delete"):
            (tm,) = links(src, i)
            assert tm.row is not None
            target = src.row(tm.row)
            assert target.event_type == "TABLE_MAP_EVENT" and target.table == row.table
            assert tm.row == max(j for j in range(i) if src.row(j).event_type
                                 == "TABLE_MAP_EVENT" and src.row(j).table == row.table)


@sync
async def test_the_link_is_shown_and_l_follows_it() -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        src = scr.source
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        ask = next(i for i in range(len(src)) if src.row(i).semi_sync == "ef ACK?")
        ack = links(src, ask)[0].row
        assert ack is not None
        scr.events.cursor = ask
        text = f"acknowledged by the ACK in row {ack + 1} after"
        await wait_for(lambda: any(text in line for line in screen_lines(app)))
        await pilot.press("L")
        await wait_for(lambda: scr.events.current_row == ack)
        await wait_for(lambda: any(f"acknowledges row {ask + 1}" in line
                                   for line in screen_lines(app)))
        await pilot.press("L")
        await wait_for(lambda: scr.events.current_row == ask)
