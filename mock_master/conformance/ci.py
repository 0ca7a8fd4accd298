"""The conformance suite in a client project's own CI: run it, compare with a baseline, fail
only on regressions.

::

    # tests/test_conformance.py of a client project
    from mock_master.conformance.ci import check_against_baseline

    def test_replication_conformance():
        check_against_baseline(
            "node conformance-adapter.js {host} {port} {user} {password} {file} {pos}",
            baseline="tests/conformance-baseline.json", cases="values,stream,incidents")

Or one pytest test per case, so that the CI's JUnit report (``pytest --junitxml``) lists every
case with its verdict and only the cases that got worse fail::

    from mock_master.conformance.ci import case_ids, check_case

    CLIENT = "node conformance-adapter.js {host} {port} {user} {password} {file} {pos}"

    @pytest.mark.parametrize("case", case_ids("values,stream"))
    def test_conformance(case):
        check_case(CLIENT, case, baseline="tests/conformance-baseline.json")

The baseline is a JSON report (``binlogscope conformance run ... --json FILE``, or this
function with ``CONFORMANCE_UPDATE_BASELINE=1`` in the environment, which writes it). A case
whose verdict is worse than in the baseline (pass -> non-strict -> fail; unimplemented counts
as worse than pass) fails the test with the case's checks; cases that got better or are new are
listed in the report and do not fail it. Known failures stay in the baseline until fixed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mock_master.conformance.catalogue import catalogue, select
from mock_master.conformance.clients import make_client
from mock_master.conformance.model import Result
from mock_master.conformance.report import compare, load_json, summary, to_json, write_json
from mock_master.conformance.runner import run_cases


class ConformanceRegressionError(AssertionError):
    """Cases got worse than the baseline (the message lists them with their checks)."""


@dataclass
class CiReport:
    results: list[Result]
    changes: list[str] = field(default_factory=list)
    worse: int = 0

    def text(self) -> str:
        items = to_json(self.results, "client")
        return "\n".join([summary(items), *self.changes])


def check_against_baseline(client: str, baseline: str | Path, *, cases: str | None = None,
                           flavors: tuple[str, ...] = ("mariadb", "mysql"),
                           adapter: str | None = None, semi_sync: bool = False,
                           jobs: int = 4, name: str | None = None) -> CiReport:
    """Run the selected cases against ``client`` and compare with ``baseline`` (see the module
    docstring). Raises :class:`ConformanceRegressionError` when a case got worse."""
    c = make_client(client, adapter, semi_sync=semi_sync, name=name)
    todo = [(case, f) for case in select(catalogue(), cases) for f in flavors
            if f in case.flavors]
    results = run_cases(todo, c, jobs=jobs)
    path = Path(baseline)
    if os.environ.get("CONFORMANCE_UPDATE_BASELINE") == "1" or not path.exists():
        write_json(path, results, c.name)
        return CiReport(results, [f"baseline written: {path}"])
    base: list[dict[str, Any]] = load_json(path)
    lines, worse = compare(base, to_json(results, c.name))
    report = CiReport(results, lines, worse)
    if worse:
        raise ConformanceRegressionError(
            f"{worse} conformance case(s) worse than the baseline {path}:\n"
            + "\n".join(ln for ln in lines if ln.startswith("WORSE")))
    return report


def case_ids(cases: str | None = None,
             flavors: tuple[str, ...] = ("mariadb", "mysql")) -> list[str]:
    """``"case [flavor]"`` of every selected case run (the pytest ids of :func:`check_case`)."""
    return [f"{c.id} [{f}]" for c in select(catalogue(), cases) for f in flavors
            if f in c.flavors]


def check_case(client: str, case: str, baseline: str | Path, *, adapter: str | None = None,
               semi_sync: bool = False, name: str | None = None) -> Result:
    """Run one ``"case [flavor]"`` (see :func:`case_ids`) against ``client`` and compare it
    with its entry in ``baseline`` (a JSON report): raises
    :class:`ConformanceRegressionError` with the case's checks when its verdict is worse;
    a case the baseline does not have must not fail (its verdict is returned). No baseline
    file at all: the case's own verdict decides (fail and non-strict fail)."""
    cid, _, rest = case.partition(" [")
    flavor = rest.rstrip("]") or "mariadb"
    found = [c for c in catalogue() if c.id == cid]
    if not found or flavor not in found[0].flavors:
        raise ValueError(f"no conformance case {case!r}")
    c = make_client(client, adapter, semi_sync=semi_sync, name=name)
    (result,) = run_cases([(found[0], flavor)], c, jobs=1)
    mine = to_json([result], c.name)
    path = Path(baseline)
    why = "\n".join(f"  {ch.verdict.value}: {ch.text}" for ch in result.checks)
    if not path.exists():
        if result.verdict.value in ("fail", "non-strict"):
            raise ConformanceRegressionError(f"{case}: {result.verdict.value} (no baseline "
                                             f"{path})\n{why}")
        return result
    lines, worse = compare([d for d in load_json(path) if f"{d['case']} [{d.get('flavor')}]"
                            == case], mine)
    if worse:
        raise ConformanceRegressionError(f"{case} is worse than in the baseline {path}:\n"
                                         + "\n".join(lines) + "\n" + why)
    return result
