"""DECIMAL (and the other column kinds issue 26 moved into the kernel), read from one rows event.

    python bench/decimal_rows.py

The benchmark binlog's DECIMAL(12,4) was read by the kernel already; wider DECIMALs (more than
9 integer digits: DECIMAL(20,6), DECIMAL(30,10), DECIMAL(65,30)), DATE, MEDIUMINT, YEAR and
2-byte ENUMs were read by the Python column readers before issue 26. This builds one rows event
of 2,000 rows of such columns with the wire encoders and reads its rows three ways in this
process, alternated: the Python readers (the kernel off), the kernel's values
(``read_rows``) and the kernel's JSON text (``rows_json``) against the values serialized by
the one serializer. CPU seconds per pass (the fastest of --repeat); a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from binlogscope import _native
from binlogscope.render.json_out import dumps
from binlogscope.wire.binlog._rowcode import INSERT, ImagePlan, read_rows, rows_json
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.encode_rows import encode_row_image
from binlogscope.wire.binlog.types import ColumnType as T


def columns() -> list[ColumnInfo]:
    specs = [(T.MYSQL_TYPE_LONG, 0), (T.MYSQL_TYPE_NEWDECIMAL, 20 << 8 | 6),
             (T.MYSQL_TYPE_NEWDECIMAL, 30 << 8 | 10), (T.MYSQL_TYPE_NEWDECIMAL, 65 << 8 | 30),
             (T.MYSQL_TYPE_DATE, 0), (T.MYSQL_TYPE_INT24, 0), (T.MYSQL_TYPE_YEAR, 0)]
    cols = [ColumnInfo(i, t, m, name=f"c{i}") for i, (t, m) in enumerate(specs)]
    cols.append(ColumnInfo(len(cols), T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_ENUM << 8 | 2,
                           real_type=T.MYSQL_TYPE_ENUM, name="e",
                           enum_values=[f"v{i}" for i in range(300)]))
    return cols


def row(rnd: random.Random) -> dict[str, Any]:
    day = f"{rnd.randrange(1000, 9999)}-{rnd.randrange(1, 13):02d}-{rnd.randrange(1, 29):02d}"
    return {"c0": rnd.randrange(-2**31, 2**31),
            "c1": f"{rnd.randrange(10**14)}.{rnd.randrange(10**6):06d}",
            "c2": f"-{rnd.randrange(10**20)}.{rnd.randrange(10**10):010d}",
            "c3": f"{rnd.randrange(10**35)}.{rnd.randrange(10**30):030d}",
            "c4": day,
            "c5": rnd.randrange(-2**23, 2**23), "c6": rnd.randrange(1901, 2155),
            "e": f"v{rnd.randrange(300)}"}


def cpu() -> float:
    return time.process_time()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if _native.kernel is None:
        raise SystemExit(f"the native kernel is not loaded: {_native.reason}")
    cols = columns()
    rnd = random.Random(1)
    data = b"".join(encode_row_image(cols, row(rnd)) for _ in range(args.rows))
    plan = ImagePlan(cols, mariadb=True)
    kernel = _native.kernel
    best = {"python values + serializer": 1e9, "kernel values + serializer": 1e9,
            "kernel JSON text": 1e9}
    for _ in range(args.repeat):
        _native.kernel = None
        t = cpu()
        py = dumps(read_rows(data, INSERT, plan, None))
        best["python values + serializer"] = min(best["python values + serializer"], cpu() - t)
        _native.kernel = kernel
        t = cpu()
        kv = dumps(read_rows(data, INSERT, plan, None))
        best["kernel values + serializer"] = min(best["kernel values + serializer"], cpu() - t)
        t = cpu()
        kj = rows_json(data, INSERT, plan, None, 0, len(data))
        best["kernel JSON text"] = min(best["kernel JSON text"], cpu() - t)
        assert py == kv == kj, "the three differ"
    base = best["python values + serializer"]
    for name, secs in best.items():
        print(f"{name:28} {secs * 1000:8.1f} ms  ({base / secs:4.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
