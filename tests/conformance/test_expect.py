"""The mock master expectation helpers, against a real client (python-mysql-replication) and
binlogscope's semi-sync replica."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import scenario, txn_stream
from mock_master.conformance.expect import (
    expect_every_flagged_event_acked,
    expect_exactly_once,
    expect_no_violations,
    expect_queries,
    expect_resumed_at,
    query_counts,
)
from mock_master.conformance.streams import event_number, file_offsets
from mock_master.scenario.faults import Action
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.conftest import rows_via_pymysqlreplication

pytestmark = pytest.mark.network


def test_queries_resume_and_exactly_once_with_a_real_client(
        mock_master: Callable[..., ThreadedMockMaster]) -> None:
    b, _ = txn_stream("mysql", 3)
    at = event_number(b, E.TABLE_MAP_EVENT, 2)
    resume = file_offsets(b)[event_number(b, E.TABLE_MAP_EVENT, 2) - 1]  # where it ends
    sc = scenario("mysql", b.build(), actions=[Action("disconnect_after_event", at=at)])
    mm = mock_master(sc)
    rows = rows_via_pymysqlreplication(mm.host, mm.port, mariadb=False,
                                       log_file="mysql-bin.000001")
    # ordered: the checksum asked, then announced, on each of its two dump connections
    expect_queries(mm.log, ["SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'",
                            "SET @master_binlog_checksum*"] * 2,
                   times={"SET @master_binlog_checksum*": 2})
    expect_queries(mm.log, ["show variables like 'binlog_row_metadata';"], ordered=False)
    assert query_counts(mm.log)
    with pytest.raises(AssertionError, match="no query matching 'SET @nothing\\*'"):
        expect_queries(mm.log, ["SET @nothing*"])
    # python-mysql-replication resumes at the end of the last event it read: the TABLE_MAP
    expect_resumed_at(mm.log, "mysql-bin.000001", resume)
    with pytest.raises(AssertionError, match="the dump requests"):
        expect_resumed_at(mm.log, "mysql-bin.000001", 4)
    # (event type, schema, table, rows) per rows event: three transactions, each once
    expect_exactly_once(rows, key=repr, expected=[repr(r) for r in rows[:3]])
    assert len(rows) == 3
    with pytest.raises(AssertionError, match="more than once"):
        expect_exactly_once([1, 2, 2])


def test_every_flagged_event_acked_by_a_semi_sync_replica(
        mock_master: Callable[..., ThreadedMockMaster]) -> None:
    b, _ = txn_stream("mariadb", 3)
    mm = mock_master(scenario("mariadb", b.build(), ack_every_transaction=True))
    r = subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", mm.host,
                        "--port", str(mm.port), "--user", "repl", "--ssl-mode", "DISABLED",
                        "--start", "mysql-bin.000001:4", "--non-blocking", "--json",
                        "--semi-sync"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MYSQL_PWD="replpass"))
    assert r.returncode == 0, r.stderr
    expect_every_flagged_event_acked(mm.log)
    expect_no_violations(mm.log)
    # the same log without its ACKs: the helper says which are missing
    c: Any = mm.log.clients[0]
    c.acks = []
    with pytest.raises(AssertionError, match="ACKs missing"):
        expect_every_flagged_event_acked(mm.log)


def test_append_a_transaction_to_a_blocking_dump_in_one_line(
        mock_master: Callable[..., ThreadedMockMaster]) -> None:
    import json
    import threading
    import time

    from mock_master.conformance.expect import append_transaction
    from mock_master.conformance.streams import CaseBuilder

    b = CaseBuilder("mariadb")
    b, _ = txn_stream("mariadb", 2, b=b)
    t = b.tables[("conf", "t")]
    mm = mock_master(scenario("mariadb", b.build()))
    before = 1 + len(b.files[0].events)  # the fake ROTATE, then the file's events
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "live", "--host", mm.host,
                             "--port", str(mm.port), "--user", "repl", "--ssl-mode",
                             "DISABLED", "--start", "mysql-bin.000001:4", "--json",
                             "--count", str(before + 5)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, MYSQL_PWD="replpass"))
    timer = threading.Timer(30, proc.kill)
    timer.start()
    try:
        deadline = time.monotonic() + 20
        while not any(c.events_sent >= before for c in mm.log.clients):
            assert time.monotonic() < deadline, "the client never read the stream"
            time.sleep(0.05)
        gtid = append_transaction(mm, b, t, [(42, "live row")])
        out, err = proc.communicate(timeout=25)
    finally:
        timer.cancel()
    assert gtid == "0-1-3"
    rows = [json.loads(ln) for ln in out.splitlines() if '"WRITE_ROWS' in ln]
    assert [r["rows"][0]["after"] for r in rows][-1] == {"id": 42, "v": "live row"}, err
