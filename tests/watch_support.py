"""What the tests of ``sniff`` and ``proxy`` share: the CLI run with this tree's code, the binlog
events of a ``--json`` output, and the events the server's own files hold."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
CLI = [sys.executable, "-m", "binlogscope"]
#: the small real MariaDB binlog of captures/ the mock-master tests replay
WORKLOAD = ROOT / "captures" / "mariadb-10.11-workload.000001"


@contextlib.contextmanager
def acking_master() -> Iterator[Any]:
    """A mock master (``ThreadedMockMaster``) replaying :data:`WORKLOAD`, every transaction
    asking for a semi-sync ACK."""
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster

    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([WORKLOAD])],
                                     ack_every_transaction=True)).start()
    try:
        yield mm
    finally:
        mm.stop()


def binlog_events(lines: list[str]) -> list[tuple[str, int, int, str]]:
    """(binlog_file, offset, log_pos, event_type) of every binlog event in JSON lines."""
    out = []
    for line in lines:
        o = json.loads(line)
        if o.get("kind") == "binlog_event" and o.get("offset") is not None:
            out.append((o["binlog_file"], o["offset"], o["log_pos"], o["event_type"]))
    return out


def server_events(binlog_dir: Path, names: list[str]) -> dict[tuple[str, int], tuple[int, str]]:
    """(file, offset) -> (log_pos, event_type) of the server's binlog files, by ``file --json``."""
    expected: dict[tuple[str, int], tuple[int, str]] = {}
    for name in names:
        res = subprocess.run([*CLI, "file", "--json", str(binlog_dir / name)],
                             capture_output=True, text=True, env=ENV, timeout=60)
        for line in res.stdout.splitlines():
            o = json.loads(line)
            expected[(name, o["offset"])] = (o["log_pos"], o["event_type"])
    return expected


def master_status(server: Any) -> tuple[str, int]:
    """The server's current binlog file and position (SHOW MASTER STATUS)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        name, pos = cur.fetchone()[:2]
    return str(name), int(pos)


def remote_dump_command(server: Any, port: int, name: str, pos: int = 4, *,
                        replica: bool = False) -> list[str]:
    """``mariadb-binlog --read-from-remote-server`` from ``name:pos`` on ``port`` (the server's
    or a proxy's) as the replication account, output dropped: to the end of the last binlog, or
    with ``replica`` blocking for new events as a replica does (``--stop-never``)."""
    exe = shutil.which("mariadb-binlog") or "mariadb-binlog"
    return [exe, "--read-from-remote-server", f"--host={server.host}", f"--port={port}",
            f"--user={server.repl_user}", f"--password={server.repl_password}",
            f"--start-position={pos}", "--stop-never" if replica else "--to-last-log",
            "--result-file=/dev/null", name]


#: the fields of a binlog event that ``file --json`` and a capture's/proxy's ``--json`` share
EVENT_FIELDS = ("binlog_file", "offset", "log_pos", "gtid", "event_type", "type_code",
                "timestamp", "server_id", "event_size", "flags", "checksum_ok", "schema",
                "table", "rows", "query")


def event_objects(lines: list[str]) -> list[dict[str, Any]]:
    """The :data:`EVENT_FIELDS` of every binlog event (with a file offset) in JSON lines."""
    out = []
    for line in lines:
        o = json.loads(line)
        if o.get("kind") == "binlog_event" and o.get("offset") is not None:
            out.append({k: o.get(k) for k in EVENT_FIELDS})
    return out


def server_event_objects(binlog_dir: Path, names: list[str]) -> list[dict[str, Any]]:
    """The :data:`EVENT_FIELDS` of every event of the server's binlog files (``file --json``)."""
    out = []
    for name in names:
        res = subprocess.run([*CLI, "file", "--json", str(binlog_dir / name)],
                             capture_output=True, text=True, env=ENV, timeout=60)
        out += [{k: json.loads(line).get(k) for k in EVENT_FIELDS}
                for line in res.stdout.splitlines()]
    return out


def start_proxy(upstream: tuple[str, int], *args: str, stdout: Any = subprocess.PIPE
                ) -> tuple[subprocess.Popen[str], int]:
    """``binlogscope proxy --listen 127.0.0.1:0 --upstream HOST:PORT ARGS`` and its port."""
    import re

    proc = subprocess.Popen([*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream",
                             f"{upstream[0]}:{upstream[1]}", *args],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", first)
    if not m:
        proc.kill()
        raise AssertionError(f"the proxy did not start: {first}{proc.communicate()[1]}")
    return proc, int(m.group(1))


class LoopbackCapture:
    """``dumpcap -i lo`` (Wireshark's capture program) on some TCP ports, into a pcapng file;
    :meth:`streams` reads every TCP connection's bytes back with ``tshark``."""

    def __init__(self, path: Path, ports: list[int]) -> None:
        self.path = path
        exe = shutil.which("dumpcap")
        assert exe, "dumpcap (Wireshark) is installed on every CI machine"
        bpf = " or ".join(f"tcp port {p}" for p in ports)
        self.proc = subprocess.Popen([exe, "-i", "lo", "-f", bpf, "-w", str(path), "-q"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # "Capturing on 'Loopback: lo'": the filter is on
        assert "Capturing on" in line, line + self.proc.stderr.read()

    def stop(self) -> None:
        import signal
        import time

        time.sleep(0.3)  # (the last frames reach the capture)
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=30)

    def streams(self) -> list[tuple[int, int, bytes, bytes]]:
        """(client port, server port, client->server bytes, server->client bytes) of every TCP
        connection in the capture (tshark's follow,tcp,raw), in the order they started."""
        tshark = shutil.which("tshark") or "tshark"
        conv = subprocess.run([tshark, "-r", str(self.path), "-T", "fields", "-e",
                               "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport", "-Y",
                               "tcp.flags.syn == 1 && tcp.flags.ack == 0"],
                              capture_output=True, text=True, timeout=120, check=True)
        out = []
        for line in conv.stdout.splitlines():
            stream, client, server = (int(x) for x in line.split())
            res = subprocess.run([tshark, "-r", str(self.path), "-q", "-z",
                                  f"follow,tcp,raw,{stream}"],
                                 capture_output=True, text=True, timeout=120, check=True)
            sides = [bytearray(), bytearray()]
            body = res.stdout.split("=" * 67)[1] if "=" * 67 in res.stdout else ""
            for row in body.splitlines():
                if not row.strip() or ":" in row:
                    continue  # the header lines (Follow:, Filter:, Node 0:, Node 1:)
                sides[1 if row.startswith("\t") else 0] += bytes.fromhex(row.strip())
            out.append((client, server, bytes(sides[0]), bytes(sides[1])))
        return out


def start_sniff(*args: str) -> subprocess.Popen[str]:
    """``binlogscope sniff -i lo ARGS``, returned once its capture is open (its first line)."""
    proc = subprocess.Popen([*CLI, "sniff", "-i", "lo", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    if "capturing on lo" not in first:
        proc.kill()
        raise AssertionError(f"sniff did not start: {first}{proc.communicate()[1]}")
    return proc


def run_sql(db: Any, *stmts: str) -> list[Any]:
    """Run ``stmts`` on one connection to the test server's database; the last one's rows."""
    c = db.connect()
    try:
        with c.cursor() as cur:
            rows: list[Any] = []
            for s in stmts:
                cur.execute(s)
                rows = list(cur.fetchall() or [])
            return rows
    finally:
        c.close()


def dump_threads(db: Any) -> list[int]:
    """The server's binlog dump threads (their PROCESSLIST ids)."""
    c = db.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE "
                        "'Binlog Dump%'")
            return [int(r[0]) for r in cur.fetchall()]
    finally:
        c.close()


def stream_killing_the_dump(db: Any, rep: Any, rows: Callable[[Any], int],
                            total: int = 10_000) -> list[Any]:
    """The delivered items of a started LiveReplica ``rep`` (acknowledged one by one, slowly),
    the server's dump thread KILLed once ``rows`` (of one delivered item: how many of the
    transaction's rows it holds) has counted more than 1,500; until ``total`` rows came, then
    half a second more (anything repeated would arrive then). The replica has reconnected."""
    got: list[Any] = []
    killed = False
    seen = 0
    try:
        for cur_, item in rep.items():
            if item.deliver:
                got.append(item)
                seen += rows(item)
            rep.ack(cur_, item)
            if not killed and seen > 1500:
                killed = True
                threads = dump_threads(db)
                assert threads, "the dump thread should still be streaming"
                run_sql(db, *[f"KILL {tid}" for tid in threads])
            if seen >= total:
                time.sleep(0.5)  # anything duplicated would arrive now
                break
            time.sleep(0.002)
    finally:
        rep.stop()
        rep.join(5)
    assert killed and rep.reconnects >= 1, rep.error
    return got


def global_status_int(db: Any, name: str) -> int:
    """One integer of SHOW GLOBAL STATUS (0 when the server has no such variable)."""
    rows = run_sql(db, f"SHOW GLOBAL STATUS LIKE '{name}'")
    return int(rows[0][1]) if rows else 0


def live_replica(db: Any, port: int, *, user: str | None = None, password: str | None = None,
                 ssl_mode: str = "DISABLED", **kw: Any) -> Any:
    """binlogscope's own replica (``LiveReplica``) of ``db`` as the replication account (or
    ``user``), on ``port`` (the server's or a proxy's); ``kw``: LiveSettings (semi_sync,
    heartbeat, ...)."""
    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveReplica, LiveSettings

    return LiveReplica(LiveSettings(conn=ConnectionOptions(
        host=db.host, port=port, user=user or db.repl_user,
        password=password or db.repl_password, ssl_mode=ssl_mode), **kw))


def semi_sync_commits(db: Any, port: int, table: str, commits: int, **replica: Any
                      ) -> list[float]:
    """``commits`` rows committed on ``db`` (into ``table``, one BIGINT key) while binlogscope's
    semi-sync replica reads through ``port`` (``replica``: :func:`live_replica`'s keywords); the
    server counted an ACK for each. The commits' waits (s)."""
    run_sql(db, f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT PRIMARY KEY)")
    clients = global_status_int(db, "Rpl_semi_sync_master_clients")
    waits: list[float] = []
    with consuming(live_replica(db, port, semi_sync=True, heartbeat=1, **replica), []):
        # (MariaDB counts a semi-sync replica that left until it next writes to it: the count
        # may stay up, so this waits for a rise or 20 s)
        deadline = time.time() + 20
        while global_status_int(db, "Rpl_semi_sync_master_clients") <= clients and \
                time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        yes = global_status_int(db, "Rpl_semi_sync_master_yes_tx")
        for _ in range(commits):
            t0 = time.monotonic()
            run_sql(db, f"INSERT INTO {table} VALUES ({time.time_ns()})")
            waits.append(time.monotonic() - t0)
        assert global_status_int(db, "Rpl_semi_sync_master_yes_tx") - yes == commits
    return waits


def ack_legs(out: str, commits: int, waits: list[float]
             ) -> tuple[dict[str, float], dict[str, float]]:
    """From ``proxy --summary --json``'s output: the dump's ACK latency on the replica's leg
    and the server's, checked against each other and the commits' ``waits``."""
    flows = [json.loads(line) for line in out.splitlines()]
    (dump,) = [f for f in flows if f.get("dump")]
    assert dump["semi_sync_acks"] >= commits
    legs = dump["ack_latency_legs"]
    assert legs is not None and set(legs) == {"client", "server"}, dump
    replica, server = legs["client"], legs["server"]
    assert 0 < replica["min_ms"] <= replica["median_ms"] <= replica["p99_ms"]
    # the server's leg holds the replica's (and the relay's two crossings)
    assert server["min_ms"] >= replica["min_ms"] and server["median_ms"] >= replica["median_ms"]
    # ... and no more than a commit waited for it, at its median
    assert server["median_ms"] <= sorted(waits)[len(waits) // 2] * 1000
    # the single figure (as a capture's) is still there
    assert dump["ack_latency"]["median_ms"] > 0
    return replica, server


@contextlib.contextmanager
def consuming(rep: Any, seen: list[tuple[float, str]]) -> Iterator[None]:
    """Run ``rep`` (acking what asks for it) while the block runs; ``seen`` gets (monotonic
    time, event type) of every binlog event it reads."""
    from binlogscope.session.events import PacketDecoded

    rep.start()

    def consume() -> None:
        for cur, item in rep.items():
            ev = item.event
            if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
                seen.append((time.monotonic(), ev.binlog_event.type_name))
            rep.ack(cur, item)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    try:
        yield
    finally:
        rep.stop()
        rep.join(5)


class RefusedKill:
    """A control connection (stands in for ``drivers.live.replica.InformationSchema``) whose KILL
    the source refuses: a source without KILL, or an account without the privilege to end the
    thread."""

    def __init__(self, *_a: object) -> None:
        return None

    def __call__(self, sql: str) -> list[list[bytes | None]]:
        from binlogscope.drivers.live.items import LiveError

        raise LiveError("ERR 1095 You are not owner of thread 7", 1095)

    def close(self) -> None:
        return None
