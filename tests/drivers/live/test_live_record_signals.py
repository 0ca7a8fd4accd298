"""``live --record``: SIGTERM and SIGHUP flush and close the recording as Ctrl-C does."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


def _printed(lines: list[str]) -> list[tuple[str, int]]:
    return _events([json.loads(x) for x in lines if x.strip()])


def _events(objs: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(kind, log_pos) of every binlog event the server sent, in order."""
    out = []
    for o in objs:
        if o.get("kind") == "binlog_event" and o.get("direction") == "server":
            out.append((str(o["event_type"]), int(o["log_pos"])))
    return out


@pytest.mark.network
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_signal_flushes_and_closes_the_recording(
        mock_master: Callable[..., Any], tmp_path: Path, sig: signal.Signals) -> None:
    mm = mock_master(binlogs=[CAPTURE])
    rec = tmp_path / "session.pcapng"
    env = {**os.environ, "MYSQL_PWD": "replpass", "HOME": str(tmp_path),
           "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "live", "--json", "--host", mm.host, "--port",
         str(mm.port), "-u", "repl", "--ssl-mode", "DISABLED", "--no-reconnect",
         "--start", "mysql-bin.000001:4", "--record", str(rec)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
        stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    lines: list[str] = []
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")),
                              daemon=True)
    reader.start()
    # the whole capture is served, then the blocking dump waits: stop it there
    deadline = time.monotonic() + 60
    seen = -1
    while time.monotonic() < deadline and (seen != len(lines) or not _printed(lines)):
        seen = len(lines)
        time.sleep(1.0)
    proc.send_signal(sig)
    reader.join(30)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    printed = _printed(lines)
    assert len(printed) == 265  # every event of the capture, up to its final ROTATE
    buf = io.StringIO()
    assert main(["pcap", "--json", str(rec)], out=buf, err=io.StringIO()) == 0
    recorded = _events([json.loads(x) for x in buf.getvalue().splitlines() if x.strip()])
    assert recorded == printed  # everything printed is in the recording, closed and readable
