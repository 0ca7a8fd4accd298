"""Generate a binlog file holding one huge row (the export's memory case) with a throw-away MariaDB.

    python bench/make_big_row.py                  # one ~17 MB LONGBLOB row, bench/data/big_row/
    python bench/make_big_row.py --mb 4           # a smaller row

The row is inserted (the file: ~2x the row, as the ANNOTATE_ROWS event carries the statement
text); ``--update`` updates it too (a row event with the before and the after image, ~2x the
row). The server lives in
``bench/data/big_row/server`` (gitignored) and is stopped at the end; the binlog file is copied
to ``bench/data/big_row/mysql-bin.big`` and its path printed. Measure the export with
``/usr/bin/time -v binlogscope export bench/data/big_row/mysql-bin.big --out DIR``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / "tests")]

import mariadb_server  # noqa: E402


def make(mb: float, out: Path, update: bool = False) -> Path:
    server_dir = out / "server"
    if server_dir.exists():
        mariadb_server.stop(server_dir)
        shutil.rmtree(server_dir)
    out.mkdir(parents=True, exist_ok=True)
    server = mariadb_server.start(server_dir, extra_env={"MARIADB_MAX_BINLOG_SIZE": "256M"})
    try:
        conn = server.connect()
        size = int(mb * 1024 * 1024)
        blob = os.urandom(size)  # incompressible
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE big (id INT PRIMARY KEY, note VARCHAR(20), b LONGBLOB)")
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("INSERT INTO big VALUES (1, 'first', %s)", (blob,))
            if update:
                cur.execute("UPDATE big SET note = 'second' WHERE id = 1")
            cur.execute("INSERT INTO big VALUES (2, 'small', 'x')")
            cur.execute("FLUSH BINARY LOGS")
        conn.close()
        files = server.binlog_files()
        src = files[-2]  # the file with the rows (the last one is fresh and empty)
        dest = out / "mysql-bin.big"
        shutil.copyfile(src, dest)
    finally:
        mariadb_server.stop(server_dir)
    shutil.rmtree(server_dir, ignore_errors=True)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=17.0, help="row size in MiB (default 17)")
    ap.add_argument("--out", type=Path, default=HERE / "data" / "big_row")
    ap.add_argument("--update", action="store_true", help="update the row too")
    args = ap.parse_args()
    dest = make(args.mb, args.out, args.update)
    print(f"{dest} ({dest.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
