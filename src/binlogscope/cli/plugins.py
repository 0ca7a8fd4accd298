"""Subcommands that other installed packages add to the ``binlogscope`` command line.

binlogscope imports none of those packages by name: it asks the installed distributions for
entry points.

* group ``binlogscope.commands``: each entry point's object is a :class:`CommandPlugin` - a
  name, a help line, ``add_arguments(parser)`` and ``run(args, out, err) -> exit code``; or an
  :class:`ArgvPlugin` - a name, a help line and ``main(argv, out, err) -> exit code``, which
  gets every argument after its name unparsed (it has its own command line, subcommands and
  ``--help``). The mock master registers ``binlogscope mock-master`` this way: the same
  command line as ``mock-master``.
* group ``binlogscope.demo``: a function ``(capture, out, err, *, plain, json_output, brief)
  -> exit code`` that ``binlogscope demo`` runs instead of decoding the bundled file (the mock
  master serves the capture in-process and ``binlogscope live`` watches it).

A package's entry points appear when it is installed (``pip install -e .`` after a change).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, TextIO

COMMANDS_GROUP = "binlogscope.commands"
DEMO_GROUP = "binlogscope.demo"


class CommandPlugin(Protocol):
    name: str
    help: str
    description: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> int: ...


class ArgvPlugin(Protocol):
    name: str
    help: str
    description: str

    def main(self, argv: list[str], out: TextIO, err: TextIO) -> int: ...


DemoRunner = Callable[..., int]
#: the attribute an ArgvPlugin's arguments are kept in
_ARGV = "plugin_argv"


@functools.cache
def command_plugins() -> dict[str, CommandPlugin | ArgvPlugin]:
    """The installed subcommand plugins by name (an entry point that fails to load is left
    out: a broken plugin must not break the rest of the command line)."""
    out: dict[str, CommandPlugin | ArgvPlugin] = {}
    for ep in entry_points(group=COMMANDS_GROUP):
        try:
            plugin = ep.load()
        except Exception:  # a broken plugin must not break the command line
            continue
        out[str(plugin.name)] = plugin
    return out


def add_plugin_parsers(sub: Any) -> None:
    """A sub-parser per installed plugin (``sub``: the parser's ``add_subparsers()``)."""
    for name, plugin in sorted(command_plugins().items()):
        if _takes_argv(plugin):
            # no option of its own (prefix \0): every argument, --help too, goes to the plugin
            p = sub.add_parser(name, help=plugin.help, description=plugin.description,
                               add_help=False, prefix_chars="\0")
            p.add_argument(_ARGV, nargs=argparse.REMAINDER, metavar="...",
                           help=f"the arguments of {name} (`{name} --help`: every option)")
        else:
            p = sub.add_parser(name, help=plugin.help, description=plugin.description)
            plugin.add_arguments(p)  # type: ignore[union-attr]


def _takes_argv(plugin: object) -> bool:
    return callable(getattr(plugin, "main", None))


def run_plugin(command: str | None, args: argparse.Namespace, out: TextIO,
               err: TextIO) -> int | None:
    """Run the plugin subcommand ``command``; None when no plugin has that name."""
    plugin = command_plugins().get(command or "")
    if plugin is None:
        return None
    if _takes_argv(plugin):
        return plugin.main(list(getattr(args, _ARGV, [])), out, err)  # type: ignore[union-attr]
    return plugin.run(args, out, err)  # type: ignore[union-attr]


@functools.cache
def demo_runner() -> DemoRunner | None:
    """The installed live demo (the first ``binlogscope.demo`` entry point), else None."""
    for ep in entry_points(group=DEMO_GROUP):
        try:
            runner: DemoRunner = ep.load()
        except Exception:  # as in command_plugins
            continue
        return runner
    return None


def run_demo(capture: Path, out: TextIO, err: TextIO, *, plain: bool, json_output: bool,
             brief: bool, **extra: bool) -> int | None:
    """Run the installed live demo over ``capture``; None when none is installed.
    ``extra``: ``tour``/``teach`` (only passed when asked for)."""
    runner = demo_runner()
    if runner is None:
        return None
    return runner(capture, out, err, plain=plain, json_output=json_output, brief=brief,
                  **extra)
