"""``binlogscope export --spark`` (``local[2]``, for real) against the local export: the same
dataset (every table, column and row after sorting), the ``errors`` table, ``--resume`` after a
killed Spark export, relay-log sets and captures.

One JVM for the test run (the ``spark`` fixture of tests/export/conftest.py; the CLI reuses the
active session) and one more for the export that is killed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import SCHEMA_VERSION, STATE_FILE, TABLES, read_state, read_table
from binlogscope.export.records import BinlogFileSource
from binlogscope.export.run import run_export
from binlogscope.export.spark.export import run_spark_export
from tests.export.datasets import assert_same_dataset, assert_same_errors, table_rows

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"
FIX = REPO.parent / "shared" / "fixtures"
RUST = FIX / "blackbeam__rust_mysql_common" / "test-data" / "binlogs"
RELAY_LOGS = [RUST / "slave-relay-bin.000001", RUST / "bug33029-slave-relay-bin.000001",
              RUST / "corrupt-relay-bin.000624"]
MARIADB = [RUST / "mariadb-bin.000001", FIX / "zalora__binlog-parser/data/fixtures/mysql-bin.07",
           RUST / "transaction_compression.000001"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _split_mid_transaction(src: Path, d: Path) -> list[Path]:
    """Two files from one binlog, the cut inside a transaction (after its TABLE_MAP, before
    its rows), the second starting with the first's FORMAT_DESCRIPTION as a relay log or a
    rotated binlog does: its first transaction started in the previous file."""
    from binlogscope.drivers.binlog_file import read_binlog_file

    data = src.read_bytes()
    evs = list(read_binlog_file(src, record=False))
    fde = next(e for e in evs if e.type_name == "FORMAT_DESCRIPTION_EVENT")
    cut = next(e.offset for i, e in enumerate(evs) if i > len(evs) // 2
               and evs[i - 1].type_name == "TABLE_MAP_EVENT")
    a, b = d / "relay-bin.000001", d / "relay-bin.000002"
    a.write_bytes(data[:cut])
    assert fde.header is not None
    b.write_bytes(data[:fde.offset + fde.header.event_size] + data[cut:])
    return [a, b]


def test_binlogs_both_ways_equal(spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    for p in [WORKLOAD, *MARIADB]:
        shutil.copy(p, d / p.name)
    local, sp = tmp_path / "local", tmp_path / "spark"
    assert _cli("export", str(d), "--out", str(local))[0] == 0
    rc, out, err = _cli("export", str(d), "--out", str(sp), "--spark", "--master", "local[2]")
    assert rc == 0, err
    counts = assert_same_dataset(local, sp)
    assert counts["rows"] >= 596 and counts["events"] > 264
    state = read_state(sp)
    assert state is not None and state["complete"] and state["schema_version"] == SCHEMA_VERSION
    assert state["counts"] == counts == read_state(local)["counts"]  # type: ignore[index]
    assert f"exported {counts['events']} events, {counts['rows']} rows" in out
    assert not (sp / "errors").exists()
    # --writer tasks: each task writes its parts itself (pyarrow), the same dataset
    tasks = tmp_path / "tasks"
    res = run_spark_export([str(d)], tasks, spark=spark, writer="tasks", checkpoint_files=2)
    assert res.complete and not res.errors
    assert assert_same_dataset(local, tasks) == counts
    assert not (tasks / "_spark_staging").exists()


def test_relay_log_set_and_a_transaction_cut_by_the_file_boundary(
        spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "relay"
    d.mkdir()
    split = _split_mid_transaction(WORKLOAD, d)
    for p in RELAY_LOGS:
        shutil.copy(p, d / p.name)
    inputs = BinlogFileSource([str(d)]).inputs()
    assert len(inputs) == 5
    local, sp = tmp_path / "local", tmp_path / "spark"
    lres = run_export(BinlogFileSource(inputs), local)
    res = run_spark_export([str(d / "*relay-bin*")], sp, spark=spark, checkpoint_files=2)
    assert res.complete
    assert_same_dataset(local, sp)
    # the damaged inputs (the cut file's orphan rows event, the corrupt relay log): the same
    # errors rows as the local export, one per input, the lines the local export prints
    assert res.errors and all(e["kind"] == "damaged" for e in res.errors)
    assert [e["message"] for e in res.errors] == lres.damage_lines()
    assert_same_errors(local, sp)
    # the cut transaction, as the local export has it (each file is decoded on its own): the
    # part in the first file ends with it (no XID), the rows event in the second file has no
    # TABLE_MAP there (it is in the first file) and is kept with that error, its XID closes a
    # transaction of its own; no event is lost or doubled
    whole = tmp_path / "whole"
    run_export(BinlogFileSource([str(WORKLOAD)]), whole)
    events = read_table(sp, "events").to_pylist()
    first = sorted((e for e in events if e["source"] == str(split[0])),
                   key=lambda e: e["offset"])
    second = sorted((e for e in events if e["source"] == str(split[1])),
                    key=lambda e: e["offset"])
    assert first[-1]["event_type"] == "TABLE_MAP_EVENT" and first[-1]["xid"] is None
    assert second[0]["event_type"] == "FORMAT_DESCRIPTION_EVENT"
    assert second[1]["event_type"].startswith("WRITE_ROWS") and "no TABLE_MAP" in \
        second[1]["error"]
    assert second[2]["event_type"] == "XID_EVENT" and second[2]["xid"] is not None
    n_whole = read_table(whole, "events").num_rows
    n_split = sum(1 for r in read_table(sp, "events").to_pylist()
                  if r["source"] in map(str, split))
    assert n_split == n_whole + 1  # the second file's own FORMAT_DESCRIPTION


def test_hadoop_uris_read_through_spark(spark: Any, tmp_path: Path) -> None:
    """``file:`` URIs (a glob) are listed by Hadoop and read by Spark's binaryFile source: the
    same rows, each naming its input by the URI."""
    d = tmp_path / "in"
    d.mkdir()
    for p in [WORKLOAD, *MARIADB[:2]]:
        shutil.copy(p, d / p.name)
    local, sp = tmp_path / "local", tmp_path / "spark"
    run_export(BinlogFileSource([str(d)]), local)
    res = run_spark_export([f"file://{d}/*"], sp, spark=spark)
    assert res.complete and not res.errors
    names = read_state(sp)["inputs"]  # type: ignore[index]
    assert names == sorted(f"file:{p}" for p in BinlogFileSource([str(d)]).inputs())
    for table in TABLES:
        want = sorted(json.dumps(dict(r, source=f"file:{r['source']}"), sort_keys=True,
                                 default=str) for r in read_table(local, table).to_pylist())
        assert table_rows(sp, table) == want, table
    rc, _, err = _cli("export", "file:///nonexistent/dir/*", "--out", str(tmp_path / "x"),
                      "--spark")
    assert rc == 2 and "no such file" in err


@pytest.mark.slow  # ~60 s on the loaded 2-core box
def test_captures_both_ways_equal(spark: Any, tmp_path: Path) -> None:
    caps = sorted(str(p) for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
    assert len(caps) >= 4
    local, sp = tmp_path / "local", tmp_path / "spark"
    lrc, _, lerr = _cli("export", "--pcap", *caps, "--out", str(local))
    rc, _, err = _cli("export", "--pcap", str(CAPTURES / "*.pcap*"), "--out", str(sp),
                      "--spark")
    # the capture that lost 110 bytes: the same line, exit code and errors row both ways
    assert (rc, err) == (lrc, lerr) == (1, lerr)
    assert "pcap-loss-reorder.pcap: 1 gap(s) in the capture, 110 bytes lost" in err
    counts = assert_same_dataset(local, sp)
    assert_same_errors(local, sp)
    assert counts["packets"] > 0 and counts["events"] > 0
    assert read_state(sp)["inputs"] == caps  # type: ignore[index]


@pytest.mark.slow  # ~55 s on the loaded 2-core box
def test_a_damaged_and_a_missing_file_go_to_errors(spark: Any, tmp_path: Path) -> None:
    """Inputs that fail (not a binlog, missing) and one that is damaged inside (a corrupt
    relay log): the exit code, the lines and the ``errors`` rows of the local export, with
    either writer (``--writer tasks`` wrote an empty ``errors`` table)."""
    d = tmp_path / "in"
    d.mkdir()
    good = [d / "a.000001", d / "c.000003"]
    shutil.copy(WORKLOAD, good[0])
    shutil.copy(MARIADB[0], good[1])
    bad = d / "b.000002"
    bad.write_bytes(b"\x00\x00\x00\x00" + WORKLOAD.read_bytes()[4:])  # the magic destroyed
    damaged = d / "d.000005"
    shutil.copy(RELAY_LOGS[2], damaged)
    missing = d / "gone.000004"
    args = [str(good[0]), str(bad), str(good[1]), str(missing), str(damaged)]
    sp, local = tmp_path / "spark", tmp_path / "local"
    rc, _, err = _cli("export", *args, "--out", str(sp), "--spark")
    assert rc == 1
    assert "b.000002 is not a binlog file" in err and "gone.000004" in err
    assert "d.000005: damaged: 1 event(s) with errors" in err
    errors = pq.read_table(sp / "errors").to_pylist()
    assert sorted((e["path"], e["kind"]) for e in errors) == [
        (str(bad), "failed"), (str(damaged), "damaged"), (str(missing), "failed")]
    assert all(e["message"] for e in errors)
    # the local export of the same inputs (the missing one left out: it refuses to start)
    lrc, _, lerr = _cli("export", *args[:3], args[4], "--out", str(local))
    assert lrc == rc
    lines = set(lerr.splitlines())
    assert {ln for ln in err.splitlines() if "gone.000004" not in ln} == lines
    assert [e for e in errors if e["path"] != str(missing)] == \
        pq.read_table(local / "errors").to_pylist()
    assert_same_dataset(local, sp)  # the good files and the damaged one's readable events
    state = read_state(sp)
    assert state is not None and state["complete"] and len(state["errors"]) == 3
    tasks = tmp_path / "tasks"
    res = run_spark_export(args, tasks, spark=spark, writer="tasks")
    assert res.complete and res.errors == state["errors"]
    assert pq.read_table(tasks / "errors").to_pylist() == errors
    assert_same_dataset(local, tasks)


@pytest.mark.slow  # ~100 s on the loaded 2-core box
def test_resume_after_a_killed_spark_export(spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    srcs = [WORKLOAD, *MARIADB, *RELAY_LOGS[:2]]
    for i, p in enumerate(srcs):
        shutil.copy(p, d / f"mysql-bin.{i + 1:06d}")
    sp = tmp_path / "spark"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "export", str(d), "--out", str(sp), "--spark",
         "--master", "local[1]", "--checkpoint-files", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            state = read_state(sp)
            if state is not None and state["checkpoint"] >= 2:
                break
            assert proc.poll() is None, "the export ended before it could be killed"
            time.sleep(0.05)
        assert proc.poll() is None, "the export finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    state = read_state(sp)
    assert state is not None and not state["complete"]
    done = int(state["resume"]["input_index"])
    assert 2 <= done < len(srcs)
    kept = {p: p.stat().st_mtime_ns for p in sp.rglob("part-*.parquet")}
    assert kept
    res = run_spark_export([], sp, resume=True, spark=spark)
    assert res.complete and res.skipped_inputs == done
    for p, mtime in kept.items():  # what was exported is not exported again
        assert p.stat().st_mtime_ns == mtime
    assert not (sp / "_spark_staging").exists()
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(d)]), local)
    assert_same_dataset(local, sp)  # no duplicates, nothing missing
    assert read_state(sp)["counts"] == read_state(local)["counts"]  # type: ignore[index]
    # done: a second resume has nothing to do
    rc, _, err = _cli("export", "--resume", "--out", str(sp), "--spark")
    assert rc == 0 and "already complete" in err


def test_analyze_reads_a_spark_export(spark: Any, tmp_path: Path) -> None:
    sp = tmp_path / "spark"
    calls: list[tuple[str, int, int, int, int, float]] = []
    assert run_spark_export([str(WORKLOAD)], sp, spark=spark,
                            progress=lambda *a: calls.append(a)).complete
    size = WORKLOAD.stat().st_size  # the progress: the files and bytes the tasks reported
    assert calls and calls[-1][:5] == ("done", 1, 1, size, size)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls)
    rc, out, err = _cli("analyze", str(sp), "--sql",
                        "SELECT operation, count(*) AS n FROM rows GROUP BY operation "
                        "ORDER BY operation")
    assert rc == 0, err
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(WORKLOAD)]), local)
    ops: dict[str, int] = {}
    for r in read_table(local, "rows").to_pylist():
        ops[r["operation"]] = ops.get(r["operation"], 0) + 1
    for op, n in ops.items():
        assert any(line.split()[:2] == [op, str(n)] for line in out.splitlines()), (op, out)


def test_progress_bar() -> None:
    from binlogscope.cli.export import progress_bar

    err = io.StringIO()
    progress_bar(err, "binlogscope")("decode", 2, 5, 10_000_000, 20_000_000, 2.0)
    line = err.getvalue()
    assert line.startswith("\rbinlogscope export --spark: [#########.") and "2/5 files" in line
    assert "10.0/20.0 MB" in line and "5.0 MB/s (decode)" in line


def test_cli_errors(tmp_path: Path) -> None:
    rc, _, err = _cli("export", "--out", str(tmp_path / "x"), "--spark")
    assert rc == 2 and "no SOURCE" in err
    rc, _, err = _cli("export", str(WORKLOAD), "--out", str(tmp_path / "x"), "--spark",
                      "--conf", "nokey")
    assert rc == 2 and "K=V" in err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / STATE_FILE).write_text("{}")
    rc, _, err = _cli("export", str(WORKLOAD), "--out", str(tmp_path / "full"), "--spark")
    assert rc == 2 and "not empty" in err


@pytest.mark.mysql
def test_a_fresh_mariadb_workload_set_both_ways(spark: Any, mariadb: Any,
                                                 tmp_path: Path) -> None:
    """The test workload on a throw-away MariaDB (every type, DML, DDL, a rotation in the
    middle), its binlog files exported both ways."""
    from tests.mariadb_workload import Workload

    db = "spark_export_test"
    admin = mariadb.connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {db}")
            cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW MASTER STATUS")
            first = cur.fetchone()[0]
        conn = mariadb.connect(database=db, conv={})
        try:
            Workload(conn).run_full(version=mariadb.version, bulk_rows=2000, big=False)
        finally:
            conn.close()
        with admin.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
    finally:
        admin.close()
    files = [p for p in mariadb.binlog_files() if p.name >= first][:-1]
    assert len(files) >= 2  # the workload rotates once
    d = tmp_path / "in"
    d.mkdir()
    for p in files:
        shutil.copy(p, d / p.name)
    local, sp = tmp_path / "local", tmp_path / "spark"
    run_export(BinlogFileSource([str(d)]), local)
    res = run_spark_export([str(d)], sp, spark=spark)
    assert res.complete and not res.errors
    counts = assert_same_dataset(local, sp)
    assert counts["rows"] > 2000
