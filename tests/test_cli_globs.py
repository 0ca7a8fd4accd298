"""A quoted glob among the inputs of ``file`` and ``export`` is expanded as ``export --spark``
does (one helper): its matches in name order, the datadir's binlog index file left out; a glob
that matches nothing is one error line and a non-zero exit."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "captures" / "mariadb-10.11-workload.000001"


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(args), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _datadir(tmp_path: Path) -> Path:
    d = tmp_path / "datadir"
    d.mkdir()
    shutil.copy(GOOD, d / "mysql-bin.000001")
    shutil.copy(GOOD, d / "mysql-bin.000002")
    (d / "mysql-bin.index").write_text("./mysql-bin.000001\n./mysql-bin.000002\n")
    return d


def test_file_expands_a_quoted_glob(tmp_path: Path) -> None:
    d = _datadir(tmp_path)
    rc, out, err = _run("file", "--summary", str(d / "mysql-bin.0*"))
    assert rc == 0, err
    files = [line.split()[0] for line in out.splitlines() if line.strip() and line[0] != "#"]
    assert files and {Path(f).name for f in files} == {"mysql-bin.000001", "mysql-bin.000002"}
    first2 = next(i for i, f in enumerate(files) if f.endswith("000002"))
    assert all(f.endswith("000001") for f in files[:first2])  # name order
    one = _run("file", "--summary", str(d / "mysql-bin.000001"))[1]
    assert len(files) == 2 * len([ln for ln in one.splitlines() if ln.strip() and ln[0] != "#"])


def test_file_glob_leaves_the_index_file_out(tmp_path: Path) -> None:
    d = _datadir(tmp_path)
    rc, _out, err = _run("file", "--json", str(d / "mysql-bin.*"))
    assert rc == 0, err
    assert "mysql-bin.index: left out" in err


def test_export_expands_a_quoted_glob(tmp_path: Path) -> None:
    d = _datadir(tmp_path)
    rc, out, err = _run("export", str(d / "mysql-bin.*"), "--out", str(tmp_path / "ds"))
    assert rc == 0, err
    assert "mysql-bin.index: left out" in err
    assert out.startswith("exported 528 events"), out


def test_a_glob_matching_nothing_is_one_line(tmp_path: Path) -> None:
    for cmd in (["file"], ["export", "--out", str(tmp_path / "ds")],
                ["export", "--pcap", "--out", str(tmp_path / "ds2")]):
        rc, _out, err = _run(*cmd, str(tmp_path / "nothing.*"))
        assert rc == 2
        assert err.strip().splitlines() == [
            f"binlogscope: {cmd[0]}: {tmp_path / 'nothing.*'}: the glob matches no file"]
        assert not (tmp_path / "ds").exists()
