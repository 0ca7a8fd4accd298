"""Live benchmark: binlogscope as a replica against python-mysql-replication and mariadb-binlog,
streaming the same benchmark binlog from the same MariaDB, plus semi-sync commit latency.

    python bench/live.py               # the full benchmark binlog (bench/make_binlog.py)
    python bench/live.py --scale 0.05  # quick
    python bench/live.py --modes live,mariadb-binlog-remote,semisync

Modes (each in its own child process against the restarted benchmark server):

  live                    binlogscope's replica (every row decoded, no tree), non-blocking dump
                          from the first file
  pymysqlrepl             python-mysql-replication BinLogStreamReader, every row's values
  mariadb-binlog-remote   mariadb-binlog --read-from-remote-server --base64-output=DECODE-ROWS
                          --verbose FILES > /dev/null
  semisync                commit latency of single-row autocommit INSERTs with semi-sync on the
                          server and (a) binlogscope's LiveReplica (semi_sync, no tree, a
                          consumer acking every item) in its own process, (b) a real MariaDB
                          replica with rpl_semi_sync_slave_enabled, as the ACKing replica;
                          --semisync-inprocess adds (a) run inside the benchmark process

Targets (issue 3): live >= 20x pymysqlrepl's events/s and no slower than mariadb-binlog-remote;
added commit latency with binlogscope no worse than with a real replica.
Benchmarks are not tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "src"), str(REPO / "tests"), str(REPO / "tests" / "mysql")]

import decode  # noqa: E402  (bench/decode.py: binlog generation and the pymysqlrepl runner)
import mariadb_server  # noqa: E402

MODES = ("live", "pymysqlrepl", "mariadb-binlog-remote", "semisync")


def run_live(m: dict[str, Any], host: str, port: int) -> dict[str, Any]:
    from binlogscope.drivers.items import SourceItem
    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveSettings
    from binlogscope.drivers.live.replica import run_live as live
    from binlogscope.session.events import PacketDecoded

    counts = {"events": 0, "rows": 0, "values": 0, "errors": 0}
    last = Path(m["files"][-1]).name

    def consume(item: SourceItem) -> None:
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            b = ev.binlog_event
            if b.header is None or b.header.log_pos == 0:
                return
            counts["events"] += 1
            if b.error:
                counts["errors"] += 1
            rows = getattr(b.body, "rows", None)
            if rows:
                for r in rows:
                    counts["rows"] += 1
                    for image in (r["before"], r["after"]):
                        if image:
                            counts["values"] += len(image)

    conn = ConnectionOptions(host=host, port=port, user="repl", password="replpass",
                             ssl_mode="DISABLED")
    settings = LiveSettings(conn=conn, start=f"{Path(m['files'][0]).name}:4", non_blocking=True,
                            stream_tree=False, reconnect=False)
    rep = live(settings, consume)
    out: dict[str, Any] = dict(counts)
    if rep.error:
        out["error"] = rep.error
    out["last_file"] = last
    return out


def run_remote_mariadb_binlog(m: dict[str, Any], host: str, port: int) -> dict[str, Any]:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        return {"error": "mariadb-binlog not found"}
    env = dict(os.environ, MYSQL_PWD="replpass")
    with open("/dev/null", "wb") as devnull:
        proc = subprocess.run(
            [exe, "--no-defaults", "--read-from-remote-server", f"--host={host}",
             f"--port={port}", "--user=repl", "--base64-output=DECODE-ROWS", "--verbose",
             *[Path(f).name for f in m["files"]]], stdout=devnull, stderr=subprocess.PIPE,
            env=env)
    out: dict[str, Any] = {"events": None, "rc": proc.returncode}
    if proc.returncode:
        out["error"] = proc.stderr.decode(errors="replace").strip()[-300:]
    return out


def _commit_latencies(server: mariadb_server.MariaDB, n: int) -> list[float]:
    c = server.connect()
    lat = []
    with c.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS bench_semisync (id BIGINT PRIMARY KEY, v INT)")
        base = time.time_ns()
        for i in range(n):
            t = time.perf_counter()
            cur.execute("INSERT INTO bench_semisync VALUES (%s, %s)", (base + i, i))
            lat.append(time.perf_counter() - t)
    c.close()
    return lat


def _semisync_status(server: mariadb_server.MariaDB) -> dict[str, int]:
    c = server.connect()
    with c.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%_tx'")
        out = {k: int(v) for k, v in cur.fetchall()}
    c.close()
    return out


def _semisync_replica(host: str, port: int) -> None:
    """Child: binlogscope as the semi-sync replica (fetcher thread + a consumer that acks each
    item), in its own process like the real replica, until SIGTERM."""
    import signal

    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveReplica, LiveSettings

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    conn = ConnectionOptions(host=host, port=port, user="repl", password="replpass",
                             ssl_mode="DISABLED")
    rep = LiveReplica(LiveSettings(conn=conn, semi_sync=True, stream_tree=False))
    rep.start()
    try:
        for cur_, item in rep.items():
            rep.ack(cur_, item)
    except KeyboardInterrupt:
        pass
    finally:
        rep.stop()
        rep.join(5)
    delays = sorted(d * 1e6 for d in getattr(rep, "ack_delays", ()))  # older drivers: none
    print(json.dumps({"acks_sent": rep.acks_sent, "error": rep.error, "ack_delays_us": delays}),
          flush=True)


def _semisync_clients(server: mariadb_server.MariaDB) -> int:
    c = server.connect()
    with c.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_clients'")
        row = cur.fetchone()
    c.close()
    return int(row[1]) if row else 0


def _wait_semisync_clients(server: mariadb_server.MariaDB, want: int, *, exactly: bool = False,
                           timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        n = _semisync_clients(server)
        if n == want or (not exactly and n >= want):
            return
        time.sleep(0.1)


class _Samples:
    """Commit latencies and semi-sync counter deltas of one ACKing replica, over rounds."""

    def __init__(self) -> None:
        self.lat: list[float] = []
        self.round_means: list[float] = []
        self.yes_tx = self.no_tx = 0
        self.extra: dict[str, Any] = {}

    def measure(self, server: mariadb_server.MariaDB, n: int) -> None:
        before = _semisync_status(server)
        lat = _commit_latencies(server, n)
        after = _semisync_status(server)
        self.lat += lat
        self.round_means.append(statistics.fmean(lat) * 1000)
        for key in ("yes", "no"):
            name = f"Rpl_semi_sync_master_{key}_tx"
            setattr(self, f"{key}_tx", getattr(self, f"{key}_tx")
                    + after.get(name, 0) - before.get(name, 0))

    def stats(self) -> dict[str, Any]:
        out = _lat_stats(self.lat, {}, {})
        out.update(yes_tx=self.yes_tx, no_tx=self.no_tx,
                   round_means_ms=[round(x, 3) for x in self.round_means], **self.extra)
        return out


def run_semisync(server: mariadb_server.MariaDB, n: int = 300, in_process: bool = False,
                 rounds: int = 3) -> dict[str, Any]:
    """Commit latency with each ACKing replica, in alternating rounds (binlogscope, the real
    replica, binlogscope, ...) so that the shared machine's load drifts over both alike."""
    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveReplica, LiveSettings

    out: dict[str, Any] = {}
    c = server.connect()
    with c.cursor() as cur:
        cur.execute("SET GLOBAL rpl_semi_sync_master_enabled = ON")
        cur.execute("SET GLOBAL rpl_semi_sync_master_timeout = 10000")
    c.close()
    ours, theirs = _Samples(), _Samples()
    acks = 0
    delays: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-replica-") as d:
        replica = mariadb_server.start(Path(d))
        try:
            rc = replica.connect()
            with rc.cursor() as cur:
                cur.execute("SET GLOBAL rpl_semi_sync_slave_enabled = ON")
                cur.execute("SET GLOBAL server_id = 7777")
                cur.execute(f"CHANGE MASTER TO MASTER_HOST='{server.host}', "
                            f"MASTER_PORT={server.port}, MASTER_USER='repl', "
                            "MASTER_PASSWORD='replpass', MASTER_USE_GTID=current_pos")
            for _ in range(rounds):
                # (a) binlogscope in its own process (as the real replica is)
                proc = subprocess.Popen([sys.executable, __file__, "--child",
                                         "semisync-replica", "--host", server.host,
                                         "--port", str(server.port)],
                                        stdout=subprocess.PIPE, text=True)
                try:
                    _wait_semisync_clients(server, 1)
                    time.sleep(1)
                    ours.measure(server, n)
                finally:
                    proc.terminate()
                    child_out = proc.communicate(timeout=20)[0]
                lines = child_out.strip().splitlines()
                if lines:
                    res = json.loads(lines[-1])
                    acks += int(res.get("acks_sent") or 0)
                    delays += res.get("ack_delays_us") or []
                    if res.get("error"):
                        ours.extra["error"] = res["error"]
                _wait_semisync_clients(server, 0, exactly=True)
                # (b) the real MariaDB replica (its IO thread ACKs after the relay log write;
                # the first round it first catches up with the whole benchmark binlog)
                with rc.cursor() as cur:
                    cur.execute("START SLAVE")
                _wait_semisync_clients(server, 1)
                time.sleep(3)
                theirs.measure(server, n)
                with rc.cursor() as cur:
                    cur.execute("STOP SLAVE")
                _wait_semisync_clients(server, 0, exactly=True)
            rc.close()
        finally:
            mariadb_server.stop(Path(d))
    ours.extra["acks_sent"] = acks
    if delays:
        delays.sort()
        ours.extra["ack_delay_us"] = {
            "mean": round(statistics.fmean(delays), 1),
            "median": round(statistics.median(delays), 1),
            "p99": round(delays[int(len(delays) * 0.99) - 1], 1)}
    out["binlogscope"] = ours.stats()
    if in_process:
        # (a') the same replica threads inside the benchmark process: the committing client
        # then shares the GIL with the replica's fetcher and consumer
        conn = ConnectionOptions(host=server.host, port=server.port, user="repl",
                                 password="replpass", ssl_mode="DISABLED")
        rep = LiveReplica(LiveSettings(conn=conn, semi_sync=True, stream_tree=False))
        rep.start()

        def drain() -> None:
            for cur_, item in rep.items():
                rep.ack(cur_, item)

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        _wait_semisync_clients(server, 1)
        time.sleep(1)
        inproc = _Samples()
        inproc.measure(server, n)
        rep.stop()
        rep.join(5)
        out["binlogscope_inproc"] = inproc.stats()
    out["mariadb_replica"] = theirs.stats()
    return out


def _lat_stats(lat: list[float], before: dict[str, int], after: dict[str, int]
               ) -> dict[str, Any]:
    lat_ms = sorted(x * 1000 for x in lat)
    return {
        "commits": len(lat), "mean_ms": statistics.fmean(lat_ms),
        "median_ms": statistics.median(lat_ms), "p99_ms": lat_ms[int(len(lat_ms) * 0.99) - 1],
        "yes_tx": after.get("Rpl_semi_sync_master_yes_tx", 0)
        - before.get("Rpl_semi_sync_master_yes_tx", 0),
        "no_tx": after.get("Rpl_semi_sync_master_no_tx", 0)
        - before.get("Rpl_semi_sync_master_no_tx", 0),
    }


def child(mode: str, data: Path, host: str, port: int) -> None:
    if mode == "semisync-replica":
        _semisync_replica(host, port)
        return
    m = decode._load(data)
    t0 = time.perf_counter()
    if mode == "live":
        res = run_live(m, host, port)
    elif mode == "pymysqlrepl":
        res = decode.run_pymysqlrepl(m, host, port)
    else:
        res = run_remote_mariadb_binlog(m, host, port)
    res["seconds"] = time.perf_counter() - t0
    print(json.dumps(res))


def _spawn(mode: str, data: Path, host: str, port: int) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", mode, "--data", str(data),
                           "--host", host, "--port", str(port)], capture_output=True, text=True)
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {proc.returncode}"}
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float)
    ap.add_argument("--data", type=Path, default=decode.DATA)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--commits", type=int, default=300, help="semi-sync latency sample size")
    ap.add_argument("--rounds", type=int, default=3,
                    help="semi-sync: alternating rounds per replica (each --commits commits)")
    ap.add_argument("--semisync-inprocess", action="store_true",
                    help="also measure binlogscope's replica inside the benchmark process (the "
                    "committing client then shares its GIL)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--host", default="", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    ensure_bytecode()  # as an installed copy has it (see bench/bytecode.py)
    data = decode.data_dir(args.data, args.scale)
    if args.child:
        child(args.child, data, args.host, args.port)
        return 0
    m = decode.ensure_binlog(data, args.scale)
    mb = m["bytes"] / 1e6
    print(f"binlog: {len(m['files'])} files, {m['events']:,} events, {m['row_changes']:,} row "
          f"changes, {mb:.1f} MB, MariaDB {m['server_version']}")
    server_dir = data / m["server_dir"]
    server = mariadb_server.start(server_dir)
    results: dict[str, dict[str, Any]] = {}
    try:
        for mode in [x.strip() for x in args.modes.split(",") if x.strip()]:
            if mode == "semisync":
                results[mode] = run_semisync(server, args.commits, args.semisync_inprocess,
                                             args.rounds)
                for who, r in results[mode].items():
                    print(f"  semisync/{who:16s} mean {r['mean_ms']:.2f} ms  median "
                          f"{r['median_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  "
                          f"(yes_tx +{r['yes_tx']}, no_tx +{r['no_tx']})"
                          + (f"  ACKs sent {r['acks_sent']}" if "acks_sent" in r else "")
                          + (f"  round means {r['round_means_ms']}" if "round_means_ms" in r
                             else "")
                          + (f"\n    read -> ACK written in the replica: {r['ack_delay_us']} us"
                             if "ack_delay_us" in r else "")
                          + (f"  ERROR {r['error']}" if r.get("error") else ""))
                continue
            r = results[mode] = _spawn(mode, data, server.host, server.port)
            if "seconds" not in r or r.get("error"):
                print(f"  {mode:22s} FAILED: {r.get('error')}")
                continue
            ev = r.get("events") or m["events"]
            print(f"  {mode:22s} {r['seconds']:8.2f} s  {ev / r['seconds']:12,.0f} events/s  "
                  f"{mb / r['seconds']:7.1f} MB/s")
    finally:
        mariadb_server.stop(server_dir)

    def rate(mode: str) -> float | None:
        r = results.get(mode, {})
        if "seconds" not in r or r.get("error"):
            return None
        return float(r.get("events") or m["events"]) / float(r["seconds"])

    live_rate, py_rate = rate("live"), rate("pymysqlrepl")
    remote = results.get("mariadb-binlog-remote", {})
    print("ratios:")
    if live_rate and py_rate:
        print(f"  live / pymysqlrepl events/s       {live_rate / py_rate:8.1f}x  (target >= 20x)")
    if live_rate and "seconds" in remote and not remote.get("error"):
        t_live = m["events"] / live_rate
        print(f"  mariadb-binlog-remote / live time {remote['seconds'] / t_live:8.2f}x  "
              "(target >= 1.0: live no slower)")
    ss = results.get("semisync", {})
    if "binlogscope" in ss and "mariadb_replica" in ss:
        print(f"  commit latency binlogscope / replica (mean) "
              f"{ss['binlogscope']['mean_ms'] / ss['mariadb_replica']['mean_ms']:6.2f}x  "
              "(target <= 1.0)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
