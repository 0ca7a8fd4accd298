"""``binlogscope conformance``: list, run (JSON, JUnit, HTML), compare, card, usage errors."""

from __future__ import annotations

import io
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from mock_master.conformance.cli import main


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(argv, out, err)
    return rc, out.getvalue(), err.getvalue()


def test_list_names_every_section() -> None:
    rc, out, _ = _run(["list", "--json"])
    assert rc == 0
    cases = json.loads(out)
    assert {c["section"] for c in cases} >= {"values"}
    assert all(c["expect"] and c["title"] for c in cases)


@pytest.mark.network
def test_run_writes_json_junit_html_and_compare_sees_a_regression(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    rc, out, err = _run(["run", "--client", "binlogscope", "--cases", "values/year",
                         "--flavor", "mariadb", "--json", str(a), "--junit",
                         str(tmp_path / "j.xml"), "--html", str(tmp_path / "card")])
    assert rc == 0, out + err
    items = json.loads(a.read_text())
    assert [(d["case"], d["verdict"]) for d in items] == [("values/year", "pass")]
    assert set(items[0]) >= {"case", "section", "verdict", "evidence"}
    root = ET.parse(tmp_path / "j.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"
    # what the Ant JUnit schema (Jenkins, GitLab) wants: counts with errors, on the root too
    assert suite.get("errors") == "0" and suite.get("skipped") == "0"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "0")
    html = (tmp_path / "card" / "index.html").read_text()
    assert "values/year" in html and 'class="pass"' in html
    # the same case against a client that gets it wrong: compare reports it as worse
    b = tmp_path / "b.json"
    rc, out, _ = _run(["run", "--client", "python-mysql-replication", "--cases",
                       "values/year", "--flavor", "mariadb", "--json", str(b)])
    assert rc == 1
    rc, out, _ = _run(["compare", str(a), str(b)])
    assert rc == 1 and "WORSE" in out and "expected 0, got 1900" in out
    rc, out, _ = _run(["compare", str(b), str(a)])
    assert rc == 0 and "better" in out
    rc, out, _ = _run(["card", str(tmp_path / "both"), str(a), str(b)])
    assert rc == 0
    both = (tmp_path / "both" / "index.html").read_text()
    assert "binlogscope" in both and "python-mysql-replication" in both
    # the matrix: each cell coloured by its worst verdict, only the verdicts that occur
    assert '<td class="fail">1 fail</td>' in both and '<td class="pass">1 pass</td>' in both


@pytest.mark.parametrize("argv", [
    ["run"],
    ["run", "--client", "x {nope}"],
    ["run", "--client", "binlogscope", "--cases", "no-such-case"],
    ["compare", "/nonexistent/a.json", "/nonexistent/b.json"],
])
def test_usage_errors_are_one_line_exit_2(argv: list[str]) -> None:
    rc, _out, err = _run(argv)
    assert rc == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_binlogscope_conformance_is_a_subcommand() -> None:
    """Through the entry point (group binlogscope.commands): `binlogscope conformance`."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "binlogscope", "conformance", "list"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "values/date-zero" in r.stdout and "cases (" in r.stdout
    r = subprocess.run([sys.executable, "-m", "binlogscope", "conformance", "run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
