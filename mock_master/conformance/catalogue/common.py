"""Shared pieces of the catalogue: the standard values case and scenario construction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mock_master.conformance.columns import ddl
from mock_master.conformance.grade import judge_values
from mock_master.conformance.model import NEEDS_VALUES, Case, ExpectedRows, Setup
from mock_master.conformance.streams import FULL, CaseBuilder
from mock_master.history.sources import EventStream
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import Scenario, StreamSource

SCHEMA = "conf"
BOTH = ("mariadb", "mysql")


def scenario(flavor: str, stream: EventStream, *, ddl_text: str | None = None,
             actions: list[Action] | None = None, **kw: Any) -> Scenario:
    return Scenario(flavor=flavor, sources=[StreamSource(stream)], schema_ddl=ddl_text,
                    actions=list(actions or []), **kw)


def values_case(cid: str, title: str, spec: list[tuple[str, str]], rows: list[Any], *,
                flavors: tuple[str, ...] = BOTH, metadata: str = FULL, hires: bool = False,
                kind: str = "insert", expected: list[Any] | None = None,
                compressed: bool = False, expect: str | None = None,
                links: tuple[str, ...] = ()) -> Case:
    """A table of ``spec`` columns, one transaction with one rows event of ``rows``; a correct
    client reports every value as the value contract says (``expected``, default ``rows``)."""
    table = cid.rsplit("/", 1)[-1].replace("-", "_")[:60]

    def build(flavor: str) -> Setup:
        b = CaseBuilder(flavor, metadata=metadata)
        t = b.table_of(SCHEMA, table, spec, hires=hires)
        b.begin()
        b.rows(kind, t, rows, compressed=compressed)
        b.commit()
        sc = scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, table, spec))
        return Setup(sc, expected=[ExpectedRows(kind, t, expected if expected is not None
                                                else rows)])

    return Case(cid, title, expect or "every value reported as the value contract says "
                "(docs/value-contract.md): " + title, build, judge_values, flavors=flavors,
                needs=(NEEDS_VALUES,), links=links)


def txn_stream(flavor: str, n: int = 3, *, b: CaseBuilder | None = None,
               table: str = "t") -> tuple[CaseBuilder, list[ExpectedRows]]:
    """``n`` one-row transactions on a small table: the plain traffic protocol cases use."""
    b = b or CaseBuilder(flavor)
    spec = [("id", "INT"), ("v", "VARCHAR(20)")]
    t = b.table_of(SCHEMA, table, spec)
    exp: list[ExpectedRows] = []
    for i in range(1, n + 1):
        b.begin()
        b.insert(t, [(i, f"row {i}")])
        b.commit()
        exp.append(ExpectedRows("insert", t, [(i, f"row {i}")]))
    return b, exp


Judge = Callable[..., Any]
