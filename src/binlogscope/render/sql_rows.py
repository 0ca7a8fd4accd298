"""The SQL-like row view of ``binlogscope file --verbose``: a rows event as pseudo-SQL lines.

What ``mysqlbinlog --verbose`` users read, one line per row::

    ### INSERT INTO shop.orders SET id=1, note='paid', total=12.50
    ### UPDATE shop.orders SET id=1, total=13.00 WHERE id=1 AND total=12.50
    ### DELETE FROM shop.orders WHERE id=1 AND note='paid' AND total=13.00

Column names come from the TABLE_MAP's optional metadata (``binlog_row_metadata=FULL``) when the
server wrote them; otherwise the columns are numbered ``@1``, ``@2``, ... as mysqlbinlog does.
The lines are not executable SQL (neither are mysqlbinlog's): an UPDATE shows the whole before
image as its WHERE and the after image as its SET; only the columns the event carries (the
row image) are shown, and a NULL in a WHERE reads ``col=NULL`` as in mysqlbinlog.
Values: NULL, numbers as decoded, text quoted with ``'`` doubled and control characters
escaped, binary strings as ``X'hex'``, JSON and other structures as quoted JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from binlogscope.wire.binlog.decoded import EventBody
from binlogscope.wire.binlog.rows import RowsEvent

#: the rows event kinds (RowsEvent.kind) and their statement shapes
_VERBS = {"INSERT": "INSERT INTO", "UPDATE": "UPDATE", "DELETE": "DELETE FROM"}
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0", "'": "''"}


def sql_value(value: Any) -> str:
    """One value as a SQL-like literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, dict | list | tuple):
        return _quote(json.dumps(value, ensure_ascii=False, default=str))
    return _quote(str(value))


def _quote(text: str) -> str:
    if any(c in _ESCAPES for c in text) or not text.isprintable():
        text = "".join(_ESCAPES.get(c, c if c.isprintable() else f"\\x{ord(c):02x}")
                       for c in text)
    return f"'{text}'"


def _pairs(image: dict[str, Any] | None, sep: str) -> str:
    if not image:
        return ""
    return sep.join(f"{name}={sql_value(v)}" for name, v in image.items())


def row_lines(body: EventBody | None) -> Iterator[str]:
    """``### ...`` lines for every row of a decoded rows event (nothing for other events)."""
    if not isinstance(body, RowsEvent):
        return
    verb = _VERBS.get(body.kind)
    rows = body.rows if verb else None
    if not rows:
        return
    schema, table = body.schema, body.table
    name = f"{schema}.{table}" if schema else table
    for row in rows:
        before, after = row.get("before"), row.get("after")
        if verb == "INSERT INTO":
            yield f"### INSERT INTO {name} SET {_pairs(after, ', ')}"
        elif verb == "DELETE FROM":
            yield f"### DELETE FROM {name} WHERE {_pairs(before, ' AND ')}"
        else:
            yield f"### UPDATE {name} SET {_pairs(after, ', ')} WHERE {_pairs(before, ' AND ')}"
