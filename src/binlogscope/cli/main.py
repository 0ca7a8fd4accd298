"""The ``binlogscope`` command line.

Subcommands: ``file`` (binlog files on disk), ``demo`` (the bundled capture), and the ones still
being built (``live``, ``pcap``, ``export``, ``analyze``, ``mock-master``), which say so and exit 2.

Contract: a CLI never shows a traceback for bad input or a refused connection - one clear line
on stderr and a non-zero exit (1: the input is damaged or missing, 2: usage).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, cast

from binlogscope import __version__
from binlogscope.cli.analyze import add_analyze_parser, cmd_analyze
from binlogscope.cli.common import PROG
from binlogscope.cli.explain import add_explain_parser, cmd_explain
from binlogscope.cli.export import add_export_parser, cmd_export
from binlogscope.cli.file import add_file_parser, cmd_file, file_args
from binlogscope.cli.live import add_live_parser, cmd_live
from binlogscope.cli.locate import add_locate_parser, cmd_locate
from binlogscope.cli.pcap import add_pcap_parser, cmd_pcap
from binlogscope.cli.plugins import add_plugin_parsers, run_demo, run_plugin
from binlogscope.cli.proxy import add_proxy_parser, cmd_proxy
from binlogscope.cli.redact import add_redact_parser, cmd_redact
from binlogscope.cli.sniff import add_sniff_parser, cmd_sniff
from binlogscope.cli.terminal import FILE_OUTPUTS, wants_tui
from binlogscope.render.escape import EscapingText

#: subcommands still being built (name -> what it will do); each says so and exits 2
_PENDING: dict[str, str] = {}


def _bundled_capture() -> Path | None:
    """The small real MariaDB binlog that ships in captures/ (used by ``demo``)."""
    here = Path(__file__).resolve()
    for root in (here.parents[2], Path.cwd()):
        cap = root / "captures"
        if cap.is_dir():
            files = sorted(p for p in cap.iterdir() if p.name.startswith("mariadb-")
                           and not p.name.endswith((".md", ".pcap", ".pcapng")))
            if files:
                return files[0]
    return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="See and test the MySQL/MariaDB replication protocol byte by byte.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    add_file_parser(sub)

    d = sub.add_parser("demo", help="watch a replica session over the bundled real MariaDB binlog "
                       "(in-process mock master; no server needed)")
    d.add_argument("--json", action="store_true", help="one JSON object per line instead of "
                   "the TUI")
    d.add_argument("--plain", action="store_true", help="plain text instead of the TUI")
    d.add_argument("--brief", action="store_true", help="one line per packet or event")
    d.add_argument("--live", action="store_true",
                   help="(the default) serve the capture with the in-process mock master and "
                   "watch it with `binlogscope live`")
    d.add_argument("--file", action="store_true",
                   help="decode the bundled binlog file instead (`binlogscope file` on it)")
    d.add_argument("--tour", action="store_true",
                   help="a guided walk through the session in the TUI: the cursor moves from "
                   "the greeting to the login, the dump request and the events, each step "
                   "explained (] next, [ back)")
    d.add_argument("--teach", action="store_true",
                   help="with --tour: show the demo's own login scramble and recompute "
                   "mysql_native_password from it by hand (the in-process demo only: every "
                   "other surface masks scrambles and auth responses)")

    add_export_parser(sub)
    add_analyze_parser(sub)

    add_live_parser(sub)
    add_plugin_parsers(sub)  # subcommands of installed packages (mock-master)
    add_pcap_parser(sub)
    add_sniff_parser(sub)
    add_proxy_parser(sub)
    add_explain_parser(sub)
    add_locate_parser(sub)
    add_redact_parser(sub)

    for name, what in _PENDING.items():
        sp = sub.add_parser(name, help=f"{what} - not built yet")
        sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    # every text line of every command is escaped: no raw control character from a statement,
    # a name or a peer reaches the terminal (render/escape.py; JSON is written under it)
    out = cast("TextIO", EscapingText(out or sys.stdout))
    err = cast("TextIO", EscapingText(err or sys.stderr))
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "file":
            return cmd_file(args, out, err)
        if args.command is None and not (_isatty(out) and _isatty(sys.stdin)):
            # no command into a pipe or a file: the usage, not a demo session's output
            parser.print_usage(err)
            print(f"{PROG}: no command given (`{PROG} --help` lists them; `{PROG} demo` "
                  "runs the demo; with no command on a terminal the demo opens)", file=err)
            return 2
        if args.command == "demo" or args.command is None:
            cap = _bundled_capture()
            if cap is None:
                print(f"{PROG}: error: no bundled capture found (captures/ is missing)", file=err)
                return 1
            ns = file_args([str(cap)], json=getattr(args, "json", False),
                           brief=getattr(args, "brief", False), plain=getattr(args, "plain", False))
            tui = wants_tui(ns, out, FILE_OUTPUTS)
            tour = getattr(args, "tour", False)
            if (tour or getattr(args, "teach", False)) and not tui:
                print(f"{PROG}: demo: --tour and --teach need the TUI (a terminal, without "
                      "--plain/--json)", file=err)
                return 2
            if getattr(args, "teach", False) and not tour:
                print(f"{PROG}: demo: --teach goes with --tour", file=err)
                return 2
            if not getattr(args, "file", False):  # the live demo, when one is installed
                extra = {"tour": True, "teach": bool(args.teach)} if tour else {}
                rc = run_demo(cap, out, err, plain=not tui, json_output=ns.json, brief=ns.brief,
                              **extra)
                if rc is not None:
                    return rc
            return cmd_file(ns, out, err)
        if args.command == "export":
            return cmd_export(args, out, err)
        if args.command == "analyze":
            return cmd_analyze(args, out, err)
        if args.command == "live":
            return cmd_live(args, out, err)
        rc = run_plugin(args.command, args, out, err)
        if rc is not None:
            return rc
        if args.command == "pcap":
            return cmd_pcap(args, out, err)
        if args.command == "sniff":
            return cmd_sniff(args, out, err)
        if args.command == "proxy":
            return cmd_proxy(args, out, err)
        if args.command == "explain":
            return cmd_explain(args, out, err)
        if args.command == "locate":
            return cmd_locate(args, out, err)
        if args.command == "redact":
            return cmd_redact(args, out, err)
        if args.command in _PENDING:
            print(f"{PROG}: {args.command}: not built yet ({_PENDING[args.command]})", file=err)
            return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help(err)
    return 2
