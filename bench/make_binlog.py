"""Generate the benchmark binlog (and the small committed capture) with a throw-away MariaDB.

    python bench/make_binlog.py                 # ~1,000,000 row changes, ~1.5 M events, bench/data/
    python bench/make_binlog.py --scale 0.05    # a quick, smaller run
    python bench/make_binlog.py --capture captures/   # the small README/demo capture

The benchmark server lives in ``bench/data/server`` (gitignored) and is stopped at the end; its
binlog files stay there and ``bench/data/manifest.json`` lists them. ``bench/decode.py`` restarts
the same server to stream the same events to python-mysql-replication.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "mysql")]

import mariadb_server  # noqa: E402
from mariadb_workload import Workload  # noqa: E402

DATA = HERE / "data"
FULL_ROW_CHANGES = 1_000_000


def _connect(server: mariadb_server.MariaDB, **kwargs: Any) -> Any:
    from pymysql.constants import CLIENT

    return server.connect(client_flag=CLIENT.MULTI_STATEMENTS, **kwargs)


def count_events(path: Path) -> int:
    """Events in one binlog file (a header walk)."""
    n = 0
    with path.open("rb") as f:
        data = f.read()
    pos = 4
    unpack = struct.Struct("<I").unpack_from
    while pos + 19 <= len(data):
        pos += unpack(data, pos + 9)[0]
        n += 1
    return n


def make_bench(scale: float, out: Path) -> None:
    server_dir = out / "server"
    if server_dir.exists():
        mariadb_server.stop(server_dir)
        shutil.rmtree(server_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = int(FULL_ROW_CHANGES * scale)
    server = mariadb_server.start(server_dir, extra_env={"MARIADB_MAX_BINLOG_SIZE": "64M",
                                                         "MARIADB_BUFFER_POOL": "256M"})
    try:
        conn = _connect(server)
        t0 = time.perf_counter()
        done = Workload(conn, record=False).run_bulk(rows)
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
        elapsed = time.perf_counter() - t0
        conn.close()
        files = server.binlog_files()[:-1]  # the last one is the fresh, empty file
    finally:
        mariadb_server.stop(server_dir)
    events = sum(count_events(p) for p in files)
    size = sum(p.stat().st_size for p in files)
    manifest = {
        "server_version": server.version,
        "server_dir": str(server_dir.relative_to(out)),
        "files": [str(p.relative_to(out)) for p in files],
        "row_changes": done,
        "events": events,
        "bytes": size,
        "scale": scale,
        "generation_seconds": round(elapsed, 1),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(files)} files, {events:,} events, {done:,} row changes, "
          f"{size / 1e6:.1f} MB in {elapsed:.0f} s -> {out / 'manifest.json'}")


def make_capture(dest: Path) -> Path:
    """The small workload binlog committed in captures/ (one file, every column type)."""
    work = DATA / "capture-server"
    if work.exists():
        mariadb_server.stop(work)
        shutil.rmtree(work)
    server = mariadb_server.start(work)
    try:
        conn = server.connect(conv={})
        Workload(conn).run_full(version=server.version, flush=False, bulk_rows=200, big=False)
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
        conn.close()
        first = server.binlog_files()[0]
        major_minor = ".".join(server.version.split("-")[0].split(".")[:2])
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / f"mariadb-{major_minor}-workload.000001"
        shutil.copyfile(first, target)
    finally:
        mariadb_server.stop(work)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{target}: {target.stat().st_size:,} bytes, {count_events(target)} events, "
          f"server {server.version}")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of the full size (1.0 = ~1,000,000 row changes)")
    ap.add_argument("--out", type=Path, default=DATA, help="output directory (bench/data)")
    ap.add_argument("--capture", type=Path, metavar="DIR",
                    help="instead: write the small workload capture into DIR")
    args = ap.parse_args(argv)
    if args.capture:
        make_capture(args.capture)
    else:
        make_bench(args.scale, args.out.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
