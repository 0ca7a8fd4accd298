"""What the tests of ``sniff`` and ``proxy`` share: the CLI run with this tree's code, the binlog
events of a ``--json`` output, and the events the server's own files hold."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def master_status(server: Any) -> tuple[str, int]:
    """The server's current binlog file and position (SHOW MASTER STATUS)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        name, pos = cur.fetchone()[:2]
    return str(name), int(pos)


def remote_dump_command(server: Any, port: int, name: str, pos: int = 4, *,
                        replica: bool = False) -> list[str]:
    """``mariadb-binlog --read-from-remote-server`` from ``name:pos`` on ``port`` (the server's
    or a proxy's) as the replication account, output dropped: to the end of the last binlog, or
    with ``replica`` blocking for new events as a replica does (``--stop-never``)."""
    exe = shutil.which("mariadb-binlog") or "mariadb-binlog"
    return [exe, "--read-from-remote-server", f"--host={server.host}", f"--port={port}",
            f"--user={server.repl_user}", f"--password={server.repl_password}",
            f"--start-position={pos}", "--stop-never" if replica else "--to-last-log",
            "--result-file=/dev/null", name]
