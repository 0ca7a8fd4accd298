"""``binlogscope demo`` from a wheel install (``pip install .``, not editable) run outside the
checkout: the demo binlog ships as package data (setup.py copies captures/'s file into the
built package), so the demo has its binlog wherever the package is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import textual

ROOT = Path(__file__).resolve().parents[2]
DEMO = "mariadb-10.11-workload.000001"


def _tree(dst: Path) -> None:
    """The files a build reads, copied (the build writes build/ and egg-info next to them)."""
    files = subprocess.run(["git", "ls-files", "src", "mock_master"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in [*files, "setup.py", "pyproject.toml", "README.md", "MANIFEST.in",
                 f"captures/{DEMO}"]:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dst / name)


def test_demo_runs_from_a_wheel_install_outside_the_checkout(tmp_path: Path) -> None:
    src, dist, venv, elsewhere = (tmp_path / d for d in ("src", "dist", "venv", "elsewhere"))
    _tree(src)
    pip = [sys.executable, "-m", "pip"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(src)], check=True, env=env, timeout=300, capture_output=True)
    (wheel,) = dist.glob("binlogscope-*.whl")
    assert f"binlogscope/demo/{DEMO}" in zipfile.ZipFile(wheel).namelist()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, env=env, timeout=300, capture_output=True)
    # the dependencies (textual, pyarrow, ...) from this environment, after the venv's own
    # packages: a path in a .pth file (its .pth files, the editable install's finder among
    # them, are not run)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], check=True, capture_output=True,
                               text=True, env=env).stdout.strip())
    deps = Path(textual.__file__).resolve().parents[1]
    assert deps != Path(sysconfig.get_paths()["purelib"]) / "binlogscope"
    (site / "zz_deps.pth").write_text(f"{deps}\n")
    elsewhere.mkdir()
    where = subprocess.run([str(py), "-c", "import binlogscope; print(binlogscope.__file__)"],
                           cwd=elsewhere, env=env, check=True, capture_output=True, text=True)
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel, not the checkout
    # the file view and the live demo (the mock master serves the packaged binlog)
    for args in (["--file", "--json"], ["--json"]):
        run = subprocess.run([str(venv / "bin" / "binlogscope"), "demo", *args], cwd=elsewhere,
                             env=env, capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr
        lines = [json.loads(x) for x in run.stdout.splitlines()]
        events = [x for x in lines if x.get("kind", "binlog_event") == "binlog_event"
                  and x.get("log_pos")]
        assert len(events) > 200, (args, run.stdout[-500:], run.stderr)  # (264 in the file)
        if "--file" in args:  # the package's copy
            assert Path(events[0]["file"]).is_relative_to(venv), events[0]


@pytest.mark.parametrize("cwd", ["root", "elsewhere"])
def test_demo_finds_captures_of_the_checkout_it_runs_from(tmp_path: Path, cwd: str) -> None:
    """An editable install (the Quickstart's ``pip install -e .``): the checkout's captures/,
    whatever the current directory (it looked in src/captures, found only from the root)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    run = subprocess.run([sys.executable, "-m", "binlogscope", "demo", "--file", "--json"],
                         cwd=ROOT if cwd == "root" else tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    first = json.loads(run.stdout.splitlines()[0])
    assert Path(first["file"]).resolve() == ROOT / "captures" / DEMO
