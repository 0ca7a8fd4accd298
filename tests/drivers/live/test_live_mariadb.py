"""``binlogscope live`` against the real MariaDB: every step, semi-sync ACKs the server accepts,
heartbeats, exactly-once resume after a kill and after a restart, and one-line errors."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveReplica, LiveSettings, run_live
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.binlog.rows import RowsEvent
from tests.watch_support import run_sql, stream_killing_the_dump

pytestmark = pytest.mark.mysql


def _conn(db: Any, **kw: Any) -> ConnectionOptions:
    return ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                             password=db.repl_password, ssl_mode="DISABLED", **kw)


def _status(db: Any, name: str) -> int:
    c = db.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
            row = cur.fetchone()
            return int(row[1]) if row else 0
    finally:
        c.close()




def _first_binlog(db: Any) -> str:
    c = db.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return str(cur.fetchall()[0][0])
    finally:
        c.close()


def _run_cli(db: Any, *args: str, password: str | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["MYSQL_PWD"] = db.repl_password if password is None else password
    env["HOME"] = str(db.dir)  # no ~/.my.cnf of the machine
    return subprocess.run(
        [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port", str(db.port),
         "-u", db.repl_user, *args], capture_output=True, text=True, timeout=timeout, env=env,
        stdin=subprocess.DEVNULL)


def test_every_step_of_the_replica_conversation(mariadb: Any, tmp_path: Path) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS live_steps (id INT PRIMARY KEY, v VARCHAR(10))",
         "REPLACE INTO live_steps VALUES (1, 'a'), (2, 'b')")
    rec = tmp_path / "s.pcapng"
    p = _run_cli(mariadb, "--json", "--non-blocking", "--heartbeat", "5",
                 "--start", f"{_first_binlog(mariadb)}:4", "--record", str(rec))
    assert p.returncode == 0, p.stderr
    objs = [json.loads(x) for x in p.stdout.splitlines()]
    kinds = [o["kind"] for o in objs if "direction" in o]
    # handshake, auth, setup queries, register, dump, stream, end
    assert kinds[:3] == ["handshake_v10", "handshake_response41", "ok"]
    queries = [o["fields"]["query"] for o in objs if o["kind"] == "com_query"]
    assert any("@master_binlog_checksum" in q for q in queries)
    assert any("@slave_uuid" in q for q in queries)
    assert any("@master_heartbeat_period = 5000000000" in q for q in queries)
    assert any("@mariadb_slave_capability" in q for q in queries)
    assert "SHOW MASTER STATUS" in queries
    i_reg = kinds.index("com_register_slave")
    i_dump = kinds.index("com_binlog_dump")
    assert i_reg < i_dump
    events = [o for o in objs if o["kind"] == "binlog_event"]
    assert events[0]["event_type"] == "ROTATE_EVENT"
    assert events[1]["event_type"] == "FORMAT_DESCRIPTION_EVENT"
    assert all(e["checksum_ok"] for e in events)
    assert any(e["table"] == "live_steps" and e["rows"] for e in events)
    assert kinds[-1] == "eof"
    steps = [o for o in objs if o["kind"] == "step"]
    assert all(s["why"] for s in steps) and {s["phase"] for s in steps} >= {
        "connect", "auth", "setup", "register", "dump"}
    # never a password or scramble in the output
    assert mariadb.repl_password not in p.stdout
    resp = next(o for o in objs if o["kind"] == "handshake_response41")
    assert "<redacted>" in json.dumps(resp["fields"])
    # the recording exists, tshark frames it as MySQL and the scramble is masked
    data = rec.read_bytes()
    assert data[:4] == b"\x0a\x0d\x0d\x0a" and b"****" in data
    assert mariadb.repl_password.encode() not in data


def test_semi_sync_acks_are_accepted_by_the_server(mariadb: Any) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS live_semi (id INT PRIMARY KEY)")
    items: list[SourceItem] = []
    rep = LiveReplica(LiveSettings(conn=_conn(mariadb), semi_sync=True, heartbeat=1))
    rep.start()

    def consume() -> None:
        for cur, item in rep.items():
            items.append(item)
            rep.ack(cur, item)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    try:
        deadline = time.time() + 20
        while _status(mariadb, "Rpl_semi_sync_master_clients") < 1 and time.time() < deadline:
            time.sleep(0.1)
        assert _status(mariadb, "Rpl_semi_sync_master_clients") >= 1
        time.sleep(0.5)
        before = _status(mariadb, "Rpl_semi_sync_master_yes_tx")
        n = 5
        for i in range(n):
            run_sql(mariadb, f"INSERT INTO live_semi VALUES ({time.time_ns() % 10**9 + i})")
        after = _status(mariadb, "Rpl_semi_sync_master_yes_tx")
        assert after - before == n
        assert _status(mariadb, "Rpl_semi_sync_master_no_tx") >= 0
        assert rep.acks_sent >= n
    finally:
        rep.stop()
        rep.join(5)
    flagged = [i for i in items if isinstance(i.event, PacketDecoded)
               and i.event.semi_sync is not None]
    assert flagged, "the semi-sync header was never seen"


def test_heartbeats_arrive_at_the_requested_period(mariadb: Any) -> None:
    stamps: list[float] = []

    def consume(item: SourceItem) -> None:
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None \
                and ev.binlog_event.type_name == "HEARTBEAT_LOG_EVENT":
            stamps.append(time.monotonic())

    rep = LiveReplica(LiveSettings(conn=_conn(mariadb), heartbeat=0.5))
    rep.start()
    t0 = time.monotonic()
    try:
        for cur, item in rep.items():
            consume(item)
            rep.ack(cur, item)
            if time.monotonic() - t0 > 4 or len(stamps) >= 7:
                break
    finally:
        rep.stop()
        rep.join(5)
    assert len(stamps) >= 5, stamps
    gaps = [b - a for a, b in itertools.pairwise(stamps[1:])]
    assert all(0.3 < g < 0.9 for g in gaps), gaps


def _rows_by_id(items: list[SourceItem], table: str) -> list[int]:
    ids: list[Any] = []
    for item in items:
        ev = item.event
        if not isinstance(ev, PacketDecoded) or ev.binlog_event is None:
            continue
        body = ev.binlog_event.body
        if isinstance(body, RowsEvent) and body.table == table and body.rows:
            ids.extend(r["after"]["id"] for r in body.rows)
    return ids


def test_kill_mid_transaction_then_reconnect_delivers_every_row_once(mariadb: Any) -> None:
    """KILL our dump thread on the server while a 10k-row (20 MB) transaction is streaming:
    the replica reconnects, resumes at the transaction start and skips what it delivered."""
    run_sql(mariadb, "DROP TABLE IF EXISTS live_kill",
         "CREATE TABLE live_kill (id INT PRIMARY KEY, pad VARCHAR(2000))")
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        name, pos = cur.fetchone()[:2]
    c.close()
    pad = "x" * 2000
    stmts = ["INSERT INTO live_kill VALUES " + ",".join(
        f"({i}, '{pad}')" for i in range(k, k + 1000)) for k in range(0, 10_000, 1000)]
    run_sql(mariadb, "BEGIN", *stmts, "COMMIT")
    settings = LiveSettings(conn=_conn(mariadb), start=f"{name}:{pos}", store_size=4)
    rep = LiveReplica(settings)
    rep.start()
    got = stream_killing_the_dump(mariadb, rep, lambda it: len(_rows_by_id([it], "live_kill")))
    ids = _rows_by_id(got, "live_kill")
    assert sorted(ids) == list(range(10_000))


def test_restart_with_state_file_neither_loses_nor_repeats(mariadb: Any, tmp_path: Path) -> None:
    run_sql(mariadb, "DROP TABLE IF EXISTS live_state",
         "CREATE TABLE live_state (id INT PRIMARY KEY, pad CHAR(100))")
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        name, pos = cur.fetchone()[:2]
    c.close()
    rows = ",".join(f"({i}, 'y')" for i in range(10_000))
    run_sql(mariadb, "BEGIN", f"INSERT INTO live_state VALUES {rows}", "COMMIT")
    state = tmp_path / "state.json"
    first: list[SourceItem] = []
    # run 1 stops after 8 events (the artificial ROTATE and FORMAT_DESCRIPTION, GTID,
    # ANNOTATE, TABLE_MAP, 3 of ~12 WRITE_ROWS): mid-transaction
    run_live(LiveSettings(conn=_conn(mariadb), start=f"{name}:{pos}", non_blocking=True,
                          state_path=str(state)), first.append, count=8)
    saved = json.loads(state.read_text())
    assert saved["skip"] > 0, saved  # stopped inside the transaction
    second: list[SourceItem] = []
    rep = run_live(LiveSettings(conn=_conn(mariadb), non_blocking=True, state_path=str(state)),
                   second.append)
    assert rep.error is None
    a, b = _rows_by_id(first, "live_state"), _rows_by_id(second, "live_state")
    assert a and b
    assert sorted(a + b) == list(range(10_000))


def test_wrong_password_is_one_line(mariadb: Any) -> None:
    p = _run_cli(mariadb, "--json", "--non-blocking", password="not-the-password")
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "1045" in p.stderr and "Traceback" not in p.stderr
    assert "not-the-password" not in p.stderr + p.stdout


def test_wrong_port_is_one_line(mariadb: Any) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, MYSQL_PWD="x", HOME=str(mariadb.dir))
    p = subprocess.run([sys.executable, "-m", "binlogscope", "live", "--port", str(port),
                        "--no-reconnect"], capture_output=True, text=True, env=env,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "refused" in p.stderr and "Traceback" not in p.stderr


def test_tls_required_but_not_offered_is_one_line(mariadb: Any) -> None:
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("SHOW VARIABLES LIKE 'have_ssl'")
        have_ssl = cur.fetchone()[1]
    c.close()
    p = _run_cli(mariadb, "--ssl-mode", "REQUIRED", "--non-blocking", "--json")
    if have_ssl == "YES":
        assert p.returncode == 0, p.stderr  # the server offers TLS: the session works over it
        assert "TLS established" in p.stdout
    else:
        assert p.returncode == 1
        assert p.stderr.count("\n") == 1 and "TLS is required" in p.stderr
        assert "Traceback" not in p.stderr


def _old_password_hash(pw: bytes) -> str:
    from binlogscope.wire.auth import _hash_323

    a, b = _hash_323(pw)
    return f"{a:08x}{b:08x}"


@pytest.mark.parametrize("plugin", ["ed25519", "mysql_old_password"])
def test_auth_plugins_against_the_real_server(mariadb: Any, plugin: str) -> None:
    """MariaDB's client_ed25519 (via auth switch) and the 3.23 scramble log in for real."""
    user, pw = f"u_{plugin[:8]}", f"pw-{plugin}"
    c = mariadb.connect()
    with c.cursor() as cur:
        if plugin == "ed25519":
            cur.execute("SELECT COUNT(*) FROM information_schema.PLUGINS "
                        "WHERE PLUGIN_NAME = 'ed25519'")
            if not cur.fetchone()[0]:
                cur.execute("INSTALL SONAME 'auth_ed25519'")
            cur.execute(f"CREATE OR REPLACE USER {user}@'%' IDENTIFIED VIA ed25519 "
                        f"USING PASSWORD('{pw}')")
        else:
            cur.execute("SET GLOBAL secure_auth = 0")
            cur.execute(f"CREATE OR REPLACE USER {user}@'%' IDENTIFIED VIA mysql_old_password "
                        f"USING '{_old_password_hash(pw.encode())}'")
        cur.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* "
                    f"TO {user}@'%'")
    # the 3.23 scramble is refused unless asked for (one line, exit 1, the password kept)
    optin = ["--insecure-auth"] if plugin == "mysql_old_password" else []
    try:
        env = dict(os.environ, MYSQL_PWD=pw, HOME=str(mariadb.dir))
        if optin:
            refused = subprocess.run(
                [sys.executable, "-m", "binlogscope", "live", "--port", str(mariadb.port),
                 "-u", user, "--non-blocking", "--json", "--ssl-mode", "DISABLED"],
                capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
            assert refused.returncode == 1 and refused.stderr.count("\n") == 1
            assert "mysql_old_password" in refused.stderr and "--insecure-auth" in refused.stderr
        p = subprocess.run(
            [sys.executable, "-m", "binlogscope", "live", "--port", str(mariadb.port), "-u", user,
             "--non-blocking", "--json", "--ssl-mode", "DISABLED", *optin],
            capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        kinds = [json.loads(x)["kind"] for x in p.stdout.splitlines()]
        assert "auth_switch_request" in kinds and "auth_switch_response" in kinds
        assert kinds.index("com_binlog_dump") > kinds.index("auth_switch_response")
        assert pw not in p.stdout
        wrong = subprocess.run(
            [sys.executable, "-m", "binlogscope", "live", "--port", str(mariadb.port), "-u", user,
             "--non-blocking", "--ssl-mode", "DISABLED", *optin],
            capture_output=True, text=True, env=dict(env, MYSQL_PWD="nope"), timeout=60,
            stdin=subprocess.DEVNULL)
        assert wrong.returncode == 1 and "1045" in wrong.stderr
    finally:
        with c.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS {user}@'%'")
            if plugin != "ed25519":
                cur.execute("SET GLOBAL secure_auth = 1")
        c.close()
