"""``mariadb-binlog --read-from-remote-server`` graded on the protocol cases (it reports no
values: the value cases are unimplemented for it)."""

from __future__ import annotations

import shutil

import pytest

from mock_master.conformance.model import Result, Verdict
from tests.conformance.support import explain, run

pytestmark = pytest.mark.network

PROTOCOL = ("setup/dump-request-framing,setup/mariadb-capability,stream/err-1236-*,"
            "stream/server-shutdown,gtid/mariadb-purged,incidents/semisync-header-not-*,"
            "setup/tls-required,setup/tls-insisted-not-offered")


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    if shutil.which("mariadb-binlog") is None and shutil.which("mysqlbinlog") is None:
        pytest.fail("mariadb-binlog is not installed (the Debian mariadb-client package)")
    return run("mariadb-binlog", PROTOCOL, flavors=("mariadb",))


def test_mariadb_binlog_passes_the_protocol_cases(results: dict[str, Result]) -> None:
    assert len(results) == 10
    bad = [explain(r) for r in results.values() if r.verdict != Verdict.PASS]
    assert not bad, "\n".join(bad)
    # judged on the wire: its dump request and the ERR it reported are in the evidence
    r = results["stream/err-1236-purged [mariadb]"]
    assert any("com_binlog_dump" in p["label"] for p in r.evidence["packets"])
    assert any("err 1236" in p["label"] for p in r.evidence["packets"])
    assert r.evidence["client_exit"] != 0


def test_value_cases_are_unimplemented_without_an_adapter() -> None:
    r = run("mariadb-binlog", "values/year", flavors=("mariadb",))["values/year [mariadb]"]
    assert r.verdict == Verdict.UNIMPLEMENTED
    assert "no adapter" in r.checks[0].text
