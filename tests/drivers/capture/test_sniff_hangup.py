"""``binlogscope sniff -i lo`` ends within seconds when its terminal hangs up (a killed tmux, a
closed ssh session: only the session's leader is signalled - drivers/hangup.py), in the TUI and
printing, after it saw a real client's dump of the test MariaDB."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import can_capture
from tests.pty_support import Terminal
from tests.watch_support import master_status, remote_dump_command

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(180)]

LIMIT = 5.0


@pytest.mark.parametrize("mode", ["tui", "json"])
def test_sniff_ends_when_its_terminal_goes_away(mariadb: Any, tmp_path: Path,
                                                mode: str) -> None:
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    name, pos = master_status(mariadb)
    with mariadb.connect() as conn, conn.cursor() as cur:  # something to dump from pos on
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_hangup (id BIGINT PRIMARY KEY)")
        cur.execute("INSERT INTO sniff_hangup VALUES (%s)", (time.time_ns(),))
        conn.commit()
    errors = tmp_path / "err"  # (--json: stderr kept, to see what it said after the hang-up)
    term = Terminal(["sniff", "-i", "lo", "--port", str(mariadb.port),
                     *(["--json"] if mode == "json" else [])],
                    stderr=errors if mode == "json" else None)
    if mode == "json":
        term.wait_for(lambda out: b"capturing on lo" in errors.read_bytes())
    else:
        term.wait_for(b"palette")  # (the footer: the TUI is up)
    dump = subprocess.run(remote_dump_command(mariadb, mariadb.port, name, pos),
                          capture_output=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    if mode == "json":
        term.wait_for(b'"kind":"binlog_event"')  # (it saw the dump)
    else:
        end = time.monotonic() + 1.0  # (the TUI shows the dump as it comes)
        while time.monotonic() < end:
            term.read(0.1)
    term.hang_up()
    rc, took = term.ended_within(LIMIT)
    said = errors.read_text() if mode == "json" else ""
    assert rc in (0, 129) and took < LIMIT, (rc, said)
    assert "Traceback" not in said
