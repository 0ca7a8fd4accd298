"""The CLI: outputs, filters, and one clear line (never a traceback) for bad input."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES

CRC = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"
WORKLOAD = Path(__file__).resolve().parents[1] / "captures" / "mariadb-10.11-workload.000001"
TRUNC = (FIXTURES / "blackbeam__rust_mysql_common/test-data/binlogs/"
         "binlog_truncated_prev_gtid_event.000001")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", *args],
                          capture_output=True, text=True, timeout=120)


def test_json_fields() -> None:
    p = run("file", "--json", str(CRC))
    assert p.returncode == 0, p.stderr
    objs = [json.loads(line) for line in p.stdout.splitlines()]
    keys = {"file", "offset", "event_type", "type_code", "timestamp", "server_id", "event_size",
            "log_pos", "flags", "checksum_ok", "schema", "table", "rows", "gtid", "query", "error"}
    assert all(keys <= o.keys() for o in objs)
    assert objs[0]["event_type"] == "FORMAT_DESCRIPTION_EVENT" and objs[0]["offset"] == 4
    assert all(o["checksum_ok"] is True for o in objs)
    assert all(b["offset"] == a["offset"] + a["event_size"]
               for a, b in itertools.pairwise(objs))


def test_plain_dump_shows_offsets_hex_and_docs() -> None:
    p = run("file", str(CRC))
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert "# at 4: FORMAT_DESCRIPTION_EVENT (15), " in p.stdout
    ts = next(line for line in lines if "header.event_type = FORMAT_DESCRIPTION_EVENT" in line)
    assert ts.split()[0] == "8" and ts.split()[1] == "0f"
    assert "-- what kind of event follows" in ts
    brief = run("file", "--brief", str(CRC)).stdout
    assert "-- " not in brief


def test_tree_json_is_the_annotated_tree() -> None:
    p = run("file", "--tree", str(CRC))
    first = json.loads(p.stdout.splitlines()[0])
    assert first["offset"] == 4 and first["children"][0]["name"] == "header"


def test_positions() -> None:
    all_ev = [json.loads(x) for x in run("file", "--json", str(CRC)).stdout.splitlines()]
    start, stop = all_ev[5]["offset"], all_ev[9]["offset"]
    p = run("file", "--json", "--start-position", str(start), "--stop-position", str(stop),
            str(CRC))
    got = [json.loads(x)["offset"] for x in p.stdout.splitlines()]
    assert got == [e["offset"] for e in all_ev[5:9]]


def test_missing_file_one_line(tmp_path: Path) -> None:
    p = run("file", str(tmp_path / "nope.000001"))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "cannot open" in p.stderr
    assert "Traceback" not in p.stderr


def test_not_a_binlog_one_line(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("hello world")
    p = run("file", str(f))
    assert p.returncode == 1 and "not a binlog file" in p.stderr and "Traceback" not in p.stderr


def test_truncated_prints_events_before_damage() -> None:
    p = run("file", "--json", str(TRUNC))
    assert p.returncode == 1
    objs = [json.loads(x) for x in p.stdout.splitlines()]
    assert objs[0]["event_type"] == "FORMAT_DESCRIPTION_EVENT" and objs[0]["error"] is None
    assert objs[-1]["error"] is not None
    assert p.stderr.count("\n") == 1 and "damaged" in p.stderr and "Traceback" not in p.stderr


def test_bad_regex_is_usage_error() -> None:
    p = run("file", "--table", "(", str(CRC))
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_summary_filters_and_positions_read_no_row_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--summary, --table and the positions read no row image; --json reads each once."""
    import io

    from binlogscope.cli.main import main
    from binlogscope.wire.binlog.rows import LazyRows

    reads: list[int] = []
    real, real_json = LazyRows.read, LazyRows.json

    def counted(self: LazyRows) -> Any:
        reads.append(self.start)
        return real(self)

    def counted_json(self: LazyRows) -> Any:  # the kernel's JSON text of the rows (None:
        text = real_json(self)                # declined, the values are read instead)
        if text is not None:
            reads.append(self.start)
        return text

    monkeypatch.setattr(LazyRows, "read", counted)
    monkeypatch.setattr(LazyRows, "json", counted_json)
    path = str(WORKLOAD)
    first = io.StringIO()
    assert main(["file", "--summary", path], first, io.StringIO()) == 0
    offsets = [line.split()[1] for line in first.getvalue().splitlines()
               if not line.startswith("#")]
    start, stop = offsets[len(offsets) // 3], offsets[2 * len(offsets) // 3]
    for args in (["--summary", "--table", r"no\.such"], ["--json", "--table", r"no\.such"],
                 ["--summary", "--start-position", start, "--stop-position", stop]):
        out, err = io.StringIO(), io.StringIO()
        assert main(["file", *args, path], out, err) == 0, err.getvalue()
        assert out.getvalue() or "--table" in args
        assert reads == [], args
    out = io.StringIO()
    # (the Python path's lines: the kernel's own (render/line_layout.py) read no LazyRows)
    monkeypatch.setattr("binlogscope.cli.file.event_lines", lambda *a: None)
    assert main(["file", "--json", path], out, io.StringIO()) == 0
    rows_events = sum(1 for line in out.getvalue().splitlines()
                      if json.loads(line)["rows"] is not None)
    assert rows_events > 10 and len(reads) == rows_events  # one read per rows event


def test_export_resume_of_a_missing_or_empty_directory(tmp_path: Path) -> None:
    """``export --resume --out DIR``: a DIR that is missing, or holds no checkpoint, is named
    as such (it said "no SOURCE given")."""
    import io

    from binlogscope.cli.main import main

    for target, words in ((tmp_path / "missing", "does not exist"),
                          (tmp_path, "holds no export checkpoint")):
        out, err = io.StringIO(), io.StringIO()
        rc = main(["export", "--resume", "--out", str(target)], out, err)
        lines = err.getvalue().splitlines()
        assert rc == 2 and len(lines) == 1, lines
        assert lines[0].startswith("binlogscope: export: --resume: ") and words in lines[0]
        assert str(target) in lines[0] and "no SOURCE given" not in lines[0]
