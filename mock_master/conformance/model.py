"""The case model: what a conformance case is, what a run observes, and the verdict.

A :class:`Case` is declarative: ``build(flavor)`` returns a :class:`Setup` (the mock master's
:class:`~mock_master.Scenario`, built with the wire encoders, where the client starts, and the
row events a correct client reports), and ``judge(observation)`` grades what happened, from the
wire (the :class:`~mock_master.conformance.observe.Observation`'s decoded packets, the mock
master's run log) and, through the adapter, from the values the client reported.

Verdicts (after Autobahn|TestSuite): ``pass``; ``non-strict`` (works, but not as the protocol or
the value contract says, e.g. a DECIMAL given as a float); ``fail``; ``informational`` (no right
answer, the behaviour is recorded); ``unimplemented`` (the client does not do what the case
needs: no GTID start, no semi-sync, no adapter for values).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mock_master.conformance.observe import Observation
from mock_master.conformance.setup import ExpectedRows, Setup

__all__ = ["NEEDS_GTID", "NEEDS_SEMI_SYNC", "NEEDS_VALUES", "SECTIONS", "SEVERITY", "Case",
           "Check", "ExpectedRows", "Result", "Setup", "Verdict", "worst"]


class Verdict(StrEnum):
    PASS = "pass"
    NON_STRICT = "non-strict"
    FAIL = "fail"
    INFORMATIONAL = "informational"
    UNIMPLEMENTED = "unimplemented"


#: worst first: a case's verdict is the worst of its checks
SEVERITY = {Verdict.FAIL: 4, Verdict.NON_STRICT: 3, Verdict.UNIMPLEMENTED: 2,
            Verdict.INFORMATIONAL: 1, Verdict.PASS: 0}
SECTIONS = ("setup", "events", "values", "framing", "stream", "semisync", "gtid", "incidents",
            "fuzz")

#: what a case may need from the client (its command template or preset must offer it)
NEEDS_GTID = "gtid"  # start from a GTID position ({gtid} placeholder)
NEEDS_SEMI_SYNC = "semi_sync"  # the client negotiates semi-sync
NEEDS_VALUES = "values"  # the client reports decoded events (an adapter)


@dataclass
class Check:
    """One finding: a verdict and the sentence that says why."""

    verdict: Verdict
    text: str


@dataclass
class Case:
    id: str  # "section/name"
    title: str
    #: what a correct client does (shown in the report card)
    expect: str
    build: Callable[[str], Setup]
    judge: Callable[[Observation], list[Check]]
    flavors: tuple[str, ...] = ("mariadb", "mysql")
    needs: tuple[str, ...] = ()
    #: public issues / documentation the case reproduces or follows
    links: tuple[str, ...] = ()
    #: cases whose verdict is always informational (behaviour recorded, no right answer)
    informational: bool = False

    @property
    def section(self) -> str:
        return self.id.split("/", 1)[0]


@dataclass
class Result:
    case: str
    section: str
    flavor: str
    verdict: Verdict
    title: str
    checks: list[Check]
    evidence: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "section": self.section, "flavor": self.flavor,
                "verdict": self.verdict.value, "title": self.title,
                "checks": [{"verdict": c.verdict.value, "text": c.text} for c in self.checks],
                "evidence": self.evidence, "seconds": round(self.seconds, 3)}


def worst(checks: list[Check]) -> Verdict:
    if not checks:
        return Verdict.PASS
    return max((c.verdict for c in checks), key=lambda v: SEVERITY[v])
