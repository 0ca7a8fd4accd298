"""The TUI driven with Textual's Pilot over a real MySQL 5.7 binlog (mysql-bin.checksum-crc32)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.help import HelpScreen
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.event_list import EventList
from binlogscope.tui.widgets.field_help import FieldHelp
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from tests.tui.conftest import CRC, TRUNC, sync, wait_for

pytestmark = pytest.mark.timeout(120)

# the 6th event of the fixture: WRITE_ROWS_EVENT at file position 384, 102 bytes
WRITE_ROW = 5
WRITE_OFFSET = 384


def _app(path: Path = CRC) -> BinlogScopeApp:
    return BinlogScopeApp(BinlogFileSource(path))


async def _ready(app: BinlogScopeApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    assert isinstance(scr, MainScreen)
    await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
    await wait_for(lambda: scr.detail is not None)
    return scr


async def _select_row(pilot: object, scr: MainScreen, row: int) -> None:
    scr.events.cursor = row
    await wait_for(lambda: scr.detail_row == row and scr.field is not None)


@sync
async def test_list_shows_every_event_and_selecting_decodes_the_tree() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        assert scr.events.row_count == 303
        row = scr.source.row(WRITE_ROW)
        assert (row.event_type, row.offset, row.length, row.log_pos) == (
            "WRITE_ROWS_EVENT", 384, 102, 486)
        assert row.table == "simu_file_dev.folder" and row.kind == "write"
        for _ in range(WRITE_ROW):
            await pilot.press("down")
        await wait_for(lambda: scr.detail_row == WRITE_ROW and scr.field is not None)
        assert scr.detail is not None
        assert scr.detail.node.offset == WRITE_OFFSET and scr.detail.node.length == 102
        hexp = scr.query_one(HexPane)
        # the whole event is highlighted when it is loaded
        assert hexp.highlight == (384, 486)
        assert hexp.data == scr.detail.raw and hexp.base == 384
        await pilot.press("q")


@sync
async def test_walking_the_tree_highlights_each_fields_bytes() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select_row(pilot, scr, WRITE_ROW)
        tree = scr.query_one(FieldTree)
        tree.focus()
        hexp = scr.query_one(HexPane)
        seen = []
        for _ in range(9):  # event, header, its 6 fields, body
            await pilot.press("down")
            await pilot.pause()
            node = scr.field
            assert node is not None and tree.cursor_node is not None
            assert tree.cursor_node.data is node
            assert hexp.highlight == (node.offset, node.offset + node.length)
            seen.append((node.name, node.offset, node.length))
        assert seen[:7] == [
            ("header", 384, 19), ("timestamp", 384, 4), ("event_type", 388, 1),
            ("server_id", 389, 4), ("event_size", 393, 4), ("log_pos", 397, 4),
            ("flags", 401, 2)]
        assert seen[7] == ("body", 403, 79)
        assert seen[8] == ("table_id", 403, 6)
        help_text = str(scr.query_one(FieldHelp).render())
        assert "table_id" in help_text and "@403..409" in help_text
        assert "TABLE_MAP" in help_text  # the field's doc
        await pilot.press("q")


@sync
async def test_moving_in_the_hex_pane_selects_the_owning_field() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select_row(pilot, scr, WRITE_ROW)
        hexp = scr.query_one(HexPane)
        hexp.focus()
        await pilot.pause()
        assert hexp.cursor == 384
        tree = scr.query_one(FieldTree)
        for _ in range(4):  # 384 -> 388: timestamp (4 bytes) -> event_type
            await pilot.press("right")
        await pilot.pause()
        assert hexp.cursor == 388
        assert scr.field is not None and scr.field.name == "event_type"
        assert tree.cursor_node is not None and tree.cursor_node.data is scr.field
        assert hexp.highlight == (388, 389)
        # one line down (16 bytes): 404 is inside body.table_id (403..409); the cursor stays put
        await pilot.press("down")
        await pilot.pause()
        assert hexp.cursor == 404
        assert scr.field.name == "table_id" and hexp.highlight == (403, 409)
        # deep field: a row image column, reached through the collapsed row[0] node
        await pilot.press(*["down"] * 2)  # 436: inside @4 (432..440, a LONGLONG)
        await pilot.pause()
        assert hexp.cursor == 436
        node = scr.field
        assert node.name == "@4" and (node.offset, node.length) == (432, 8)
        assert tree.cursor_node is not None and tree.cursor_node.data is node
        assert hexp.highlight == (432, 440)
        # the field that owns the byte is the deepest one (Node.at)
        assert scr.detail is not None and scr.detail.node.at(436) is node
        await pilot.press("q")


@sync
async def test_clicking_a_hex_byte_selects_its_field() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select_row(pilot, scr, WRITE_ROW)
        hexp = scr.query_one(HexPane)
        ow = len(str(hexp.base + len(hexp.data)))
        ow = max(ow, 4)
        # second line (offset 400), column 9 -> byte 409: body.flags (409..411)
        await pilot.click(HexPane, offset=(ow + 2 + 9 * 3, 1))
        await pilot.pause()
        assert hexp.cursor == 409
        assert scr.field is not None and scr.field.name == "flags" and scr.field.offset == 409
        await pilot.press("q")


@sync
async def test_filter_by_type_table_errors_and_text() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        src = scr.source
        expected = [i for i in range(len(src)) if src.row(i).event_type == "UPDATE_ROWS_EVENT"]
        assert expected
        await pilot.press("f")
        await pilot.press(*"type:update")
        await pilot.press("enter")
        await wait_for(lambda: scr.view.filter.active and len(scr.view) == len(expected))
        assert [scr.view.row_index(i) for i in range(len(scr.view))] == expected
        assert scr.events.row_count == len(expected)
        await wait_for(lambda: scr.detail is not None
                       and scr.detail.node.display.startswith("UPDATE_ROWS_EVENT"))
        # table regex + free text
        await pilot.press("f")
        inp = scr.query_one("#prompt-input")
        inp.value = ""  # type: ignore[attr-defined]
        await pilot.press(*"table:file_log$ begin")
        await pilot.press("enter")
        await wait_for(lambda: scr.view.filter.text == "begin")
        assert len(scr.view) == 0  # BEGIN query events name no table
        await pilot.press("f")
        inp.value = ""  # type: ignore[attr-defined]
        await pilot.press(*"table:file_log$", "enter")
        await wait_for(lambda: scr.view.filter.table is not None and len(scr.view) > 0)
        assert all(src.row(scr.view.row_index(i)).table == "simu_file_dev.file_log"
                   for i in range(len(scr.view)))
        # errors only: this file has none
        await pilot.press("f")
        inp.value = ""  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: not scr.view.filter.active)
        assert len(scr.view) == 303
        await pilot.press("e")
        await wait_for(lambda: scr.view.filter.errors)
        assert len(scr.view) == 0
        await pilot.press("q")


@sync
async def test_errors_filter_on_a_damaged_file() -> None:
    app = _app(TRUNC)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        assert scr.source.info().errors >= 1
        await pilot.press("e")
        await wait_for(lambda: scr.view.filter.errors)
        assert len(scr.view) == scr.source.info().errors
        assert all(scr.source.row(scr.view.row_index(i)).error for i in range(len(scr.view)))
        await wait_for(lambda: scr.detail is not None and scr.detail.error is not None)
        await pilot.press("q")


@sync
async def test_search_next_and_previous() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        src = scr.source
        hits = [i for i in range(len(src)) if "file_log" in src.search_text(i)]
        assert len(hits) >= 2
        await pilot.press("slash", *"FILE_LOG", "enter")
        await wait_for(lambda: scr.events.cursor == hits[0])
        await pilot.press("n")
        await wait_for(lambda: scr.events.cursor == hits[1])
        await pilot.press("N")
        await wait_for(lambda: scr.events.cursor == hits[0])
        await pilot.press("N")  # wraps to the last hit
        await wait_for(lambda: scr.events.cursor == hits[-1])
        await pilot.press("q")


@sync
async def test_goto_position_and_row_and_bookmarks() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await pilot.press("g", *"400", "enter")  # inside the WRITE_ROWS event at 384
        await wait_for(lambda: scr.events.current_row == WRITE_ROW)
        await pilot.press("b")
        await pilot.press("g", *"#100", "enter")
        await wait_for(lambda: scr.events.current_row == 99)
        await pilot.press("B")
        await wait_for(lambda: scr.events.current_row == WRITE_ROW)
        assert scr.events.bookmarks == {WRITE_ROW}
        await pilot.press("b")
        assert scr.events.bookmarks == set()
        await pilot.press("q")


@sync
async def test_export_view_and_event(tmp_path: Path) -> None:
    app = _app()
    out = tmp_path / "view.jsonl"
    one = tmp_path / "event.json"
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        scr.apply_filter(type(scr.view.filter).parse("type:XID"))
        await wait_for(lambda: scr.view.filter.active)
        await pilot.press("x")
        scr.query_one("#prompt-input").value = str(out)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(out.exists)
        await wait_for(lambda: len(out.read_text().splitlines()) == len(scr.view))
        first_xid = scr.view.row_index(0)
        await wait_for(lambda: scr.detail_row == first_xid and scr.field is not None)
        await pilot.press("X")
        scr.query_one("#prompt-input").value = str(one)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: one.exists() and one.read_text().endswith("\n"))
        await pilot.press("q")
    objs = [json.loads(line) for line in out.read_text().splitlines()]
    want = [e.offset for e in read_binlog_file(CRC, record=False) if e.type_name == "XID_EVENT"]
    assert [o["offset"] for o in objs] == want
    assert all(o["event_type"] == "XID_EVENT" for o in objs)
    tree = json.loads(one.read_text())
    assert tree["offset"] == want[0] and tree["value"] == "XID_EVENT"
    assert tree["children"][0]["name"] == "header"


@sync
async def test_copy_field_hex_and_value() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _ready(app)
        await _select_row(pilot, scr, WRITE_ROW)
        assert scr.detail is not None
        tree = scr.query_one(FieldTree)
        tree.select_field(scr.detail.node.find("header.event_size"))
        await wait_for(lambda: scr.field is not None and scr.field.name == "event_size")
        await pilot.press("c")
        assert app.clipboard == "66 00 00 00"
        await pilot.press("v")
        assert app.clipboard == "102"
        await pilot.press("q")


@sync
async def test_help_screen_and_quit() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(app)
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        await pilot.press("q")
    assert app.return_code == 0


@sync
async def test_quit_while_indexing_a_big_file(tmp_path: Path) -> None:
    """q works at once even while the indexer thread is still walking the file."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from tui import make_big_binlog  # type: ignore[import-not-found]

    big = tmp_path / "big-bin.000001"
    make_big_binlog(big, 60_000)
    app = _app(big)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: scr.events.row_count > 20)
        assert not scr.source.info().done
        await pilot.press("end")
        await pilot.press("q")
    assert app.return_code == 0
    assert isinstance(app.screen if app.is_running else None, type(None))


@sync
async def test_list_is_virtual() -> None:
    """Only the visible rows are painted: the list has no child widget per row."""
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        scr = await _ready(app)
        lst = scr.query_one(EventList)
        assert len(lst.children) == 0
        assert lst.virtual_size.height == 303 + 1
        await pilot.press("end")
        await wait_for(lambda: scr.detail_row == 302)
        assert scr.source.row(302).event_type == "ROTATE_EVENT"
        await pilot.press("q")


def test_export_view_to_parquet(tmp_path: Path) -> None:
    """``x`` with a .parquet name writes the rows in view as a Parquet dataset."""
    import pyarrow.parquet as pq

    from binlogscope.inspector.parquet_export import export_view_parquet

    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    rows = [i for i in range(len(src)) if "ROWS" in src.row(i).event_type]
    assert rows
    out = tmp_path / "view.parquet"
    msg = export_view_parquet(src, rows, out, lambda: False)
    assert msg.startswith(f"exported {len(rows)} events")
    events = pq.read_table(out / "events").to_pylist()
    assert len(events) == len(rows)
    assert {e["event_type"] for e in events} <= {"WRITE_ROWS_EVENT", "UPDATE_ROWS_EVENT",
                                                 "DELETE_ROWS_EVENT"}
    assert len(pq.read_table(out / "rows").to_pylist()) >= len(rows)
