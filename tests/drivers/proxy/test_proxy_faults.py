"""``binlogscope proxy --action``: each fault injected on a real MariaDB's stream, as a real
client sees it.

`mariadb-binlog --read-from-remote-server --raw` of one closed binlog file through the proxy
writes, per action, exactly what the action says compared with the direct run (a held event
arrives late but intact; a duplicated event is in the file twice; a cut connection leaves the
file ending at the event; an injected ERR is printed by the client; a corrupted CRC32 fails
``mariadb-binlog --verify-binlog-checksum``); python-mysql-replication gets the duplicated
rows event's rows twice; the server counts the semi-sync ACKs ``drop_ack``/``delay_ack`` hold
back (binlogscope's own semi-sync replica ACKs); ``heartbeat_gap`` leaves a hole in the
heartbeats the client gets.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.proxy.faults import ActionError, load_actions, parse_action
from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.session.events import PacketDecoded
from tests.watch_support import ENV, consuming, global_status_int, live_replica, run_sql

pytestmark = pytest.mark.mysql


@pytest.fixture(scope="module")
def closed_binlog(mariadb: Any) -> str:
    """A closed binlog file with one table's five single-row transactions."""
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS pfault (id INT PRIMARY KEY, v VARCHAR(50))",
         "FLUSH BINARY LOGS")
    name = str(run_sql(mariadb, "SHOW MASTER STATUS")[0][0])
    for i in range(5):
        run_sql(mariadb, f"REPLACE INTO pfault VALUES ({i}, '{'x' * (i + 1)}')")
    run_sql(mariadb, "FLUSH BINARY LOGS")
    return name


@contextlib.contextmanager
def _proxy(db: Any, *specs: str, types: list[str] | None = None
           ) -> Iterator[tuple[int, list[str]]]:
    proxy = ReplicationProxy(("127.0.0.1", 0), (db.host, db.port),
                             actions=[parse_action(s) for s in specs])
    port = proxy.start()
    notes: list[str] = []
    stop = threading.Event()

    def consume() -> None:
        for batch in proxy.batches(stop=stop.is_set):
            notes.extend(i.text or "" for i in batch if i.kind == "note")
            for i in batch:  # the binlog events the client got, in order
                ev = i.event
                if types is not None and isinstance(ev, PacketDecoded) and \
                        ev.binlog_event is not None:
                    types.append(ev.binlog_event.type_name)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    try:
        yield port, notes
    finally:
        stop.set()
        t.join(30)


def _dump(db: Any, port: int, name: str, into: Path) -> tuple[int, str, float, bytes]:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir()
    t0 = time.monotonic()
    res = subprocess.run(
        [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
         "--raw", f"--host={db.host}", f"--port={port}", f"--user={db.user}",
         f"--password={db.password}", f"--result-file={into}/", name],
        capture_output=True, text=True, timeout=60)
    out = into / name
    return (res.returncode, res.stderr, time.monotonic() - t0,
            out.read_bytes() if out.exists() else b"")


def _events(data: bytes) -> list[tuple[int, int]]:
    """(offset, size) of each event of a binlog file."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        out.append((pos, size))
        pos += size
    return out


def _wire(n: int, evs: list[tuple[int, int]]) -> tuple[int, int]:
    """The file event that is the dump's event ``n`` (1 = the fake ROTATE, 2 = the FDE)."""
    return evs[n - 2]


def test_event_faults_seen_by_mariadb_binlog(mariadb: Any, closed_binlog: str,
                                             tmp_path: Path) -> None:
    rc, err, direct_s, direct = _dump(mariadb, mariadb.port, closed_binlog, tmp_path / "d")
    assert rc == 0, err
    evs = _events(direct)
    assert len(evs) >= 12 and sum(s for _, s in evs) + 4 == len(direct)
    off5, size5 = _wire(5, evs)

    def via(*specs: str) -> tuple[int, str, float, bytes, list[str]]:
        with _proxy(mariadb, *specs) as (port, notes):
            res = _dump(mariadb, port, closed_binlog, tmp_path / "v")
        return (*res, notes)

    # delay / stall: the same bytes, at least that much later
    for spec in ("delay at=3 seconds=0.8", "stall at=4 seconds=0.8"):
        rc, err, secs, data, notes = via(spec)
        assert rc == 0 and data == direct and secs >= 0.8 > direct_s, (spec, err, secs)
        assert any(spec.split()[0] in n and "fired on event" in n for n in notes), notes
    # slow_drip: the whole dump at the rate, not faster (pieces of a tenth of a second's
    # worth at most, each once the bytes before it had their time) and not much slower
    rc, err, secs, data, _ = via("slow_drip bytes_per_second=4000")
    assert rc == 0 and data == direct, err
    assert (len(direct) - 400) / 4000 <= secs <= len(direct) / 4000 * 1.5 + 2, secs
    # duplicate_event: event 5 twice, as the server wrote it
    rc, err, _, data, _ = via("duplicate_event at=5")
    ev5 = direct[off5:off5 + size5]
    assert rc == 0 and data == direct[:off5 + size5] + ev5 + direct[off5 + size5:], err
    # disconnect_after_event: the file ends with event 5, the client reports the lost link
    rc, err, _, data, _ = via("disconnect_after_event at=5")
    assert rc != 0 and "Lost connection" in err and data == direct[:off5 + size5], err
    # truncate_event: the first 10 bytes of event 5 arrive, then the connection is gone
    rc, err, _, data, _ = via("truncate_event at=5 keep=10")
    assert rc != 0 and "Lost connection" in err and data == direct[:off5 + 10], err
    # send_error: the client prints the server's error instead of event 5
    rc, err, _, data, _ = via("send_error at=5 code=1236 message=injected-by-proxy")
    assert rc != 0 and "injected-by-proxy" in err and data == direct[:off5], err
    # corrupt_checksum_at: only event 5's CRC32 differs ...
    rc, err, _, data, _ = via("corrupt_checksum_at at=5")
    assert rc == 0 and len(data) == len(direct), err
    diff = [i for i in range(len(data)) if data[i] != direct[i]]
    assert diff == [off5 + size5 - 1]
    # ... and a client verifying checksums rejects the stream there
    with _proxy(mariadb, "corrupt_checksum_at at=5") as (port, _):
        res = subprocess.run(
            [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
             "--verify-binlog-checksum", f"--host={mariadb.host}", f"--port={port}",
             f"--user={mariadb.user}", f"--password={mariadb.password}", closed_binlog],
            capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "crc check failed" in res.stderr, res.stderr


def test_duplicate_rows_event_seen_by_python_mysql_replication(
        mariadb: Any, closed_binlog: str, tmp_path: Path) -> None:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent


    def rows(port: int) -> list[int]:
        s = BinLogStreamReader(
            connection_settings={"host": mariadb.host, "port": port, "user": mariadb.user,
                                 "passwd": mariadb.password},
            server_id=4242, blocking=False, resume_stream=True, log_file=closed_binlog,
            log_pos=4, only_events=[WriteRowsEvent])
        try:
            return [r["values"]["id"] for ev in s for r in ev.rows
                    if ev.table == "pfault"]
        finally:
            s.close()

    assert rows(mariadb.port) == [0, 1, 2, 3, 4]
    types: list[str] = []  # this client's dump (no ANNOTATE_ROWS asked for), numbered
    with _proxy(mariadb, types=types) as (port, _):
        assert rows(port) == [0, 1, 2, 3, 4]
    first_rows = 1 + next(i for i, t in enumerate(t for t in types if t != "HEARTBEAT_LOG_EVENT")
                          if t.startswith("WRITE_ROWS"))
    with _proxy(mariadb, f"duplicate_event at={first_rows}") as (port, _):
        assert rows(port) == [0, 0, 1, 2, 3, 4]


def test_drop_ack_and_delay_ack_seen_by_the_server(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS pfault_semi (id INT PRIMARY KEY)")
    for spec, waits, acked in (("delay_ack seconds=0.6", 0.6, True),
                               ("drop_ack at=1", 2.0, False)):  # (the server waits 2 s)
        with _proxy(mariadb, spec) as (port, notes), \
                consuming(live_replica(mariadb, port, semi_sync=True, heartbeat=1), []):
            deadline = time.time() + 20
            while global_status_int(mariadb, "Rpl_semi_sync_master_clients") < 1 and \
                    time.time() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            yes, no = (global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx"),
                       global_status_int(mariadb, "Rpl_semi_sync_master_no_tx"))
            t0 = time.monotonic()
            run_sql(mariadb, f"INSERT INTO pfault_semi VALUES ({time.time_ns() % 10**9})")
            took = time.monotonic() - t0
            yes2, no2 = (global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx"),
                         global_status_int(mariadb, "Rpl_semi_sync_master_no_tx"))
        assert took >= waits * 0.9, (spec, took)
        assert (yes2 - yes, no2 - no) == ((1, 0) if acked else (0, 1)), spec
        assert any(spec.split()[0] in n for n in notes), notes
    # the ACKs flow again without the proxy's fault: semi-sync back on for the next test
    with consuming(live_replica(mariadb, mariadb.port, semi_sync=True, heartbeat=1), []):
        time.sleep(0.5)
        run_sql(mariadb, f"INSERT INTO pfault_semi VALUES ({time.time_ns() % 10**9 + 1})")


def test_heartbeat_gap_seen_by_the_client(mariadb: Any) -> None:
    seen: list[tuple[float, str]] = []
    with _proxy(mariadb, "heartbeat_gap seconds=1.5") as (port, _):
        rep = live_replica(mariadb, port, heartbeat=0.25)
        with consuming(rep, seen):
            t0 = time.monotonic()
            time.sleep(2.5)
    beats = [t - t0 for t, name in seen if name == "HEARTBEAT_LOG_EVENT"]
    assert beats and min(beats) >= 1.2, beats  # (the dump starts a little after t0)
    assert len(beats) >= 3, beats  # and they come again after the gap


def test_action_arguments_and_scenario_files(tmp_path: Path) -> None:
    a = parse_action("delay at=3 seconds=0.5 times=0")
    assert (a.kind, a.at, a.times, a.arg("seconds")) == ("delay", 3, 0, 0.5)
    for bad, msg in (("nope at=1", "expected one of"), ("delay", "give 'at'"),
                     ("delay at=0", "counts from 1"), ("delay at=1 sekonds=2", "unknown")):
        with pytest.raises(ActionError, match=msg):
            parse_action(bad)
    sc = tmp_path / "s.toml"
    sc.write_text('flavor = "mariadb"\n[[actions]]\naction = "duplicate_event"\nat = 4\n'
                  '[[actions]]\naction = "heartbeat_gap"\nseconds = 3\n')
    got = load_actions(sc)
    assert [(x.kind, x.at, x.arg("seconds")) for x in got] == [
        ("duplicate_event", 4, None), ("heartbeat_gap", None, 3)]
    res = subprocess.run([sys.executable, "-m", "binlogscope", "proxy", "--listen", "0",
                          "--upstream", "127.0.0.1:1", "--action", "stall at=x"],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert res.returncode == 2 and "at/times/client are integers" in res.stderr, res.stderr
