"""The export imports ``pyarrow.compute`` only when the Python image path runs
(export/images.py): with the kernel's image buffers the module (38 ms of imports, ~0.08x of
``mariadb-binlog``'s whole run on the 0.1 bench set) is never needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import io, json, sys
from binlogscope import _native
from binlogscope.cli.main import main
argv = ["export", sys.argv[1], "--out", sys.argv[2], "--jobs", "1"]
rc = main(argv, io.StringIO(), io.StringIO())
print(json.dumps([rc, _native.kernel is not None, "pyarrow.compute" in sys.modules]))
"""


def _export(binlog: Path, out: Path, pure: bool) -> tuple[int, bool, bool]:
    env = dict(os.environ)
    env.pop("BINLOGSCOPE_PURE_PYTHON", None)
    if pure:
        env["BINLOGSCOPE_PURE_PYTHON"] = "1"
    res = subprocess.run([sys.executable, "-c", PROBE, str(binlog), str(out)], env=env,
                         capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    rc, kernel, compute = json.loads(res.stdout.splitlines()[-1])
    return int(rc), bool(kernel), bool(compute)


def test_the_kernel_path_never_imports_pyarrow_compute(tmp_path: Path) -> None:
    binlog = next(p for p in sorted((ROOT / "captures").iterdir())
                  if p.name.startswith("mariadb-") and p.suffix not in (".md", ".pcap", ".pcapng"))
    rc, kernel, compute = _export(binlog, tmp_path / "native", pure=False)
    assert rc == 0 and kernel
    rows = pq.read_table(tmp_path / "native" / "rows")
    assert rows.num_rows > 0 and rows.column("after_json").null_count < rows.num_rows
    assert not compute
    # the Python path builds the same columns with pyarrow.compute, imported where it runs
    rc, kernel, compute = _export(binlog, tmp_path / "pure", pure=True)
    assert rc == 0 and not kernel and compute
    assert pq.read_table(tmp_path / "pure" / "rows").equals(rows)
