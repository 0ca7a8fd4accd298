"""MySQL 8.3+ tagged GTIDs served: the MySQL 9.6 fixture (its PREVIOUS_GTIDS holds
``uuid:1-13:mytag:1-2``, then one transaction ``uuid:mytag:3`` opened by a GTID_TAGGED event,
type 42) behind ``--flavor mysql --server-version 9.6.0``, dumped with COM_BINLOG_DUMP_GTID whose
set is in the tagged encoding (``Gtid_set::encode``: n_sids carrying format 1, a tag per entry).

What the source does (mysql-server, read, not run: no MySQL server here):
``Binlog_sender::check_start_file`` (auto-position, no file name) refuses a replica lacking
``gtid_purged`` (the oldest file's PREVIOUS_GTIDS, tags included) with
ER_SOURCE_HAS_PURGED_REQUIRED_GTIDS; ``skip_event`` skips a GTID/GTID_TAGGED group the
replica's set contains (a tagged GTID is its own (uuid, tag) member of the set), and the
skipped positions reach the replica as a heartbeat. The old mock dropped the tags: the tagged
transaction was not a GTID (``@@gtid_mode`` answered OFF, every GTID dump refused with "GTID_MODE
= OFF"), and PREVIOUS_GTIDS' ``mytag:1-2`` merged into the untagged ``1-13``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pymysql
import pytest

from binlogscope.wire.commands import (
    ComBinlogDumpGtid,
    encode_com_binlog_dump_gtid,
    parse_gtid_sids,
)
from binlogscope.wire.gtid_sets import is_tagged_format
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.conftest import fixtures_dir

pytestmark = pytest.mark.network

UUID = "55778904-0299-11f1-b1b8-4ef0c4956feb"


def _mock(serve: Callable[[Scenario], ThreadedMockMaster]) -> ThreadedMockMaster:
    path = Path(fixtures_dir()) / ("blackbeam__rust_mysql_common/test-data/binlogs/"
                                   "binlog_transaction_with_GTID_TAG.000001")
    if not path.exists():
        pytest.fail(f"the MySQL 9.6 fixture binlog is missing: {path}")
    return serve(Scenario(flavor="mysql", server_version="9.6.0",
                          sources=[BinlogSource([path])]))


def _dump(mm: ThreadedMockMaster, gtids: str) -> list[bytes]:
    conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    conn._sock.settimeout(10)
    try:
        with conn.cursor() as cur:
            cur.execute("SET @source_binlog_checksum = 'CRC32'")
        cmd = encode_com_binlog_dump_gtid(ComBinlogDumpGtid(7, "", 4, 1, parse_gtid_sids(gtids)))
        assert is_tagged_format(cmd[1 + 2 + 4 + 4 + 8 + 4:][:8]) == ("mytag" in gtids)
        conn._execute_command(0x1E, cmd[1:])
        out = []
        while True:
            hdr = conn._read_bytes(4)
            p = bytes(conn._read_bytes(int.from_bytes(hdr[:3], "little")))
            out.append(p)
            if p[0] == 0xFF or (p[0] == 0xFE and len(p) < 9):
                return out
    finally:
        conn.close()


def _types(packets: list[bytes]) -> list[int]:
    return [p[5] for p in packets if p[0] == 0]


def test_the_tagged_gtid_set_and_variables(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario)
    conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@gtid_mode, @@gtid_executed, @@gtid_purged")
            assert cur.fetchone() == ("ON", f"{UUID}:1-13:mytag:1-3", f"{UUID}:1-13:mytag:1-2")
    finally:
        conn.close()


def test_a_replica_with_the_purged_set_gets_the_tagged_transaction(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    got = _dump(_mock(serve_scenario), f"{UUID}:1-13:mytag:1-2")
    # fake ROTATE, FD, PREVIOUS_GTIDS, GTID_TAGGED, QUERY, TABLE_MAP, WRITE_ROWS, XID, ROTATE
    assert _types(got) == [4, 15, 35, 42, 2, 19, 30, 16, 4]
    assert got[-1][0] == 0xFE


def test_a_replica_with_the_tagged_gtid_skips_it(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    got = _dump(_mock(serve_scenario), f"{UUID}:1-13:mytag:1-3")
    types = _types(got)
    assert 42 not in types and 30 not in types
    assert types == [4, 15, 35, 27, 4]  # the skipped group's end comes as a HEARTBEAT (27)
    hb = next(p for p in got if p[0] == 0 and p[5] == 27)
    assert int.from_bytes(hb[14:18], "little") == 541  # log_pos: the XID's end


def test_a_replica_lacking_tagged_purged_gtids_is_refused(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    got = _dump(_mock(serve_scenario), f"{UUID}:1-13")
    assert len(got) == 1 and got[0][0] == 0xFF
    text = got[0][9:].decode()
    assert int.from_bytes(got[0][1:3], "little") == 1236
    assert text == ("Cannot replicate because the source purged required binary logs. Replicate "
                    "the missing transactions from elsewhere, or provision a new replica from "
                    "backup. Consider increasing the source's binary log expiration period. The "
                    f"GTID set sent by the replica is '{UUID}:1-13', and the missing "
                    f"transactions are '{UUID}:mytag:1-2'")


def test_binlogscope_live_round_trips_a_tagged_set(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """``live --gtid`` with the set as MySQL 8.3+ prints ``@@gtid_executed`` (untagged
    intervals, then the tag's): encoded in the tagged format, honoured by the mock; the old
    ``--gtid`` check refused this form before connecting."""
    import json
    import os
    import subprocess
    import sys

    mm = _mock(serve_scenario)

    def live(gtids: str) -> list[tuple[str, str | None]]:
        r = subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", mm.host,
                            "--port", str(mm.port), "-u", "repl", "--gtid", gtids,
                            "--non-blocking", "--json"], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "MYSQL_PWD": "replpass"})
        assert r.returncode == 0, r.stderr
        return [(d["event_type"], d.get("gtid")) for d in map(json.loads, r.stdout.splitlines())
                if d.get("event_type")]

    got = live(f"{UUID}:1-13:mytag:1-2")
    assert ("GTID_TAGGED_LOG_EVENT", f"{UUID}:mytag:3") in got
    assert ("WRITE_ROWS_EVENT", f"{UUID}:mytag:3") in got
    got = live(f"{UUID}:1-13:mytag:1-3")
    assert [t for t, _ in got] == ["ROTATE_EVENT", "FORMAT_DESCRIPTION_EVENT",
                                   "PREVIOUS_GTIDS_LOG_EVENT", "HEARTBEAT_LOG_EVENT",
                                   "ROTATE_EVENT"]
