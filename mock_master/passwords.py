"""Passwords on a command line: never in argv (every user of the machine can read it), from
``--password-file`` (its first line) or ``--password-env``; shared by ``mock-master serve``,
``record`` and ``diff``."""

from __future__ import annotations

import argparse

from mock_master.scenario.scenarios import password_from_env, read_password_file


class _NoPasswordInArgv(argparse.Action):
    """``--password``: refused with a clear message (a password in argv is visible to all)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                  values: object, option_string: str | None = None) -> None:
        parser.error("passwords are not taken from the command line (every user of the machine "
                     "can read it): use --password-file FILE or --password-env VARIABLE")


def add_password_arguments(p: argparse.ArgumentParser, what: str) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--password-file", metavar="FILE", help=f"{what}: the first line of FILE")
    g.add_argument("--password-env", metavar="VARIABLE",
                   help=f"{what}: the value of this environment variable")
    p.add_argument("--password", nargs="?", action=_NoPasswordInArgv, help=argparse.SUPPRESS)


def password_from_args(args: argparse.Namespace, default: str) -> str:
    """The password of ``--password-file`` / ``--password-env``, else ``default``."""
    if args.password_file:
        return read_password_file(args.password_file)
    if args.password_env:
        return password_from_env(args.password_env)
    return default
