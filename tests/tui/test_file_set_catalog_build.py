"""A set of binlog files opened the first time (an empty catalog cache): the TUI's go-to by
GTID or ``@time`` builds the missing catalog entries first (in its worker, the progress in the
status line, Esc cancels), caches them, and lands on the same row as over a catalogued set -
and says which files it skipped, as a catalogued set does (issue 29 item 6)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.file import file_set_source
from binlogscope.diagnose.catalog import cache_dir, load
from binlogscope.inspector.actions import find_gtid, find_time
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import sync, wait_for
from tests.tui.test_file_set import FILES

pytestmark = pytest.mark.timeout(120)

Progress = Callable[[int, int, str], None]


def _walked() -> BinlogSetSource:
    """The set indexed whole, no catalog: what every go-to must find."""
    src = BinlogSetSource(FILES)
    src.run(lambda: False)
    return src


def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BinlogSetSource:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert all(load(p, cache_dir()) is None for p in FILES)
    return file_set_source([str(p) for p in FILES])


async def _go(pilot: object, scr: MainScreen, text: str) -> None:
    await pilot.press("g")  # type: ignore[attr-defined]
    scr.query_one("#prompt-input").value = text  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]


def _spy(scr: MainScreen, notes: list[str]) -> None:
    """Keep every notification's text in ``notes``."""
    orig = scr.notify

    def spy(message: str, **kw: Any) -> None:
        notes.append(message)
        orig(message, **kw)

    scr.notify = spy  # type: ignore[method-assign,assignment]


def _status(scr: MainScreen) -> str:
    return str(scr.query_one(StatusBar).render())


@sync
async def test_a_gtid_go_to_on_a_fresh_cache_builds_the_catalog_and_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walked()
    gtid = next(walked.row(i).gtid for i in walked.part_rows(1)
                if walked.row(i).kind == "gtid")
    assert gtid is not None
    want = find_gtid(walked, gtid.lower())
    assert want is not None and want in walked.part_rows(1)
    src = _fresh(tmp_path, monkeypatch)
    shown: list[str] = []
    build = src.catalogue
    assert build is not None

    def watched(cancelled: Callable[[], bool], progress: Progress) -> bool:
        def step(k: int, total: int, name: str) -> None:  # (records the files read)
            progress(k, total, name)
            shown.append(name)
        return build(cancelled, step)

    src.catalogue = watched
    notes: list[str] = []
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        _spy(scr, notes)
        await _go(pilot, scr, gtid.lower())  # at once: the set may still be indexing
        await wait_for(lambda: scr.events.current_row == want)
        await pilot.pause()
        assert src.position(want) in _status(scr)  # the status line names the row's place
        assert "cataloguing" not in _status(scr)
        assert shown == ["binlog.000001", "binlog.000002"]  # both files catalogued ...
        assert all(load(p, cache_dir()) is not None for p in FILES)  # ... and cached
        # a GTID in no file: the same answer as a catalogued set's
        absent = f"{gtid.rpartition(':')[0]}:999999".lower()
        await _go(pilot, scr, absent)
        await wait_for(lambda: any("not searched" in n for n in notes))
        assert any("2 file(s) not searched, their catalog rules it out (binlog.000001, "
                   "binlog.000002)" in n for n in notes), notes
        assert shown == ["binlog.000001", "binlog.000002"]  # (cached: not built again)
        assert scr.events.current_row == want


@sync
async def test_a_time_go_to_on_a_fresh_cache_lands_on_the_first_row_at_or_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walked()
    last = max(walked.row(i).time or 0 for i in walked.part_rows(0))
    want = find_time(walked, last + 1)
    assert want is not None and want in walked.part_rows(1)
    text = "@" + dt.datetime.fromtimestamp(last + 1, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    src = _fresh(tmp_path, monkeypatch)
    notes: list[str] = []
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        _spy(scr, notes)
        await _go(pilot, scr, text)
        await wait_for(lambda: scr.events.current_row == want)
        await pilot.pause()
        assert src.position(want) in _status(scr)
        # the first file was skipped by its (new) catalog entry, and the go-to says so
        await wait_for(lambda: any("1 file(s) not searched" in n for n in notes))


@sync
async def test_building_the_catalog_shows_progress_and_esc_cancels_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walked()
    gtid = next(walked.row(i).gtid for i in walked.part_rows(1)
                if walked.row(i).kind == "gtid")
    assert gtid is not None
    src = _fresh(tmp_path, monkeypatch)
    build = src.catalogue
    assert build is not None
    gate = threading.Event()

    def slow(cancelled: Callable[[], bool], progress: Progress) -> bool:
        def step(k: int, total: int, name: str) -> None:  # (each file waits for the gate)
            progress(k, total, name)
            while not gate.wait(0.05) and not cancelled():
                pass
        return build(cancelled, step)

    src.catalogue = slow
    notes: list[str] = []
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        before = scr.events.current_row
        _spy(scr, notes)
        await _go(pilot, scr, gtid.lower())
        await wait_for(lambda: "go to: cataloguing binlog.000001 (1/2; esc cancels)"
                       in _status(scr))
        await pilot.press("escape")
        await wait_for(lambda: "go to: cancelled" in notes)
        await pilot.pause(0.3)
        assert "cataloguing" not in _status(scr)
        assert scr.events.current_row == before  # it did not go
        assert load(FILES[0], cache_dir()) is None  # (the cancelled entry is not cached)
        gate.set()


@pytest.mark.mysql
@sync
async def test_mariadb_binlogs_opened_the_first_time(mariadb: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Four binlog files of the real MariaDB (domain-server-seq GTIDs), copied to a new
    directory, a fresh cache: ``g GTID`` of the third file lands on its GTID event, every file
    catalogued and cached, and the files that cannot hold it are named when it is in none."""
    import shutil

    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS goto_set (id INT PRIMARY KEY, v INT)")
        for n in range(4):
            cur.execute("FLUSH BINARY LOGS")
            for i in range(3):
                cur.execute("REPLACE INTO goto_set VALUES (%s, %s)", (n * 10 + i, n))
                conn.commit()
        cur.execute("FLUSH BINARY LOGS")
    files = []
    for p in mariadb.binlog_files()[-5:-1]:  # (four closed files)
        files.append(Path(shutil.copy(p, tmp_path / p.name)))
    walked = BinlogSetSource(files)
    walked.run(lambda: False)
    gtids = [walked.row(i).gtid for i in walked.part_rows(2) if walked.row(i).kind == "gtid"]
    gtid = gtids[1]
    assert gtid is not None and gtid.count("-") == 2
    want = find_gtid(walked, gtid.lower())
    assert want is not None and want in walked.part_rows(2)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = file_set_source([str(p) for p in files])
    notes: list[str] = []
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        _spy(scr, notes)
        await _go(pilot, scr, gtid.lower())
        await wait_for(lambda: scr.events.current_row == want)
        await pilot.pause()
        assert src.position(want) in _status(scr)
        assert all(load(p, cache_dir()) is not None for p in files)
        domain, server, _ = gtid.split("-")
        await _go(pilot, scr, f"{domain}-{server}-999999")
        await wait_for(lambda: any("not searched" in n for n in notes))
        assert any(f"4 file(s) not searched, their catalog rules it out "
                   f"({', '.join(p.name for p in files)})" in n for n in notes), notes
