"""No raw control character reaches a terminal: every text output and log line is escaped here.

A statement, a table name, a dump file name or a REGISTER host is chosen by whoever runs SQL on
the server or connects to the mock master; printed raw, an ESC sequence sets the operator's
window title, clears the screen or (OSC 52) writes their clipboard, a BEL rings, a CR or a
newline forges a log line. :func:`escape_controls` writes the C0 controls (but the newline and
the tab of the text's own layout), DEL, the C1 controls and the Unicode bidirectional overrides
(which reorder what a line seems to say) as visible ``\\xNN``/``\\uNNNN`` escapes - what
``less``, ``ls -b`` and Python's ``repr`` do - and leaves everything else as it is.

:class:`EscapingText` applies it to every write of a text stream: ``binlogscope``'s entry point
wraps stdout and stderr with it (:func:`binlogscope.cli.main.main`), so every ``print`` and
``out.write`` of every command is covered, whatever renderer made the text. JSON output is
not text: :class:`~binlogscope.render.json_out.LineWriter` writes its lines to the stream under
the wrapper (:attr:`EscapingText.unescaped`; JSON escapes the C0 controls itself, a reader of
JSON gets the value) and escapes its text lines with :func:`escape_controls`. A single-line
field (a log line's values) uses :func:`~binlogscope.wire.fields.escaped`, which escapes the
newline too.
"""

from __future__ import annotations

import re
from typing import IO, Any

#: what is escaped: C0 but tab and newline, DEL, C1, the bidi embeddings/overrides/isolates,
#: and lone surrogates (an undecodable byte kept by ``surrogateescape``: written raw under the C
#: locale, a UnicodeEncodeError under UTF-8)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                       "\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    n = ord(m.group())
    if 0xDC80 <= n <= 0xDCFF:  # (surrogateescape: the undecodable byte itself)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def escape_controls(text: str) -> str:
    """``text`` with its control characters (not ``\\n``/``\\t``) as visible escapes."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)


class EscapingText:
    """A text stream whose writes are escaped (:func:`escape_controls`); everything else is the
    wrapped stream's (``isatty``, ``fileno``, ``encoding``, ``buffer``, ``flush``...)."""

    def __init__(self, stream: IO[str]) -> None:
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)


def unescaped(stream: Any) -> Any:
    """The stream under an :class:`EscapingText` (else ``stream``)."""
    return stream.unescaped if isinstance(stream, EscapingText) else stream


__all__ = ["EscapingText", "escape_controls", "unescaped"]
