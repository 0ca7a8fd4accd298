"""A real MariaDB replica with semi-sync replicating through ``binlogscope proxy`` while commits
happen on the primary.

The primary is the test MariaDB (``rpl_semi_sync_master_enabled``); the replica is a second
mariadbd (``rpl_semi_sync_slave_enabled``) whose CHANGE MASTER points at the proxy. Checked
against what the real programs did, not against expectations:

* the replica has every row (its tables equal the primary's);
* the primary counted the replica's ACKs: ``Rpl_semi_sync_master_yes_tx`` grew by the number of
  commits, ``no_tx`` did not move, and it lists the replica (a semi-sync client, its server_id
  in SHOW SLAVE HOSTS) while it streams;
* the proxy's ``--json`` shows every event of the stream with its 0xEF header, the ACK each
  commit asked for, and the replica's ACK packets naming those positions; its events are
  ``binlogscope file --json`` of the primary's binlog (file, offset, rows, every shared field)
  for everything dumped;
* the bytes on the two legs (captured on lo by dumpcap, reassembled by tshark) are identical:
  the replica received exactly what the server sent, and the server exactly what the replica
  sent.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mariadb_server import (
    MariaDB,
    ServerStartError,
    global_status,
    sql,
    start,
    start_replica,
    stop,
    wait_replica_at,
)
from tests.watch_support import LoopbackCapture, event_objects, server_event_objects, start_proxy

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]

#: transactions committed while the replica streams through the proxy
COMMITS = 5


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    d = tmp_path_factory.mktemp("proxy-replica")
    try:
        server = start(d)
    except ServerStartError as exc:
        pytest.fail(f"a second MariaDB (the replica) could not be started: {exc}")
    try:
        yield server
    finally:
        stop(d)


def _wait(cond: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _position(db: MariaDB) -> tuple[str, int]:
    name, pos = sql(db, "SHOW MASTER STATUS")[0][:2]
    return str(name), int(pos)


def test_a_semi_sync_replica_through_the_proxy(mariadb: MariaDB, replica: MariaDB,
                                              tmp_path: Path) -> None:
    table = f"{mariadb.database}.proxy_replica"
    sql(mariadb, f"DROP TABLE IF EXISTS {table}")
    name, pos = _position(mariadb)
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--json")
    cap = LoopbackCapture(tmp_path / "lo.pcapng", [mariadb.port, port])  # both legs
    try:
        start_replica(replica, "127.0.0.1", port, name, pos)
        # the primary sees a semi-sync replica (through the proxy) before anything commits
        # (an earlier test's client may still be counted until its thread notices it is gone:
        # the ACK counts below are what only this replica can make)
        _wait(lambda: int(global_status(mariadb, "Rpl_semi_sync_master_clients")) >= 1
              and 2 in [int(h[0]) for h in sql(mariadb, "SHOW SLAVE HOSTS")],
              "the primary to list the replica and count a semi-sync client")
        # (earlier tests' dump threads may linger until their next write: the replica's is
        # found by its connection id below)
        dumps = {int(r[0]): r for r in sql(mariadb, "SHOW PROCESSLIST") if r[4] == "Binlog Dump"}
        sql(mariadb, f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(40), n DOUBLE)")
        wait_replica_at(replica, *_position(mariadb))
        _wait(lambda: global_status(mariadb, "Rpl_semi_sync_master_status") == "ON",
              "semi-sync to be on")
        yes = int(global_status(mariadb, "Rpl_semi_sync_master_yes_tx"))
        no = int(global_status(mariadb, "Rpl_semi_sync_master_no_tx"))
        commits = [f"INSERT INTO {table} VALUES (1, 'one', 1.5)",
                   f"INSERT INTO {table} VALUES (2, 'two', NULL), (3, 'three', -2.25)",
                   f"UPDATE {table} SET v = 'uno', n = n * 2 WHERE id = 1",
                   f"DELETE FROM {table} WHERE id = 2",
                   f"INSERT INTO {table} VALUES (4, REPEAT('x', 40), 4e10)"]
        assert len(commits) == COMMITS
        for stmt in commits:  # each autocommit waits for the replica's ACK (2 s at most)
            sql(mariadb, stmt)
        end = _position(mariadb)
        assert int(global_status(mariadb, "Rpl_semi_sync_master_yes_tx")) - yes == COMMITS
        assert int(global_status(mariadb, "Rpl_semi_sync_master_no_tx")) == no
        wait_replica_at(replica, *end)
        q = f"SELECT * FROM {table} ORDER BY id"
        assert sql(replica, q) == sql(mariadb, q) and len(sql(mariadb, q)) == 3
        assert sql(replica, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_slave_status'") == [
            ("Rpl_semi_sync_slave_status", "ON")]
        sql(replica, "STOP SLAVE")
        sql(replica, "RESET SLAVE ALL")
    finally:
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=60)
        cap.stop()
    assert proxy.returncode == 0 and "Traceback" not in err, err
    # two connections: the dump, and the one STOP SLAVE opens to KILL the dump's thread on
    # the primary (what a semi-sync replica does)
    assert "2 connection(s) relayed" in err, err
    lines = out.splitlines()
    objs = [json.loads(line) for line in lines]
    (thread,) = [o["fields"]["connection_id"] for o in objs
                 if o["kind"] == "handshake_v10" and o["flow_id"] == 1]
    dump = dumps[thread]  # the replica's dump thread on the primary, through the proxy
    assert dump[1] == "repl", dump
    kills = [o["fields"]["query"] for o in objs if o["kind"] == "com_query" and o["flow_id"] == 2]
    assert kills == [f"KILL {thread}"]

    # the stream as the proxy decoded it: every event behind a 0xEF header, the commits asking
    # for an ACK, the replica's ACKs naming exactly those positions, in order
    events = [o for o in objs if o["kind"] == "binlog_event"]
    assert events and all(o["semi_sync"] is not None for o in events)
    asked = [(o["binlog_file"], o["log_pos"]) for o in events if o["semi_sync"]["ack_requested"]]
    acks = [(o["fields"]["binlog_filename"], o["fields"]["binlog_pos"]) for o in objs
            if o["kind"] == "semi_sync_ack"]
    assert all(o["direction"] == "client" for o in objs if o["kind"] == "semi_sync_ack")
    assert len(acks) >= COMMITS + 1  # the CREATE TABLE's and each commit's
    assert acks == asked
    assert acks[-1] == end

    # its events are the primary's, field by field, everything from the start position on
    seen = event_objects(lines)
    (flags,) = [o["fields"]["flags"] for o in objs if o["kind"] == "com_binlog_dump"]
    # (the server sends ANNOTATE_ROWS only to a dump that asks for it: flag 2)
    server = [o for o in server_event_objects(mariadb.binlog_dir, [name]) if o["offset"] >= pos
              and (flags & 2 or o["event_type"] != "ANNOTATE_ROWS_EVENT")]
    assert [o for o in seen if o["offset"] >= pos] == server
    writes = [o for o in seen if o["event_type"].startswith(("WRITE_ROWS", "UPDATE_ROWS",
                                                             "DELETE_ROWS"))]
    assert len(writes) == COMMITS
    assert writes[1]["rows"] == [{"before": None, "after": {"id": 2, "v": "two", "n": None}},
                                 {"before": None, "after": {"id": 3, "v": "three", "n": -2.25}}]

    # the dump's two legs, byte for byte: what the server sent is what the replica received,
    # and back (the replica's leg: its port in the proxy's flow; the server's: the proxy's
    # port in the primary's processlist)
    replica_port = int(next(o["flow"] for o in objs if o["flow_id"] == 1).split(" -> ")[0]
                       .rsplit(":", 1)[1])
    upstream_port = int(str(dump[2]).rsplit(":", 1)[1])
    streams = {(c, srv): (c2s, s2c) for c, srv, c2s, s2c in cap.streams()}
    from_replica, to_replica = streams[(replica_port, port)]
    to_server, from_server = streams[(upstream_port, mariadb.port)]
    assert len(from_server) > 1000 and to_replica == from_server
    assert from_replica == to_server
