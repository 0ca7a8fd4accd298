"""What every answer module shares: the :class:`Answer` a query gets, the per-connection
:class:`QueryContext`, server :class:`Variable` values, the column shapes MariaDB sends, the
common errors, and :class:`AnswerHost` - the part of the answerer
(:class:`mock_master.answers.queries.Answerer`) the table and MySQL-shape answers use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from binlogscope.wire.handshake import ErrPacket, OkPacket
from binlogscope.wire.results import ColumnDefinition41, TextRow
from mock_master.schema.sources import SchemaKnowledge

# MYSQL_TYPE_* codes
T_LONG, T_LONGLONG, T_VAR_STRING, T_BLOB, T_LONG_BLOB = 3, 8, 253, 252, 251
NOT_NULL, BLOB_FLAG, UNSIGNED, BINARY, NO_DEFAULT = 0x1, 0x10, 0x20, 0x80, 0x1000

MBMAXLEN = {8: 1, 63: 1, 33: 3, 83: 3, 192: 3, 45: 4, 46: 4, 224: 4, 255: 4, 11: 1}
CHARSET_IDS = {"utf8": 33, "utf8mb3": 33, "utf8mb4": 45, "latin1": 8, "binary": 63,
               "ascii": 11}
#: the status flag MariaDB adds to answers read without an index (SHOW VARIABLES...)
NO_INDEX_USED = 0x20


@dataclass
class Answer:
    """What a query gets: a result set, an OK, or an ERR."""

    columns: list[ColumnDefinition41] = field(default_factory=list)
    rows: list[TextRow] = field(default_factory=list)
    ok: OkPacket | None = None
    err: ErrPacket | None = None
    extra_status: int = 0
    #: a line for the run log (a statement answered with an error it may not deserve)
    note: str | None = None


def _b(v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, bytes):
        return v
    if isinstance(v, bool):
        return b"1" if v else b"0"
    return str(v).encode()


def rows(*values: tuple[Any, ...]) -> list[TextRow]:
    return [TextRow(tuple(_b(v) for v in row)) for row in values]


@dataclass
class Variable:
    #: the value, or a function computing it when first asked (e.g. from the stream's GTIDs)
    value: Any
    kind: str = "str"  # str | int | bool

    def resolved(self) -> Any:
        if callable(self.value):
            self.value = self.value()
        return self.value

    def show(self) -> str:
        v = self.resolved()
        if self.kind == "bool":
            return "ON" if v else "OFF"
        return "" if v is None else str(v)

    def select(self) -> Any:
        v = self.resolved()
        if self.kind == "bool":
            return 1 if v else 0
        return v


@dataclass
class QueryContext:
    """Per-connection state the answers read and change."""

    charset: int = 45
    autocommit: bool = True
    user_vars: dict[str, Any] = field(default_factory=dict)
    session_vars: dict[str, Variable] = field(default_factory=dict)
    database: str | None = None
    user: str = ""
    host: str = ""


class AnswerHost(Protocol):
    """What the table answers and the MySQL shapes read of the answerer."""

    variables: dict[str, Variable]
    knowledge: Callable[[], SchemaKnowledge]

    def version_tuple(self) -> tuple[int, int, int]: ...

    def variable(self, name: str, ctx: QueryContext, scope: str | None) -> Variable | None: ...


# ------------------------------------------------------------------------------- column shapes
def string_col(name: str, chars: int, cs: int, *, flags: int = 0, decimals: int = 39,
               schema: str = "", table: str = "", org_table: str = "", org_name: str = "",
               type_code: int = T_VAR_STRING) -> ColumnDefinition41:
    return ColumnDefinition41(name, type_code, schema, table, org_table, org_name, "def", cs,
                              chars * MBMAXLEN.get(cs, 4), flags, decimals)


def int_col(name: str, length: int = 21, flags: int = UNSIGNED | BINARY, *,
            type_code: int = T_LONGLONG, schema: str = "", table: str = "",
            org_table: str = "", org_name: str = "") -> ColumnDefinition41:
    return ColumnDefinition41(name, type_code, schema, table, org_table, org_name, "def", 63,
                              length, flags, 0)


def err(code: int, msg: str, state: str = "HY000") -> Answer:
    return Answer(err=ErrPacket(code, msg, state))


def like_pattern(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression (case-insensitive, as the server compares)."""
    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c)
                              for c in pattern), re.IGNORECASE)


def unsupported(q: str, why: str) -> Answer:
    """A statement the mock master cannot answer: ERR 1105 saying why, and a log line."""
    return Answer(err=ErrPacket(1105, f"mock master: cannot answer this statement: {why}; add "
                                "an answer to the scenario's [[answers]]", "HY000"),
                  note=f"unsupported statement ({why}): {q[:200]!r}")


def syntax_error(near: str, server: str = "MariaDB") -> Answer:
    return err(1064, "You have an error in your SQL syntax; check the manual that corresponds "
               f"to your {server} server version for the right syntax to use near '{near}' at "
               "line 1", "42000")
