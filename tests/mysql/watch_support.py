"""What the tests of ``sniff`` and ``proxy`` share: the CLI run with this tree's code, the binlog
events of a ``--json`` output, and the events the server's own files hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
CLI = [sys.executable, "-m", "binlogscope"]


def binlog_events(lines: list[str]) -> list[tuple[str, int, int, str]]:
    """(binlog_file, offset, log_pos, event_type) of every binlog event in JSON lines."""
    out = []
    for line in lines:
        o = json.loads(line)
        if o.get("kind") == "binlog_event" and o.get("offset") is not None:
            out.append((o["binlog_file"], o["offset"], o["log_pos"], o["event_type"]))
    return out


def server_events(binlog_dir: Path, names: list[str]) -> dict[tuple[str, int], tuple[int, str]]:
    """(file, offset) -> (log_pos, event_type) of the server's binlog files, by ``file --json``."""
    expected: dict[tuple[str, int], tuple[int, str]] = {}
    for name in names:
        res = subprocess.run([*CLI, "file", "--json", str(binlog_dir / name)],
                             capture_output=True, text=True, env=ENV, timeout=60)
        for line in res.stdout.splitlines():
            o = json.loads(line)
            expected[(name, o["offset"])] = (o["log_pos"], o["event_type"])
    return expected
