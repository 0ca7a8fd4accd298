"""The floor of a Python event loop: what the least per-event Python costs, against the reference.

    python bench/floor.py                          # CPU, best of 3, over the bench set's first file
    python bench/floor.py --instructions 30000     # and callgrind instructions over 30,000 events
    python bench/floor.py --stage dict FILE        # one stage as a child (used by the above)

The architecture keeps the session/pipeline/output loop in Python (the native kernel only
interprets declared plans), so every event of ``file --json`` costs at least one turn of a
Python loop. This measures how much that is, stage by stage, each stage adding one thing an
event line needs (cumulative; the file is ``mmap``'ed, events are walked by the header's
``event_size`` with ``struct.unpack_from``):

  walk     the header's event_size only (``unpack_from`` of one u32, advance)
  header   + the six header fields (one tuple per event)
  dict     + one dict per event with the 19 keys of a ``file --json`` line (a dict display,
           header values, the other keys None)
  orjson   + ``orjson.dumps`` of that dict per event (one bytes object per event)
  write    + writing each line (``sys.stdout.buffer.write``, as ``file --json`` does)

and three extras on top of ``write`` (not cumulative with each other): ``crc32`` (the CRC32
check ``file`` does by default; ``mariadb-binlog`` does not without --verify-binlog-checksum),
``object`` (one slots object per event, what a decoded event is, read back by the line), and
``gen`` (events handed out by a generator, as the stream decoder hands them out).

The references, as whole commands over the same events: ``mariadb-binlog
--base64-output=DECODE-ROWS --verbose`` and ``binlogscope file --json --jobs 1`` (and
``--summary``). Per event figures: the loop's own CPU for the stages (timed inside the child);
a command's CPU (user + sys of the child) less the same command's over no events, divided by
the events. Instructions (callgrind, ``--instructions N``): each process over the first N
events, less the same process over none (the start-up), divided by N. Benchmarks are not
tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"

STAGES = ["walk", "header", "dict", "orjson", "write", "crc32", "object", "gen"]
_U32 = struct.Struct("<I").unpack_from
_HEADER = struct.Struct("<IBIIIH").unpack_from


@dataclass(slots=True)
class _Event:
    """Stands for a decoded event: the header's fields and where it is."""

    offset: int
    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int


def _events(mm: Any, end: int) -> Any:
    """The stream generator's shape: one tuple per event, handed out by ``yield``."""
    pos = 4
    while pos + 19 <= end:
        h = _HEADER(mm, pos)
        size = h[3]
        if size < 19:
            return
        yield pos, h
        pos += size


def run_stage(stage: str, path: str, stop: int | None) -> tuple[int, float]:
    """Run one stage over ``path`` (up to the event starting at or after ``stop``):
    (events, the loop's CPU seconds)."""
    import orjson

    dumps = orjson.dumps
    opt = orjson.OPT_APPEND_NEWLINE
    write = sys.stdout.buffer.write
    crc = zlib.crc32
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    end = len(mm) if stop is None else min(stop, len(mm))
    name = os.path.basename(path)
    n = 0
    pos = 4
    t0 = time.process_time()
    if stage == "walk":
        while pos + 19 <= end:
            size = _U32(mm, pos + 9)[0]
            if size < 19:
                break
            pos += size
            n += 1
    elif stage == "header":
        while pos + 19 <= end:
            ts, code, sid, size, lp, flags = _HEADER(mm, pos)
            if size < 19:
                break
            pos += size
            n += 1
    elif stage in ("dict", "orjson", "write", "crc32"):
        do_dumps = stage != "dict"
        do_write = stage in ("write", "crc32")
        do_crc = stage == "crc32"
        while pos + 19 <= end:
            ts, code, sid, size, lp, flags = _HEADER(mm, pos)
            if size < 19:
                break
            if do_crc:
                crc(mm[pos:pos + size - 4])
            d = {"file": path, "binlog_file": name, "offset": pos, "log_pos": lp,
                 "gtid": None, "event_type": "X", "type_code": code, "timestamp": ts,
                 "server_id": sid, "event_size": size, "flags": flags,
                 "checksum_ok": True, "schema": None, "table": None, "rows": None,
                 "query": None, "error": None}
            if do_dumps:
                line = dumps(d, option=opt)
                if do_write:
                    write(line)
            pos += size
            n += 1
    elif stage == "object":
        while pos + 19 <= end:
            h = _HEADER(mm, pos)
            size = h[3]
            if size < 19:
                break
            ev = _Event(pos, *h)
            write(dumps({"file": path, "binlog_file": name, "offset": ev.offset,
                         "log_pos": ev.log_pos, "gtid": None, "event_type": "X",
                         "type_code": ev.type_code, "timestamp": ev.timestamp,
                         "server_id": ev.server_id, "event_size": ev.event_size,
                         "flags": ev.flags, "checksum_ok": True, "schema": None,
                         "table": None, "rows": None, "query": None, "error": None},
                        option=opt))
            pos += size
            n += 1
    elif stage == "gen":
        for pos, (ts, code, sid, size, lp, flags) in _events(mm, end):
            write(dumps({"file": path, "binlog_file": name, "offset": pos, "log_pos": lp,
                         "gtid": None, "event_type": "X", "type_code": code, "timestamp": ts,
                         "server_id": sid, "event_size": size, "flags": flags,
                         "checksum_ok": True, "schema": None, "table": None, "rows": None,
                         "query": None, "error": None}, option=opt))
            n += 1
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    sys.stdout.buffer.flush()
    return n, time.process_time() - t0


def _child(cmd: list[str]) -> tuple[float, str]:
    """Run ``cmd`` with stdout to /dev/null: (CPU seconds user + sys, its stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    err = p.stderr.read().decode(errors="replace")
    _, _, usage = os.wait4(p.pid, 0)
    return usage.ru_utime + usage.ru_stime, err


def _instructions(cmd: list[str]) -> int:
    """Instructions of ``cmd`` under callgrind (its whole run)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg",
                            *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           check=False)
    m = re.search(rb"Collected : (\d+)", p.stderr)
    if m is None:
        raise SystemExit(f"callgrind gave no count for {cmd}: {p.stderr[-300:]!r}")
    return int(m.group(1))


def _offset_after(path: str, events: int) -> int:
    """The offset of event number ``events`` (0-based) of ``path``: a stop position."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    pos, n = 4, 0
    while pos + 19 <= len(mm) and n < events:
        pos += _U32(mm, pos + 9)[0]
        n += 1
    return pos


def _count(path: str) -> int:
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    pos, n = 4, 0
    while pos + 19 <= len(mm):
        pos += _U32(mm, pos + 9)[0]
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=STAGES, help="run one stage over FILE (a child)")
    ap.add_argument("file", nargs="?", help="the binlog (default: the bench set's first file)")
    ap.add_argument("--stop-position", type=int, help="(--stage) stop at this offset")
    ap.add_argument("--data", default=str(DATA), help="benchmark data (default bench/data)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (CPU)")
    ap.add_argument("--instructions", type=int, metavar="N",
                    help="also count instructions (callgrind) over the first N events")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    if args.stage:
        n, cpu = run_stage(args.stage, args.file, args.stop_position)
        print(json.dumps({"events": n, "loop_cpu": cpu}), file=sys.stderr)
        return 0
    path = args.file or str(Path(args.data) / json.loads(
        (Path(args.data) / "manifest.json").read_text())["files"][0])
    from bytecode import ensure_bytecode
    ensure_bytecode()
    events = _count(path)
    mariadb = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    assert mariadb is not None, "mariadb-binlog is needed"
    py = [sys.executable]
    ref = [mariadb, "--base64-output=DECODE-ROWS", "--verbose"]
    cmds = {
        "mariadb-binlog --base64-output=DECODE-ROWS --verbose": (
            lambda stop: [*ref, *([f"--stop-position={stop}"] if stop else []), path]),
        "binlogscope file --json --jobs 1": (
            lambda stop: [*py, "-m", "binlogscope", "file", "--json", "--jobs", "1",
                          *(["--stop-position", str(stop)] if stop else []), path]),
        "binlogscope file --summary --jobs 1": (
            lambda stop: [*py, "-m", "binlogscope", "file", "--summary", "--jobs", "1",
                          *(["--stop-position", str(stop)] if stop else []), path]),
    }
    print(f"{path}: {events:,} events, {os.path.getsize(path) / 1e6:.1f} MB; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    result: dict[str, Any] = {"file": path, "events": events, "stages": {}, "commands": {}}
    for stage in STAGES:
        best = None
        for _ in range(args.repeat):
            _, err = _child([*py, __file__, "--stage", stage, path])
            got = json.loads(err.strip().splitlines()[-1])
            best = got["loop_cpu"] if best is None else min(best, got["loop_cpu"])
        assert best is not None
        result["stages"][stage] = {"us_per_event": best / events * 1e6}
    for name, cmd in cmds.items():
        whole = min(_child(cmd(None))[0] for _ in range(args.repeat))
        empty = min(_child(cmd(4))[0] for _ in range(args.repeat))
        result["commands"][name] = {"cpu": whole, "startup_cpu": empty,
                                    "us_per_event": (whole - empty) / events * 1e6}
    if args.instructions:
        n = args.instructions
        stop = _offset_after(path, n)
        base = _instructions([*py, __file__, "--stage", "walk", path, "--stop-position", "4"])
        for stage in STAGES:
            got = _instructions([*py, __file__, "--stage", stage, path,
                                 "--stop-position", str(stop)])
            result["stages"][stage]["instr_per_event"] = (got - base) / n
        for name, cmd in cmds.items():
            got = _instructions(cmd(stop))
            empty = _instructions(cmd(4))
            result["commands"][name]["instr_per_event"] = (got - empty) / n
            result["commands"][name]["startup_instr"] = empty
    ref_name = next(iter(cmds))
    ref_us = result["commands"][ref_name]["us_per_event"]
    ref_i = result["commands"][ref_name].get("instr_per_event")
    print(f"{'':<44} {'CPU us/event':>12} {'x ref':>6} {'instr/event':>12} {'x ref':>6}")
    rows = [(f"stage {s}", v) for s, v in result["stages"].items()]
    rows += list(result["commands"].items())
    for label, v in rows:
        us = v["us_per_event"]
        ins = v.get("instr_per_event")
        ins_text = (f"{ins:>12,.0f} {ins / ref_i:>6.2f}" if ins is not None and ref_i
                    else f"{'-':>12} {'-':>6}")
        print(f"{label:<44} {us:>12.3f} {us / ref_us:>6.2f} {ins_text}")
    for name, v in result["commands"].items():
        print(f"{name}: whole run {v['cpu']:.2f} s CPU, start-up {v['startup_cpu']:.2f} s")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
