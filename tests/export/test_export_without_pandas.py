"""The export command runs without importing pandas, and writes the same Parquet as with it.

pyarrow imports pandas (0.16-0.2 s) on its first conversion of Python values, only to tell
pandas objects apart; the export converts none, so ``export.arrow.without_pandas`` keeps the
import from happening while the command runs. Each export runs in a fresh interpreter (the test
process may have imported pandas already): once as the command runs, once with pandas imported
first (pyarrow's usual path), and the part files must be the same bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
#: a real MariaDB 10.11 binlog of the workload (every column type the bench set has)
BINLOG = REPO / "captures" / "mariadb-10.11-workload.000001"

_SCRIPT = """
import json, sys
if sys.argv[1] == "pandas-first":
    import pandas  # noqa: F401
from binlogscope.cli.main import main
rc = main(["export", sys.argv[2], "--out", sys.argv[3], "--jobs", sys.argv[4]])
seen = "pandas" in sys.modules
import pyarrow as pa
# pandas is still there for code that asks for it explicitly
frame = pa.table({"a": [1, 2]}).to_pandas()
print(json.dumps({"rc": rc, "pandas": seen, "frame": type(frame).__module__}))
"""


def _export(mode: str, out: Path, jobs: int = 1) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    res = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(BINLOG), str(out), str(jobs)],
                         capture_output=True, text=True, env=env, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    got: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return got


def _parts(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def test_export_does_not_import_pandas_and_writes_the_same_parquet(tmp_path: Path) -> None:
    plain = _export("plain", tmp_path / "plain")
    first = _export("pandas-first", tmp_path / "first")
    assert plain["rc"] == first["rc"] == 0
    assert plain["pandas"] is False  # the command never imported it
    assert first["pandas"] is True
    assert plain["frame"] == first["frame"] == "pandas.core.frame"  # and to_pandas still works
    a, b = _parts(tmp_path / "plain"), _parts(tmp_path / "first")
    assert a and a.keys() == b.keys()
    assert any("rows" in name for name in a)
    for name in a:
        assert a[name] == b[name], name
    rows = pq.read_table(tmp_path / "plain" / "rows").num_rows
    assert rows > 500


def test_forked_jobs_do_not_import_pandas_either(tmp_path: Path) -> None:
    got = _export("plain", tmp_path / "jobs", jobs=2)
    assert got["rc"] == 0 and got["pandas"] is False
