"""A TUI whose terminal hangs up ends within seconds, cleanly.

A terminal that goes away (tmux killed, an ssh session closed) signals only its session's
leader; the command run by it sees an end-of-file on its input and EIO on its output, which
Textual's input thread took for piped input: the TUI stayed alive for ever, its pty gone
(drivers/hangup.py). Both ways a hang-up arrives are tested: the terminal closed with no signal,
and SIGHUP itself."""

from __future__ import annotations

import signal

import pytest

from tests.pty_support import ROOT, Terminal
from tests.tui.conftest import CRC

pytestmark = pytest.mark.timeout(120)

LIMIT = 5.0  # seconds from the hang-up to the end of the process


@pytest.mark.parametrize("args, ready", [
    (["file", str(CRC)], b"303 events"),
    (["pcap", str(ROOT / "captures" / "pcap-semisync.pcap")], b"palette"),
], ids=["file", "pcap"])
def test_the_tui_ends_when_its_terminal_goes_away(args: list[str], ready: bytes) -> None:
    term = Terminal(args)
    term.wait_for(ready)
    term.hang_up()
    rc, took = term.ended_within(LIMIT)
    assert rc == 0 and took < LIMIT


def test_the_tui_ends_on_sighup_with_the_terminal_restored() -> None:
    term = Terminal(["file", str(CRC)])
    term.wait_for(b"303 events")
    term.proc.send_signal(signal.SIGHUP)
    rc, took = term.ended_within(LIMIT)
    term.kill()
    assert rc == 0 and took < LIMIT
    assert b"\x1b[?1049l" in term.out  # (the terminal's main screen back)
    assert b"Traceback" not in term.out


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_quitting_as_the_terminal_goes_away(delay: float) -> None:
    """``q`` and, during the app's shutdown, the hang-up (a test's tmux kill-server right after
    its last key): the TUI still ends (its writer thread survives the refused writes)."""
    import os
    import time

    term = Terminal(["file", str(CRC)])
    term.wait_for(b"303 events")
    os.write(term.master, b"q")
    time.sleep(delay)
    term.hang_up()
    rc, took = term.ended_within(LIMIT)
    assert took < LIMIT and rc in (0, 129), rc
