"""docs/spark-cluster.md's spark-submit recipe as written (issue 31: it failed - the
``$(python -c 'import binlogscope.__main__ ...')`` it used to find the application file ran
binlogscope's usage instead of printing a path): its launcher line, run as the page says, makes
a file that runs binlogscope's command line; ``analyze`` without --master leaves the master to
spark-submit (it forced local[*], so a cluster job ran on the driver alone)."""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "spark-cluster.md"


def test_the_documented_launcher_runs_binlogscope(tmp_path: Path) -> None:
    text = DOC.read_text()
    (line,) = [ln for ln in text.splitlines()
               if ln.startswith("printf ") and "binlogscope_job.py" in ln]
    subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, timeout=30)
    job = tmp_path / "binlogscope_job.py"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    p = subprocess.run([sys.executable, str(job), "--version"], capture_output=True, text=True,
                       env=env, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("binlogscope ")
    # every spark-submit line of the recipe names the launcher as the application
    submits = re.findall(r"spark-submit (?:[^\n]*\\\n)*[^\n]*", text)
    assert submits and all("binlogscope_job.py" in s for s in submits)
    assert not any("binlogscope.__main__" in s for s in submits)


def test_analyze_leaves_the_master_to_spark_submit(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def fake(root: Any, **kw: Any) -> Any:
        seen.update(kw)
        return argparse.Namespace(startup_seconds=0.0, total_seconds=0.0)

    import binlogscope.export.spark.analyze as an

    monkeypatch.setattr(an, "analyze", fake)
    (tmp_path / "events").mkdir()
    assert main(["analyze", str(tmp_path)], out=io.StringIO(), err=io.StringIO()) == 0
    assert seen["master"] is None  # spark_session(None): spark-submit's, else local[*]
    assert main(["analyze", str(tmp_path), "--master", "local[2]"], out=io.StringIO(),
                err=io.StringIO()) == 0
    assert seen["master"] == "local[2]"
