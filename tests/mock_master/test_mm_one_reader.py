"""One reader per mock-master connection (issue 32). While a dump streams a task reads the
client (semi-sync ACKs, COM_QUIT); when a non-blocking dump ended with its EOF, that task was
cancelled but not awaited and - the session being back in COMMAND - the command loop read the
next command, finding the task still waiting on the socket: ``internal error: RuntimeError:
read() called while another coroutine is already waiting for incoming data`` in the run log, at
the end of about half of the good non-blocking dumps. Now every packet is read under one lock
(two coroutines can never wait on the socket together), the stream reader is stopped - awaited
- when the dump ends, and the connection ends after a dump as the server's does (its
COM_BINLOG_DUMP handler ends the session).

Clients: a bare socket (reading to the EOF and waiting for the server's close; a query sent
while the dump streams) and python-mysql-replication's non-blocking dumps."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mock_master.history.builder import EventBuilder
from mock_master.scenario.scenarios import Scenario, StreamSource
from tests.mock_master.test_mm_hardened import Raw


def _scenario() -> Scenario:
    """A stream of ~8 MB: more than loopback's socket buffers, so a client that is slow to
    start reading makes the dump wait on the socket - and the stream reader wait for the
    client - before the end (a few transactions go out without the dump ever yielding)."""
    b = EventBuilder("mariadb")
    t = b.table("db", "t", [("id", "INT"), ("b", "MEDIUMBLOB")])
    for i in range(80):
        b.transaction(t, [(i, bytes([97 + i % 26]) * 100_000)])
    return Scenario(sources=[StreamSource(b.build())])


def _slow_start(c: Raw) -> None:
    time.sleep(0.3)  # (the server's socket buffer fills: its dump waits, its reader too)

pytestmark = pytest.mark.network


def _events_then_eof(c: Raw) -> list[tuple[int, bytes]]:
    """The dump's packets up to and with its EOF (a non-blocking dump's end)."""
    got: list[tuple[int, bytes]] = []
    while True:
        p = c.packet()
        assert p is not None, got
        got.append(p)
        if p[1][:1] == b"\xfe" and len(p[1]) < 9:
            return got


def _ended(mm: Any, n: int) -> list[Any]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        logs = list(mm.log.clients)
        if len(logs) >= n and all(log.closed_by for log in logs):
            return logs
        time.sleep(0.05)
    raise AssertionError([log.closed_by for log in mm.log.clients])


def _no_internal_error(logs: list[Any]) -> None:
    for log in logs:
        assert not [e for e in log.errors if "internal error" in e], log.errors
        assert log.closed_by != "internal error", log.closed_by


def test_the_end_of_a_non_blocking_dump(serve_scenario: Any) -> None:
    """8 dumps read to their EOF; the client then waits (the server's stream reader is still
    waiting on the socket then): the server closes each connection, no internal error."""
    mm = serve_scenario(_scenario())
    for _ in range(8):
        c = Raw(mm)
        c.login()
        c.dump(0, blocking=False)
        _slow_start(c)
        assert len(_events_then_eof(c)) > 3
        assert c.closed(5)  # (the server ends the connection after the dump)
    logs = _ended(mm, 8)
    _no_internal_error(logs)
    assert all(log.closed_by == "server (the dump ended)" for log in logs), \
        [log.closed_by for log in logs]


def test_a_query_sent_while_the_dump_streams(serve_scenario: Any) -> None:
    """A COM_QUERY right behind the (non-blocking) dump request: the dump is served whole
    and the connection ends after its EOF, as the server's does (the query unanswered; the
    run log names it when the stream reader got to it before the end); no internal error."""
    mm = serve_scenario(_scenario())
    for _ in range(5):
        c = Raw(mm)
        c.login()
        c.dump(0, blocking=False)
        c.s.sendall(b"\x09\x00\x00\x00\x03SELECT 42")
        _slow_start(c)
        events = _events_then_eof(c)
        assert len(events) > 3 and all(p[1][:1] == b"\x00" for p in events[:-1])
        assert c.closed(5)
    logs = _ended(mm, 5)
    _no_internal_error(logs)
    for log in logs:
        assert log.closed_by == "server (the dump ended)", log.closed_by
        assert all("com_query during the binlog stream" in v for v in log.violations), \
            log.violations


def test_python_mysql_replication_non_blocking_dumps(serve_scenario: Any) -> None:
    """python-mysql-replication's non-blocking dumps, one after the other: every connection
    ends as a dump ends, none with an internal error; pymysql queries are served after."""
    import pymysql
    from pymysqlreplication import BinLogStreamReader

    mm = serve_scenario(_scenario())
    settings = {"host": mm.host, "port": mm.port, "user": "repl", "passwd": "replpass"}
    for i in range(5):
        s = BinLogStreamReader(connection_settings=settings, server_id=500 + i, blocking=False,
                               is_mariadb=True)
        n = sum(1 for _ in s)
        s.close()
        assert n > 3
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    with c, c.cursor() as cur:
        cur.execute("SELECT 42")
        row = cur.fetchone()
        assert row is not None and row[0] == 42
    _no_internal_error(_ended(mm, 6))
