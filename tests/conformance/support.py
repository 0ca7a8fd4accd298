"""Helpers for the conformance tests: run catalogue cases against a client, once per module."""

from __future__ import annotations

from mock_master.conformance.catalogue import catalogue, select
from mock_master.conformance.clients import make_client
from mock_master.conformance.model import Result
from mock_master.conformance.runner import run_cases


def run(client: str, patterns: str | None = None, *, flavors: tuple[str, ...] = (
        "mariadb", "mysql"), jobs: int = 4) -> dict[str, Result]:
    """``{"case [flavor]": result}`` of the selected cases against ``client``."""
    cases = select(catalogue(), patterns)
    todo = [(c, f) for c in cases for f in flavors if f in c.flavors]
    return {f"{r.case} [{r.flavor}]": r for r in run_cases(todo, make_client(client),
                                                            jobs=jobs)}


def explain(r: Result) -> str:
    lines = [f"{r.case} [{r.flavor}]: {r.verdict.value}"]
    lines += [f"  {c.verdict.value}: {c.text}" for c in r.checks]
    ev = r.evidence
    if ev.get("client_stderr"):
        lines.append("  stderr: " + str(ev["client_stderr"])[-800:])
    return "\n".join(lines)
