"""The inspector model is core, not UI: importing every module of ``binlogscope.inspector`` loads
no Textual and nothing of ``binlogscope.tui`` (checked in a subprocess, like
tests/test_import_hygiene.py)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import pkgutil, importlib, sys
import binlogscope.inspector as pkg
for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
    importlib.import_module(m.name)
bad = [m for m in sys.modules if m == "textual" or m.startswith(("textual.", "binlogscope.tui"))]
print(",".join(sorted(bad)))
"""


def test_inspector_imports_no_ui() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
