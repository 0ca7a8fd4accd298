"""The CI entry point: a client project fails only on regressions against its baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_master.conformance.ci import ConformanceRegressionError, check_against_baseline

pytestmark = pytest.mark.network


def test_a_regression_fails_and_a_known_failure_does_not(tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    # a client with a known defect writes its baseline (YEAR 0000 read as 1900)
    r = check_against_baseline("python-mysql-replication", base, cases="values/year",
                               flavors=("mariadb",))
    assert base.exists() and "baseline written" in r.text()
    # the same client again: its known failure is in the baseline, nothing got worse
    r = check_against_baseline("python-mysql-replication", base, cases="values/year",
                               flavors=("mariadb",))
    assert r.worse == 0
    # a baseline where the case passed (binlogscope's), then the defective client: worse
    good = tmp_path / "good.json"
    check_against_baseline("binlogscope", good, cases="values/year", flavors=("mariadb",))
    with pytest.raises(ConformanceRegressionError, match="expected 0, got 1900"):
        check_against_baseline("python-mysql-replication", good, cases="values/year",
                               flavors=("mariadb",))


def test_one_pytest_test_per_case_in_a_client_project(tmp_path: Path) -> None:
    """A client project's tests/test_conformance.py with check_case: run by pytest with
    --junitxml, the JUnit report lists each case; a case worse than the baseline fails with
    its checks, a known failure in the baseline passes."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    from mock_master.conformance.ci import case_ids

    ids = case_ids("values/year,values/date-zero", flavors=("mariadb",))
    assert ids == ["values/year [mariadb]", "values/date-zero [mariadb]"]
    base = tmp_path / "baseline.json"
    # the baseline: binlogscope passes both; python-mysql-replication then fails both
    check_against_baseline("binlogscope", base, cases="values/year,values/date-zero",
                           flavors=("mariadb",))
    (tmp_path / "test_conformance.py").write_text(
        "import pytest\n"
        "from mock_master.conformance.ci import case_ids, check_case\n"
        "@pytest.mark.parametrize('case', case_ids('values/year,values/date-zero', "
        "flavors=('mariadb',)))\n"
        "def test_conformance(case):\n"
        f"    check_case('python-mysql-replication', case, baseline={str(base)!r})\n")
    junit = tmp_path / "junit.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path / "test_conformance.py"), f"--junitxml={junit}"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert r.returncode == 1, r.stdout[-2000:]
    cases = ET.parse(junit).getroot().iter("testcase")
    got = {tc.get("name"): tc.find("failure") for tc in cases}
    assert set(got) == {f"test_conformance[{i}]" for i in ids}
    year = got["test_conformance[values/year [mariadb]]"]
    assert year is not None and "expected 0, got 1900" in (year.text or "")
