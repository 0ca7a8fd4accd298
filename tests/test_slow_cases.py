"""The fast loop's list (tests/slow_cases.txt, made by scripts/slow_cases.py from a measured
run): node ids rebuilt from a junit file as pytest names them, and listed tests marked slow."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slow_cases", ROOT / "scripts" / "slow_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_node_ids_from_junit_names() -> None:
    node_id = _script().node_id
    assert node_id("tests.test_slow_cases", "test_x[a.b-1]") == \
        "tests/test_slow_cases.py::test_x[a.b-1]"
    # a class inside the file, and xdist's "@group" suffix dropped
    assert node_id("tests.test_slow_cases.TestA", "test_y@tests/test_slow_cases.py") == \
        "tests/test_slow_cases.py::TestA::test_y"
    assert node_id("tests.no_such_file", "test_z") is None


def test_the_list_is_written_from_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.test_slow_cases" name="test_a" '
        'time="5.5"/><testcase classname="tests.test_slow_cases" name="test_b" time="0.2"/>'
        "</testsuite></testsuites>", encoding="utf-8")
    out = tmp_path / "slow_cases.txt"
    monkeypatch.setattr(script, "OUT", out)
    monkeypatch.setattr(script, "ROOT", ROOT)
    assert script.main([str(junit), "--seconds", "2"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and lines[1:] == ["tests/test_slow_cases.py::test_a"]


def test_listed_tests_exist_and_are_left_out_of_the_fast_loop() -> None:
    listed = [line for line in (ROOT / "tests" / "slow_cases.txt").read_text(
        encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert len(listed) > 100
    missing = {n.split("::", 1)[0] for n in listed if not (ROOT / n.split("::", 1)[0]).is_file()}
    assert not missing, f"refresh tests/slow_cases.txt: no such files {sorted(missing)}"
    # a file with a listed test (not marked in the file) and others: -m 'not slow' collects
    # the others only
    path = "tests/cli/test_demo_wheel.py"
    mine = {n for n in listed if n.startswith(path + "::")}
    assert mine
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "-m", "not slow", path], cwd=ROOT,
                         capture_output=True, text=True, timeout=120).stdout
    fast = {line for line in out.splitlines() if line.startswith(path + "::")}
    assert fast and not fast & mine, out
