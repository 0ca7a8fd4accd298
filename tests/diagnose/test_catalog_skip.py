"""The per-file catalog skips files (issue 29 item 6): ``catalog.files_covering`` (for ``file``
and the Spark source's planner) leaves out a file only when its cached entry proves it holds no
event of the time window, and ``file --start/--stop-datetime`` over real MariaDB binlogs prints
the same with the catalog (files skipped, said on stderr) as without it."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.diagnose import catalog as cat

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
#: real MariaDB binlogs written at different times (first/last header times in their catalog)
EARLY = CAPTURES / "pcap-loss-reorder.binlog"  # 1795306882 .. 1795306889
MIDDLE = CAPTURES / "pcap-mariadb-binlog.binlog"  # 1795306916
LATE = CAPTURES / "pcap-pymysqlrepl.binlog"  # 1795307138 .. 1795307140
FILES = [EARLY, MIDDLE, LATE]


def _local(ts: int) -> str:
    """A --start/--stop-datetime argument for header time ``ts`` (local time, as mysqlbinlog)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["file", "--jobs", "1", *args], out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rc = main(["locate", "--catalog", "--source", *map(str, FILES)], out=io.StringIO(),
              err=io.StringIO())
    assert rc == 0
    return cat.cache_dir()


def test_files_covering_skips_only_what_the_entries_rule_out(cache: Path) -> None:
    entries = {p: cat.load(p, cache) for p in FILES}
    assert all(entries.values())
    late = entries[LATE]
    assert late is not None and late.first_event_time is not None and late.last_time
    # after EARLY's and MIDDLE's last events: only LATE
    keep, skipped = cat.files_covering(FILES, late.first_event_time - 1, None, directory=cache)
    assert keep == [LATE] and skipped == [EARLY, MIDDLE]
    # before LATE's first event: LATE is out (the selection would end at its first event)
    keep, skipped = cat.files_covering(FILES, None, late.first_event_time, directory=cache)
    assert keep == [EARLY, MIDDLE] and skipped == [LATE]
    assert cat.files_covering(FILES, None, None, directory=cache) == (FILES, [])
    # a file whose entry is missing or stale is read
    assert cat.files_covering(FILES, late.last_time + 1, None, directory=cache / "none") == (
        FILES, [])


def test_file_prints_the_same_with_the_catalog(cache: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    late = cat.load(LATE, cache)
    middle = cat.load(MIDDLE, cache)
    assert late is not None and middle is not None and middle.first_time is not None
    for window in (["--start-datetime", _local(middle.first_time)],
                   ["--stop-datetime", _local(middle.first_time + 1)],
                   ["--start-datetime", _local(middle.first_time),
                    "--stop-datetime", _local(middle.first_time + 1)]):
        for output in ([], ["--json"], ["--brief"]):
            args = [*output, *window, *map(str, FILES)]
            rc, with_catalog, err = _run(*args)
            assert rc == 0 and "catalog says so" in err, (args, err)
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
            rc2, without, err2 = _run(*args)
            monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent.parent))
            assert rc2 == 0 and "catalog" not in err2
            assert with_catalog == without, args
    # something was selected at all (the window is MIDDLE's second)
    _, out, _ = _run("--json", "--start-datetime", _local(middle.first_time),
                     "--stop-datetime", _local(middle.first_time + 1), *map(str, FILES))
    assert out.count("\n") > 5
    assert os.environ["XDG_CACHE_HOME"] == str(cache.parent.parent)
