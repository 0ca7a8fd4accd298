"""``binlogscope proxy`` ends within seconds when its terminal hangs up (a killed tmux, a closed
ssh session: only the session's leader is signalled - drivers/hangup.py), in the TUI and
printing, after a real client's dump through it, and its ``--record`` capture is complete."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pty_support import Terminal
from tests.watch_support import CLI, ENV, binlog_events, master_status, remote_dump_command

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(180)]

LIMIT = 5.0


@pytest.mark.parametrize("mode", ["tui", "json"])
def test_the_proxy_ends_when_its_terminal_goes_away(mariadb: Any, tmp_path: Path,
                                                    mode: str) -> None:
    name, pos = master_status(mariadb)
    with mariadb.connect() as conn, conn.cursor() as cur:  # something to dump from pos on
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_hangup (id BIGINT PRIMARY KEY)")
        cur.execute("INSERT INTO proxy_hangup VALUES (%s)", (time.time_ns(),))
        conn.commit()
    rec = tmp_path / "session.pcapng"
    errors = tmp_path / "err"  # (stderr: what the proxy says after the hang-up is kept)
    term = Terminal(["proxy", "--listen", "127.0.0.1:0", "--upstream",
                     f"{mariadb.host}:{mariadb.port}", "--record", str(rec),
                     *(["--json"] if mode == "json" else [])],
                    stderr=errors if mode == "json" else None)
    listening = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")
    shown = (lambda out: errors.read_bytes()) if mode == "json" else (lambda out: out)
    term.wait_for(lambda out: listening.search(shown(out)) is not None
                  and (mode == "json" or b"palette" in out))
    m = listening.search(shown(term.out))
    assert m is not None
    dump = subprocess.run(remote_dump_command(mariadb, int(m.group(1)), name, pos),
                          capture_output=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    term.read(0.5)
    term.hang_up()
    rc, took = term.ended_within(LIMIT)
    said = errors.read_text() if mode == "json" else ""
    assert rc in (0, 129) and took < LIMIT, (rc, said)
    assert "Traceback" not in said
    res = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(rec)],
                         capture_output=True, text=True, env=ENV, timeout=60)
    seen = binlog_events(res.stdout.splitlines())
    # the whole dump recorded, the capture closed
    assert seen and seen[-1][0] == name, (said, res.stderr[-2000:])
