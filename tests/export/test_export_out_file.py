"""``export --out PATH`` where PATH is an existing regular file: one error line, file untouched."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from binlogscope.cli.main import main

FIX = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
BINLOG = FIX / "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001"


@pytest.mark.parametrize("extra", [[], ["--resume"]], ids=["fresh", "resume"])
def test_export_out_existing_file_is_one_error(tmp_path: Path, extra: list[str]) -> None:
    target = tmp_path / "precious.txt"
    target.write_bytes(b"keep me\n")
    before = target.stat()
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", str(BINLOG), "--out", str(target), *extra], out=out, err=err)
    lines = err.getvalue().splitlines()
    assert rc != 0
    assert lines == [f"binlogscope: export: {target} exists and is not a directory; --out "
                     "names the dataset directory (new or empty)"]
    assert out.getvalue() == ""
    assert target.read_bytes() == b"keep me\n"
    after = target.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_mode) == (
        before.st_mtime_ns, before.st_size, before.st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]  # nothing beside it
