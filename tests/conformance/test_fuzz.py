"""conformance fuzz: mutants of a valid stream, what counts as a finding, the kept corpus."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mock_master.conformance.cli import main
from mock_master.conformance.clients import make_client
from mock_master.conformance.fuzz import (
    KINDS,
    Mutation,
    _base,
    _mutate,
    _tables,
    corrupt,
    length_fields,
    load_corpus,
    mutant_case,
    random_mutation,
    run_mutant,
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
    assert "unknown event type 117 without LOG_EVENT_IGNORABLE_F" in (corrupt(unknown, True)
                                                                     or "")
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


def test_length_changing_mutations() -> None:
    """Beyond same-length byte changes: a length field that lies, a truncated body, inserted
    and deleted bytes - event_size follows the resizing ones, the CRC32 is recomputed, and
    binlogscope's decoder finds each of these mutants broken."""
    import random

    b, _ = _base("mysql")
    events = list(b.files[0].events)
    tm = 4  # the first TABLE_MAP of the MySQL base stream
    assert events[tm][4] == 19
    fields = length_fields(events[tm], True, "mysql", _tables(b))
    assert (27, 1, 4) in fields  # the schema name's length byte ("conf")
    for m in (Mutation("mysql", tm, "length", 27, 4, "09"),
              Mutation("mysql", tm, "truncate", 0, 5),
              Mutation("mysql", tm, "insert", 30, 3, "abcdef"),
              Mutation("mysql", tm, "delete", 30, 2)):
        ev = _mutate(events[tm], m, True)
        size = int.from_bytes(ev[9:13], "little")
        assert size == len(ev), m
        grow = {"length": 0, "truncate": -5, "insert": 3, "delete": -2}[m.kind]
        assert len(ev) == len(events[tm]) + grow, m
        broken = [*events[:tm], ev, *events[tm + 1:]]
        assert corrupt(broken, True), m
    rng = random.Random(7)
    drawn = {random_mutation(rng, f).kind for f in ("mysql", "mariadb") for _ in range(80)}
    assert drawn == set(KINDS)


def test_a_mutant_the_harness_cannot_run_is_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import mock_master.conformance.fuzz as fz

    def boom(m: Mutation) -> object:
        raise ValueError("no such stream")

    monkeypatch.setattr(fz, "mutant_setup", boom)
    r = run_mutant(Mutation("mysql", 4, "byte", 20, 1), make_client("binlogscope"), None)
    assert r.verdict == Verdict.INFORMATIONAL and "cannot load it" in r.checks[0].text
    assert r.case.startswith("fuzz/") and r.evidence["mutation"]["kind"] == "byte"


@pytest.mark.network
def test_fuzz_writes_a_corpus_that_runs_as_cases(tmp_path: Path) -> None:
    import json

    out = io.StringIO()
    report = tmp_path / "fuzz.json"
    rc = main(["fuzz", "--client", "python-mysql-replication", "--flavor", "mysql",
               "--count", "6", "--seconds", "60", "--seed", "3", "--out", str(tmp_path),
               "--json", str(report), "--junit", str(tmp_path / "fuzz.xml")],
              out, io.StringIO())
    lines = out.getvalue().splitlines()
    assert len([ln for ln in lines if ln.startswith(("ok", "KEPT", "info"))]) == 6
    rows = json.loads(report.read_text())
    assert len(rows) == 6 and all(r["section"] == "fuzz" for r in rows)  # every verdict a row
    assert (tmp_path / "fuzz.xml").read_text().count("<testcase") == 6
    kept = sorted(p for p in tmp_path.glob("*.json") if p != report)
    assert (rc == 1) == bool(kept)
    report.unlink()
    assert [c.id for c in load_corpus(tmp_path)] == [f"fuzz/{p.stem}" for p in kept]


@pytest.mark.network
def test_framing_mutants_change_the_packet_not_the_event() -> None:
    """`frame` mutants: the event intact, its packet's sequence id or OK byte changed on the
    wire by the mock master (mangle_packet). PyMySQL checks sequence ids (an error: pass); a
    WRITE_ROWS packet whose first byte is 0xFE is taken for the end of the stream by
    python-mysql-replication - exit 0 with rows missing: kept as a silent change."""
    from mock_master.conformance.fuzz import _base_rows

    pmr = make_client("python-mysql-replication")
    base = _base_rows(pmr, "mysql")
    r = run_mutant(Mutation("mysql", 5, "frame", 1, 1), pmr, base)
    assert r.verdict == Verdict.PASS and "Packet sequence number wrong" in r.checks[0].text
    r = run_mutant(Mutation("mysql", 5, "frame", 2, 0xFE), pmr, base)
    assert r.verdict == Verdict.FAIL and "other rows" in r.checks[0].text
    log = r.evidence["mock_master_log"]
    assert any("mangle_packet" in f and "first_byte" in f for c in log for f in c["faults"])


@pytest.mark.network
def test_a_kept_mutant_is_minimised() -> None:
    """python-mysql-replication reads a MariaDB WRITE_ROWS with 4 bytes deleted through
    silently; the minimiser halves the deletion while it still does (the kept mutant is the
    smallest that shows the finding, the original in its evidence)."""
    from mock_master.conformance.fuzz import _base_rows, minimise

    pmr = make_client("python-mysql-replication")
    base = _base_rows(pmr, "mariadb")
    m = Mutation("mariadb", 16, "delete", 23, 4)
    r = run_mutant(m, pmr, base)
    assert r.verdict == Verdict.FAIL and "other rows" in r.checks[0].text
    small, r2 = minimise(m, r, pmr, base)
    assert small.kind == "delete" and small.value < 4, small
    assert r2.checks[0].text == r.checks[0].text
    assert r2.evidence["minimised_from"]["value"] == 4
