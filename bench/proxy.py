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
import statistics
import subprocess
import sys
import tempfile
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


class RelayOnly:
    """The relay without decoding (its process with a one-chunk channel to the decoder here:
    decoding stops at once): what forwarding alone costs."""

    def __init__(self, host: str, port: int) -> None:
        import threading

        from binlogscope.drivers.proxy import ReplicationProxy

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


def run_latency(server: Any, n: int) -> dict[str, Any]:
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

    p = Proxy(server.host, server.port, "--summary")
    try:
        direct, via = [], []
        for _ in range(4):  # alternating rounds
            direct += pings(server.port)
            via += pings(p.port)
    finally:
        p.stop()
    md, mv = statistics.median(direct) * 1e6, statistics.median(via) * 1e6
    added = (mv - md) / 2
    print(f"  COM_PING round trip median: direct {md:.0f} us, through the proxy {mv:.0f} us "
          f"-> {added:.0f} us added per forwarded packet")
    return {"direct_rtt_us": md, "proxy_rtt_us": mv, "added_per_packet_us": added,
            "pings": len(direct)}


def run_semisync(server: Any, data: Path, n: int, rounds: int) -> dict[str, Any]:
    def replica(port: int) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, str(HERE / "live.py"), "--child",
                                 "semisync-replica", "--data", str(data), "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=ENV)
        live._wait_semisync_clients(server, 1)
        time.sleep(0.5)
        return proc

    def end(proc: subprocess.Popen[str]) -> None:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        live._wait_semisync_clients(server, 0, exactly=True)

    direct, via = live._Samples(), live._Samples()
    ratios: list[float] = []  # median proxied / median direct of the same round
    p = Proxy(server.host, server.port, "--summary")
    try:
        for _ in range(rounds):
            r = replica(server.port)
            k = len(direct.lat)
            direct.measure(server, n)
            end(r)
            d = statistics.median(direct.lat[k:])
            r = replica(p.port)
            k = len(via.lat)
            via.measure(server, n)
            end(r)
            ratios.append(statistics.median(via.lat[k:]) / d)
    finally:
        p.stop()
    out: dict[str, Any] = {"direct": direct.stats(), "proxy": via.stats(),
                           "round_ratios": ratios}
    for who in ("direct", "proxy"):
        r = out[who]
        print(f"  semisync commit, replica {who:7s} mean {r['mean_ms']:.2f} ms  median "
              f"{r['median_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  (yes_tx +{r['yes_tx']}, "
              f"no_tx +{r['no_tx']})")
    out["median_ratio"] = out["proxy"]["median_ms"] / out["direct"]["median_ms"]
    print(f"  semisync median ratio proxy/direct {out['median_ratio']:.2f}; per round: "
          f"{_spread(ratios)}")
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
    args = ap.parse_args(argv)
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
                    results[mode] = run_latency(server, args.pings)
                elif mode == "semisync":
                    results[mode] = run_semisync(server, data, args.commits, args.rounds)
    finally:
        mariadb_server.stop(server_dir)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
