"""Proxy benchmark (issue 18): the benchmark binlog served by the benchmark MariaDB to
``mariadb-binlog --read-from-remote-server --raw --to-last-log``, directly and through
``binlogscope proxy`` (decode on). ``binlogscope sniff`` has its own: bench/sniff.py.

    python bench/proxy.py               # the full benchmark binlog (bench/make_binlog.py)
    python bench/proxy.py --scale 0.05  # quick
    python bench/proxy.py --data /path/to/bench/data --repeat 3 --modes dump,latency,semisync

Modes (direct and proxied runs alternate; medians and the spread of ``--repeat`` runs):

  dump      the raw dump's wall time direct and through the proxy (``--summary``: every packet of
            both directions decoded; and ``--json > /dev/null``), the files compared byte for
            byte, and how long the proxy then needs to finish decoding (drain after the client
            is done); ratio = direct time / proxied time of the same round (target >= 0.8)
  latency   COM_PING round trips of one pymysql connection, direct and through the proxy
            (decode on): added latency per forwarded packet = (median proxied - median direct)
            / 2 (a round trip forwards one packet each way; target < 1 ms)
  semisync  single-row autocommit INSERT commit latency with binlogscope's semi-sync replica
            (its own process) acking directly and through the proxy (target <= 1.2x)

``--relays`` (latency and semisync) picks what sits between client and server, each in its own
process, every one measured in each round beside a direct run:

  summary   ``binlogscope proxy --summary`` (decode on; the default)
  relayonly binlogscope's relay process with decoding effectively off (a one-chunk channel)
  socat     ``socat TCP-LISTEN:PORT,reuseaddr,fork TCP:upstream`` - a C relay, a reference
            point only (what any userspace hop costs on this machine)
  pyrelay   a minimal blocking Python relay (this file, ``--child-relay``: two threads a
            connection, recv_into/sendall, TCP_NODELAY, nothing else) - a reference point only

Benchmarks are not tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import signal
import socket
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

import decode  # noqa: E402
import live  # noqa: E402
import mariadb_server  # noqa: E402

MODES = ("dump", "latency", "semisync")
RELAYS = ("summary", "relayonly", "socat", "pyrelay")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
CLI = [sys.executable, "-m", "binlogscope"]


def _dump(host: str, port: int, first: str, into: Path) -> float:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    t0 = time.perf_counter()
    res = subprocess.run(
        [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
         "--raw", "--to-last-log", f"--host={host}", f"--port={port}", "--user=repl",
         "--password=replpass", f"--result-file={into}/", first],
        capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if res.returncode:
        raise RuntimeError(f"mariadb-binlog failed: {res.stderr.strip()[-300:]}")
    return secs


class Proxy:
    """``binlogscope proxy`` in its own process."""

    def __init__(self, host: str, port: int, *outputs: str, stdout: Any = subprocess.DEVNULL
                 ) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"{host}:{port}",
             *outputs], stdout=stdout, stderr=subprocess.PIPE, text=True, env=ENV)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        if not m:
            raise RuntimeError(f"proxy did not start: {line}")
        self.port = int(m.group(1))

    def stop(self) -> tuple[float, str]:
        """SIGINT; (seconds until it exited, i.e. finished decoding; its stderr)."""
        t0 = time.perf_counter()
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=3600)
        return time.perf_counter() - t0, err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[Any], what: str) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} is not listening on {port}")


class Socat:
    """``socat`` (a C relay, one forked process a connection): a reference point only."""

    def __init__(self, host: str, port: int) -> None:
        exe = shutil.which("socat")
        if exe is None:
            raise RuntimeError("socat is not installed (apt-get install -y socat)")
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [exe, f"TCP-LISTEN:{self.port},bind=127.0.0.1,reuseaddr,fork", f"TCP:{host}:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        # the probe connection makes socat fork a child that connects upstream and then ends
        _wait_listening(self.port, self.proc, "socat")

    def stop(self) -> tuple[float, str]:
        t0 = time.perf_counter()
        os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the listener and children
        self.proc.wait(30)
        return time.perf_counter() - t0, ""


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    buf = bytearray(65536)
    view = memoryview(buf)
    try:
        while True:
            n = src.recv_into(buf)
            if not n:
                break
            dst.sendall(view[:n])
    except OSError:
        pass
    for s in (dst, src):  # close both (no half-close: a reference relay only copies)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def child_relay(upstream: str) -> None:
    """The minimal Python relay (``--child-relay HOST:PORT``): prints its port, then serves."""
    host, _, port = upstream.rpartition(":")
    ls = socket.create_server(("127.0.0.1", 0))
    print(ls.getsockname()[1], flush=True)
    while True:
        c, _ = ls.accept()
        try:
            u = socket.create_connection((host, int(port)))
        except OSError:
            c.close()
            continue
        for s in (c, u):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_pipe, args=(c, u), daemon=True).start()
        threading.Thread(target=_pipe, args=(u, c), daemon=True).start()


class PyRelay:
    """The minimal blocking Python relay of this file in its own process: a reference point."""

    def __init__(self, host: str, port: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child-relay", f"{host}:{port}"],
            stdout=subprocess.PIPE, text=True, env=ENV)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def stop(self) -> tuple[float, str]:
        t0 = time.perf_counter()
        self.proc.terminate()
        self.proc.wait(30)
        return time.perf_counter() - t0, ""


class RelayOnly:
    """The relay without decoding (its process with a one-chunk channel to the decoder here:
    decoding stops at once): what forwarding alone costs."""

    def __init__(self, host: str, port: int) -> None:
        import threading

        from binlogscope.drivers.proxy.relay import ReplicationProxy

        self.proxy = ReplicationProxy(("127.0.0.1", 0), (host, port), queue_chunks=1)
        self.port = self.proxy.start()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._drain, daemon=True)
        self._t.start()

    def _drain(self) -> None:
        for _ in self.proxy.batches(stop=self._stop.is_set):
            pass

    def stop(self) -> tuple[float, str]:
        t0 = time.perf_counter()
        self._stop.set()
        self._t.join(60)
        return time.perf_counter() - t0, ""


def _relay(name: str, host: str, port: int) -> Proxy | RelayOnly | Socat | PyRelay:
    if name == "summary":
        return Proxy(host, port, "--summary")
    if name == "relayonly":
        return RelayOnly(host, port)
    if name == "socat":
        return Socat(host, port)
    if name == "pyrelay":
        return PyRelay(host, port)
    raise ValueError(f"unknown relay {name!r} (one of {', '.join(RELAYS)})")


def _spread(xs: list[float]) -> str:
    return (f"median {statistics.median(xs):.2f}, {min(xs):.2f}-{max(xs):.2f} over {len(xs)}"
            if xs else "-")


def run_dump(m: dict[str, Any], server: Any, repeat: int, tmp: Path, json_out: bool,
             profile: Path | None) -> dict[str, Any]:
    first = Path(m["files"][0]).name
    runs_s: dict[str, list[float]] = {}
    drain: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}  # direct / proxied of the same round
    notes: dict[str, str] = {}
    same = True
    variants: list[tuple[str, tuple[str, ...] | None]] = [
        ("relay only", None), ("proxy --summary", ("--summary",))]
    for i in range(repeat):
        d = _dump(server.host, server.port, first, tmp / "direct")
        runs_s.setdefault("direct", []).append(d)
        runs = variants + ([("proxy --json", ("--json",))] if json_out and i == 0 else [])
        for label, outputs in runs:
            p: Proxy | RelayOnly = (RelayOnly(server.host, server.port) if outputs is None
                                    else Proxy(server.host, server.port, *outputs))
            spy = None
            if profile is not None and i == 0 and label == "proxy --summary":
                assert isinstance(p, Proxy)
                spy = subprocess.Popen(["py-spy", "record", "--threads", "--gil",
                                        "--subprocesses", "--format", "raw", "--rate", "200",
                                        "-o", str(profile), "--pid", str(p.proc.pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
            try:
                v = _dump("127.0.0.1", p.port, first, tmp / "via")
            finally:
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(60)
                secs, err = p.stop()
            runs_s.setdefault(label, []).append(v)
            drain.setdefault(label, []).append(secs)
            ratios.setdefault(label, []).append(d / v)
            if "fell behind" in err:
                notes[label] = "the decoder fell behind (decoding stopped)"
            names = sorted(os.listdir(tmp / "direct"))
            same = same and names == sorted(os.listdir(tmp / "via")) and all(
                filecmp.cmp(tmp / "direct" / n, tmp / "via" / n, shallow=False) for n in names)
    mb = m["bytes"] / 1e6
    out: dict[str, Any] = {"seconds": runs_s, "drain_seconds": drain, "round_ratios": ratios,
                           "identical": same, "notes": notes}
    for label, xs in runs_s.items():
        med = statistics.median(xs)
        print(f"  dump {label:16s} {med:7.2f} s median ({min(xs):.2f}-{max(xs):.2f}) "
              f"{mb / med:7.1f} MB/s"
              + (f"  ratio (direct/this, per round) {_spread(ratios[label])}"
                 if label != "direct" else "")
              + (f"  decode finished {statistics.median(drain[label]):.2f} s after the client"
                 if label.startswith("proxy") else ""))
    print(f"  files byte-identical through the proxy: {same}" + (f"; {notes}" if notes else ""))
    return out


def run_latency(server: Any, n: int, relays: list[str]) -> dict[str, Any]:
    import pymysql

    def pings(port: int) -> list[float]:
        c = pymysql.connect(host=server.host if port == server.port else "127.0.0.1", port=port,
                            user="repl", password="replpass")
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            c.ping(reconnect=False)
            lat.append(time.perf_counter() - t)
        c.close()
        return lat

    ps = {name: _relay(name, server.host, server.port) for name in relays}
    lat: dict[str, list[float]] = {"direct": [], **{name: [] for name in relays}}
    try:
        for _ in range(4):  # alternating rounds
            lat["direct"] += pings(server.port)
            for name, p in ps.items():
                lat[name] += pings(p.port)
    finally:
        for p in ps.values():
            p.stop()
    md = statistics.median(lat["direct"]) * 1e6
    out: dict[str, Any] = {"direct_rtt_us": md, "pings": len(lat["direct"])}
    for name in relays:
        mv = statistics.median(lat[name]) * 1e6
        added = (mv - md) / 2
        out[name] = {"rtt_us": mv, "added_per_packet_us": added}
        print(f"  COM_PING round trip median: direct {md:.0f} us, through {name:9s} {mv:.0f} us "
              f"-> {added:.0f} us added per forwarded packet")
    return out


def run_semisync(server: Any, data: Path, n: int, rounds: int, relays: list[str]
                 ) -> dict[str, Any]:
    def replica(port: int) -> subprocess.Popen[str]:
        # (MariaDB keeps counting a semi-sync replica that left - directly or through any
        # relay - until it next writes to it: wait for one more than before, not for 1)
        before = live._semisync_clients(server)
        proc = subprocess.Popen([sys.executable, str(HERE / "live.py"), "--child",
                                 "semisync-replica", "--data", str(data), "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=ENV)
        live._wait_semisync_clients(server, before + 1)
        if live._semisync_clients(server) < before + 1:  # (the wait gives up after 30 s)
            proc.kill()
            out, err = proc.communicate(timeout=60)
            raise RuntimeError(f"the semi-sync replica did not connect (exit {proc.returncode}):"
                               f" {(out + err).strip()[-500:]}")
        time.sleep(0.5)
        return proc

    def end(proc: subprocess.Popen[str]) -> None:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)

    samples = {"direct": live._Samples(), **{name: live._Samples() for name in relays}}
    ratios: dict[str, list[float]] = {name: [] for name in relays}  # vs direct, same round
    ps = {name: _relay(name, server.host, server.port) for name in relays}
    try:
        for i in range(rounds):
            meds: dict[str, float] = {}
            order = ["direct", *relays]
            for who in order[i % len(order):] + order[:i % len(order)]:  # rotated each round
                r = replica(server.port if who == "direct" else ps[who].port)
                k = len(samples[who].lat)
                samples[who].measure(server, n)
                end(r)
                meds[who] = statistics.median(samples[who].lat[k:])
            for name in relays:
                ratios[name].append(meds[name] / meds["direct"])
    finally:
        for p in ps.values():
            p.stop()
    out: dict[str, Any] = {who: s.stats() for who, s in samples.items()}
    out["round_ratios"] = ratios
    for who in samples:
        r = out[who]
        print(f"  semisync commit, replica via {who:9s} mean {r['mean_ms']:.2f} ms  median "
              f"{r['median_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  (yes_tx +{r['yes_tx']}, "
              f"no_tx +{r['no_tx']})")
    out["median_ratio"] = {}
    for name in relays:
        out["median_ratio"][name] = out[name]["median_ms"] / out["direct"]["median_ms"]
        print(f"  semisync median ratio {name}/direct {out['median_ratio'][name]:.2f}; per "
              f"round: {_spread(ratios[name])}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float)
    ap.add_argument("--data", type=Path, default=decode.DATA)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--pings", type=int, default=500, help="per round (4 rounds each way)")
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--json-output", action="store_true",
                    help="dump: also once through `proxy --json > /dev/null`")
    ap.add_argument("--profile", type=Path,
                    help="dump: py-spy (--gil --threads --subprocesses, raw: the decoding and "
                    "the relay process) of the first proxied run here")
    ap.add_argument("--relays", default="summary",
                    help=f"latency and semisync: comma list of {', '.join(RELAYS)}")
    ap.add_argument("--child-relay", metavar="HOST:PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_relay:
        child_relay(args.child_relay)
        return 0
    relays = [x.strip() for x in args.relays.split(",") if x.strip()]
    for name in relays:
        if name not in RELAYS:
            ap.error(f"unknown relay {name!r} (one of {', '.join(RELAYS)})")
    ensure_bytecode()
    data = decode.data_dir(args.data, args.scale)
    m = decode.ensure_binlog(data, args.scale)
    print(f"binlog: {len(m['files'])} files, {m['events']:,} events, {m['bytes'] / 1e6:.1f} MB, "
          f"MariaDB {m['server_version']}")
    server_dir = data / m["server_dir"]
    server = mariadb_server.start(server_dir)
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-proxy-") as d:
            tmp = Path(d)
            for mode in [x.strip() for x in args.modes.split(",") if x.strip()]:
                if mode == "dump":
                    results[mode] = run_dump(m, server, args.repeat, tmp, args.json_output,
                                             args.profile)
                elif mode == "latency":
                    results[mode] = run_latency(server, args.pings, relays)
                elif mode == "semisync":
                    results[mode] = run_semisync(server, data, args.commits, args.rounds,
                                                 relays)
    finally:
        mariadb_server.stop(server_dir)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
