"""Mock master: a scriptable MySQL/MariaDB primary that replays recorded event streams.

Real replication clients (replicas, CDC connectors, python-mysql-replication, mariadb-binlog)
connect to it as to a real source; it serves binlog files, captures, recordings or events built
in Python, and injects the faults a scenario asks for. See :mod:`mock_master.scenario.scenarios`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_master.history.builder import EventBuilder
    from mock_master.history.sources import EventStream, SourceError
    from mock_master.scenario.faults import ACTIONS, Action
    from mock_master.scenario.scenarios import (
        BinlogSource,
        PcapSource,
        RecordingSource,
        Scenario,
        ScenarioError,
        StreamSource,
        User,
        binlog_scenario,
        load_scenario,
    )
    from mock_master.serve.server import ClientLog, MockMaster, RunLog, ThreadedMockMaster, serve

_WHERE: dict[str, str] = {  # name -> the module that defines it
    "ACTIONS": "mock_master.scenario.faults",
    "Action": "mock_master.scenario.faults",
    "BinlogSource": "mock_master.scenario.scenarios",
    "ClientLog": "mock_master.serve.server",
    "EventBuilder": "mock_master.history.builder",
    "EventStream": "mock_master.history.sources",
    "MockMaster": "mock_master.serve.server",
    "PcapSource": "mock_master.scenario.scenarios",
    "RecordingSource": "mock_master.scenario.scenarios",
    "RunLog": "mock_master.serve.server",
    "Scenario": "mock_master.scenario.scenarios",
    "ScenarioError": "mock_master.scenario.scenarios",
    "SourceError": "mock_master.history.sources",
    "StreamSource": "mock_master.scenario.scenarios",
    "ThreadedMockMaster": "mock_master.serve.server",
    "User": "mock_master.scenario.scenarios",
    "binlog_scenario": "mock_master.scenario.scenarios",
    "load_scenario": "mock_master.scenario.scenarios",
    "serve": "mock_master.serve.server",
}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: ``import mock_master.__main__`` (what
    ``binlogscope``'s command line does to build its ``mock-master`` options) then costs
    nothing, while ``from mock_master import MockMaster`` works as before."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'mock_master' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


__all__ = [
    "ACTIONS",
    "Action",
    "BinlogSource",
    "ClientLog",
    "EventBuilder",
    "EventStream",
    "MockMaster",
    "PcapSource",
    "RecordingSource",
    "RunLog",
    "Scenario",
    "ScenarioError",
    "SourceError",
    "StreamSource",
    "ThreadedMockMaster",
    "User",
    "binlog_scenario",
    "load_scenario",
    "serve",
]
