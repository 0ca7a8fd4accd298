"""``live`` against the real MariaDB ends within seconds when its terminal hangs up (a killed
tmux, a closed ssh session: only the session's leader is signalled, the command sees a dead
terminal - drivers/hangup.py), in the TUI and printing, and the printing run keeps its state
file's last commit; and SIGHUP itself, as before."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pty_support import Terminal
from tests.watch_support import master_status

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(180)]

LIMIT = 5.0


def _live(mariadb: Any, tmp_path: Path, *args: str) -> Terminal:
    return Terminal(["live", "--host", mariadb.host, "--port", str(mariadb.port), "-u",
                     mariadb.repl_user, "--ssl-mode", "DISABLED", *args],
                    env={"MYSQL_PWD": mariadb.repl_password, "HOME": str(tmp_path)})


@pytest.mark.parametrize("how", ["terminal closed", "SIGHUP"])
def test_the_live_tui_ends_when_its_terminal_hangs_up(mariadb: Any, tmp_path: Path,
                                                      how: str) -> None:
    term = _live(mariadb, tmp_path)
    term.wait_for(b"palette")  # (the footer: the TUI is up)
    if how == "SIGHUP":
        term.proc.send_signal(signal.SIGHUP)
    else:
        term.hang_up()
    rc, took = term.ended_within(LIMIT)
    term.kill()
    assert rc == 0 and took < LIMIT
    assert b"Traceback" not in term.out


@pytest.mark.parametrize("how", ["terminal closed", "SIGHUP"])
def test_printing_live_ends_when_its_terminal_goes_away_with_its_last_commit(
        mariadb: Any, tmp_path: Path, how: str) -> None:
    state = tmp_path / "state.json"
    term = _live(mariadb, tmp_path, "--json", "--heartbeat", "1", "--state", str(state))
    term.wait_for(b'"event_type":"HEARTBEAT')  # (at the server's head: idle, heartbeats)
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS live_hangup (id BIGINT PRIMARY KEY)")
        cur.execute("INSERT INTO live_hangup VALUES (%s)", (time.time_ns(),))
        conn.commit()
    name, pos = master_status(mariadb)
    at_head = re.compile(rb'"log_pos":%d,[^\n]*"event_type":"HEARTBEAT' % pos)
    term.wait_for(lambda out: at_head.search(out) is not None)  # the insert, then idle again
    if how == "SIGHUP":
        term.proc.send_signal(signal.SIGHUP)
    else:
        term.hang_up()
    rc, took = term.ended_within(LIMIT)
    term.kill()
    assert rc == 128 + signal.SIGHUP and took < LIMIT
    saved = json.loads(state.read_text())
    assert (name, pos) in _positions(saved), saved  # the last commit: the server's head


def _positions(obj: Any) -> list[tuple[str, int]]:
    """Every (file, position) pair written in the state file, wherever it nests them."""
    found: list[tuple[str, int]] = []
    if isinstance(obj, dict):
        f = obj.get("log_file") or obj.get("file")
        p = obj.get("log_pos") or obj.get("pos") or obj.get("position")
        if isinstance(f, str) and isinstance(p, int):
            found.append((f, p))
        for v in obj.values():
            found += _positions(v)
    elif isinstance(obj, list):
        for v in obj:
            found += _positions(v)
    return found
