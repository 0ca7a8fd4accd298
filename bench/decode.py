"""Decode benchmark: binlogscope against python-mysql-replication and mariadb-binlog.

    python bench/decode.py              # the full binlog (made by make_binlog.py if missing)
    python bench/decode.py --scale 0.05 # quick: a 5 % binlog (regenerated when the scale differs)
    python bench/decode.py --modes fast,walk

Every measurement runs in its own child process (so peak RSS is per mode) over the same files:

  walk          bare Python header walk: read, unpack event_size, skip (the floor)
  fast          binlogscope, record=False: every event and every row value decoded, CRC32
                verified, no Node tree
  tree          binlogscope, record=True: the full annotated Node tree of every event
  pymysqlrepl   python-mysql-replication streaming the same events from the same MariaDB
                (BinLogStreamReader, blocking=True: see run_pymysqlrepl), every row's
                values resolved
  mariadb-binlog  mariadb-binlog --base64-output=DECODE-ROWS --verbose FILES > /dev/null

Benchmarks are not tests: nothing here asserts, the targets are in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests"), str(REPO / "tests" / "mysql")]

DATA = HERE / "data"
CHUNK = 1 << 20
MODES = ("walk", "fast", "tree", "pymysqlrepl", "mariadb-binlog")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load(data: Path) -> dict[str, Any]:
    m: dict[str, Any] = json.loads((data / "manifest.json").read_text())
    m["paths"] = [data / f for f in m["files"]]
    return m


# ------------------------------------------------------------------------------------ modes


def run_walk(m: dict[str, Any]) -> dict[str, Any]:
    unpack = struct.Struct("<I").unpack_from
    events = 0
    for path in m["paths"]:
        with path.open("rb") as f:
            buf = bytearray(f.read(4))  # the magic
            pos = 4
            while True:
                chunk = f.read(CHUNK)
                if chunk:
                    del buf[:pos]
                    pos = 0
                    buf += chunk
                while pos + 19 <= len(buf):
                    size = unpack(buf, pos + 9)[0]
                    if pos + size > len(buf):
                        break
                    pos += size
                    events += 1
                if not chunk:
                    break
    return {"events": events}


def _run_binlogscope(m: dict[str, Any], record: bool) -> dict[str, Any]:
    from binlogscope.wire.binlog.stream import BinlogStreamDecoder

    events = rows = values = errors = bad_crc = 0
    for path in m["paths"]:
        dec = BinlogStreamDecoder(record=record)
        with path.open("rb") as f:
            while True:
                chunk = f.read(CHUNK)
                dec.receive_data(chunk)
                for ev in dec.events():
                    events += 1
                    if ev.error:
                        errors += 1
                    if ev.checksum_ok is False:
                        bad_crc += 1
                    body_rows = getattr(ev.body, "rows", None)
                    if body_rows:
                        for row in body_rows:
                            rows += 1
                            for image in (row["before"], row["after"]):
                                if image:
                                    for _v in image.values():
                                        values += 1
                if not chunk:
                    break
    return {"events": events, "rows": rows, "values": values, "errors": errors,
            "checksum_mismatches": bad_crc}


def run_pymysqlrepl(m: dict[str, Any], host: str, port: int) -> dict[str, Any]:
    """python-mysql-replication streaming the benchmark files from the restarted server.

    ``blocking=True`` on purpose: with ``blocking=False`` (COM_BINLOG_DUMP with
    BINLOG_DUMP_NON_BLOCK) MariaDB sends EOF after the last event and closes the connection at
    once. Its dump thread runs megabytes ahead of this slow reader (the socket buffers hold
    them), and that close resets the connection: the client gets "2013 Connection reset by
    peer" with the rest still unread, always after the same number of events, and pymysqlrepl
    reconnects from the start forever. In blocking mode the server keeps the stream open, and
    the loop stops at the first event of the file after the benchmark's last one (the restart
    made it), so every benchmark event is read exactly once.
    """
    import logging

    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import RotateEvent
    from pymysqlreplication.row_event import RowsEvent

    class _NoSilentReconnect(logging.Handler):
        """pymysqlrepl reconnects forever on a lost stream; make that an error instead."""

        def emit(self, record: logging.LogRecord) -> None:
            if "Re-request the connection" in record.getMessage():
                raise RuntimeError("python-mysql-replication lost the binlog stream "
                                   "(2013 connection reset by peer) and tried to reconnect")

    logging.getLogger("pymysqlreplication").addHandler(_NoSilentReconnect())

    stream = BinLogStreamReader(
        connection_settings={"host": host, "port": port, "user": "repl", "passwd": "replpass"},
        server_id=4242, blocking=True, resume_stream=True,
        log_file=Path(m["files"][0]).name, log_pos=4, is_mariadb=True,
        annotate_rows_event=True, verify_checksum=True, filter_non_implemented_events=False,
    )
    last = Path(m["files"][-1]).name
    last_end = Path(m["paths"][-1]).stat().st_size
    events = rows = values = 0
    try:
        for ev in stream:
            if stream.log_file > last and not isinstance(ev, RotateEvent):
                break  # the file the restart opened is not part of the benchmark
            if ev.packet.log_pos == 0:
                continue  # artificial ROTATE/FORMAT_DESCRIPTION the server sends first
            events += 1
            if isinstance(ev, RotateEvent) and ev.packet.log_pos == last_end:
                break  # the ROTATE that closes the last benchmark file: all events read
            if isinstance(ev, RowsEvent):
                for row in ev.rows:
                    rows += 1
                    for key in ("values", "before_values", "after_values"):
                        image = row.get(key)
                        if image:
                            for _v in image.values():
                                values += 1
    finally:
        stream.close()
    return {"events": events, "rows": rows, "values": values}


def run_mariadb_binlog(m: dict[str, Any]) -> dict[str, Any]:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        return {"error": "mariadb-binlog not found"}
    with open("/dev/null", "wb") as devnull:
        proc = subprocess.run([exe, "--no-defaults", "--base64-output=DECODE-ROWS", "--verbose",
                               *map(str, m["paths"])], stdout=devnull, stderr=subprocess.PIPE)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, Any] = {"events": None, "rc": proc.returncode,
                           "peak_rss_mb": ru.ru_maxrss / 1024,
                           "cpu_seconds": ru.ru_utime + ru.ru_stime}
    if proc.returncode:
        out["error"] = proc.stderr.decode(errors="replace").strip()[-300:]
    return out


def child(mode: str, data: Path, host: str, port: int) -> None:
    m = _load(data)
    c0 = time.process_time()
    t0 = time.perf_counter()
    if mode == "walk":
        res = run_walk(m)
    elif mode == "fast":
        res = _run_binlogscope(m, record=False)
    elif mode == "tree":
        res = _run_binlogscope(m, record=True)
    elif mode == "pymysqlrepl":
        res = run_pymysqlrepl(m, host, port)
    else:
        res = run_mariadb_binlog(m)
    res["seconds"] = time.perf_counter() - t0
    res.setdefault("cpu_seconds", time.process_time() - c0)  # this process only
    res.setdefault("peak_rss_mb", _peak_rss_mb())
    print(json.dumps(res))


# ------------------------------------------------------------------------------------ driver


def _spawn(mode: str, data: Path, host: str = "", port: int = 0) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", mode, "--data", str(data),
                           "--host", host, "--port", str(port)],
                          capture_output=True, text=True)
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {proc.returncode}"}
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def data_dir(data: Path, scale: float | None) -> Path:
    """Where a benchmark's binlog lives: ``--data`` as given, or beside the full-size binlog in
    ``scale-N`` for a ``--scale`` other than 1 (the full-size one is kept when trying small
    ones)."""
    if scale is not None and scale != 1.0 and data == DATA:
        return DATA / f"scale-{scale:g}"
    return data.resolve()


def ensure_binlog(data: Path, scale: float | None) -> dict[str, Any]:
    manifest = data / "manifest.json"
    if manifest.exists():
        m = _load(data)
        same = scale is None or abs(m["scale"] - scale) < 1e-9
        if same and all(p.exists() for p in m["paths"]):
            return m
    import make_binlog

    make_binlog.make_bench(1.0 if scale is None else scale, data)
    return _load(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, help="binlog size (1.0 = ~1 M row changes); "
                    "regenerates bench/data when it differs from the existing one")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of "
                    + ", ".join(MODES))
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--host", default="", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    ensure_bytecode()  # as an installed copy has it (see bench/bytecode.py)
    data = args.data.resolve()
    if args.scale is not None and args.scale != 1.0 and args.data == DATA:
        data = DATA / f"scale-{args.scale:g}"  # keep the full-size binlog when trying small ones
    if args.child:
        child(args.child, data, args.host, args.port)
        return 0

    sys.path.insert(0, str(HERE))
    m = ensure_binlog(data, args.scale)
    modes = [x.strip() for x in args.modes.split(",") if x.strip()]
    mb = m["bytes"] / 1e6
    print(f"binlog: {len(m['files'])} files, {m['events']:,} events, {m['row_changes']:,} row "
          f"changes, {mb:.1f} MB, MariaDB {m['server_version']}")
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        if mode == "pymysqlrepl":
            import mariadb_server

            # a private copy of the benchmark server: another benchmark restarting or stopping
            # bench/data/server must not cut this stream (its binlog index names the original
            # binlog files by absolute path, which the copy reads and never changes)
            server_dir = Path(tempfile.mkdtemp(prefix="pymysqlrepl-", dir=data))
            for part in ("data", "binlog"):
                shutil.copytree(data / m["server_dir"] / part, server_dir / part)
            server = mariadb_server.start(server_dir)
            try:
                results[mode] = _spawn(mode, data, server.host, server.port)
            finally:
                mariadb_server.stop(server_dir)
                shutil.rmtree(server_dir, ignore_errors=True)
        else:
            results[mode] = _spawn(mode, data)
        r = results[mode]
        if "seconds" not in r:
            print(f"  {mode:15s} FAILED: {r.get('error')}")
            continue
        secs = r["seconds"]
        ev = r.get("events") or m["events"]
        extra = ""
        if r.get("rows") is not None:
            extra = f", {r['rows']:,} rows / {r['values']:,} values"
        if r.get("errors") or r.get("checksum_mismatches"):
            extra += f", {r['errors']} error events, {r['checksum_mismatches']} bad CRC"
        if r.get("error"):
            extra += f", exit {r.get('rc')}: {r['error'][:120]}"
        if r.get("events") is not None and r["events"] != m["events"]:
            extra += f"; EVENT COUNT DIFFERS from the header walk's {m['events']:,}"
        print(f"  {mode:15s} {secs:8.2f} s (cpu {r.get('cpu_seconds', 0):7.2f} s) "
              f"{ev / secs:11,.0f} events/s {mb / secs:7.1f} MB/s  "
              f"peak RSS {r['peak_rss_mb']:6.1f} MB  ({r.get('events') or '-'} events{extra})")

    def secs(mode: str) -> float | None:
        r = results.get(mode, {})
        s = r.get("seconds")
        return float(s) if s else None

    def cpu(mode: str) -> float | None:
        r = results.get(mode, {})
        s = r.get("cpu_seconds")
        return float(s) if s and "seconds" in r else None

    print("ratios (wall-clock time, same run; higher = binlogscope faster; cpu = this "
          "process's CPU time, for a shared machine; pymysqlrepl's cpu leaves out the server):")
    pairs = [("fast", "pymysqlrepl", ">= 20x"), ("fast", "mariadb-binlog", ">= 1x"),
             ("tree", "pymysqlrepl", ">= 5x"), ("tree", "mariadb-binlog", ""),
             ("fast", "walk", "(the floor)")]
    for ours, theirs, target in pairs:
        a, b = secs(ours), secs(theirs)
        if a and b:
            ca, cb = cpu(ours), cpu(theirs)
            cpu_ratio = f"  (cpu {cb / ca:6.2f}x)" if ca and cb else ""
            print(f"  {ours} vs {theirs:15s} {b / a:7.2f}x{cpu_ratio}   "
                  f"{'target ' + target if target else ''}")
    if args.json:
        print(json.dumps({"manifest": {k: v for k, v in m.items() if k != "paths"},
                          "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
