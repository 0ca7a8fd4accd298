"""Export and analyze benchmark (issue 7, Performance): ratios measured in one run.

    python bench/export.py                      # the binlog from bench/make_binlog.py
    python bench/export.py --files 1            # only the first binlog file (quicker)
    python bench/export.py --fixture-copies 300 # no generated binlog: repeat a fixture
    python bench/export.py --commands           # command against command (issue 14 target)

``--commands`` times ``binlogscope export FILES --out DIR`` against ``mariadb-binlog
--base64-output=DECODE-ROWS --verbose FILES > /dev/null`` (target: at most 2.0x the wall time)
with ``/usr/bin/time``, in alternating order, and reports the exporter's peak RSS (target: under
300 MB), also on the one-huge-row file of ``bench/make_big_row.py`` when it is there.

Reports: decode-only rate (events/s, row images decoded), export rate and the ratio (target:
export >= 50% of decode-only), Parquet size against the binlog size, and ``analyze`` wall time on
``local[*]`` with the share spent starting Spark. Inputs are never committed: the generated
binlog lives in bench/data/ (gitignored), fixture copies and the dataset in a temp directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _timed(cmd: list[str], stdout: Any = None) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS KB) of one command run under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
        subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %U %S %M", *cmd],
                       check=True, stdout=stdout, stderr=subprocess.DEVNULL, env=env)
        wall, user, system, rss = tf.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss)


def _commands(files: list[Path], tmp: Path, repeat: int) -> dict[str, object]:
    """binlogscope export against mariadb-binlog --verbose, same files, alternating order."""
    env_cmd = [sys.executable, "-m", "binlogscope", "export"]
    names = [str(f) for f in files]
    ref = ["mariadb-binlog", "--base64-output=DECODE-ROWS", "--verbose", *names]
    best: dict[str, tuple[float, float, int]] = {}
    for i in range(repeat):
        out = tmp / f"cmd-{i}"
        runs = [("mariadb-binlog", ref, subprocess.DEVNULL),
                ("export", [*env_cmd, *names, "--out", str(out)], subprocess.DEVNULL)]
        for name, cmd, stdout in (runs if i % 2 == 0 else runs[::-1]):
            got = _timed(cmd, stdout)
            if name not in best or got[0] < best[name][0]:
                best[name] = got
        shutil.rmtree(out, ignore_errors=True)
    ratio = best["export"][0] / best["mariadb-binlog"][0]
    print(f"mariadb-binlog --verbose: {best['mariadb-binlog'][0]:.1f} s wall, "
          f"{best['mariadb-binlog'][1]:.1f} s CPU")
    print(f"binlogscope export:       {best['export'][0]:.1f} s wall, {best['export'][1]:.1f} s "
          f"CPU, peak RSS {best['export'][2] / 1024:.0f} MB")
    print(f"export / mariadb-binlog = {ratio:.2f}x wall (target <= 2.0: "
          f"{'PASS' if ratio <= 2.0 else 'FAIL'}), peak RSS "
          f"{'PASS' if best['export'][2] < 300 * 1024 else 'FAIL'} (< 300 MB)")
    result: dict[str, object] = {
        "mariadb_binlog_s": best["mariadb-binlog"][0], "export_s": best["export"][0],
        "export_cpu_s": round(best["export"][1], 2), "export_rss_mb": best["export"][2] // 1024,
        "export_over_mariadb_binlog": round(ratio, 2)}
    big = HERE / "data" / "big_row" / "mysql-bin.big"
    if big.exists():
        out = tmp / "cmd-big"
        wall, _, rss = _timed([*env_cmd, str(big), "--out", str(out)], subprocess.DEVNULL)
        shutil.rmtree(out, ignore_errors=True)
        print(f"one-huge-row file ({big.stat().st_size / 1e6:.0f} MB): {wall:.1f} s, peak RSS "
              f"{rss / 1024:.0f} MB ({'PASS' if rss < 300 * 1024 else 'FAIL'} < 300 MB)")
        result["big_row_rss_mb"] = rss // 1024
    return result


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=0, help="use only the first N binlog files")
    ap.add_argument("--fixture-copies", type=int, default=0,
                    help="benchmark N copies of a small fixture instead of the generated binlog")
    ap.add_argument("--no-analyze", action="store_true", help="skip the Spark part")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--commands", action="store_true",
                    help="time the export command against mariadb-binlog --verbose instead")
    ap.add_argument("--repeat", type=int, default=1, help="with --commands: runs of each")
    args = ap.parse_args()
    ensure_bytecode()  # as an installed copy has it (see bench/bytecode.py)

    tmp = Path(tempfile.mkdtemp(prefix="binlogscope-bench-"))
    try:
        files = _inputs(args, tmp)
        size = sum(f.stat().st_size for f in files)
        print(f"input: {len(files)} file(s), {size / 1e6:.1f} MB")
        if args.commands:
            print(json.dumps(_commands(files, tmp, args.repeat)))
            return 0
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
            from binlogscope.export.spark.analyze import analyze

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
