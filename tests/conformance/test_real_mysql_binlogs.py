"""The MySQL-only cases beside real MySQL binlogs (../shared/fixtures, MANIFEST.md): each file
served as it is by the mock master to binlogscope and to python-mysql-replication, and graded
on the row events a correct client reports (their count is the file's, from the MANIFEST's
event census, not from binlogscope's decoder). Where a synthetic case reproduces a defect
(VECTOR, TRANSACTION_PAYLOAD), the real file shows the same: the case's stream is realistic."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_master.conformance.clients import make_client
from mock_master.conformance.grade import judge_clean_end
from mock_master.conformance.model import Case, Check, Result, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.runner import run_case
from mock_master.scenario.scenarios import BinlogSource, Scenario
from tests.conftest import fixtures_dir

pytestmark = pytest.mark.network

BINLOGS = "blackbeam__rust_mysql_common/test-data/binlogs"
#: file -> (row events in it, inner ones of TRANSACTION_PAYLOAD included; what it holds)
FILES = {
    "transaction_compression.000001": (1, "MySQL 8.0.32 TRANSACTION_PAYLOAD (zstd)"),
    "binlog_transaction_with_GTID_TAG.000001": (1, "MySQL 9.6 tagged GTID (type 42)"),
    "json.binlog.000001": (6, "MySQL 8.0.22 binary JSON, PARTIAL_UPDATE_ROWS"),
    "vector.binlog": (6, "MySQL 9.0.1 VECTOR, FULL row metadata"),
    "minimal_row_metadata.000001": (1, "MySQL 8.0.40 binlog_row_metadata=MINIMAL"),
    "mysql-enum-string-set.000001": (3, "MySQL 8.0.28 ENUM/SET, FULL row metadata"),
}


def _case(name: str) -> Case:
    path = fixtures_dir() / BINLOGS / name
    n, what = FILES[name]

    def build(flavor: str) -> Setup:
        if not Path(path).exists():
            pytest.fail(f"fixture missing: {path}")
        return Setup(Scenario(flavor="mysql", sources=[BinlogSource([path])]),
                     facts={"rows": n})

    def judge(obs: Observation) -> list[Check]:
        got = len(obs.rows())
        checks = judge_clean_end(obs)
        checks.append(Check(Verdict.PASS if got == n else Verdict.FAIL,
                            f"{got} row event(s) reported, the file has {n}"))
        return checks

    return Case(f"real/{name}", what, f"every one of the file's {n} row events reported",
                build, judge, flavors=("mysql",))


def _run(client: str, name: str) -> Result:
    return run_case(_case(name), make_client(client), "mysql")


#: binlogscope's KNOWN_GAPS (test_binlogscope_reference.py) among the real files (none: live
#: --json lists a TRANSACTION_PAYLOAD's events under ``events``)
BINLOGSCOPE_GAPS: set[str] = set()
#: what python-mysql-replication 1.0.17 gets wrong on the real files - the same defects the
#: synthetic cases find (events/transaction-payload, values/vector)
PMR_FAILS = {"transaction_compression.000001": "reported, the file has 1",
             "vector.binlog": "MetadataFieldType",
             # no synthetic case yet (the wire encoders have no tagged-GTID encoder): it
             # reads the tagged GTID event with the untagged layout and runs off its end
             "binlog_transaction_with_GTID_TAG.000001": "Result length not requested length"}


@pytest.mark.parametrize("name", sorted(FILES))
def test_binlogscope_on_real_mysql_binlogs(name: str) -> None:
    r = _run("binlogscope", name)
    text = "\n".join(c.text for c in r.checks) + r.evidence.get("client_stderr", "")[-500:]
    if name in BINLOGSCOPE_GAPS:
        assert r.verdict == Verdict.FAIL, text
    else:
        assert r.verdict == Verdict.PASS, text


@pytest.mark.parametrize("name", sorted(FILES))
def test_pmr_on_real_mysql_binlogs(name: str) -> None:
    r = _run("python-mysql-replication", name)
    text = "\n".join(c.text for c in r.checks) + r.evidence.get("client_stderr", "")[-500:]
    if name in PMR_FAILS:
        assert r.verdict == Verdict.FAIL and PMR_FAILS[name] in text, text
    else:
        assert r.verdict == Verdict.PASS, text


def test_the_synthetic_tagged_gtids_have_the_real_files_layout() -> None:
    """events/gtid-tagged's GTID_TAGGED and tagged PREVIOUS_GTIDS decode as the MySQL 9.6
    file's do (the same fields, the tagged set format), so python-mysql-replication's failure
    on the case is the one it has on the real file."""
    from dataclasses import fields

    from mock_master.conformance.catalogue import catalogue
    from mock_master.history.loaders import load_binlog_files
    from mock_master.history.sources import decode_stored

    real = load_binlog_files([fixtures_dir() / BINLOGS
                              / "binlog_transaction_with_GTID_TAG.000001"])
    case = next(c for c in catalogue() if c.id == "events/gtid-tagged")
    synth = case.build("mysql").scenario.load_stream()

    def bodies(st: object, code: int) -> list[object]:
        return [decode_stored(ev, f.checksum).body for f in st.files  # type: ignore[attr-defined]
                for ev in f.events if ev[4] == code]

    (rg,), sg = bodies(real, 42), bodies(synth, 42)
    assert len(sg) == 2 and all(g.tag == rg.tag == "mytag" for g in sg)  # type: ignore[attr-defined]
    assert all(g.immediate_server_version == rg.immediate_server_version  # type: ignore[attr-defined]
               for g in sg)
    names = {f.name for f in fields(rg)}  # type: ignore[arg-type]
    assert all({f.name for f in fields(g)} == names for g in sg)  # type: ignore[arg-type]
    (rp,) = bodies(real, 35)
    sp = bodies(synth, 35)[-1]
    assert rp.tagged and sp.tagged  # type: ignore[attr-defined]
    assert [e.tag for e in sp.entries] == ["", "mytag"]  # type: ignore[attr-defined]
