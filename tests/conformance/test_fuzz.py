"""conformance fuzz: mutants of a valid stream, what counts as a finding, the kept corpus."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mock_master.conformance.cli import main
from mock_master.conformance.clients import make_client
from mock_master.conformance.fuzz import (
    Mutation,
    _base,
    _mutate,
    corrupt,
    load_corpus,
    mutant_case,
)
from mock_master.conformance.model import Verdict
from mock_master.conformance.runner import run_case

#: the v2 WRITE_ROWS of the third transaction of the MySQL base stream
ROWS3 = 15


def test_binlogscope_decoder_tells_a_broken_mutant_from_a_valid_one() -> None:
    b, _ = _base("mysql")
    events = list(b.files[0].events)
    assert events[ROWS3][4] == 30 and corrupt(events, True) is None
    unknown = [*events[:ROWS3], _mutate(events[ROWS3], Mutation("mysql", ROWS3, "type", 4, 117),
                                        True), *events[ROWS3 + 1:]]
    assert "not flagged ignorable" in (corrupt(unknown, True) or "")
    longer = [*events[:ROWS3], _mutate(events[ROWS3], Mutation("mysql", ROWS3, "size", 7, 0),
                                       True), *events[ROWS3 + 1:]]
    assert corrupt(longer, True)


@pytest.mark.network
def test_a_client_that_skips_an_unknown_event_silently_is_kept(tmp_path: Path) -> None:
    pmr = make_client("python-mysql-replication")
    m = Mutation("mysql", ROWS3, "type", 4, 117)
    base = [("insert", "t", [{"after": {"id": i, "v": f"row {i}"}}]) for i in (1, 2, 3)]
    r = run_case(mutant_case(m, base), pmr, "mysql")
    assert r.verdict == Verdict.FAIL and "other rows" in r.checks[0].text
    # a row value byte changed and its CRC32 recomputed: a valid stream, not a finding
    b, _ = _base("mysql")
    ev = b.files[0].events[ROWS3]
    valid = Mutation("mysql", ROWS3, "byte", len(ev) - 6, ev[-6] ^ 1)
    r = run_case(mutant_case(valid, base), pmr, "mysql")
    assert r.verdict == Verdict.PASS, r.checks


@pytest.mark.network
def test_fuzz_writes_a_corpus_that_runs_as_cases(tmp_path: Path) -> None:
    out = io.StringIO()
    rc = main(["fuzz", "--client", "python-mysql-replication", "--flavor", "mysql",
               "--count", "6", "--seconds", "60", "--seed", "3", "--out", str(tmp_path)],
              out, io.StringIO())
    lines = out.getvalue().splitlines()
    assert len([ln for ln in lines if ln.startswith(("ok", "KEPT"))]) == 6
    kept = sorted(tmp_path.glob("*.json"))
    assert (rc == 1) == bool(kept)
    assert [c.id for c in load_corpus(tmp_path)] == [f"fuzz/{p.stem}" for p in kept]
