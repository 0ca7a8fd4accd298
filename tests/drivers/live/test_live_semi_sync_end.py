"""``live --semi-sync`` from the command line against the real MariaDB: with ``--non-blocking``
it ends at the end of the binlog (MariaDB's semi-sync source never ends a non-blocking dump:
docs/live.md), and ``--json`` lists the ACKs the server counts (Rpl_semi_sync_master_yes_tx)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.watch_support import dump_threads, global_status_int, run_sql

pytestmark = pytest.mark.mysql


def _cmd(db: Any, *args: str) -> list[str]:
    return [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port",
            str(db.port), "-u", db.repl_user, "--ssl-mode", "DISABLED", *args]


def _env(db: Any, pure: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["MYSQL_PWD"] = db.repl_password
    env["HOME"] = str(db.dir)  # no ~/.my.cnf of the machine
    if pure:
        env["BINLOGSCOPE_PURE_PYTHON"] = "1"
    else:
        env.pop("BINLOGSCOPE_PURE_PYTHON", None)
    return env


def _events(out: str) -> list[tuple[str, int, str]]:
    lines = [json.loads(x) for x in out.splitlines()]
    return [(x["binlog_file"], x["log_pos"], x["event_type"]) for x in lines
            if x.get("kind") == "binlog_event" and x.get("log_pos")]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_non_blocking_semi_sync_ends_where_non_blocking_does(mariadb: Any, pure: bool) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS live_semi_end (id BIGINT PRIMARY KEY)",
            f"INSERT INTO live_semi_end VALUES ({time.time_ns()})", "FLUSH BINARY LOGS",
            f"INSERT INTO live_semi_end VALUES ({time.time_ns()})")
    first = str(run_sql(mariadb, "SHOW BINARY LOGS")[0][0])
    # (the server writes the new file's BINLOG_CHECKPOINT a little after FLUSH: let it land)
    last, deadline = None, time.time() + 10
    while time.time() < deadline:
        head = tuple(run_sql(mariadb, "SHOW MASTER STATUS")[0][:2])
        if head == last:
            break
        last = head
        time.sleep(0.5)
    env = _env(mariadb, pure)
    plain = subprocess.run(_cmd(mariadb, "--json", "--non-blocking", "--start", f"{first}:4"),
                           capture_output=True, text=True, timeout=30, env=env,
                           stdin=subprocess.DEVNULL)
    assert plain.returncode == 0, plain.stderr
    # the old code sent BINLOG_DUMP_NON_BLOCK with semi-sync: MariaDB sent nothing (measured:
    # not even the fake ROTATE) and the command never ended (this timeout)
    semi = subprocess.run(_cmd(mariadb, "--json", "--non-blocking", "--semi-sync", "--start",
                               f"{first}:4"),
                          capture_output=True, text=True, timeout=20, env=env,
                          stdin=subprocess.DEVNULL)
    assert semi.returncode == 0, semi.stderr
    want, got = _events(plain.stdout), _events(semi.stdout)
    assert len({f for f, _, _ in want}) >= 2  # across a ROTATE into the next file
    # the same events, up to the head the dump step names (a commit of another test landing
    # between the two runs could only add events after it)
    short, long_ = sorted((got, want), key=len)
    assert long_[:len(short)] == short and len(short) >= 4
    (step,) = [x for x in semi.stdout.splitlines() if '"a blocking dump that' in x]
    f, p = json.loads(step)["what"].rsplit(" ", 1)[1].split(":")
    assert got[-1][:2] == (f, int(p))
    lines = [json.loads(x) for x in semi.stdout.splitlines()]
    assert all(x["semi_sync"] is not None for x in lines if x.get("kind") == "binlog_event")
    dump = [x for x in lines if x.get("kind") == "com_binlog_dump"]
    assert dump and not dump[0]["fields"]["flags"] & 1  # a blocking dump, ended by us
    notes = [x["text"] for x in lines if x.get("kind") == "note"]
    assert any("end of the binlog" in t for t in notes), notes
    assert "end of the binlog" in semi.stderr
    # its dump thread killed, as a MariaDB replica's at STOP SLAVE: not left counted as a
    # semi-sync replica (whose absent ACK the next commit would wait for)
    (kill,) = [x for x in lines if x.get("kind") == "step"
               and str(x.get("sql") or "").startswith("KILL CONNECTION")]
    tid = int(kill["sql"].split()[-1])
    deadline = time.time() + 10
    while tid in dump_threads(mariadb) and time.time() < deadline:
        time.sleep(0.1)
    assert tid not in dump_threads(mariadb)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_live_json_semi_sync_acks_are_counted_by_the_server(mariadb: Any, pure: bool) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS live_semi_json (id BIGINT PRIMARY KEY)")
    clients = global_status_int(mariadb, "Rpl_semi_sync_master_clients")
    proc = subprocess.Popen(_cmd(mariadb, "--json", "--semi-sync", "--heartbeat", "1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(mariadb, pure), stdin=subprocess.DEVNULL)
    n = 4
    try:
        # (MariaDB counts a semi-sync replica that left until it next writes to it: the count
        # may stay up, so this waits for a rise or 30 s)
        deadline = time.time() + 30
        while global_status_int(mariadb, "Rpl_semi_sync_master_clients") <= clients and \
                time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)
        yes = global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx")
        no = global_status_int(mariadb, "Rpl_semi_sync_master_no_tx")
        for _ in range(n):
            run_sql(mariadb, f"INSERT INTO live_semi_json VALUES ({time.time_ns()})")
        assert global_status_int(mariadb, "Rpl_semi_sync_master_yes_tx") - yes == n
        assert global_status_int(mariadb, "Rpl_semi_sync_master_no_tx") == no
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    lines = [json.loads(x) for x in out.splitlines()]
    acks = [x for x in lines if x.get("kind") == "semi_sync_ack"]
    asked = [x for x in lines if x.get("kind") == "binlog_event"
             and (x.get("semi_sync") or {}).get("ack_requested")]
    assert len(asked) >= n and len(acks) == len(asked), err
    # each ACK names the position where the event that asked for it ends, right after it
    for ev in asked:
        after = lines[lines.index(ev) + 1]
        assert after["kind"] == "semi_sync_ack", after
        assert after["fields"]["binlog_pos"] == ev["log_pos"]
        assert after["fields"]["binlog_filename"] == ev["binlog_file"]


def _commit_seconds(db: Any, table: str) -> float:
    t0 = time.perf_counter()
    run_sql(db, f"INSERT INTO {table} VALUES ({time.time_ns()})")
    return time.perf_counter() - t0


@pytest.mark.parametrize("end", ["count", "sigint"])
def test_a_semi_sync_dump_binlogscope_ends_does_not_stall_the_next_commit(
        mariadb: Any, end: str) -> None:
    """``live --semi-sync`` ended by ``--count 3`` or Ctrl-C KILLs its dump thread: the
    source stops counting it as a semi-sync replica, and its next commit does not wait
    rpl_semi_sync_master_timeout for an ACK that will not come (the old code left the thread
    idle at the head: the commit took the whole timeout and semi-sync switched off)."""
    table = "live_semi_stall"
    run_sql(mariadb, f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT PRIMARY KEY)")
    (old_timeout,) = run_sql(mariadb, "SELECT @@GLOBAL.rpl_semi_sync_master_timeout")[0]
    timeout_ms = 4000
    run_sql(mariadb, f"SET GLOBAL rpl_semi_sync_master_timeout = {timeout_ms}")
    try:
        clients = global_status_int(mariadb, "Rpl_semi_sync_master_clients")
        args = ["--json", "--semi-sync", "--heartbeat", "0"]
        if end == "count":
            # the fake ROTATE and the FORMAT_DESCRIPTION come at once; the third event is
            # the GTID of the commit below: it ends there, the dump thread idle at the head
            args += ["--count", "3"]
        proc = subprocess.Popen(_cmd(mariadb, *args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=_env(mariadb, False), stdin=subprocess.DEVNULL)
        try:
            deadline = time.time() + 20
            while global_status_int(mariadb, "Rpl_semi_sync_master_clients") <= clients \
                    and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert global_status_int(mariadb, "Rpl_semi_sync_master_clients") > clients
            if end == "count":
                _commit_seconds(mariadb, table)
            else:
                time.sleep(0.3)
                proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == (0 if end == "count" else 128 + signal.SIGINT), err
        assert "Traceback" not in err and "warning" not in err, err
        # the source no longer counts it (the KILL is done before the command returns)
        deadline = time.time() + 5
        while global_status_int(mariadb, "Rpl_semi_sync_master_clients") > clients \
                and time.time() < deadline:
            time.sleep(0.05)
        assert global_status_int(mariadb, "Rpl_semi_sync_master_clients") == clients
        took = _commit_seconds(mariadb, table)
        assert took < timeout_ms / 1000 / 2, took
        assert run_sql(mariadb, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_status'"
                       )[0][1] == "ON"
    finally:
        run_sql(mariadb, f"SET GLOBAL rpl_semi_sync_master_timeout = {old_timeout}")
