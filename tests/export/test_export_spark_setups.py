"""``export --spark`` run as cron or systemd run it: the console script by path, from a venv
that is not activated, with a clean PATH (Spark's default worker Python, ``python3`` from PATH,
is then another Python without binlogscope). A worker that cannot start is one line naming its
real error, and leaves nothing in the way of the rerun."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from binlogscope.export.arrow import read_state
from binlogscope.export.records import BinlogFileSource
from binlogscope.export.run import run_export
from tests.export.datasets import assert_same_dataset
from tests.export.test_export_spark import WORKLOAD

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "binlogscope"
SYSTEM_PYTHON = Path("/usr/bin/python3")


def _run(out: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "PYTHONPATH": str(REPO / "src"), "LANG": "C.UTF-8", **extra}
    # the tests' JVM options (tests/conftest.py: C1 only, serial GC; nothing a cron job's
    # environment changes in what is checked here)
    env["SPARK_SUBMIT_OPTS"] = os.environ.get("SPARK_SUBMIT_OPTS", "")
    return subprocess.run(
        [str(SCRIPT), "export", str(WORKLOAD), "--out", str(out), "--spark", "--master",
         "local[1]"], env=env, capture_output=True, text=True, timeout=600, cwd="/")


@pytest.mark.slow  # ~300 s on the loaded 2-core box: a Spark export from a venv by path
@pytest.mark.skipif(not SCRIPT.exists(), reason="binlogscope is not installed in this venv")
def test_console_script_by_path_from_a_venv_that_is_not_activated(tmp_path: Path) -> None:
    out = tmp_path / "spark"
    if SYSTEM_PYTHON.exists():
        # a worker Python without binlogscope (what PATH gave before): one line naming the
        # worker's own error, exit 1, and no half-made dataset left
        bad = _run(out, PYSPARK_PYTHON=str(SYSTEM_PYTHON))
        assert bad.returncode == 1, bad.stderr
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1, bad.stderr
        assert lines[0].startswith("binlogscope: export: Spark failed: ModuleNotFoundError: "
                                   "No module named "), lines
        assert not out.exists()
    ok = _run(out)  # the same command: workers run the venv's Python
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == ""
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(WORKLOAD)]), local)
    assert_same_dataset(local, out)
    state = read_state(out)
    assert state is not None and state["complete"]
