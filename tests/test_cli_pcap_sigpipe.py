"""``pcap``'s output and SIGPIPE: at its default while it writes to the process's standard
output (``| head`` ends the process, as a C tool's), and as it was once ``main()`` returns - a
``main()`` called in-process (a test, an embedding program) must not leave the process dying
on its next write to a socket whose peer is gone (a pytest worker ran a proxy test after a
pcap test and died)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from binlogscope.cli.main import main

CAPTURE = next((Path(__file__).resolve().parents[1] / "captures").glob("*.pcap"))


def test_in_process_pcap_leaves_sigpipe_as_it_found_it(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    before = signal.getsignal(signal.SIGPIPE)
    assert before == signal.SIG_IGN  # (Python's own setting)
    rc = main(["pcap", "--json", str(CAPTURE)])  # (its output: sys.stdout, captured)
    assert rc == 0
    assert capsys.readouterr().out.count("\n") > 10
    assert signal.getsignal(signal.SIGPIPE) == before


def test_a_reader_gone_still_ends_pcap_quietly() -> None:
    """``pcap --json CAPTURE | head -1``: the process ends at the closed pipe, no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "pcap", "--json",
                             str(CAPTURE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    assert first.startswith(b"{")
    assert b"Traceback" not in err and rc in (0, -signal.SIGPIPE), (rc, err)
