"""pytest plugin: the ``mock_master`` fixture (registered through the ``pytest11`` entry point).

::

    def test_my_connector(mock_master):
        mm = mock_master(binlogs=["tests/data/mysql-bin.000001"])       # or scenario=...
        run_connector(host=mm.host, port=mm.port, user="repl", password="replpass")
        assert not mm.log.violations

The factory takes a :class:`~mock_master.scenario.scenarios.Scenario`, a scenario file path, or
``binlogs=[...]`` (plus any Scenario keyword); every server it started is stopped at the end of
the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario, load_scenario
from mock_master.serve.server import ThreadedMockMaster


@pytest.fixture
def mock_master() -> Iterator[Callable[..., ThreadedMockMaster]]:
    """A factory of mock masters on free loopback ports, stopped at the end of the test:
    ``mock_master(scenario)`` (a Scenario or a scenario file), or
    ``mock_master(binlogs=[...], **scenario_keywords)`` - any Scenario keyword (flavor,
    users, actions, semi_sync, ack_every_transaction, variables, ...). The server's ``host``,
    ``port`` and run log ``log`` (see mock_master.conformance.expect for its fields and the
    assertion helpers); ``append_events([...])`` adds live events."""
    started: list[ThreadedMockMaster] = []

    def factory(scenario: Scenario | str | Path | None = None, *,
                binlogs: list[str | Path] | None = None, host: str = "127.0.0.1",
                port: int = 0, **kw: Any) -> ThreadedMockMaster:
        if isinstance(scenario, str | Path):
            sc = load_scenario(scenario)
        elif scenario is None:
            sc = Scenario(**kw)
        else:
            sc = scenario
        if binlogs:
            sc.sources.append(BinlogSource(list(binlogs)))
        mm = ThreadedMockMaster(sc, host, port).start()
        started.append(mm)
        return mm

    try:
        yield factory
    finally:
        for mm in started:
            mm.stop()
