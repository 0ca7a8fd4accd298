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
