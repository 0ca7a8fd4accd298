"""What the subcommands' modules share: the program name and the ``--table`` pattern."""

from __future__ import annotations

import re
from typing import TextIO

PROG = "binlogscope"


class BadPatternError(Exception):
    """``--table`` is not a regular expression (the message is printed; exit code 2)."""


def table_pattern(text: str | None, err: TextIO) -> re.Pattern[str] | None:
    """The compiled ``--table`` regex (None when not given); prints one line and raises
    :class:`BadPatternError` when it does not compile."""
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        print(f"{PROG}: error: --table: bad regular expression: {exc}", file=err)
        raise BadPatternError(str(exc)) from None


__all__ = ["PROG", "BadPatternError", "table_pattern"]
