"""Mock master: a scriptable MySQL/MariaDB primary that replays recorded event streams.

Real replication clients (replicas, CDC connectors, python-mysql-replication, mariadb-binlog)
connect to it as to a real source; it serves binlog files, captures, recordings or events built
in Python, and injects the faults a scenario asks for. See :mod:`mock_master.scenarios`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_master.builder import EventBuilder
    from mock_master.faults import ACTIONS, Action
    from mock_master.scenarios import (
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
    from mock_master.server import ClientLog, MockMaster, RunLog, ThreadedMockMaster, serve
    from mock_master.sources import EventStream, SourceError

_WHERE: dict[str, str] = {  # name -> the module that defines it
    "ACTIONS": "mock_master.faults",
    "Action": "mock_master.faults",
    "BinlogSource": "mock_master.scenarios",
    "ClientLog": "mock_master.server",
    "EventBuilder": "mock_master.builder",
    "EventStream": "mock_master.sources",
    "MockMaster": "mock_master.server",
    "PcapSource": "mock_master.scenarios",
    "RecordingSource": "mock_master.scenarios",
    "RunLog": "mock_master.server",
    "Scenario": "mock_master.scenarios",
    "ScenarioError": "mock_master.scenarios",
    "SourceError": "mock_master.sources",
    "StreamSource": "mock_master.scenarios",
    "ThreadedMockMaster": "mock_master.server",
    "User": "mock_master.scenarios",
    "binlog_scenario": "mock_master.scenarios",
    "load_scenario": "mock_master.scenarios",
    "serve": "mock_master.server",
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
