"""Byte-compile binlogscope and mock_master before a benchmark spawns its processes.

A regular ``pip install`` writes the ``.pyc`` files; an editable install leaves that to the
first import, and with ``PYTHONDONTWRITEBYTECODE`` set (as on some CI and sandbox machines)
never does, so every benchmark process would compile every module again (~0.3 s of start-up on
the reference machine). ``compileall`` writes them regardless of that variable; the processes
then only read them, as an installed copy would.
"""

from __future__ import annotations

import compileall
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ensure_bytecode() -> None:
    for d in (REPO / "src" / "binlogscope", REPO / "mock_master"):
        compileall.compile_dir(str(d), quiet=1)
