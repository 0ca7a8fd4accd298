"""The one JSON serializer: every ``--json`` output, export and log is written here.

Built on orjson, for three reasons: speed (it writes a decoded event's dict, row images
included, several times faster than :mod:`json`, which matters when a command prints millions of
events); it returns UTF-8 ``bytes``, which go to ``sys.stdout.buffer`` in big chunks without a
text layer in between; and the values it does not know (``bytes`` of BLOB/BINARY columns,
datetimes, other objects) come to one ``default=`` function, :func:`default`, so the shapes in
:mod:`binlogscope.render.shapes` hand the decoded row values over as they are.

What is written (the same content :mod:`json` gave for the same objects; the bytes differ only
in spacing, orjson writes no space after ``,`` and ``:``):

* ``bytes``/``bytearray``/``memoryview``: lowercase hex; datetimes and other objects: as
  :func:`binlogscope.wire.node.json_value` gives them (its ``name``, else its ``str``); an
  ``Enum`` is written by value (orjson's rule: a shape that means the name writes the name);
* NaN and infinities: ``null`` (JSON has no such numbers);
* text that is not valid Unicode (a CHAR/VARCHAR value whose bytes did not decode in the
  column's charset keeps them as ``surrogateescape`` surrogates, see docs/value-contract.md):
  each undecodable byte becomes U+FFFD, so the output is always valid UTF-8 JSON. Integers
  beyond 64 bits and non-string keys are written as :mod:`json` writes them.

:func:`dumps` is one value, :func:`dumps_line` one line of a JSON-lines stream,
:func:`dumps_pretty` an indented document (the mock master's run log), :class:`LineWriter` the
buffered writer of the commands.
"""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Callable
from typing import IO, Any

import orjson

from binlogscope.render.escape import escape_controls, unescaped
from binlogscope.wire.node import json_value

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME
_LINE = _OPTIONS | orjson.OPT_APPEND_NEWLINE
_PRETTY = _OPTIONS | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
_orjson_dumps = orjson.dumps
_Error = orjson.JSONEncodeError
#: JSON text embedded as it is: the native kernel's text of a rows event's rows (see
#: ``render/shapes.py``); :func:`_clean` keeps it (it is valid UTF-8 JSON, written with the
#: serializer's own rules)
Fragment = orjson.Fragment


def default(value: Any) -> Any:
    """A value orjson does not write itself: bytes as hex, else :func:`json_value`'s form."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return json_value(value)


def _clean(value: Any) -> Any:
    """``value`` with every string made valid Unicode (undecodable bytes as U+FFFD) and every
    non-finite float as None: what orjson refused, made writable."""
    t = type(value)
    if t is str:
        return _clean_str(value)
    if t is Fragment:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {(_clean_str(k) if type(k) is str else k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if value is None or isinstance(value, bool | int):
        return value
    return _clean(default(value))


def _clean_str(s: str) -> str:
    try:
        raw = s.encode("utf-8", "surrogateescape")  # the bytes the decoder could not decode
    except UnicodeEncodeError:
        raw = s.encode("utf-8", "surrogatepass")  # any other lone surrogate
    return raw.decode("utf-8", "replace")


#: the first try's ``default``: bytes (the one unknown type row images hold) as hex, in C; any
#: other value makes it fail, and the line is written again with :func:`default`
_hex = bytes.hex


def _again(obj: Any, option: int) -> bytes:
    """``obj`` written with the full :func:`default`, else made writable (:func:`_clean`)."""
    try:
        return _orjson_dumps(obj, default, option)
    except _Error:
        pass
    cleaned = _clean(obj)
    try:  # (the same writer for what was repaired: a float is written as on every line)
        return _orjson_dumps(cleaned, default, option)
    except _Error:  # an integer beyond 64 bits: json writes it (no Fragment holds one)
        pass
    indent = bool(option & orjson.OPT_INDENT_2)
    text = json.dumps(cleaned, ensure_ascii=False, default=default,
                      indent=2 if indent else None, separators=(",", ": " if indent else ":"))
    return text.encode("utf-8") + (b"\n" if option & orjson.OPT_APPEND_NEWLINE else b"")


def dumps(obj: Any) -> bytes:
    """``obj`` as compact JSON (UTF-8 bytes, no newline)."""
    try:
        return _orjson_dumps(obj, _hex, _OPTIONS)
    except _Error:
        return _again(obj, _OPTIONS)


def dumps_line(obj: Any) -> bytes:
    """``obj`` as one line of a JSON-lines stream (compact JSON and ``\\n``)."""
    try:
        return _orjson_dumps(obj, _hex, _LINE)
    except _Error:
        return _again(obj, _LINE)


def dumps_pretty(obj: Any) -> bytes:
    """``obj`` as an indented JSON document (two spaces, a final ``\\n``)."""
    try:
        return _orjson_dumps(obj, _hex, _PRETTY)
    except _Error:
        return _again(obj, _PRETTY)


class _Buffer(io.BufferedWriter):
    """The buffer a :class:`LineWriter` puts over an unbuffered stream: closing it (also when
    it is collected) only flushes - the stream is not the writer's to close (a second writer
    on the same ``sys.stdout`` found it closed: ``pcap`` of several captures)."""

    def close(self) -> None:
        try:
            self.flush()
        except (OSError, ValueError):  # (the stream went away or was closed by its owner)
            pass


def binary_stream(out: IO[str] | IO[bytes]) -> IO[bytes] | None:
    """The byte stream under a text stream (``sys.stdout.buffer``), or None (a StringIO)."""
    if "b" in getattr(out, "mode", "") and not hasattr(out, "encoding"):
        return out  # type: ignore[return-value]
    buf = getattr(out, "buffer", None)
    return buf if buf is not None and hasattr(buf, "write") else None


class LineWriter:
    """JSON lines to a text stream, through its binary buffer (``sys.stdout.buffer``).

    Each line goes straight into the stream's buffer (a copy; measured, this beats collecting
    lines and joining them: big joined chunks cost a fresh allocation each); an unbuffered
    stream (``python -u``) gets a buffer of its own, flushed by :meth:`flush`. Text written to
    the stream before the writer was made is flushed first; text written to it later goes
    after the lines written so far. A stream without a binary buffer (``io.StringIO``) gets
    the decoded text.

    ``interactive``: flush after every line (a terminal). ``flush_every``: a stream someone
    may be reading as it comes (``live``): a background thread flushes it that often, so a
    line waits at most that long and a busy stream is still written in big chunks (one flush
    per line was one system call per event). :meth:`close` stops the thread and flushes.
    """

    def __init__(self, out: IO[str], *, interactive: bool = False,
                 flush_every: float | None = None) -> None:
        out = unescaped(out)  # (JSON lines are not text: written under an escaping wrapper)
        self._out = out
        raw = binary_stream(out)
        if isinstance(raw, io.RawIOBase):  # unbuffered (python -u, PYTHONUNBUFFERED)
            raw = _Buffer(raw, 1 << 16)  # type: ignore[assignment]
        self._raw = raw
        self._text: list[bytes] = []
        if raw is None and flush_every is not None:
            interactive = True  # (no buffer to flush from another thread: every line)
        self.interactive = interactive
        if raw is not None:
            out.flush()
        #: add(dumps_line(obj)): one line as bytes (the hot loops' own path)
        self.add: Callable[[bytes], object] = (
            raw.write if raw is not None else self._text.append)
        self._encoding = getattr(out, "encoding", None) or "utf-8"
        self._errors = getattr(out, "errors", None) or "strict"
        self._stop: threading.Event | None = None
        if raw is not None and flush_every is not None and not interactive:
            self._stop = threading.Event()
            threading.Thread(target=self._flusher, args=(raw, self._stop, flush_every),
                             name="json-flush", daemon=True).start()

    @staticmethod
    def _flusher(raw: IO[bytes], stop: threading.Event, every: float) -> None:
        while not stop.wait(every):
            try:
                raw.flush()  # (a BufferedWriter locks: safe beside the writing thread)
            except (OSError, ValueError):  # the reader went away, or the stream was closed
                return

    def add_text(self, text: str) -> None:
        """Text (``--plain``, the trees) into the same buffer as the lines, in order, encoded
        as the stream encodes; control characters escaped (:mod:`binlogscope.render.escape`)."""
        self.add(escape_controls(text).encode(self._encoding, self._errors))

    def write(self, obj: Any) -> None:
        """One object as one line."""
        self.add(dumps_line(obj))
        if self.interactive:
            self.flush()

    def flush(self) -> None:
        """Write out every line written so far."""
        raw = self._raw
        if raw is not None:
            raw.flush()
            return
        if self._text:
            self._out.write(b"".join(self._text).decode("utf-8"))
            self._text.clear()
        self._out.flush()

    def close(self) -> None:
        """Stop the background flushes (``flush_every``) and flush."""
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self.flush()


__all__ = ["Fragment", "LineWriter", "binary_stream", "default", "dumps", "dumps_line",
           "dumps_pretty"]
