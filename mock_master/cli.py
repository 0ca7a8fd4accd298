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
#: the in-process demo's replication password (its mock master accepts any; the tour's teaching
#: switch recomputes the login proof from it)
DEMO_PASSWORD = "replpass"


def _tour(args: argparse.Namespace, err: TextIO, teach: bool) -> int:
    """The live TUI over the demo session with the guided tour started."""
    from binlogscope.cli.live import live_settings
    from binlogscope.drivers.live.replica import LiveError
    from binlogscope.inspector.sources.live import LiveSource
    from binlogscope.tui import run_tui

    settings = live_settings(args, err)
    if settings is None:
        return 2
    try:
        return run_tui(LiveSource(settings, count=args.count), tour=True,
                       teach=DEMO_PASSWORD if teach else None)
    except LiveError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return 1


def demo_session(capture: Path | str, out: TextIO | None = None, err: TextIO | None = None,
                 *, plain: bool = True, json_output: bool = False, brief: bool = False,
                 count: int | None = None, tour: bool = False, teach: bool = False) -> int:
    """Start the mock master in-process on a free loopback port, serving ``capture``, and run
    ``binlogscope live`` against it (non-blocking dump: it ends with the binlog).

    Plain (or JSON) text output; with ``plain=False`` on a terminal the live TUI opens instead
    (semi-sync and a 2 s heartbeat, blocking dump: the session stays up until the user quits).
    ``tour`` starts the TUI's guided tour; ``teach`` lets it show this demo's own login
    scramble and recompute the password proof (the password is the demo's, ``replpass``).
    """
    from binlogscope.cli.live import cmd_live
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster

    out = out or sys.stdout
    err = err or sys.stderr
    # the tour shows a semi-sync ACK: every replayed transaction asks for one
    sc = Scenario(sources=[BinlogSource([capture])], ack_every_transaction=tour)
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
        os.environ["MYSQL_PWD"] = DEMO_PASSWORD
        try:
            if tour and tui:
                return _tour(args, err, teach)
            return cmd_live(args, out, err)
        finally:
            if old is None:
                os.environ.pop("MYSQL_PWD", None)
            else:
                os.environ["MYSQL_PWD"] = old
    finally:
        mm.stop()
