"""Helpers for the mock master tests: real clients against a mock master on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mock_master.pytest_plugin import mock_master  # noqa: F401  (the plugin's fixture)
from mock_master.scenario.scenarios import Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, start, stop


def rows_via_pymysqlreplication(host: str, port: int, *, user: str = "repl",
                                password: str = "replpass", mariadb: bool = True,
                                log_file: str | None = None,
                                ssl: dict[str, Any] | None = None, **kw: Any) -> list[Any]:
    """Every row event python-mysql-replication reads (non-blocking), as plain data
    (``ssl``: pymysql's TLS settings)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    settings: dict[str, Any] = {"host": host, "port": port, "user": user, "passwd": password}
    if ssl is not None:
        settings["ssl"] = ssl
    extra: dict[str, Any] = {}
    if log_file is not None:
        extra = {"log_file": log_file, "log_pos": 4, "resume_stream": True}
    s = BinLogStreamReader(connection_settings=settings, server_id=4242, blocking=False,
                           is_mariadb=mariadb and log_file is None,
                           only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
                           **extra, **kw)
    out: list[Any] = []
    try:
        for ev in s:
            out.append((type(ev).__name__, ev.schema, ev.table,
                        [_norm(r) for r in ev.rows]))
    finally:
        s.close()
    return out


def _norm(row: dict[str, Any]) -> str:
    return repr(sorted((k, sorted(v.items()) if isinstance(v, dict) else v)
                       for k, v in row.items() if k != "none_sources"))


@pytest.fixture
def serve_scenario() -> Iterator[Callable[[Scenario], ThreadedMockMaster]]:
    started: list[ThreadedMockMaster] = []

    def start(sc: Scenario) -> ThreadedMockMaster:
        mm = ThreadedMockMaster(sc).start()
        started.append(mm)
        return mm

    yield start
    for mm in started:
        mm.stop()


@contextmanager
def private_mariadb(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[MariaDB]:
    """A throw-away MariaDB of the module's own (its binlog is the module's to fill), stopped
    afterwards; a server that cannot start makes the tests unavailable (tests.ci_support)."""
    d = tmp_path_factory.mktemp(name)
    try:
        server = start(d)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        yield server
    finally:
        stop(d)
