"""binlogscope's own replica (``binlogscope live --json``) graded on every case of the
catalogue: it is the reference client, so anything but pass is binlogscope's bug (or the
case's) - except the gaps listed in KNOWN_GAPS, which say what binlogscope does not do yet."""

from __future__ import annotations

import pytest

from mock_master.conformance.catalogue import catalogue
from mock_master.conformance.model import Result, Verdict
from tests.conformance.support import explain, run

pytestmark = [pytest.mark.network, pytest.mark.slow]  # the whole catalogue: ~2 min

#: cases where the reference client is known not to pass, and why (shown in docs/conformance.md)
KNOWN_GAPS: set[str] = set()


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return run("binlogscope")


def _ids() -> list[str]:
    return [f"{c.id} [{f}]" for c in catalogue() for f in c.flavors]


@pytest.mark.parametrize("key", _ids())
def test_binlogscope_passes(results: dict[str, Result], key: str) -> None:
    r = results[key]
    if r.case in KNOWN_GAPS:
        assert r.verdict == Verdict.FAIL, (
            f"{key} is listed as a known gap but now gives {r.verdict.value}: take it off "
            "KNOWN_GAPS")
        return
    assert r.verdict in (Verdict.PASS, Verdict.INFORMATIONAL), explain(r)
