"""MySQL flavour (see diff_mysql.py): there is no real MySQL here, so this scenario cannot be
compared packet by packet. Instead python-mysql-replication in GTID mode (auto_position:
COM_BINLOG_DUMP_GTID) logging in with caching_sha2_password reads the MySQL 8.0.45 fixture
binlogs from the mock master, and what it decodes must be what ``binlogscope file --json``
decodes from the same files, without the transactions in the client's GTID set."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_master.diff.compare import decode
from mock_master.diff.run import copy_binlogs, record
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.diff_mysql import FILES, FIXTURE, UUID, expected, via_pymysqlreplication

pytestmark = pytest.mark.network


def test_pymysqlreplication_gtid_mode_reads_the_mysql_fixtures_as_binlogscope_does(
        tmp_path: Path) -> None:
    if not all((FIXTURE / f).exists() for f in FILES):
        pytest.fail(f"the MySQL 8.0.45 GTID fixtures are missing under {FIXTURE}")
    files = copy_binlogs([FIXTURE / f for f in FILES], tmp_path)
    want = expected(files, skip={1, 2})
    assert [k for k, *_ in want].count("gtid") == 4  # :3 .. :6
    sc = Scenario(flavor="mysql", sources=[BinlogSource(list(files))],
                  users=[User("repl", "replpass", "caching_sha2_password")])
    with ThreadedMockMaster(sc) as mm:
        run = record(lambda host, port: via_pymysqlreplication(host, port, f"{UUID}:1-2"),
                     mm.host, mm.port)
        assert run.error is None, run.error
        assert run.result == want
        assert not mm.log.violations
    # what was on the wire: caching_sha2_password (full authentication on the first login,
    # the cached fast path on the second), and a GTID dump
    first = decode(run.conversations[0])
    assert first[0].kind == "handshake_v10"
    assert first[0].value.auth_plugin_name == "caching_sha2_password"
    assert [p.kind for p in first[:7]].count("auth_more_data") == 2
    assert any(p.kind == "com_binlog_dump_gtid" for p in first)
