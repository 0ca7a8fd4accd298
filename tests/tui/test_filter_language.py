"""The filter language's fields on a real capture and binlog, and the filter prompt in the TUI
(the active filter shown in the status bar, an empty filter clears it, up/down history)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.inspector.view import RowFilter, View
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.prompt_bar import PromptBar
from binlogscope.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import CRC, sync, wait_for

pytestmark = pytest.mark.timeout(120)

SEMISYNC = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"


@pytest.fixture(scope="module")
def cap() -> PcapSource:
    s = PcapSource(SEMISYNC)
    s.run(lambda: False)
    return s


def _rows(src: PcapSource | BinlogFileSource, spec: str) -> list[int]:
    v = View(src, RowFilter.parse(spec))
    v.sync()
    return [v.row_index(i) for i in range(len(v))]


def test_spec_round_trips() -> None:
    spec = ("type:WRITE gtid:0-1-13,abc:7 file:mysql-bin.000004 pos>100 pos<=2000 flow:1,3 "
            "seq:0 semi:ack time>00:21:25.5 time<2026-11-22T00:21:26 errors dir:server text")
    f = RowFilter.parse(spec)
    assert f.active and RowFilter.parse(f.spec()) == f
    assert f.gtids == ("0-1-13", "abc:7") and f.flows == (1, 3) and f.seqs == (0,)
    assert not RowFilter.parse("").active
    for bad in ("flow:x", "pos>x", "time>noon", "semi:maybe", "gtid:"):
        with pytest.raises(ValueError):
            RowFilter.parse(bad)


def test_fields_on_a_capture(cap: PcapSource) -> None:
    rows = [cap.row(i) for i in range(len(cap))]
    # gtid: every event of the transaction, the GTID event to the XID
    g = _rows(cap, "gtid:0-1-13")
    assert g and all(rows[i].gtid == "0-1-13" for i in g)
    assert {rows[i].event_type for i in g} >= {"GTID_EVENT", "XID_EVENT", "WRITE_ROWS_EVENT_V1"}
    assert len(g) == sum(r.gtid == "0-1-13" for r in rows)
    # file: and positions on the start offset ("# at")
    f = _rows(cap, "file:000004")
    assert f and all(rows[i].binlog_file == "mysql-bin.000004" for i in f)
    assert [rows[i].event_type for i in _rows(cap, "pos:1262")] == ["WRITE_ROWS_EVENT_V1"]
    assert [rows[i].file_pos for i in _rows(cap, "pos:1300")] == [1262]  # inside the event
    between = _rows(cap, "pos>=1262 pos<1372")
    assert [rows[i].file_pos for i in between] == [1262, 1341]
    # flows: each flow's rows only, all of them
    for flow in (1, 2):
        fl = _rows(cap, f"flow:{flow}")
        assert fl and len(fl) == sum(r.flow == flow for r in rows)
    assert len(_rows(cap, "flow:1,2")) == len(_rows(cap, "flow:1")) + len(_rows(cap, "flow:2"))
    # seq, semi-sync
    assert all(rows[i].seq == 0 for i in _rows(cap, "seq:0"))
    acks = _rows(cap, "semi:ack")
    assert acks and all(rows[i].event_type == "SEMI_SYNC_ACK" for i in acks)
    assert len(acks) == sum(r.event_type == "SEMI_SYNC_ACK" for r in rows)
    ask = _rows(cap, "semi:ask")
    assert len(ask) == len(acks) and all(rows[i].semi_sync == "ef ACK?" for i in ask)
    # time ranges, with microseconds: the ACK of row 102 (1795306885.790359) and its XID
    t = rows[acks[2]].time
    assert t is not None
    day = time.strftime("%H:%M:%S", time.gmtime(int(t))) + f".{round(t % 1 * 1e6):06d}"
    hit = _rows(cap, f"time>={day} time<={day}")
    assert acks[2] in hit and all(rows[i].time == t for i in hit)
    after = _rows(cap, f"time>{day}")
    assert after and min(after) > acks[2] and all((rows[i].time or 0) > t for i in after)
    date = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t)))
    assert _rows(cap, f"time>={date}") == [i for i, r in enumerate(rows)
                                            if r.time is not None and r.time >= int(t)]


def test_fields_on_a_binlog_file() -> None:
    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    assert [src.row(i).file_pos for i in _rows(src, "pos:400")] == [384]
    assert _rows(src, "file:checksum-crc32") == list(range(len(src)))
    assert _rows(src, "flow:1") == []  # a file has no flows


@sync
async def test_filter_prompt_status_empty_and_history() -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
        total = len(scr.source)
        status = scr.query_one(StatusBar)

        async def type_filter(text: str) -> None:
            await pilot.press("f")
            inp = scr.query_one("#prompt-input")
            inp.value = text  # type: ignore[attr-defined]
            await pilot.press("enter")

        await type_filter("semi:ack flow:1")
        await wait_for(lambda: scr.view.filter.semi == "ack")
        acks = len(scr.view)
        assert 0 < acks < total
        await wait_for(lambda: "filter: flow:1 semi:ack" in str(status.render()))
        assert f"({acks:,} shown)" in str(status.render())
        assert "binlog events" in str(status.render())

        await type_filter("type:XID")
        await wait_for(lambda: scr.view.filter.types == ("XID",))
        # an empty filter clears it
        await type_filter("")
        await wait_for(lambda: not scr.view.filter.active and len(scr.view) == total)
        await pilot.pause()
        assert "filter:" not in str(status.render())

        # history: up walks back through what was submitted, down returns to the draft
        await pilot.press("f")
        bar = scr.query_one(PromptBar)
        inp = scr.query_one("#prompt-input")
        await pilot.press("up")
        assert inp.value == "type:XID"  # type: ignore[attr-defined]
        await pilot.press("up")
        assert inp.value == "semi:ack flow:1"  # type: ignore[attr-defined]
        await pilot.press("up")
        assert inp.value == "semi:ack flow:1"  # type: ignore[attr-defined]
        await pilot.press("down", "down")
        assert inp.value == ""  # type: ignore[attr-defined]
        await pilot.press("up", "up", "enter")
        await wait_for(lambda: scr.view.filter.semi == "ack" and len(scr.view) == acks)
        assert bar.history["filter"] == ["semi:ack flow:1", "type:XID", "semi:ack flow:1"]
