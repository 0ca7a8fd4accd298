"""A failed export is not a dead end (issue 31): an export where no input could be read prints
no success line and leaves no dataset marked complete in the way of the rerun; one where some
inputs failed says so on its success line; a datadir glob's binlog index file is left out with a
note instead of failing the export."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "captures" / "mariadb-10.11-workload.000001"


def _export(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", *args], out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def test_no_readable_input_leaves_nothing_in_the_way(tmp_path: Path) -> None:
    bad = tmp_path / "passwd"
    bad.write_text("root:x:0:0:root:/root:/bin/bash\n")
    ds = tmp_path / "ds"
    rc, out, err = _export(str(bad), "--out", str(ds))
    assert rc == 1
    assert "exported" not in out, out  # no success line
    assert "is not a binlog file" in err and "nothing was exported" in err
    assert not ds.exists()
    rc, out, err = _export(str(GOOD), "--out", str(ds))  # the rerun with the right input
    assert rc == 0, err
    assert out.startswith("exported 264 events")


def test_a_failed_input_among_good_ones_is_on_the_success_line(tmp_path: Path) -> None:
    bad = tmp_path / "passwd"
    bad.write_text("root:x:0:0:root:/root:/bin/bash\n")
    rc, out, err = _export(str(bad), str(GOOD), "--out", str(tmp_path / "ds"))
    assert rc == 1
    assert "1 input(s) failed" in out and "is not a binlog file" in err


def test_a_datadir_glob_leaves_the_index_file_out(tmp_path: Path) -> None:
    d = tmp_path / "datadir"
    d.mkdir()
    shutil.copy(GOOD, d / "mysql-bin.000001")
    (d / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    paths = sorted(str(p) for p in d.glob("mysql-bin.*"))  # what the shell's glob gives
    rc, out, err = _export(*paths, "--out", str(tmp_path / "ds"))
    assert rc == 0, err
    assert "mysql-bin.index: left out" in err
    assert out.startswith("exported 264 events")
