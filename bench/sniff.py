"""Sniff benchmark (issue 18): does ``binlogscope sniff -i lo`` keep up with the benchmark binlog
served at the full rate, and are its drops reported when it does not?

    python bench/sniff.py               # the full benchmark binlog (bench/make_binlog.py)
    python bench/sniff.py --scale 0.05  # quick
    python bench/sniff.py --repeat 5 --outputs summary,json --profile /tmp/sniff.spy

The benchmark MariaDB serves its binlogs to ``mariadb-binlog --read-from-remote-server --raw
--to-last-log`` over loopback (nothing throttles it: the full serving rate). Each run: the dump
alone, then the same dump while ``binlogscope sniff -i lo --port PORT --bpf 'port PORT'``
captures (the filter keeps only the benchmark server's connections: the shared machine's
loopback carries other programs' MySQL sessions, which sniff would decode too), with
``--summary --json`` (every packet decoded, the events counted per flow) or ``--json >
/dev/null`` (every packet decoded and serialized). When the dump is done, sniff gets SIGINT and
decodes what it captured before the stop; the run records how long that took, the kernel drops
(the capture ring was full), the decode-buffer drops (the queue between the capture process
and the decoder was full), the frames decoded and, with ``--summary``, the binlog events decoded
/ the events the dump served (the events in the files mariadb-binlog wrote, counted by
``binlogscope file --summary``, plus the server's artificial ROTATE per file). Medians and the
spread over ``--repeat`` runs. ``--buffer MIB`` passes a smaller decode buffer to sniff, to see
the drops reported when decoding falls behind by more than the buffer holds.

``--profile FILE``: py-spy (raw, ``--subprocesses``) of sniff during the first run.

Benchmarks are not tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
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
sys.path[:0] = [str(HERE), str(REPO / "src"), str(REPO / "tests")]

import decode  # noqa: E402
import mariadb_server  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
CLI = [sys.executable, "-m", "binlogscope"]
_LOSS = re.compile(r"([\d,]+) frames decoded from lo, (?:none lost|([\d,]+) LOST)"
                   r"(?:.*?([\d,]+) dropped by the kernel.*?([\d,]+) dropped from the decode "
                   r"buffer)?")


def _dump(port: int, first: str, into: Path) -> float:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    t0 = time.perf_counter()
    res = subprocess.run(
        [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
         "--raw", "--to-last-log", "--host=127.0.0.1", f"--port={port}", "--user=repl",
         "--password=replpass", f"--result-file={into}/", first],
        capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if res.returncode:
        raise RuntimeError(f"mariadb-binlog failed: {res.stderr.strip()[-300:]}")
    return secs


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far (0.0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _int(s: str | None) -> int:
    return int(s.replace(",", "")) if s else 0


def served_events(into: Path) -> tuple[int, int]:
    """(events in the files a dump wrote, the files): ``binlogscope file --summary`` prints a
    line per event and a ``#`` header per file."""
    names = sorted(str(p) for p in into.iterdir())
    res = subprocess.run([*CLI, "file", "--summary", *names], capture_output=True, text=True,
                         env=ENV, check=True)
    return sum(1 for line in res.stdout.splitlines() if line and not line.startswith("#")), \
        len(names)


def sniffed(m: dict[str, Any], port: int, tmp: Path, output: str,
            profile: Path | None, buffer: float | None) -> dict[str, Any]:
    first = Path(m["files"][0]).name
    args = ["--summary", "--json"] if output == "summary" else ["--json"]
    if buffer is not None:
        args += ["--buffer", str(buffer)]
    stdout: Any = subprocess.PIPE if output == "summary" else subprocess.DEVNULL
    proc = subprocess.Popen([*CLI, "sniff", "-i", "lo", "--port", str(port), "--bpf",
                             f"port {port}", *args],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(2)  # (the capture is open once the interpreter has started: no line on a pipe)
    if proc.poll() is not None:
        return {"error": proc.communicate()[1].strip()}
    spy = None
    if profile is not None:
        spy = subprocess.Popen(["py-spy", "record", "--subprocesses", "--format", "raw",
                                "--rate", "200", "-o", str(profile), "--pid", str(proc.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    capture = _children(proc.pid)
    before = _cpu(proc.pid), sum(_cpu(c) for c in capture)
    watched = _dump(port, first, tmp / "sniffed")
    # (during the dump: the decoder's CPU and the capture process's, which must keep up)
    cpu = _cpu(proc.pid) - before[0], sum(_cpu(c) for c in capture) - before[1]
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=3600)
    finish = time.perf_counter() - t0
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    res: dict[str, Any] = {"output": output, "dump_sniffed_s": watched,
                           "decode_done_after_dump_s": finish, "exit": proc.returncode,
                           "decoder_cpu_during_dump_s": cpu[0],
                           "capture_cpu_during_dump_s": cpu[1]}
    lm = _LOSS.search(err)
    if lm is None:
        res["error"] = err.strip()[-500:]
        return res
    res.update(frames_decoded=_int(lm.group(1)), frames_lost=_int(lm.group(2)),
               kernel_drops=_int(lm.group(3)), buffer_drops=_int(lm.group(4)))
    if output == "summary":
        objs = [json.loads(line) for line in out.splitlines() if line.strip()]
        flows = [o for o in objs if "flow" in o]
        capture = next((o["capture"] for o in objs if "capture" in o), {})
        res["events_decoded"] = sum(sum(f["events"].values()) for f in flows)
        res["events_in_binlog"] = m["events"]
        res["tcp_gaps"] = capture.get("tcp_gaps")
        res["tcp_lost_bytes"] = capture.get("tcp_lost_bytes")
        res["resync_skipped_bytes"] = capture.get("resync_skipped_bytes")
        res["buffer_peak_mib"] = capture.get("buffer_peak_bytes", 0) / (1 << 20)
        res["decode_errors"] = sum(f["errors"] for f in flows)
    return res


def _spread(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"median {statistics.median(xs):,.3g} (min {min(xs):,.3g}, max {max(xs):,.3g})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float)
    ap.add_argument("--data", type=Path, default=decode.DATA)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--outputs", default="summary,json", help="summary, json or both")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--profile", type=Path, help="py-spy of sniff during the first run")
    ap.add_argument("--buffer", type=float, help="sniff --buffer MIB (its decode buffer)")
    args = ap.parse_args(argv)
    ensure_bytecode()
    data = decode.data_dir(args.data, args.scale)
    m = decode.ensure_binlog(data, args.scale)
    print(f"binlog: {len(m['files'])} files, {m['events']:,} events, {m['bytes'] / 1e6:.1f} MB, "
          f"MariaDB {m['server_version']}; load average {os.getloadavg()[0]:.1f}")
    server_dir = data / m["server_dir"]
    server = mariadb_server.start(server_dir)
    outputs = [o.strip() for o in args.outputs.split(",") if o.strip()]
    runs: list[dict[str, Any]] = []
    alone: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-sniff-") as d:
            tmp = Path(d)
            first = Path(m["files"][0]).name
            for i in range(args.repeat):
                alone.append(_dump(server.port, first, tmp / "alone"))
                print(f"  run {i + 1}: dump alone {alone[-1]:.2f} s "
                      f"({m['bytes'] / 1e6 / alone[-1]:.0f} MB/s)", flush=True)
                if i == 0:
                    served, files = served_events(tmp / "alone")
                    print(f"  the dump serves {served:,} events of {files} files (+1 artificial "
                          "ROTATE a file: the events a sniffer decodes)", flush=True)
                    served += files
                for output in outputs:
                    r = sniffed(m, server.port, tmp, output,
                                args.profile if i == 0 and output == outputs[0] else None,
                                args.buffer)
                    r["load"] = os.getloadavg()[0]
                    if "events_decoded" in r:
                        r["events_served"] = served
                        r["ratio"] = r["events_decoded"] / served
                    runs.append(r)
                    print(f"    sniff --{output}: " + ", ".join(
                        f"{k} {v:,.3g}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in r.items() if k != "output"), flush=True)
    finally:
        mariadb_server.stop(server_dir)
    print(f"dump alone: {_spread(alone)} s")
    for output in outputs:
        rs = [r for r in runs if r["output"] == output and "error" not in r]
        print(f"sniff --{output} ({len(rs)} runs):")
        for key in ("dump_sniffed_s", "decode_done_after_dump_s", "decoder_cpu_during_dump_s",
                    "capture_cpu_during_dump_s", "kernel_drops",
                    "buffer_drops", "frames_decoded", "ratio", "buffer_peak_mib"):
            xs = [float(r[key]) for r in rs if r.get(key) is not None]
            if xs:
                print(f"  {key:26s} {_spread(xs)}")
    if args.json:
        args.json.write_text(json.dumps({"alone_s": alone, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
