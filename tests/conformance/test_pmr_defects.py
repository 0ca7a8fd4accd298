"""python-mysql-replication 1.0.17 (installed) graded: the catalogue finds its known defects,
each with the evidence that shows it (the value it reported beside the expected one, or its
error)."""

from __future__ import annotations

import pytest

from mock_master.conformance.model import Result, Verdict
from tests.conformance.support import explain, run

pytestmark = pytest.mark.network

#: case -> a text the failing check must contain (the evidence a reader needs)
DEFECTS = {
    "values/date-zero [mariadb]": 'expected "0000-00-00", got null',
    "values/datetime-zero [mysql]": 'got null',
    "values/year [mariadb]": "expected 0, got 1900",
    "values/binary-trailing-zeros [mariadb]": "trailing 0x00 bytes stripped",
    "values/charset-ucs2 [mariadb]": "raw utf-16-be bytes",
    "values/charset-utf16 [mysql]": 'expected "héllo',
    "values/mariadb-hires-temporal [mariadb]": "exited with status 1",
    "values/mariadb-compressed-rows [mariadb]": "the client reported 0",
    "values/time-fractional [mysql]": 'expected "-12:30:00.250", got "-12:30:00.750000"',
    "values/timestamp [mariadb]": 'got "1970-01-01 00:00:00"',
    "values/set-1-2-8-byte [mysql]": "NULL instead of a value",
    # with is_mariadb=True the dump request's length header is one byte short: the file
    # name is cut, and the dump starts at the first file whatever position was asked for
    "setup/dump-request-framing [mariadb]": "length header says 14 bytes, but the client "
    "wrote 15",
    "incidents/fake-rotate-mid-file [mariadb]": "id: expected 2, got 1",
    # the same short dump request: after a TCP cut inside a packet it resumes from the file's
    # start and delivers the first row again
    "stream/tcp-cut-mid-packet [mariadb]": "row(s) reported more than once",
    "incidents/half-open-no-heartbeats [mariadb]": "row(s) reported more than once",
    # MySQL 8.3+ tagged GTIDs: the tagged PREVIOUS_GTIDS breaks its reader (as the real 9.6
    # file does), and its GTID set parser refuses a tag
    "events/gtid-tagged [mysql]": "Result length not requested length",
    "gtid/mysql-tagged-start [mysql]": "GTID format is incorrect",
    # PARTIAL_UPDATE_ROWS: a diff vector of two operations read as its first one only
    "events/partial-json-update [mysql]": "INSERT $.x 1) reported as",
    "incidents/semisync-header-not-negotiated [mysql]": "the client reported 0",
    "events/transaction-payload [mysql]": "the client reported 0",
    "values/vector [mysql]": "is not a valid MetadataFieldType",
    "events/mariadb-compressed-query [mariadb]": "is not among the queries",
}


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    pats = ",".join(sorted({k.split(" ")[0] for k in DEFECTS}))
    return run("python-mysql-replication", pats)


@pytest.mark.parametrize("key", sorted(DEFECTS))
def test_the_defect_is_found_with_its_evidence(results: dict[str, Result], key: str) -> None:
    r = results[key]
    assert r.verdict in (Verdict.FAIL, Verdict.NON_STRICT), explain(r)
    text = "\n".join(c.text for c in r.checks)
    assert DEFECTS[key] in text, explain(r)
    packets = r.evidence["packets"]
    assert packets, "the wire evidence is missing"
    if r.section == "values":
        rows = [p for p in packets if p["from"] == "server" and "WRITE_ROWS" in p["label"]]
        assert rows, "the rows event the mock sent is not shown"
        assert any("tree" in p and len(p["tree"]) > 5 for p in rows), \
            "the rows event is not annotated"


def test_the_same_cases_pass_where_pmr_is_right(results: dict[str, Result]) -> None:
    """Not everything fails: the grading is not a blanket verdict (pmr reads DATE edges,
    YEAR 1901/2155 and latin1 text right - the failing checks name only the defects)."""
    r = results["values/date-zero [mariadb]"]
    bad = [c.text for c in r.checks if c.verdict != Verdict.PASS]
    assert len(bad) == 1 and "0000-00-00" in bad[0], explain(r)
