"""``export --live`` whose terminal hangs up (a killed tmux, a closed ssh session: only the
session's leader is signalled - drivers/hangup.py) ends within seconds as SIGHUP ends it: at
the next transaction boundary, with everything received published and resumable."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import BinlogSource, Scenario
from tests.export.test_export_live_stop import CAPTURE, _expected, _positions
from tests.pty_support import Terminal

pytestmark = [pytest.mark.network, pytest.mark.timeout(180)]


def test_export_live_publishes_what_it_had_when_its_terminal_goes_away(
        mock_master: Callable[..., Any], tmp_path: Path) -> None:
    # the first events at once, then the rest slowly: the hang-up comes mid-stream
    mm = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
        Action("slow_drip", at=120, args={"bytes_per_second": 20_000})]))
    ds = tmp_path / "ds"
    term = Terminal(["export", "--live", "--host", mm.host, "--port", str(mm.port), "-u",
                     "repl", "--ssl-mode", "DISABLED", "--start", "mysql-bin.000001:4",
                     "--out", str(ds)],
                    env={"MYSQL_PWD": "replpass", "HOME": str(tmp_path)})
    # the progress line on the terminal, once it counts 60 events (of the 120 sent at once:
    # on a loaded machine its first showing can come before 50 were read)
    term.wait_for(lambda screen: _counted(screen) >= 60)
    term.hang_up()
    rc, _ = term.ended_within(15.0)  # (it ends at the next transaction's end)
    assert rc == 129, rc  # as SIGHUP: 128 + 1
    kept = _positions(ds)
    want = _expected()
    assert 50 <= len(kept) < len(want)
    assert sorted(kept) == want[:len(kept)]
    state = json.loads((ds / "_export_state.json").read_text())
    assert state["resume"]["position"]["log_file"] == "mysql-bin.000001"


def _counted(screen: bytes) -> int:
    """The events the last progress line on the screen counts (0: none shown yet)."""
    counts = re.findall(rb"([\d,]+) events, [\d,]+ events/s", screen)
    return int(counts[-1].replace(b",", b"")) if counts else 0
