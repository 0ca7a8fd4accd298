"""TUI benchmark: time to first screen, peak memory and scroll latency on a big binlog.

``python bench/tui.py [--events N] [--keep PATH]`` builds a binlog of about N events by repeating
the transactions of a real MySQL 5.7 fixture (log_pos and CRC32 rewritten so the file is valid),
then opens it in the TUI headless (Textual's ``run_test``) and reports:

- first screen: seconds from app start until the list shows its first page of rows
- index: seconds until the background index walk has seen every event
- peak RSS (MB) of the process
- page-down x 100 latency (ms per key, with the detail pane following the cursor)
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = (ROOT.parent / "shared" / "fixtures" / "osheroff__mysql-binlog-connector-java" / "src"
           / "test" / "resources" / "mysql-bin.checksum-crc32")
_HDR = struct.Struct("<IBIIIH")


def _events(data: bytes) -> list[bytes]:
    out = []
    pos = 4
    while pos + 19 <= len(data):
        size = _HDR.unpack_from(data, pos)[3]
        out.append(data[pos : pos + size])
        pos += size
    return out


def make_big_binlog(path: Path, n_events: int, fixture: Path = FIXTURE) -> int:
    """Write a valid CRC32 binlog of at least ``n_events`` events; return the event count."""
    evs = _events(fixture.read_bytes())
    head, body = evs[:2], [e for e in evs[2:] if e[4] not in (3, 4)]  # drop STOP/ROTATE
    count = 0
    with path.open("wb") as f:
        f.write(b"\xfebin")
        pos = 4

        def put(ev: bytes) -> None:
            nonlocal pos, count
            b = bytearray(ev[:-4])
            pos += len(ev)
            struct.pack_into("<I", b, 13, pos)
            f.write(b)
            f.write(struct.pack("<I", zlib.crc32(b) & 0xFFFFFFFF))
            count += 1

        for ev in head:
            put(ev)
        while count < n_events:
            for ev in body:
                put(ev)
    return count


async def _measure(path: Path) -> dict[str, float]:
    from binlogscope.tui.app import BinlogScopeApp
    from binlogscope.tui.sources.binlog_file import BinlogFileSource
    from binlogscope.tui.widgets.event_list import EventList

    t0 = time.perf_counter()
    app = BinlogScopeApp(BinlogFileSource(path))
    res: dict[str, float] = {}
    async with app.run_test(size=(200, 60)) as pilot:
        lst = app.screen.query_one(EventList)
        while lst.row_count < 50:
            await pilot.pause(0.01)
        await pilot.pause()
        res["first_screen_s"] = time.perf_counter() - t0
        src = app.source
        while not src.info().done:
            await asyncio.sleep(0.1)
        res["index_s"] = time.perf_counter() - t0
        res["events"] = float(len(src))
        lst.focus()
        await pilot.pause()
        t1 = time.perf_counter()
        for _ in range(100):
            await pilot.press("pagedown")
        await pilot.pause()
        res["pagedown_ms"] = (time.perf_counter() - t1) * 1000 / 100
        await pilot.press("q")
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="write the big binlog here (reused if present)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big-bin.000001"
        if not path.exists():
            t = time.perf_counter()
            n = make_big_binlog(path, args.events)
            print(f"built {path} ({n} events, {path.stat().st_size / 1e6:.0f} MB) "
                  f"in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        res = asyncio.run(_measure(path))
    for k, v in res.items():
        print(f"{k:>16}: {v:,.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
