"""Pilot tests of the event list's columns: frame and flow (captures), time with microseconds and
its relative / delta modes (``t``), the start offset ("# at") beside log_pos, an 8-digit len."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.inspector.source import format_seconds, format_time
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import CRC, sync, wait_for

pytestmark = pytest.mark.timeout(120)

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SEMISYNC = CAPTURES / "pcap-semisync.pcap"


async def _ready(app: BinlogScopeApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    assert isinstance(scr, MainScreen)
    await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
    return scr


def _line(scr: MainScreen, y: int) -> str:
    return scr.events.render_line(y).text


def _cells(scr: MainScreen, vi: int) -> dict[str, str]:
    """The visible row ``vi``'s cells by column key (the list scrolled to the top)."""
    ev = scr.events
    width = ev.scrollable_content_region.width
    line = _line(scr, vi - round(ev.scroll_y) + 1)
    out: dict[str, str] = {}
    x = 0
    for key, _, w, _ in ev._columns(width):
        out[key] = line[x:x + w].strip()
        x += w + 1
    out["summary"] = line[x:].strip()
    return out


def test_time_formats() -> None:
    assert format_time(1795306885.787976, False, True) == "00:21:25.787976"
    assert format_time(1795306885.787976, True, True) == "2026-11-22 00:21:25.787976"
    assert format_time(1795306885.9999996, False, True) == "00:21:26.000000"
    assert format_time(1795306885.0, False) == "00:21:25"
    assert format_seconds(0.000978) == "0.000978"


@sync
async def test_capture_columns_frame_flow_and_time_modes() -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(160, 40)) as pilot:
        scr = await _ready(app)
        header = _line(scr, 0)
        for title in ("frame", "flow", "len", "# at", "log_pos", "time (UTC)"):
            assert title in header, title
        src = scr.source
        # the first ACK the replica sent: its row, the XID/QUERY that asked for it just before
        ack = next(i for i in range(len(src)) if src.row(i).event_type == "SEMI_SYNC_ACK")
        asked = src.row(ack - 1)
        row = src.row(ack)
        assert asked.semi_sync == "ef ACK?" and row.frame is not None and row.flow == 1
        scr.events.cursor = ack
        await pilot.pause()
        cells = _cells(scr, ack)
        assert cells["frame"] == str(row.frame) and cells["flow"] == "1"
        assert cells["time"] == format_time(row.time, True, True)
        assert len(cells["time"].rsplit(".", 1)[1]) == 6  # microseconds
        assert cells["event_type"] == "SEMI_SYNC_ACK"
        # the ACK's column names the position it acknowledges (its summary says the same)
        pos = row.summary.rsplit(":", 1)[1]
        assert row.semi_sync == f"ACK {pos}" and cells["semi_sync"] == f"ACK {pos}"
        # a binlog event: "# at" is its start offset in the file, log_pos its end
        ev = _cells(scr, ack - 1)
        assert (ev["file_pos"], ev["log_pos"]) == (str(asked.file_pos), str(asked.log_pos))
        assert asked.file_pos is not None and asked.log_pos is not None
        assert asked.file_pos < asked.log_pos

        await pilot.press("t")  # relative to the first row
        assert scr.events.time_mode == "relative"
        first = src.row(0).time
        assert row.time is not None and first is not None
        assert _cells(scr, ack)["time"] == f"{row.time - first:.6f}"
        assert _cells(scr, 0)["time"] == "0.000000"

        await pilot.press("t")  # delta to the previous shown row: the ACK's latency
        assert scr.events.time_mode == "delta"
        assert asked.time is not None
        latency = _cells(scr, ack)["time"]
        assert latency == f"{row.time - asked.time:.6f}"
        assert 0.0001 < float(latency) < 0.005

        await pilot.press("t")
        assert scr.events.time_mode == "absolute"


@sync
async def test_file_columns_start_offset_and_len_width() -> None:
    app = BinlogScopeApp(BinlogFileSource(CRC))
    async with app.run_test(size=(120, 40)):
        scr = await _ready(app)
        cols = {k: w for k, _, w, _ in scr.events._columns(120)}
        assert cols["length"] >= 8 and "frame" not in cols and "flow" not in cols
        row = scr.source.row(5)
        cells = _cells(scr, 5)
        assert (cells["file_pos"], cells["log_pos"]) == ("384", "486")
        assert cells["time"] == format_time(row.time, True)  # whole seconds: no fraction
        assert "# at" in _line(scr, 0)
        assert len("16777216") <= cols["length"]


@sync
async def test_phase_strip_follows_the_selected_rows_flow() -> None:
    from binlogscope.tui.widgets.phase_strip import PhaseStrip

    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(160, 40)) as pilot:
        scr = await _ready(app)
        src = scr.source
        strip = scr.query_one(PhaseStrip)
        # flow 1 streams binlog events; flow 2 (a plain client session) never leaves setup
        streaming = next(i for i in range(len(src)) if src.row(i).flow == 1
                         and src.row(i).event_type == "XID_EVENT")
        setup = max(i for i in range(len(src)) if src.row(i).flow == 2)
        scr.events.cursor = streaming
        await wait_for(lambda: "  stream " in str(strip.render()))
        scr.events.cursor = setup
        await wait_for(lambda: "  setup  " in str(strip.render()))
        assert "  stream " not in str(strip.render())
        await pilot.pause()
