"""The conversations view (``S``): per connection what ``pcap --summary`` says (packets, bytes,
events, ACK latency), per binlog file of a set its events; Enter filters to one."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from binlogscope.cli.main import main as cli_main
from binlogscope.inspector.conversations import conversations
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.conversations import ConversationScreen
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import screen_lines, sync, wait_for
from tests.tui.test_file_set import FILES

SEMISYNC = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
pytestmark = pytest.mark.timeout(120)


def test_conversations_agree_with_pcap_summary() -> None:
    out = io.StringIO()
    cli_main(["pcap", str(SEMISYNC), "--summary"], out=out, err=io.StringIO())
    summary = out.getvalue().split("\n\n")
    src = PcapSource(SEMISYNC)
    src.run(lambda: False)
    convs = conversations(src)
    flows = [b for b in summary if b.startswith("flow ")]
    assert len(convs) == len(flows)
    for conv, block in zip(convs, flows, strict=True):
        mine = conv.lines()
        assert mine[0] == block.splitlines()[0]  # flow N: endpoints
        for key in ("packets", "bytes", "events"):
            want = [line for line in block.splitlines() if line.startswith(f"  {key} ")]
            got = [line for line in mine if line.startswith(f"  {key} ")]
            assert [g.replace(",", "") for g in got] == [w.replace(",", "") for w in want]
        lat = re.search(r"latency min ([\d.]+) ms, median ([\d.]+) ms", block)
        if lat:
            assert f"latency min {lat.group(1)} ms, median {lat.group(2)} ms" in "\n".join(mine)


def test_a_file_set_has_one_entry_per_file() -> None:
    src = BinlogSetSource(FILES)
    src.run(lambda: False)
    convs = conversations(src)
    assert [c.key for c in convs] == ["binlog.000001", "binlog.000002"]
    assert sum(c.rows for c in convs) == len(src)
    assert sum(sum(c.events.values()) for c in convs) == len(src)


@sync
async def test_s_shows_the_conversations_and_enter_filters() -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
        await pilot.press("S")
        await wait_for(lambda: isinstance(app.screen, ConversationScreen))
        await pilot.pause(0.2)
        text = "\n".join(screen_lines(app))
        assert "flow 1: 127.0.0.1:56084 -> 127.0.0.1:39041" in text
        assert "semi-sync 8 ACKs (8 requested), latency min 0.978 ms" in text
        await pilot.press("enter")
        main: MainScreen = scr
        await wait_for(lambda: app.screen is main and main.view.filter.flows == (1,))
        assert all(main.source.row(main.view.row_index(i)).flow == 1
                   for i in range(len(main.view)))
