"""The TUI over a set of binlog files (``file A B ...``): a GTID go-to walks only the files
whose cached catalog (``locate --catalog``) does not rule the GTID out (issue 29 item 6: the
catalog lets ``file``, the TUI and Spark skip files), finds the same row as a walk of every
file, and says which files it did not search when the GTID is in none."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pytest

from binlogscope.cli.main import main as cli_main
from binlogscope.diagnose.catalog import files_for_gtid, files_for_time
from binlogscope.inspector.actions import find_gtid, gtid_rows
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import sync, wait_for
from tests.tui.test_file_set import FILES

pytestmark = pytest.mark.timeout(120)


def _catalogued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, run: bool = True
                ) -> BinlogSetSource:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    err = io.StringIO()
    assert cli_main(["locate", "--catalog", "--source", *map(str, FILES)], out=io.StringIO(),
                    err=err) == 0, err.getvalue()
    src = BinlogSetSource(FILES)
    src.may_hold_gtid = functools.partial(files_for_gtid, list(FILES))
    if run:  # (the TUI runs its source itself)
        src.run(lambda: False)
    return src


def test_a_gtid_of_the_second_file_walks_only_it(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    src = _catalogued(tmp_path, monkeypatch)
    second = src.part_rows(1)
    gtid = next(src.row(i).gtid for i in second if src.row(i).kind == "gtid")
    assert gtid is not None
    rows, skipped = gtid_rows(src, gtid.lower())
    assert skipped == ["binlog.000001"] and rows is not None
    assert list(rows) == list(second)
    found = find_gtid(src, gtid.lower(), rows=gtid_rows(src, gtid.lower())[0])
    assert found is not None and found == find_gtid(src, gtid.lower())  # the same row
    assert found in second
    # without a catalog entry every file is walked
    plain = BinlogSetSource(FILES)
    plain.run(lambda: False)
    assert gtid_rows(plain, gtid.lower()) == (None, [])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    assert gtid_rows(src, gtid.lower()) == (None, [])


@sync
async def test_the_go_to_says_which_files_it_skipped(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    indexed = _catalogued(tmp_path, monkeypatch)
    first = next(indexed.row(i).gtid for i in indexed.part_rows(0)
                 if indexed.row(i).kind == "gtid")
    assert first is not None
    uuid, _, _ = first.rpartition(":")
    absent = f"{uuid}:999999".lower()
    assert gtid_rows(indexed, absent)[1] == ["binlog.000001", "binlog.000002"]
    want = find_gtid(indexed, first.lower())
    src = _catalogued(tmp_path, monkeypatch, run=False)
    app = BinlogScopeApp(src)
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        orig = scr.notify

        def spy(message: str, **kw: object) -> None:
            notes.append(message)
            orig(message, **kw)  # type: ignore[arg-type]

        scr.notify = spy  # type: ignore[method-assign]
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        await pilot.press("g")
        scr.query_one("#prompt-input").value = absent  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: any("not searched" in n for n in notes))
        assert any("2 file(s) not searched, their catalog rules it out (binlog.000001, "
                   "binlog.000002)" in n for n in notes), notes
        await pilot.press("g")
        scr.query_one("#prompt-input").value = first.lower()  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: scr.events.current_row == want)


def test_a_time_of_the_second_file_walks_only_it(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``g @TIME``: the first row at or after the time; a file whose catalog says its last
    event is before it is not walked."""
    import datetime as dt

    from binlogscope.inspector.actions import find_time, go_time, time_rows

    src = _catalogued(tmp_path, monkeypatch)
    src.may_reach_time = functools.partial(files_for_time, list(FILES))
    first_last = max(src.row(i).time or 0 for i in src.part_rows(0))
    later = [i for i in src.part_rows(1) if (src.row(i).time or 0) > first_last]
    if not later:
        pytest.fail("the fixture's second file has no event after the first file's last")
    target = src.row(later[0]).time
    assert target is not None
    text = "@" + dt.datetime.fromtimestamp(target, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    when = go_time(text)
    assert when == target
    rows, skipped = time_rows(src, when)
    assert skipped == ["binlog.000001"] and rows is not None
    found = find_time(src, when, rows=rows)
    assert found == find_time(src, when) == later[0]  # the same row as a walk of every file
    with pytest.raises(ValueError, match="needs the date"):
        go_time("@12:00:00")
    assert go_time("0-1-42") is None


@sync
async def test_g_at_a_time_goes_to_its_first_row(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt

    from binlogscope.inspector.actions import find_time

    indexed = _catalogued(tmp_path, monkeypatch)
    last = max(indexed.row(i).time or 0 for i in indexed.part_rows(0))
    want = find_time(indexed, last + 1)
    assert want is not None and want in indexed.part_rows(1)
    text = "@" + dt.datetime.fromtimestamp(last + 1, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    src = _catalogued(tmp_path, monkeypatch, run=False)
    src.may_reach_time = functools.partial(files_for_time, list(FILES))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        await pilot.press("g")
        scr.query_one("#prompt-input").value = text  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: scr.events.current_row == want)
