"""Export and analyze benchmark (issue 7, Performance): ratios measured in one run.

    python bench/export.py                      # the binlog from bench/make_binlog.py
    python bench/export.py --files 1            # only the first binlog file (quicker)
    python bench/export.py --fixture-copies 300 # no generated binlog: repeat a fixture

Reports: decode-only rate (events/s, row images decoded), export rate and the ratio (target:
export >= 50% of decode-only), Parquet size against the binlog size, and ``analyze`` wall time on
``local[*]`` with the share spent starting Spark. Inputs are never committed: the generated
binlog lives in bench/data/ (gitignored), fixture copies and the dataset in a temp directory.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

from binlogscope.drivers.binlog_file import read_binlog_file  # noqa: E402
from binlogscope.export.records import BinlogFileSource  # noqa: E402
from binlogscope.export.run import run_export  # noqa: E402
from binlogscope.wire.binlog.context import DecodeContext  # noqa: E402

FIXTURE = (REPO.parent / "shared" / "fixtures" / "osheroff__mysql-binlog-connector-java"
           / "src" / "test" / "resources" / "mysql-bin.checksum-crc32")


def _inputs(args: argparse.Namespace, tmp: Path) -> list[Path]:
    manifest = HERE / "data" / "manifest.json"
    if not args.fixture_copies and manifest.exists():
        m = json.loads(manifest.read_text())
        files = [HERE / "data" / f for f in m["files"]]
        files = [f for f in files if f.exists()]
        if files:
            return files[: args.files] if args.files else files
    n = args.fixture_copies or 300
    d = tmp / "in"
    d.mkdir()
    for i in range(n):
        (d / f"mysql-bin.{i + 1:06d}").symlink_to(FIXTURE)
    return sorted(d.iterdir())


def _decode_only(files: list[Path]) -> tuple[int, int, float]:
    events = rows = 0
    t0 = time.perf_counter()
    for f in files:
        for ev in read_binlog_file(f, record=False, ctx=DecodeContext()):
            events += 1
            r = getattr(ev.body, "rows", None)
            if r:
                rows += len(r)
    return events, rows, time.perf_counter() - t0


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=0, help="use only the first N binlog files")
    ap.add_argument("--fixture-copies", type=int, default=0,
                    help="benchmark N copies of a small fixture instead of the generated binlog")
    ap.add_argument("--no-analyze", action="store_true", help="skip the Spark part")
    ap.add_argument("--master", default="local[*]")
    args = ap.parse_args()
    ensure_bytecode()  # as an installed copy has it (see bench/bytecode.py)

    tmp = Path(tempfile.mkdtemp(prefix="binlogscope-bench-"))
    try:
        files = _inputs(args, tmp)
        size = sum(f.stat().st_size for f in files)
        print(f"input: {len(files)} file(s), {size / 1e6:.1f} MB")
        events, rows, t_dec = _decode_only(files)
        print(f"decode only: {events:,} events, {rows:,} rows in {t_dec:.1f} s "
              f"= {events / t_dec:,.0f} events/s")

        out = tmp / "dataset"
        t0 = time.perf_counter()
        res = run_export(BinlogFileSource([str(f) for f in files]), out)
        t_exp = time.perf_counter() - t0
        assert res.complete and res.events_seen == events, (res.events_seen, events)
        ratio = t_dec / t_exp
        pq_size = _du(out)
        print(f"export:      {res.counts['events']:,} events, {res.counts['rows']:,} rows in "
              f"{t_exp:.1f} s = {events / t_exp:,.0f} events/s")
        print(f"export rate / decode-only rate = {ratio:.2f} (target >= 0.50: "
              f"{'PASS' if ratio >= 0.5 else 'FAIL'})")
        print(f"parquet: {pq_size / 1e6:.1f} MB = {pq_size / size:.2f} x the binlog size")
        summary: dict[str, object] = {
            "events": events, "rows": rows, "binlog_bytes": size, "parquet_bytes": pq_size,
            "decode_s": round(t_dec, 2), "export_s": round(t_exp, 2),
            "export_over_decode": round(ratio, 3)}

        if not args.no_analyze:
            from binlogscope.export.spark import analyze

            an = analyze(out, master=args.master, report_dir=tmp / "reports")
            share = an.startup_seconds / an.total_seconds
            print(f"analyze ({args.master}): {an.total_seconds:.1f} s wall, Spark start-up "
                  f"{an.startup_seconds:.1f} s = {100 * share:.0f}%")
            summary.update(analyze_s=round(an.total_seconds, 2),
                           spark_startup_s=round(an.startup_seconds, 2))
        print(json.dumps(summary))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
