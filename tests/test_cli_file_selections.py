"""``binlogscope file`` for mysqlbinlog users, compared with the real ``mariadb-binlog``.

Time ranges, ``--database`` and the ``--verbose`` row view are checked differentially: the same
files and arguments through ``mariadb-binlog`` (from Debian's MariaDB packages) and through
binlogscope, in one time zone, must select the same events and rows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "captures" / "mariadb-10.11-workload.000001"
FIXTURES = Path("/work/shared/fixtures") if Path("/work/shared/fixtures").is_dir() else (
    ROOT.parent / "shared" / "fixtures")
#: real binlogs with many distinct event times and row events (MySQL 5.x, as Canal keeps them)
CANAL = FIXTURES / "alibaba__canal/parse/src/test/resources/binlog/mysql-bin.000001"
MARIADB_10 = FIXTURES / "zalora__binlog-parser/data/fixtures/mysql-bin.07"
TSDB = FIXTURES / "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003"
ENV = {**os.environ, "TZ": "Asia/Tokyo", "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
MARIADB_BINLOG = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")


def _ours(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([sys.executable, "-m", "binlogscope", "file", *args], env=ENV,
                         input=stdin, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(res.args, res.returncode, res.stdout.decode(),
                                       res.stderr.decode())


def _theirs(*args: str) -> str:
    assert MARIADB_BINLOG is not None
    res = subprocess.run([MARIADB_BINLOG, *args], env=ENV, capture_output=True, text=True,
                         errors="replace", timeout=120)
    return res.stdout


def _summary_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if not line.startswith("#")]


def _local_times(path: Path) -> list[str]:
    """The distinct event times of a file as ``YYYY-MM-DD hh:mm:ss`` in ENV's time zone."""
    rows = _summary_rows(_ours("--summary", str(path)).stdout)
    seen: list[str] = []
    for r in rows:
        t = f"{r[4]} {r[5]}"
        if t not in seen:
            seen.append(t)
    return seen


needs_mariadb_binlog = pytest.mark.skipif(MARIADB_BINLOG is None,
                                          reason="mariadb-binlog is installed by install-deps")


@needs_mariadb_binlog
@pytest.mark.parametrize("path", [CANAL, TSDB], ids=["canal", "tsdb"])
def test_datetime_range_selects_what_mariadb_binlog_selects(path: Path) -> None:
    times = _local_times(path)
    assert len(times) > 10
    for start, stop in [(times[3], times[-4]), (times[len(times) // 2], None),
                        (None, times[5]), (times[1], times[2])]:
        args = []
        if start:
            args.append(f"--start-datetime={start}")
        if stop:
            args.append(f"--stop-datetime={stop}")
        res = _ours("--summary", *args, str(path))
        assert res.returncode == 0, res.stderr
        ours = [int(r[1]) for r in _summary_rows(res.stdout)]
        theirs = [int(m) for m in re.findall(r"^# at (\d+)$", _theirs(*args, str(path)), re.M)]
        if start:  # mariadb-binlog always shows the FORMAT_DESCRIPTION first
            theirs = [t for t in theirs if t != 4] if ours[:1] != [4] else theirs
        assert ours == theirs, (start, stop)


def _their_rows(text: str) -> list[tuple[str, str]]:
    """(statement, table) of each row mariadb-binlog -v prints."""
    out = []
    for m in re.finditer(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`$",
                         text, re.M):
        out.append((m.group(1), f"{m.group(2)}.{m.group(3)}"))
    return out


def _our_rows(text: str) -> list[tuple[str, str]]:
    out = []
    for m in re.finditer(r"^### (INSERT INTO|UPDATE|DELETE FROM) (\S+) ", text, re.M):
        out.append((m.group(1), m.group(2)))
    return out


@needs_mariadb_binlog
@pytest.mark.parametrize("path", [CANAL, TSDB, MARIADB_10], ids=["canal", "tsdb", "mariadb"])
def test_verbose_rows_and_database_match_mariadb_binlog(path: Path) -> None:
    dbs = {t.split(".")[0] for _, t in _their_rows(_theirs("-v", str(path)))}
    assert dbs
    for extra in ([], *[[f"--database={db}"] for db in sorted(dbs)], ["--database=no_such"]):
        ours = _ours("--summary", "-v", *extra, str(path))
        assert ours.returncode == 0, ours.stderr
        theirs = _their_rows(_theirs("-v", *extra, str(path)))
        assert _our_rows(ours.stdout) == theirs, extra
        if extra == ["--database=no_such"]:
            assert theirs == []


def test_verbose_values_and_names() -> None:
    res = _ours("--summary", "-v", str(WORKLOAD))
    lines = res.stdout.splitlines()
    assert ("### INSERT INTO binlogscope_test.t_int SET id=2, rev=0, ti=127, tiu=255, si=32767, "
            "siu=65535, mi=8388607, miu=16777215, i=2147483647, iu=4294967295, "
            "bi=9223372036854775807, biu=18446744073709551615") in lines
    updates = [line for line in lines if line.startswith("### UPDATE binlogscope_test.t_int ")]
    assert updates and " WHERE id=1 AND rev=0 " in updates[0]
    assert any(line.startswith("### DELETE FROM ") for line in lines)
    # text dump: the same lines after the rows event's fields
    plain = _ours("--brief", "-v", str(WORKLOAD)).stdout
    assert "### INSERT INTO binlogscope_test.t_int SET id=2," in plain
    # numbered columns where the binlog carries no names
    canal = _ours("--summary", "-v", str(CANAL)).stdout
    assert re.search(r"^### (INSERT INTO|UPDATE) \S+ SET @1=", canal, re.M)


def test_database_keeps_transaction_keywords_and_other_events() -> None:
    res = _ours("--json", "--database", "no_such", str(WORKLOAD))
    kinds = [json.loads(line) for line in res.stdout.splitlines()]
    types = {k["event_type"] for k in kinds}
    assert "TABLE_MAP_EVENT" not in types and "WRITE_ROWS_EVENT_V1" not in types
    assert {"GTID_EVENT", "XID_EVENT", "FORMAT_DESCRIPTION_EVENT"} <= types
    assert all(k["query"] in (None, "BEGIN", "COMMIT") for k in kinds
               if k["event_type"] == "QUERY_EVENT")


def test_stdin_and_boundaries() -> None:
    data = WORKLOAD.read_bytes()
    res = _ours("--summary", "-", stdin=data)
    assert res.returncode == 0, res.stderr
    assert _summary_rows(res.stdout) and _summary_rows(res.stdout)[0][0] == "-"
    direct = _summary_rows(_ours("--summary", str(WORKLOAD)).stdout)
    assert [r[1:] for r in _summary_rows(res.stdout)] == [r[1:] for r in direct]
    # a start position inside an event: that message, not "damaged"
    res = _ours("--start-position", "300", str(WORKLOAD))
    assert res.returncode == 1
    assert "300 is not an event boundary" in res.stderr and "inside the event at 285" in res.stderr
    assert "damaged" not in res.stderr and "Traceback" not in res.stderr
    res = _ours("--start-position", "328", "--summary", str(WORKLOAD))
    assert res.returncode == 0 and _summary_rows(res.stdout)[0][1] == "328"
    res = _ours("--start-datetime", "yesterday", str(WORKLOAD))
    assert res.returncode == 2 and "cannot read the time" in res.stderr


def test_text_dump_shows_human_time() -> None:
    res = _ours("--brief", str(WORKLOAD))
    assert "header.timestamp = 1795307206 (2026-11-22 00:26:46 UTC)" in res.stdout
