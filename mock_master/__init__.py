"""Mock master: a scriptable MySQL/MariaDB primary that replays recorded event streams.

Real replication clients (replicas, CDC connectors, python-mysql-replication, mariadb-binlog)
connect to it as to a real source; it serves binlog files, captures, recordings or events built
in Python, and injects the faults a scenario asks for. See :mod:`mock_master.scenarios`.
"""

from __future__ import annotations

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
