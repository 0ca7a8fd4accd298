"""The sans-IO core imports no UI, network, capture or data-frame library (checked for real in a
subprocess, as harlequin does)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
import binlogscope.wire.binlog.decode, binlogscope.wire.binlog.stream, binlogscope.render.shapes
bad = [m for m in ("textual", "scapy", "pymysql", "pyarrow", "pyspark", "socket",
                   "binlogscope.drivers", "binlogscope.cli.main")
       if m in sys.modules]
print(",".join(bad))
"""


def test_core_imports_nothing_heavy() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
