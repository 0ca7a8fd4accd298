"""Text that is not valid in its charset, made valid for Parquet (which stores UTF-8 only).

The decoders keep the bytes of a CHAR/VARCHAR/TEXT value (or a statement) that did not decode
in its charset as ``surrogateescape`` surrogates (docs/value-contract.md); Arrow refuses such
strings. The export writes them as ``binlogscope file --json`` does (each undecodable byte as
U+FFFD: :func:`valid_text`), and keeps the raw bytes where a column has a place for them: in
the ``before``/``after`` maps such a value is written like a binary value, ``0x`` + the hex of
its bytes in the column's charset (:func:`raw_hex`), so nothing is lost.

Only the failure path pays: a batch is converted as it is, and cleaned when Arrow refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from binlogscope.wire.binlog._collations import codec_for
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.types import EventType as E


def valid_text(s: str) -> str:
    """``s`` with each undecodable byte (a ``surrogateescape`` surrogate) as U+FFFD, and any
    other lone surrogate replaced too: what ``binlogscope file --json`` writes."""
    try:
        raw = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = s.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def is_valid(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def raw_hex(s: str, col: ColumnInfo | None) -> str:
    """``0x`` + the hex of the bytes ``s`` was decoded from (in the column's charset)."""
    codec = (codec_for(col.charset) if col is not None else None) or "utf-8"
    try:
        raw = s.encode(codec, "surrogateescape")
    except (UnicodeEncodeError, LookupError):
        raw = s.encode("utf-8", "surrogatepass")
    return "0x" + raw.hex()


def cleaned(value: Any, fix: Callable[[str], str] = valid_text) -> Any:
    """``value`` with every invalid string (also inside lists, tuples and dicts) fixed."""
    if isinstance(value, str):
        return value if is_valid(value) else fix(value)
    if isinstance(value, list | tuple):
        return type(value)(cleaned(v, fix) for v in value)
    if isinstance(value, dict):
        return {cleaned(k, fix): cleaned(v, fix) for k, v in value.items()}
    return value


def string_safe_array(values: Sequence[Any], typ: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, typ)``; values holding invalid text are cleaned first when Arrow
    refuses them (:func:`valid_text`)."""
    try:
        return pa.array(values, type=typ)
    except UnicodeEncodeError:
        return pa.array([cleaned(v) for v in values], type=typ)


def statement_bytes(ev: DecodedEvent, query: str) -> bytes | None:
    """The statement's own bytes when its text did not decode in its character set (the
    decoder shows each bad byte as U+FFFD, as ``file --json``); None otherwise. Read from the
    event's bytes: QUERY (uncompressed), ANNOTATE_ROWS and ROWS_QUERY events."""
    if "\ufffd" not in query:
        return None
    raw, h = ev.raw, ev.header
    if not raw or h is None:
        return None
    end = len(raw) - (4 if ev.checksum_ok is not None else 0)
    code = h.type_code
    if code == E.QUERY_EVENT and len(raw) >= 32:  # 13-byte post-header: schema, status vars
        start = 19 + 13 + int.from_bytes(raw[30:32], "little") + raw[27] + 1
    elif code == E.ANNOTATE_ROWS_EVENT:
        start = 19
    elif code == E.ROWS_QUERY_LOG_EVENT:
        start = 20
    else:
        return None
    return bytes(raw[start:end]) if start <= end else None


__all__ = ["cleaned", "is_valid", "raw_hex", "statement_bytes", "string_safe_array",
           "valid_text"]
