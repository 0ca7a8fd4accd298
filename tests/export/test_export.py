"""``binlogscope export``: real fixture binlogs -> Parquet, read back with pyarrow.

Counts are checked against ``binlogscope file --json`` (the JSON path, independent of the
exporter) and values against the fixtures' own ``mysqlbinlog -vv`` dumps (dump.txt).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from copy import copy
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import SCHEMA_VERSION, STATE_FILE, read_state, read_table
from binlogscope.export.records import BinlogFileSource, Record, ResumePoint, WrittenRun
from binlogscope.export.run import run_export

REPO = Path(__file__).resolve().parents[2]
FIX = REPO.parent / "shared" / "fixtures"
CRC32 = FIX / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"
BB = FIX / "blackbeam__rust_mysql_common/test-data/binlogs"
CDC = FIX / "rust-us__mysql-cdc-rs/tests/events"
DUMPED = sorted([*CDC.glob("8.0/*/binlog.0*"), *CDC.glob("5.7/3[012]_*/log.bin")])
FIXTURES = [CRC32, BB / "json.binlog.000001", BB / "mysql-enum-string-set.000001",
            BB / "mariadb-bin.000001", BB / "vector.binlog", *DUMPED]


def _json_counts(path: Path) -> Counter[tuple[str | None, str | None, str]]:
    """(schema, table, operation) -> row changes, from ``binlogscope file --json``."""
    buf = io.StringIO()
    main(["file", "--json", str(path)], out=buf, err=io.StringIO())
    c: Counter[tuple[str | None, str | None, str]] = Counter()
    for line in buf.getvalue().splitlines():
        o = json.loads(line)
        if o["rows"]:
            name = o["event_type"]
            op = "INSERT" if "WRITE" in name else "DELETE" if "DELETE" in name else "UPDATE"
            c[(o["schema"], o["table"], op)] += len(o["rows"])
    return c


def _json_event_count(path: Path) -> int:
    buf = io.StringIO()
    main(["file", "--json", str(path)], out=buf, err=io.StringIO())
    return len(buf.getvalue().splitlines())


def _export(src: list[Path], out: Path, *extra: str) -> int:
    return main(["export", *map(str, src), "--out", str(out), *extra], out=io.StringIO(),
                err=io.StringIO())


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_row_counts_per_table_and_operation(tmp_path: Path, path: Path) -> None:
    assert _export([path], tmp_path / "out") == 0
    rows = read_table(tmp_path / "out", "rows")
    got = Counter(zip(rows.column("schema").to_pylist(), rows.column("table").to_pylist(),
                      rows.column("operation").to_pylist(), strict=True))
    assert got == _json_counts(path)
    events = read_table(tmp_path / "out", "events")
    assert events.num_rows == _json_event_count(path)
    assert set(events.column("schema_version").to_pylist()) == {SCHEMA_VERSION}
    # events: one per offset, in the partition dirs of their own date/schema
    assert len(set(events.column("offset").to_pylist())) == events.num_rows
    state = read_state(tmp_path / "out")
    assert state is not None and state["complete"] is True
    assert state["counts"]["rows"] == rows.num_rows


# ----------------------------------------------------------------------------- dump.txt

_BLOCK = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`")
_VALUE = re.compile(r"^###   @(\d+)=(.*?)(?: /\* .* \*/)?$")


def _read_dump(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16")
    return raw.decode("utf-8", "replace")


def _dump_rows(path: Path) -> list[dict[str, Any]]:
    """Row images of a ``mysqlbinlog -vv`` dump: op, table, before/after {index: text}."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    image: dict[int, str | None] | None = None
    for line in _read_dump(path).splitlines():
        m = _BLOCK.match(line)
        if m:
            op = {"INSERT INTO": "INSERT", "UPDATE": "UPDATE", "DELETE FROM": "DELETE"}[m[1]]
            cur = {"op": op, "schema": m[2], "table": m[3], "before": None, "after": None}
            out.append(cur)
            continue
        if cur is None:
            continue
        if line == "### WHERE":
            image = cur["before"] = {}
        elif line == "### SET":
            image = cur["after"] = {}
        else:
            v = _VALUE.match(line)
            if v and image is not None:
                image[int(v[1])] = _dump_value(v[2])
            elif not line.startswith("###"):
                cur = image = None
    return out


def _dump_value(text: str) -> str | None:
    if text == "NULL":
        return None
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    return text.split(" ")[0]  # ints: "-1 (255)" -> "-1"


#: fixtures whose dump.txt was made with -v (shows the row images)
VERBOSE_DUMPS = [p for p in DUMPED if _dump_rows(p.parent / "dump.txt")]


def test_enough_verbose_dumps() -> None:
    assert len(VERBOSE_DUMPS) >= 4


@pytest.mark.parametrize("path", VERBOSE_DUMPS,
                         ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_images_equal_the_mysqlbinlog_dump(tmp_path: Path, path: Path) -> None:
    expected = _dump_rows(path.parent / "dump.txt")
    assert _export([path], tmp_path / "out") == 0
    rows = read_table(tmp_path / "out", "rows").sort_by([("offset", "ascending"),
                                                          ("row_index", "ascending")])
    got = rows.to_pylist()
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert (g["operation"], g["schema"], g["table"]) == (e["op"], e["schema"], e["table"])
        for side in ("before", "after"):
            if e[side] is None:
                assert g[side] is None
                continue
            values = [v for _, v in g[side]]
            assert len(values) == len(e[side])
            for i, want in e[side].items():
                assert values[i - 1] == want, (side, i)


# ----------------------------------------------------------------------------- CLI contract

def test_several_files_and_a_directory(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        (d / name).write_bytes(CRC32.read_bytes())
    assert _export([d], tmp_path / "a") == 0
    assert _export([d / "mysql-bin.000001", d / "mysql-bin.000002"], tmp_path / "b") == 0
    for out in ("a", "b"):
        ev = read_table(tmp_path / out, "events")
        assert ev.num_rows == 2 * 303
        assert Counter(ev.column("binlog_file").to_pylist()) == {
            "mysql-bin.000001": 303, "mysql-bin.000002": 303}
        assert read_table(tmp_path / out, "rows").num_rows == 2 * 63
        assert read_table(tmp_path / out, "packets").num_rows == 0


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    err = io.StringIO()
    # a binlog given as a capture: one clear line, non-zero
    assert main(["export", str(CRC32), "--pcap", "--out", str(tmp_path / "x")],
                out=io.StringIO(), err=err) == 1
    assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
    err = io.StringIO()
    # --live against a closed port: one clear line, non-zero
    assert main(["export", "--live", "--port", "1", "--no-reconnect", "--ssl-mode", "DISABLED",
                 "--out", str(tmp_path / "y")], out=io.StringIO(), err=err) == 1
    assert "refused" in err.getvalue() and "Traceback" not in err.getvalue()
    err = io.StringIO()
    assert main(["export", str(tmp_path / "nope"), "--out", str(tmp_path / "x")],
                out=io.StringIO(), err=err) == 1
    assert "no such file" in err.getvalue()
    assert _export([CRC32], tmp_path / "done") == 0
    err = io.StringIO()
    assert main(["export", str(CRC32), "--out", str(tmp_path / "done")], out=io.StringIO(),
                err=err) == 2
    assert "not empty" in err.getvalue()
    err = io.StringIO()
    assert main(["export", "--resume", "--out", str(tmp_path / "done")], out=io.StringIO(),
                err=err) == 0
    assert "already complete" in err.getvalue()


# ----------------------------------------------------------------------------- crash safety

class _Interrupting:
    """A source that raises KeyboardInterrupt (Ctrl-C) after ``n`` records."""

    def __init__(self, inner: BinlogFileSource, n: int) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.n = n

    def inputs(self) -> list[str]:
        return self.inner.inputs()

    def total_bytes(self) -> int | None:
        return self.inner.total_bytes()

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        """(counting events: a run the kernel read counts its events, and Ctrl-C may come
        inside it)"""
        seen = 0
        for rec in self.inner.records(resume):
            if seen == self.n:
                raise KeyboardInterrupt
            if isinstance(rec, WrittenRun) and seen + len(rec.values) > self.n:
                head = copy(rec)
                head.values = rec.values[:self.n - seen]
                yield head
                raise KeyboardInterrupt
            seen += len(rec.values) if isinstance(rec, WrittenRun) else 1
            yield rec


def _keys(root: Path) -> tuple[list[Any], list[Any]]:
    ev = read_table(root, "events")
    rows = read_table(root, "rows")
    ek = sorted(zip(ev["source"].to_pylist(), ev["offset"].to_pylist(),
                    [-1 if x is None else x for x in ev["inner_index"].to_pylist()],
                    ev["xid"].to_pylist(), strict=True))
    rk = sorted(zip(rows["source"].to_pylist(), rows["offset"].to_pylist(),
                    rows["row_index"].to_pylist(), rows["after_json"].to_pylist(),
                    rows["before_json"].to_pylist(), rows["xid"].to_pylist(), strict=True),
                key=repr)
    return ek, rk


def test_ctrl_c_mid_file_then_resume_equals_a_fresh_export(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    run_export(BinlogFileSource([str(CRC32)]), fresh)
    part = tmp_path / "part"
    res = run_export(_Interrupting(BinlogFileSource([str(CRC32)]), 150), part,
                     checkpoint_events=20)
    assert res.interrupted and not res.complete
    state = read_state(part)
    assert state is not None and not state["complete"]
    assert state["resume"]["input_index"] == 0 and state["resume"]["offset"] > 4
    # readable: every completed checkpoint, nothing half-written
    partial_events = read_table(part, "events")
    assert 100 < partial_events.num_rows < 150
    assert not [p for p in part.rglob("*") if p.name.endswith(".inprogress")]
    assert max(partial_events["offset"].to_pylist()) < state["resume"]["offset"]
    # a second interruption, then the rest
    res = run_export(_Interrupting(BinlogFileSource([str(CRC32)]), 70), part, resume=True,
                     checkpoint_events=20)
    assert res.interrupted
    res = run_export(BinlogFileSource([str(CRC32)]), part, resume=True, checkpoint_events=20)
    assert res.complete
    assert _keys(part) == _keys(fresh)  # no duplicates, nothing lost, same XIDs


@pytest.mark.slow  # ~200 s on the loaded 2-core box
def test_killed_export_leaves_a_readable_dataset_and_resume_completes(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    copies = 400
    for i in range(copies):
        (src / f"mysql-bin.{i:06d}").symlink_to(CRC32)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "export", str(src),
                             "--out", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            state = read_state(out)
            if state is not None and state["checkpoint"] >= 3:
                break
            assert proc.poll() is None, "the export finished before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    state = read_state(out)
    assert state is not None and not state["complete"]
    done_inputs = state["resume"]["input_index"]
    assert 0 < done_inputs < copies
    # the dataset is readable and holds exactly the completed inputs
    ev = read_table(out, "events")
    assert ev.num_rows >= 303 * done_inputs
    assert read_table(out, "rows").num_rows >= 63 * done_inputs
    # (a SIGKILL between the state's write and its rename leaves the temp file: the next
    # state write truncates and renames it, so none is left once the export resumed)

    err = io.StringIO()
    assert main(["export", "--resume", "--out", str(out)], out=io.StringIO(), err=err) == 0, \
        err.getvalue()
    assert not (out / STATE_FILE).with_name(f".{STATE_FILE}.tmp").exists()
    ev = read_table(out, "events")
    rows = read_table(out, "rows")
    assert ev.num_rows == 303 * copies
    assert rows.num_rows == 63 * copies
    keys = set(zip(rows["source"].to_pylist(), rows["offset"].to_pylist(),
                   rows["row_index"].to_pylist(), strict=True))
    assert len(keys) == rows.num_rows  # no duplicates
    assert pc.count_distinct(ev["source"]).as_py() == copies
    state = read_state(out)
    assert state is not None and state["complete"] and state["counts"]["rows"] == 63 * copies
