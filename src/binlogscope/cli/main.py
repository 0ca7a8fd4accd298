"""The ``binlogscope`` command line: the parser and the dispatch to each subcommand.

Subcommands: ``file``, ``pcap``, ``sniff``, ``live``, ``proxy``, ``export``, ``analyze``,
``explain``, ``locate``, ``redact``, ``demo`` (the bundled capture), and those of installed
plugins (``mock-master``). Each command's module is imported only when it runs.

Contract: a CLI never shows a traceback for bad input or a refused connection - one clear line
on stderr and a non-zero exit (1: the input is damaged or missing, 2: usage).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from binlogscope import __version__
from binlogscope.cli.common import PROG
from binlogscope.cli.terminal import FILE_OUTPUTS, wants_tui
from binlogscope.render.escape import EscapingText

#: the built-in subcommands, in --help's order: name -> the module that adds its parser and runs
#: it (``add_NAME_parser``, ``cmd_NAME``). A command's module is imported when that command runs,
#: every one only when the whole parser is built (no command, --help, a name not listed here):
#: a run of ``live`` does not pay for importing ``export``, ``pcap`` or the plugins' entry points
#: (importlib.metadata) - start-up is a share of every short run (bench/README.md, live --json).
_BUILTIN: dict[str, str] = {
    "file": "binlogscope.cli.file",
    "export": "binlogscope.cli.export",
    "analyze": "binlogscope.cli.analyze",
    "live": "binlogscope.cli.live",
    "pcap": "binlogscope.cli.pcap",
    "sniff": "binlogscope.cli.sniff",
    "proxy": "binlogscope.cli.proxy",
    "explain": "binlogscope.cli.explain",
    "locate": "binlogscope.cli.locate",
    "redact": "binlogscope.cli.redact",
}
#: the plugins' subcommands (mock-master) come after these in --help
_BEFORE_PLUGINS = ("file", "demo", "export", "analyze", "live")


def _command(name: str, what: str) -> Callable[..., Any]:
    """``add_NAME_parser`` (what="add") or ``cmd_NAME`` (what="cmd") of built-in ``name``."""
    module = importlib.import_module(_BUILTIN[name])
    attr = f"add_{name}_parser" if what == "add" else f"cmd_{name}"
    fn: Callable[..., Any] = getattr(module, attr)
    return fn


#: subcommands still being built (name -> what it will do); each says so and exits 2
_PENDING: dict[str, str] = {}


#: the demo's binlog: captures/ holds it; a built package (wheel) carries a copy in
#: binlogscope/demo/ (setup.py copies it there)
DEMO_BINLOG = "mariadb-10.11-workload.000001"


def _bundled_capture() -> Path | None:
    """The small real MariaDB binlog ``demo`` opens: the installed package's copy (a wheel:
    ``binlogscope/demo/``, read through importlib.resources), else captures/ of the checkout
    this module runs from (an editable install), else of the current directory."""
    from importlib.resources import files as resource_files

    packaged = resource_files("binlogscope").joinpath("demo", DEMO_BINLOG)
    if isinstance(packaged, Path) and packaged.is_file():
        return packaged
    here = Path(__file__).resolve()  # (src/binlogscope/cli/main.py: the checkout is parents[3])
    for root in (here.parents[3], Path.cwd()):
        cap = root / "captures"
        if cap.is_dir():
            files = sorted(p for p in cap.iterdir() if p.name.startswith("mariadb-")
                           and not p.name.endswith((".md", ".pcap", ".pcapng")))
            if files:
                return files[0]
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``argv`` whose first word is a built-in command, only
    that command's sub-parser (the others' modules are not imported)."""
    p = argparse.ArgumentParser(
        prog=PROG,
        description="See and test the MySQL/MariaDB replication protocol byte by byte.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    only = argv[0] if argv else None
    if only in _BUILTIN:
        _command(only, "add")(sub)
        return p
    for name in _BEFORE_PLUGINS:
        if name == "demo":
            _add_demo_parser(sub)
        else:
            _command(name, "add")(sub)
    from binlogscope.cli.plugins import add_plugin_parsers

    add_plugin_parsers(sub)  # subcommands of installed packages (mock-master)
    for name in _BUILTIN:
        if name not in _BEFORE_PLUGINS:
            _command(name, "add")(sub)
    for name, what in _PENDING.items():
        sp = sub.add_parser(name, help=f"{what} - not built yet")
        sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _add_demo_parser(sub: Any) -> None:
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
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    try:
        if args.command in _BUILTIN:
            return int(_command(args.command, "cmd")(args, out, err))
        if args.command is None and not (_isatty(out) and _isatty(sys.stdin)):
            # no command into a pipe or a file: the usage, not a demo session's output
            parser.print_usage(err)
            print(f"{PROG}: no command given (`{PROG} --help` lists them; `{PROG} demo` "
                  "runs the demo; with no command on a terminal the demo opens)", file=err)
            return 2
        if args.command == "demo" or args.command is None:
            from binlogscope.cli.file import cmd_file, file_args
            from binlogscope.cli.plugins import run_demo

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
            return int(cmd_file(ns, out, err))
        from binlogscope.cli.plugins import run_plugin

        rc = run_plugin(args.command, args, out, err)
        if rc is not None:
            return rc
        if args.command in _PENDING:
            print(f"{PROG}: {args.command}: not built yet ({_PENDING[args.command]})", file=err)
            return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help(err)
    return 2
