"""The mock master's subcommands in the ``binlogscope`` command line.

``binlogscope`` finds them through entry points (see :mod:`binlogscope.cli.plugins`), declared
in pyproject.toml: :data:`MOCK_MASTER` (group ``binlogscope.commands``) is
``binlogscope mock-master`` - the same command line as ``mock-master`` - and
:func:`demo_session` (group ``binlogscope.demo``) is what ``binlogscope demo`` runs. Importing
this module is cheap: the server is imported when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

PROG = "binlogscope"


class MockMasterCommand:
    """``binlogscope mock-master ...``: exactly ``mock-master ...`` (serve, record, actions;
    serve is the default; binlog files as positional arguments)."""

    name = "mock-master"
    help = "a scriptable mock primary that replays binlogs to real clients"
    description = ("Serve binlog files, captures or recordings to real replication clients "
                   "(replicas, CDC connectors), with scripted faults. Same as "
                   "`mock-master` and `python -m mock_master`.")

    def main(self, argv: list[str], out: TextIO, err: TextIO) -> int:
        from mock_master.__main__ import main

        return main(argv, out, err, prog=f"{PROG} mock-master")


MOCK_MASTER = MockMasterCommand()


def demo_session(capture: Path | str, out: TextIO | None = None, err: TextIO | None = None,
                 *, plain: bool = True, json_output: bool = False, brief: bool = False,
                 count: int | None = None) -> int:
    """Start the mock master in-process on a free loopback port, serving ``capture``, and run
    ``binlogscope live`` against it (non-blocking dump: it ends with the binlog).

    Plain (or JSON) text output; with ``plain=False`` on a terminal the live TUI opens instead
    (semi-sync and a 2 s heartbeat, blocking dump: the session stays up until the user quits).
    """
    from binlogscope.cli.live import cmd_live
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster

    out = out or sys.stdout
    err = err or sys.stderr
    sc = Scenario(sources=[BinlogSource([capture])])
    try:
        mm = ThreadedMockMaster(sc).start()
    except Exception as exc:
        print(f"{PROG}: demo: cannot start the mock master: {exc}", file=err)
        return 1
    try:
        first = mm.master.stream.files[0].name
        tui = not plain and not json_output
        if not json_output and not tui:
            print(f"-- mock master serving {Path(capture).name} on 127.0.0.1:{mm.port} "
                  f"(in-process, no server needed)", file=out)
        from binlogscope.cli.live import add_live_parser

        parser = argparse.ArgumentParser(prog=PROG)
        add_live_parser(parser.add_subparsers(dest="command"))
        argv = ["live", "--host", "127.0.0.1", "--port", str(mm.port), "--user", "repl",
                "--ssl-mode", "DISABLED", "--start", f"{first}:4", "--no-reconnect"]
        if tui:
            argv += ["--semi-sync", "--heartbeat", "2"]
        else:
            argv += ["--non-blocking", "--json" if json_output else "--plain"]
        if brief:
            argv.append("--brief")
        if count is not None:
            argv += ["--count", str(count)]
        args = parser.parse_args(argv)
        import os

        old = os.environ.get("MYSQL_PWD")
        os.environ["MYSQL_PWD"] = "replpass"
        try:
            return cmd_live(args, out, err)
        finally:
            if old is None:
                os.environ.pop("MYSQL_PWD", None)
            else:
                os.environ["MYSQL_PWD"] = old
    finally:
        mm.stop()
