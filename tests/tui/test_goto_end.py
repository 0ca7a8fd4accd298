"""``g end:FILE:POS`` (issue 29 item 1): error messages quote where the failing event ENDS
(a replica's end_log_pos, binlog-connector-java's nextPosition, go-mysql's LogPos), so ``g``
goes to the event that ends there when asked, and says which end a plain position named - before,
``g FILE:POS`` with an end_log_pos landed one row past the failing event."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.inspector.actions import goto_note, goto_row
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from tests.tui.conftest import sync, wait_for
from tests.tui.test_prompts import _ready, _seen

pytestmark = pytest.mark.timeout(120)

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"
SEMISYNC = CAPTURES / "pcap-semisync.pcap"


def _file_source() -> BinlogFileSource:
    src = BinlogFileSource(WORKLOAD)
    src.run(lambda: False)
    return src


def test_end_goes_to_the_event_ending_there_in_every_file_event() -> None:
    src = _file_source()
    name = WORKLOAD.name
    for i in range(1, len(src)):
        r = src.row(i)
        end = r.offset + r.length
        assert goto_row(src, f"end:{name}:{end}", None) == i
        assert goto_row(src, f"end:{end}", None) == i
        # a plain position is the START of an event: the row after the one ending there
        if i + 1 < len(src):
            assert goto_row(src, f"{name}:{end}", None) == i + 1
    # a set of files: the file named, and a position no event ends at says what is there
    files = BinlogSetSource([WORKLOAD])
    files.run(lambda: False)
    last = files.row(len(files) - 1)
    assert goto_row(files, f"end:{name}:{last.offset + last.length}", 0) == len(files) - 1
    with pytest.raises(ValueError, match="no event ends at"):
        goto_row(src, f"end:{src.row(3).offset + 1}", None)
    with pytest.raises(ValueError, match="no file"):
        goto_row(files, "end:other-bin.000009:400", 0)


def test_end_on_a_capture_is_the_event_whose_log_pos_it_is() -> None:
    src = PcapSource(SEMISYNC)
    src.run(lambda: False)
    events = [i for i in range(len(src)) if (src.row(i).log_pos or 0) > 4]
    assert events
    for i in events:
        r = src.row(i)
        where = f"{r.binlog_file}:{r.log_pos}" if r.binlog_file else str(r.log_pos)
        assert src.row(goto_row(src, f"end:{where}", None)).log_pos == r.log_pos


def test_notes_say_which_end_a_position_named() -> None:
    assert "STARTS at 1,234" in (goto_note("f.000001:1234") or "")
    assert "g end:f.000001:1234" in (goto_note("f.000001:1234") or "")
    assert "ENDS at 1,234" in (goto_note("end:f.000001:1234") or "")
    assert goto_note("#5") is None and goto_note("0-1-42") is None


@sync
async def test_g_end_in_the_tui_selects_the_failing_event_and_says_so() -> None:
    app = BinlogScopeApp(BinlogFileSource(WORKLOAD))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        scr = await _ready(app)
        target = 7
        r = scr.source.row(target)
        end = r.offset + r.length
        await pilot.press("g", *f"end:{WORKLOAD.name}:{end}", "enter")
        await wait_for(lambda: scr.events.current_row == target)
        await _seen(pilot, f"ENDS at {end:,}")
        await pilot.press("g", *f"{WORKLOAD.name}:{end}", "enter")
        await wait_for(lambda: scr.events.current_row == target + 1)
        await _seen(pilot, f"STARTS at {end:,}")
