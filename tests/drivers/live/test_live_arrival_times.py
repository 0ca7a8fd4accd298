"""Arrival times on every live surface (issue 29 item 2): the semi-sync XID -> ACK interval a
replica session shows equals, within 0.2 ms, what a capture of the same connection (dumpcap on
the loopback interface, read by tshark) measured between the frame that brought the XID and the
frame that carried the ACK - in ``live --json`` (``wire_time``), in the ``--record`` pcapng of
that session, in ``export --live``'s packets table and in the TUI's rows (what its ``t`` delta
shows), against the real MariaDB with semi-sync on.

Before, the rows, the export and the recording were stamped when the packets were decoded, shown
or written: the same interval read 0.015 ms in the TUI and 1.35 ms in a recording where the wire
said 1.92 ms."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings
from binlogscope.inspector.sources.live import LiveSource
from tests.watch_support import LoopbackCapture, global_status_int, run_sql

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]

#: the issue's bound: a surface's interval may differ from the wire's by this much (seconds)
TOLERANCE = 0.0002
TRANSACTIONS = 4


def _semi_clients(db: Any) -> int:
    return global_status_int(db, "Rpl_semi_sync_master_clients")


def _wait_clients(db: Any, n: int, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.time() + 60
    while _semi_clients(db) < n:
        assert time.time() < deadline, "the semi-sync replica never registered"
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the session ended early: {proc.communicate()[1]}")
        time.sleep(0.1)
    time.sleep(0.3)  # (its dump has started: the next commits wait for its ACK)


def _wait_gone(db: Any, n: int) -> None:
    """The last session's dump thread has gone (the next session's commits are its own; a
    dump thread notices its replica went at its next write: heartbeats every second)."""
    deadline = time.time() + 60
    while _semi_clients(db) > n and time.time() < deadline:
        time.sleep(0.1)


def _commit_some(db: Any, table: str) -> None:
    run_sql(db, f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, v VARCHAR(20))")
    for i in range(TRANSACTIONS):
        run_sql(db, f"INSERT INTO {table} VALUES ({time.time_ns() % 10**9 + i}, 'x{i}')")
        time.sleep(0.05)


def _env(db: Any) -> dict[str, str]:
    env = dict(os.environ)
    env["MYSQL_PWD"] = db.repl_password
    env["HOME"] = str(db.dir)
    return env


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return out, err


def wire_latencies(pcap: Path, server_port: int) -> dict[tuple[int, int], float]:
    """{(client port, log_pos): seconds} from a capture read by tshark: for every semi-sync
    ACK (a client segment whose packet starts 0xEF), the time from the server's segment that
    carried the ACK-requested event ending at the ACK's position (0xEF 0x01 + a 19-byte
    header with that log_pos: the XID_EVENT of a transaction) to the ACK's segment."""
    tshark = shutil.which("tshark") or "tshark"
    res = subprocess.run(
        [tshark, "-r", str(pcap), "-Y", f"tcp.port == {server_port} && tcp.len > 0", "-T",
         "fields", "-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e",
         "tcp.payload"], capture_output=True, text=True, timeout=120, check=True)
    frames: list[tuple[float, int, int, bytes]] = []
    for line in res.stdout.splitlines():
        when, sport, dport, payload = line.split("\t")
        frames.append((float(when), int(sport), int(dport),
                       bytes.fromhex(payload.replace(":", ""))))
    out: dict[tuple[int, int], float] = {}
    for i, (t, src, _dst, data) in enumerate(frames):
        if src == server_port or len(data) < 13 or data[4] != 0xEF:
            continue
        pos = struct.unpack_from("<Q", data, 5)[0]
        # (timestamp, type, server id, size, log_pos: any event type - a DDL asks too)
        xid = re.compile(b"\xef\x01.{13}" + re.escape(struct.pack("<I", pos)), re.S)
        later = False  # another server segment came between the event's and the ACK
        for t0, s0, d0, d in reversed(frames[:i]):
            if s0 == server_port and d0 == src:
                if xid.search(d):
                    if not later:
                        out[(src, pos)] = t - t0
                    else:
                        AMBIGUOUS.add((src, pos))
                    break
                later = True
    return out


#: ACKs whose event's segment was followed by another before the ACK (a heartbeat, say): one
#: read may have returned both, and a read has one kernel time - its last segment's - so the
#: event's time there is the later segment's (by design: see drivers/live/stamps.py)
AMBIGUOUS: set[tuple[int, int]] = set()


def _compare(name: str, shown: dict[int, float], wire: dict[int, float]) -> None:
    """Every ACK the surface shows has the wire's interval within the tolerance (but those
    whose event shared its read with a later segment: :data:`AMBIGUOUS`, rare)."""
    assert len(shown) >= TRANSACTIONS, (name, shown)
    clear = {pos for pos in shown if pos in wire}
    assert len(clear) >= TRANSACTIONS - 1, (name, sorted(shown), sorted(wire))
    for pos, lat in shown.items():
        if pos not in clear:
            continue
        assert abs(lat - wire[pos]) <= TOLERANCE, (
            f"{name}: XID at {pos} -> ACK {lat * 1e3:.3f} ms, on the wire "
            f"{wire[pos] * 1e3:.3f} ms")


def _one_port(wire: dict[tuple[int, int], float], positions: set[int]) -> dict[int, float]:
    """The wire's intervals of the one connection that acknowledged ``positions``."""
    ports = {p for (p, pos) in [*wire, *AMBIGUOUS] if pos in positions}
    assert len(ports) == 1, ports
    port = ports.pop()
    return {pos: lat for (p, pos), lat in wire.items() if p == port}


def test_xid_to_ack_latency_equals_the_wire_on_every_surface(mariadb: Any,
                                                            tmp_path: Path) -> None:
    db = mariadb
    cap = LoopbackCapture(tmp_path / "wire.pcapng", [db.port])
    base = _semi_clients(db)
    try:
        # 1. live --json with --record: wire_time, and the recording's frames
        rec = tmp_path / "rec.pcapng"
        live = subprocess.Popen(
            [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port",
             str(db.port), "-u", db.repl_user, "--ssl-mode", "DISABLED", "--semi-sync",
             "--heartbeat", "1", "--json", "--record", str(rec)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=_env(db), stdin=subprocess.DEVNULL)
        _wait_clients(db, base + 1, live)
        _commit_some(db, "arrival_json")
        out, err = _stop(live)
        assert "Traceback" not in err, err
        (tmp_path / "live.json").write_text(out)
        _wait_gone(db, base)
        # 2. export --live
        ds = tmp_path / "ds"
        export = subprocess.Popen(
            [sys.executable, "-m", "binlogscope", "export", "--live", "--host", db.host,
             "--port", str(db.port), "-u", db.repl_user, "--ssl-mode", "DISABLED",
             "--semi-sync", "--heartbeat", "1", "--out", str(ds)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=_env(db), stdin=subprocess.DEVNULL)
        _wait_clients(db, base + 1, export)
        _commit_some(db, "arrival_export")
        _, err = _stop(export)
        assert export.returncode == 130 and "Traceback" not in err, err
        _wait_gone(db, base)
        # 3. the TUI's rows (the live source the TUI shows; its `t` delta: row minus row)
        conn = ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                 password=db.repl_password, ssl_mode="DISABLED")
        src = LiveSource(LiveSettings(conn=conn, semi_sync=True, heartbeat=1))
        done = threading.Event()
        worker = threading.Thread(target=src.run, args=(done.is_set,), daemon=True)
        worker.start()
        try:
            _wait_clients(db, base + 1)
            _commit_some(db, "arrival_tui")
            time.sleep(0.5)
        finally:
            done.set()
            src.stop()
            worker.join(10)
    finally:
        cap.stop()
    wire = wire_latencies(cap.path, db.port)

    # live --json: the ACK-requested XID's wire_time -> the ACK's
    objs = [json.loads(x) for x in out.splitlines()]
    asked = {o["log_pos"]: o["wire_time"] for o in objs if o.get("event_type") == "XID_EVENT"
             and (o.get("semi_sync") or {}).get("ack_requested")}
    shown = {o["fields"]["binlog_pos"]: o["wire_time"] - asked[o["fields"]["binlog_pos"]]
             for o in objs if o.get("kind") == "semi_sync_ack"
             and o["fields"]["binlog_pos"] in asked}
    _compare("live --json", shown, _one_port(wire, set(shown)))
    # --record: the recording's own frames, read by tshark as the wire capture was
    recorded = {pos: lat for (_, pos), lat in wire_latencies(rec, db.port).items()}
    assert set(recorded) >= set(shown), (recorded, shown)
    _compare("live --record", {p: recorded[p] for p in shown}, _one_port(wire, set(shown)))

    # export --live: the packets table's times (what analyze's ack latency reads)
    rows = pq.read_table(ds / "packets").to_pylist()
    q = {r["log_pos"]: r["time"] for r in rows if r["ack_request"] and r["direction"] == "server"}
    a = {r["log_pos"]: r["time"] for r in rows
         if r["kind"].upper() == "SEMI_SYNC_ACK" and r["direction"] == "client"}
    shown = {pos: (a[pos] - q[pos]).total_seconds() for pos in a if pos in q}
    _compare("export --live", shown, _one_port(wire, set(shown)))

    # the TUI: an ACK row's time minus its XID row's
    tui_rows = [src.row(i) for i in range(len(src))]
    xids = {r.log_pos: r.time for r in tui_rows
            if r.event_type == "XID_EVENT" and r.semi_sync == "ef ACK?"}
    shown = {}
    for r in tui_rows:  # (an ACK row says "ACK <position>")
        if r.semi_sync and r.semi_sync.startswith("ACK ") and r.time is not None:
            pos = int(r.semi_sync.split()[1])
            asked_at = xids.get(pos)
            if asked_at is not None:
                shown[pos] = r.time - asked_at
    _compare("TUI", shown, _one_port(wire, set(shown)))
