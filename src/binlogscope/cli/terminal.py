"""When a command opens the TUI: one rule for every command.

The inspector opens only when both standard input and standard output are a terminal, the
command writes to the real standard output (not a stream a program or test handed in), its
input is not standard input (which then carries the data, not the keys), and no output option
was asked for. Each command names its output options; everything else is the same.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from binlogscope.render.escape import unescaped

#: the output options that mean "print, don't open the TUI", per command
FILE_OUTPUTS = ("json", "tree", "summary", "plain", "verbose",
                "start_datetime", "stop_datetime", "database")  # (selections only text applies)
PCAP_OUTPUTS = ("json", "summary", "plain")
FOLLOW_OUTPUTS = ("json", "summary", "plain", "brief")  # sniff, proxy
LIVE_OUTPUTS = ("json", "plain", "out")


def wants_tui(args: argparse.Namespace, out: TextIO, outputs: tuple[str, ...], *,
              reads_stdin: bool = False) -> bool:
    """True when the command should open the TUI (see the module's docstring)."""
    if any(getattr(args, name, None) for name in outputs):
        return False
    if unescaped(out) is not sys.stdout or reads_stdin:
        return False
    return sys.stdin.isatty() and out.isatty()
