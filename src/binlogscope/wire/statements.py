"""Prepared statements on the wire, with trees: COM_STMT_PREPARE (the statement text) and its
COM_STMT_PREPARE_OK (the statement id, how many columns and ``?`` parameters), COM_STMT_EXECUTE
(the id, flags and each parameter's type and value in the binary protocol), COM_STMT_CLOSE and
COM_STMT_RESET (the id), and the binary result-set rows an EXECUTE answers with.

An EXECUTE can only be read with the parameter count its PREPARE_OK gave (and, when the client
does not bind the types again, the types of the EXECUTE before): the session keeps them per
statement id (:class:`StatementInfo`) and passes them in; without them (a capture that starts
after the PREPARE) the id, flags and iteration count are read and the rest is shown as it is.
Layouts as in the MySQL protocol documentation (COM_STMT_EXECUTE with CLIENT_QUERY_ATTRIBUTES:
``parameter_count`` and the parameter names; ``PARAMETER_COUNT_AVAILABLE`` = 0x08) and
MariaDB's (no query attributes). Value encodings:
:func:`binlogscope.wire.prepared.read_binary_value`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.types import ColumnType
from binlogscope.wire.commands import _command_byte
from binlogscope.wire.constants import CapabilityFlag, Command
from binlogscope.wire.prepared import StmtExecute, StmtPrepareOk, read_binary_value
from binlogscope.wire.reader import ByteReader
from binlogscope.wire.results import ColumnDefinition41

_QUERY_ATTRIBUTES = int(CapabilityFlag.CLIENT_QUERY_ATTRIBUTES)
_OPTIONAL_METADATA = int(CapabilityFlag.CLIENT_OPTIONAL_RESULTSET_METADATA)
#: COM_STMT_EXECUTE flags: the cursor type (low bits) and PARAMETER_COUNT_AVAILABLE
CURSOR_TYPES = {0: "CURSOR_TYPE_NO_CURSOR", 1: "CURSOR_TYPE_READ_ONLY",
                2: "CURSOR_TYPE_FOR_UPDATE", 4: "CURSOR_TYPE_SCROLLABLE"}
PARAMETER_COUNT_AVAILABLE = 0x08
_NULL = int(ColumnType.MYSQL_TYPE_NULL)


@dataclass(frozen=True, slots=True)
class ComStmtPrepare:
    """COM_STMT_PREPARE (0x16): a statement with ``?`` placeholders to prepare."""

    query: str


@dataclass(frozen=True, slots=True)
class ComStmtClose:
    """COM_STMT_CLOSE (0x19) / COM_STMT_RESET (0x1A): the statement id (CLOSE has no reply)."""

    command: int
    statement_id: int


@dataclass(frozen=True, slots=True)
class BinaryRow:
    """A result-set row in the binary protocol (the answer to an EXECUTE)."""

    values: tuple[Any, ...]


@dataclass(slots=True)
class StatementInfo:
    """What the session knows of a prepared statement: its text, parameter count and the
    types its last EXECUTE bound."""

    query: str
    num_params: int
    types: tuple[tuple[int, bool], ...] = ()


def type_name(code: int) -> str:
    try:
        return ColumnType(code).name
    except ValueError:
        return f"type {code}"


def decode_com_stmt_prepare(r: ByteReader, caps: int = 0) -> ComStmtPrepare:
    _command_byte(r, Command.COM_STMT_PREPARE)
    q = r.rest_str("query", doc="the statement to prepare; each ? is a parameter")
    return ComStmtPrepare(q)


def decode_com_stmt_close(r: ByteReader, caps: int = 0) -> ComStmtClose:
    code = _command_byte(r)
    if code not in (Command.COM_STMT_CLOSE, Command.COM_STMT_RESET):
        raise ValueError(f"command byte 0x{code:02x} is not COM_STMT_CLOSE or COM_STMT_RESET")
    doc = ("the statement to deallocate (no reply follows)" if code == Command.COM_STMT_CLOSE
           else "the statement whose long data and cursor are reset (OK or ERR follows)")
    sid = r.u32("statement_id", doc=doc)
    return ComStmtClose(code, sid)


def decode_stmt_prepare_ok(r: ByteReader, caps: int = 0) -> StmtPrepareOk:
    r.u8("status", doc="0x00: COM_STMT_PREPARE_OK", display="OK (0x00)")
    sid = r.u32("statement_id", doc="the id COM_STMT_EXECUTE/CLOSE name the statement by")
    ncol = r.u16("num_columns", doc="columns of the result set an EXECUTE returns (0: none)")
    npar = r.u16("num_params", doc="? parameters: their definitions follow, then the columns'")
    r.u8("reserved", doc="filler (0x00)")
    warnings = 0
    if r.remaining >= 2:
        warnings = r.u16("warning_count", doc="warnings of the PREPARE")
    if r.remaining >= 1 and caps & _OPTIONAL_METADATA:
        r.u8("metadata_follows", doc="RESULTSET_METADATA_FULL (1) or NONE (0): whether the "
             "column definitions follow")
    return StmtPrepareOk(sid, ncol, npar, warnings)


def decode_com_stmt_execute(r: ByteReader, caps: int = 0,
                            stmt: StatementInfo | None = None) -> StmtExecute:
    """COM_STMT_EXECUTE; ``stmt``: what its PREPARE said (None: not seen)."""
    _command_byte(r, Command.COM_STMT_EXECUTE)
    sid = r.u32("statement_id", doc="the statement COM_STMT_PREPARE_OK numbered")
    flags = r.u8("flags", doc="cursor type (low bits); 0x08 PARAMETER_COUNT_AVAILABLE",
                 display=_flags_text(r.buf[r.pos - 1]))
    iterations = r.u32("iteration_count", doc="always 1")
    attrs = bool(caps & _QUERY_ATTRIBUTES)
    if stmt is None and not (attrs and flags & PARAMETER_COUNT_AVAILABLE):
        if not r.at_end():
            r.rest("parameters", doc="the parameters, which need the PREPARE's parameter count "
                   "(the PREPARE of this statement was not seen)")
        return StmtExecute(sid, flags, iterations, (), ())
    n = stmt.num_params if stmt is not None else 0
    if attrs and (n > 0 or flags & PARAMETER_COUNT_AVAILABLE):
        count = r.lenenc("parameter_count", doc="parameters and query attributes that follow "
                         "(CLIENT_QUERY_ATTRIBUTES)")
        n = count or 0
    if n == 0:
        return StmtExecute(sid, flags, iterations, (), ())
    start = r.pos
    nulls = r.take((n + 7) // 8, "null_bitmap")
    r.leaf("null_bitmap", start, nulls, wire=f"binary<{(n + 7) // 8}>",
           doc="bit i set: parameter i is NULL",
           display=" ".join(format(b, "08b")[::-1] for b in nulls))
    bound = r.u8("new_params_bound_flag", doc="1: the parameter types follow (sent with the "
                 "first EXECUTE, or when they change); 0: the types of the EXECUTE before")
    names: list[str] = []
    if bound:
        types: list[tuple[int, bool]] = []
        r.begin("parameter_types", doc="2 bytes each: the type, then 0x80 for unsigned")
        for i in range(n):
            p = r.pos
            code, fl = r.take(2, f"type[{i}]")
            unsigned = bool(fl & 0x80)
            r.leaf(f"type[{i}]", p, code, wire="int<2>",
                   display=type_name(code) + (" UNSIGNED" if unsigned else ""))
            types.append((code, unsigned))
            if attrs:
                names.append(r.lenenc_str(f"name[{i}]", doc="the parameter's name (query "
                                          "attributes; empty for a ? parameter)") or "")
        r.end_group()
        types_t = tuple(types)
    else:
        if stmt is None or len(stmt.types) != n:
            if not r.at_end():
                r.rest("values", doc="parameter values whose types were bound by an EXECUTE "
                       "not seen here")
            return StmtExecute(sid, flags, iterations, (), ())
        types_t = stmt.types
    values: list[Any] = []
    r.begin("values", doc="each non-NULL parameter in the binary protocol of its type")
    for i, (code, unsigned) in enumerate(types_t):
        label = names[i] if i < len(names) and names[i] else f"param[{i}]"
        if nulls[i // 8] >> (i % 8) & 1 or code == _NULL:
            values.append(None)
            continue
        values.append(_binary_leaf(r, label, code, unsigned))
    r.end_group()
    if stmt is not None:
        stmt.types = types_t
    return StmtExecute(sid, flags, iterations, tuple(values), types_t)


def decode_binary_row(r: ByteReader, caps: int = 0,
                      columns: tuple[ColumnDefinition41, ...] = ()) -> BinaryRow:
    """A binary result-set row: 0x00, the NULL bitmap (offset 2 bits), the non-NULL values by
    ``columns``' types."""
    r.u8("header", doc="0x00: a binary row")
    n = len(columns)
    start = r.pos
    nulls = r.take((n + 7 + 2) // 8, "null_bitmap")
    r.leaf("null_bitmap", start, nulls, wire=f"binary<{len(nulls)}>",
           doc="bit i+2 set: column i is NULL (the first two bits are unused)")
    values: list[Any] = []
    for i, c in enumerate(columns):
        bit = i + 2
        if nulls[bit // 8] >> (bit % 8) & 1:
            values.append(None)
            continue
        values.append(_binary_leaf(r, c.name or f"col_{i}", c.type, bool(c.flags & 0x20)))
    return BinaryRow(tuple(values))


def _binary_leaf(r: ByteReader, label: str, code: int, unsigned: bool) -> Any:
    p = r.pos
    data = bytes(r.buf[p:r.end])
    try:
        v, used = read_binary_value(data, 0, code, unsigned)
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{label!r}: a {type_name(code)} value cut short") from exc
    r.take(used, label)
    if r.record:
        shown = v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        r.leaf(label, p, v, wire=type_name(code), display=repr(shown),
               doc=f"{type_name(code)}{' UNSIGNED' if unsigned else ''} in the binary protocol")
    return v


def _flags_text(flags: int) -> str:
    text = CURSOR_TYPES.get(flags & 0x07, f"cursor {flags & 0x07}")
    if flags & PARAMETER_COUNT_AVAILABLE:
        text += " | PARAMETER_COUNT_AVAILABLE"
    return f"0x{flags:02x} {text}"


__all__ = [
    "CURSOR_TYPES",
    "PARAMETER_COUNT_AVAILABLE",
    "BinaryRow",
    "ComStmtClose",
    "ComStmtPrepare",
    "StatementInfo",
    "decode_binary_row",
    "decode_com_stmt_close",
    "decode_com_stmt_execute",
    "decode_com_stmt_prepare",
    "decode_stmt_prepare_ok",
    "type_name",
]
