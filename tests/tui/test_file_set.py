"""``binlogscope file A B ...`` on a terminal: the TUI over the whole set (BinlogSetSource):
rows of every file in order, each with its own binlog_file and offsets, as ``file --json``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from binlogscope.cli.main import main as cli_main
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from tests.helpers import FIXTURES
from tests.tui.conftest import sync, wait_for
from tests.tui.test_exit_status import run_in_pty

pytestmark = pytest.mark.timeout(120)

DIR = (FIXTURES / "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data"
       / "data_80045_gtid")
FILES = [DIR / "binlog.000001", DIR / "binlog.000002"]


def _file_json(paths: list[Path]) -> list[dict[str, object]]:
    out, err = io.StringIO(), io.StringIO()
    assert cli_main(["file", "--json", *map(str, paths)], out=out, err=err) == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_set_source_equals_file_json() -> None:
    src = BinlogSetSource(FILES)
    src.run(lambda: False)
    want = _file_json(FILES)
    assert len(src) == len(want) and src.info().done and src.info().events == len(want)
    rows = [src.row(i) for i in range(len(src))]
    assert [r.number for r in rows] == list(range(1, len(want) + 1))
    assert [(r.binlog_file, r.file_pos, r.log_pos, r.event_type, r.gtid) for r in rows] == [
        (w["binlog_file"], w["offset"], w["log_pos"], w["event_type"], w["gtid"]) for w in want]
    # the second file's rows: their detail and position are that file's
    k = next(i for i, r in enumerate(rows) if r.binlog_file == "binlog.000002")
    one = BinlogFileSource(FILES[1])
    one.run(lambda: False)
    assert src.detail(k + 2).node.to_dict() == one.detail(2).node.to_dict()
    assert src.position(k + 2) == one.position(2)
    assert src.find_offset(rows[k + 2].file_pos or 0, "binlog.000002") == k + 2
    buf = io.StringIO()
    assert src.export_jsonl([1, k + 1], buf) == 2
    got = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert [(g["binlog_file"], g["offset"]) for g in got] == [
        (want[1]["binlog_file"], want[1]["offset"]), (want[k + 1]["binlog_file"],
                                                      want[k + 1]["offset"])]


@sync
async def test_tui_over_the_set_goes_to_file_and_position() -> None:
    app = BinlogScopeApp(BinlogSetSource(FILES))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        src = scr.source
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        k = next(i for i in range(len(src)) if src.row(i).binlog_file == "binlog.000002")
        target = src.row(k + 3)
        await pilot.press("g")
        scr.query_one("#prompt-input").value = f"binlog.000002:{target.file_pos}"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: scr.events.current_row == k + 3)
        assert scr.source.position(k + 3).startswith("binlog.000002:")


def test_file_with_two_paths_on_a_terminal_opens_the_tui() -> None:
    total = len(_file_json(FILES))
    rc, out = run_in_pty(["file", *map(str, FILES)], f"{total} events".encode())
    assert rc == 0
    assert b"\x1b[?1049h" in out  # the alternate screen: the TUI, not the text dump
    assert b"# at" in out


def test_parquet_export_of_a_file_set(tmp_path: Path) -> None:
    """``x NAME.parquet`` over a file set: the view's events of every file, with its name."""
    import pyarrow.parquet as pq

    from binlogscope.inspector.parquet_export import export_view_parquet

    src = BinlogSetSource(FILES)
    src.run(lambda: False)
    rows = [i for i in range(len(src)) if src.row(i).gtid is not None]
    assert {src.row(i).binlog_file for i in rows} == {"binlog.000001", "binlog.000002"}
    out = tmp_path / "set.parquet"
    msg = export_view_parquet(src, rows, out, lambda: False)
    assert msg.startswith(f"exported {len(rows)} events")
    events = pq.read_table(out / "events").to_pylist()
    assert sorted((e["binlog_file"], e["offset"]) for e in events) == sorted(
        (src.row(i).binlog_file, src.row(i).file_pos) for i in rows)


@sync
async def test_the_narrow_file_column_keeps_the_end_of_the_name() -> None:
    """At 80 columns the file column is 12 cells: 'binlog.000001' and 'binlog.000002' were
    both 'binlog.0000…'; the sequence number is what tells a set's files apart."""
    app = BinlogScopeApp(BinlogSetSource(FILES))
    async with app.run_test(size=(80, 30)):
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        src = scr.source
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        k = next(i for i in range(len(src)) if src.row(i).binlog_file == "binlog.000002")
        first = scr.events.render_line(1).text
        assert "…nlog.000001 " in first and "binlog.0000…" not in first
        scr.events.cursor = k
        scr.events.scroll_to(y=k, animate=False)
        await wait_for(lambda: any("…nlog.000002 " in scr.events.render_line(y).text
                                   for y in range(1, 6)))
