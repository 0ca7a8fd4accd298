"""Reply tracking in the COMMAND phase: which server packet the session expects next.

A command sets the expectation (:data:`COMMAND_REPLY`: ``COM_QUERY`` -> a query reply,
``COM_PING`` -> OK/ERR, ...); each server packet is read by the reader of the current
:class:`Reply` (:data:`_READERS`), which names the packet's kind and moves the expectation on
(column count -> column definitions -> [EOF] -> rows -> terminator). A reader that does not take
the packet hands it to :func:`_fresh_reply` (OK, ERR, a result set header...).

:class:`ReplyReader` holds that state and the text result set being read, and returns what it
read as a :class:`ReplyRead`; the session decodes (``decode``) and emits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from binlogscope.session.events import ResultSetComplete
from binlogscope.wire import handshake, results, statements
from binlogscope.wire.constants import Command, StatusFlag, command_name
from binlogscope.wire.framing import Packet
from binlogscope.wire.packet import DecodedPayload
from binlogscope.wire.prepared import StmtPrepareOk


class Reply(Enum):
    """What the server's next packet is, in the COMMAND phase."""

    NONE = "none"  # nothing expected (a server-initiated packet is an error)
    OK = "ok"  # OK / ERR
    QUERY = "query"  # OK / ERR / LOCAL INFILE request / column count
    COLUMNS = "columns"  # column definitions (as many as the column count said)
    COLUMNS_EOF = "columns_eof"  # the EOF after them (without CLIENT_DEPRECATE_EOF)
    ROWS = "rows"  # text rows until the terminator
    FIELD_LIST = "field_list"  # COM_FIELD_LIST: column definitions until EOF
    AUTH = "auth"  # COM_CHANGE_USER: the auth exchange again (the session's auth reader)
    PREPARE = "prepare"  # COM_STMT_PREPARE: PREPARE_OK / ERR
    PARAMS = "params"  # the ? parameters' definitions after PREPARE_OK
    PARAMS_EOF = "params_eof"  # the EOF after them (without CLIENT_DEPRECATE_EOF)
    EXECUTE = "execute"  # COM_STMT_EXECUTE: OK / ERR / column count (then binary rows)
    RAW = "raw"  # replies binlogscope does not decode


_OK_COMMANDS = (Command.COM_PING, Command.COM_INIT_DB, Command.COM_REGISTER_SLAVE,
                Command.COM_REFRESH, Command.COM_PROCESS_KILL, Command.COM_RESET_CONNECTION,
                Command.COM_CREATE_DB, Command.COM_DROP_DB, Command.COM_SHUTDOWN,
                Command.COM_SET_OPTION, Command.COM_DEBUG, Command.COM_STMT_RESET)

#: command code -> the reply it expects (any other command: Reply.RAW)
COMMAND_REPLY: dict[int, Reply] = {
    **{int(c): Reply.OK for c in _OK_COMMANDS},
    int(Command.COM_QUERY): Reply.QUERY,
    int(Command.COM_QUIT): Reply.NONE,
    int(Command.COM_FIELD_LIST): Reply.FIELD_LIST,
    int(Command.COM_CHANGE_USER): Reply.AUTH,
    # the binlog stream follows (the BINLOG_STREAM phase reads it); nothing after it
    int(Command.COM_BINLOG_DUMP): Reply.NONE,
    int(Command.COM_BINLOG_DUMP_GTID): Reply.NONE,
    int(Command.COM_STMT_PREPARE): Reply.PREPARE,
    int(Command.COM_STMT_EXECUTE): Reply.EXECUTE,
    int(Command.COM_STMT_CLOSE): Reply.NONE,  # no reply
}

#: command code -> the packet kind its payload decodes as (any other: "command")
COMMAND_KIND: dict[int, str] = {
    int(Command.COM_QUERY): "com_query",
    int(Command.COM_REGISTER_SLAVE): "com_register_slave",
    int(Command.COM_BINLOG_DUMP): "com_binlog_dump",
    int(Command.COM_BINLOG_DUMP_GTID): "com_binlog_dump_gtid",
    int(Command.COM_STMT_PREPARE): "com_stmt_prepare",
    int(Command.COM_STMT_EXECUTE): "com_stmt_execute",
    int(Command.COM_STMT_CLOSE): "com_stmt_close",
    int(Command.COM_STMT_RESET): "com_stmt_close",
}


class Answer(Enum):
    """How a reply ended the command, where the session cares."""

    OTHER = "other"
    OK = "ok"  # a fresh OK packet (not a result set's terminator)
    ERR = "err"


#: decode(packet, kind, decoder or None) -> the decoded payload (the session's decoder)
Decode = Callable[[Packet, str, Any], DecodedPayload]


@dataclass(slots=True)
class ReplyRead:
    """One server packet read in COMMAND: its payload, how it ended the command, and the
    result set it completed (if any)."""

    payload: DecodedPayload
    answer: Answer = Answer.OTHER
    result: ResultSetComplete | None = None


@dataclass(slots=True)
class ReplyReader:
    """The expected reply and the text result set being read."""

    max_rows: int = 10_000
    expect: Reply = Reply.NONE
    last_command: int | None = None
    columns: list[results.ColumnDefinition41] = field(default_factory=list)
    cols_left: int = 0
    rows: list[results.TextRow] = field(default_factory=list)
    truncated: bool = False
    result_offset: int = 0
    #: the rows being read are binary (an EXECUTE's result set)
    binary: bool = False
    #: the PREPARE_OK being read: parameter definitions left, columns to follow (no rows)
    params_left: int = 0
    preparing: bool = False

    def command(self, code: int) -> None:
        """The client sent command ``code``: expect its reply, forget any result set."""
        self.last_command = code
        self.reset()
        self.expect = COMMAND_REPLY.get(code, Reply.RAW)

    def reset(self) -> None:
        self.columns = []
        self.cols_left = 0
        self.rows = []
        self.truncated = False
        self.binary = False
        self.params_left = 0
        self.preparing = False

    def read(self, pkt: Packet, decode: Decode, caps: int, deprecate_eof: bool) -> ReplyRead:
        """Read one server packet (not in AUTH: the session reads those)."""
        first = pkt.payload[0] if pkt.payload else -1
        reader = _READERS.get(self.expect)
        got = reader(self, pkt, first, decode, caps, deprecate_eof) if reader else None
        return got if got is not None else _fresh_reply(self, pkt, first, decode)

    def _end(self, status: int) -> ResultSetComplete:
        done = ResultSetComplete(self.result_offset, tuple(self.columns), tuple(self.rows),
                                 status, self.truncated)
        self.reset()
        self.expect = Reply.QUERY if status & StatusFlag.SERVER_MORE_RESULTS_EXISTS \
            else Reply.NONE
        return done

    def _terminator(self, pkt: Packet, decode: Decode, deprecate_eof: bool) -> ReplyRead:
        d = decode(pkt, "ok" if deprecate_eof else "eof", None)
        return ReplyRead(d, result=self._end(getattr(d.value, "status_flags", 0)))

    def _column(self, pkt: Packet, decode: Decode) -> DecodedPayload:
        d = decode(pkt, "column_definition41", None)
        if isinstance(d.value, results.ColumnDefinition41):
            self.columns.append(d.value)
        return d


Reader = Callable[[ReplyReader, Packet, int, Decode, int, bool], "ReplyRead | None"]


def _columns(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
             deprecate_eof: bool) -> ReplyRead | None:
    if first == 0xFF:
        return None
    d = rr._column(pkt, decode)
    rr.cols_left -= 1
    if rr.cols_left <= 0:
        if rr.preparing and deprecate_eof:  # a PREPARE_OK's columns: no rows follow
            rr.reset()
            rr.expect = Reply.NONE
        else:
            rr.expect = Reply.ROWS if deprecate_eof else Reply.COLUMNS_EOF
    return ReplyRead(d)


def _field_list(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
                deprecate_eof: bool) -> ReplyRead | None:
    if handshake.is_eof_packet(pkt.payload, caps):
        return rr._terminator(pkt, decode, deprecate_eof)
    if first == 0xFF:
        return None
    return ReplyRead(rr._column(pkt, decode))


def _columns_eof(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
                 deprecate_eof: bool) -> ReplyRead | None:
    if first != 0xFE:
        return None
    if rr.preparing:  # the end of a PREPARE_OK's column definitions
        rr.reset()
        rr.expect = Reply.NONE
    else:
        rr.expect = Reply.ROWS
    return ReplyRead(decode(pkt, "eof", None))


def _rows(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
          deprecate_eof: bool) -> ReplyRead | None:
    if handshake.is_eof_packet(pkt.payload, caps):
        return rr._terminator(pkt, decode, deprecate_eof)
    if first == 0xFF:
        return None
    if rr.binary:
        cols = tuple(rr.columns)

        def bin_fn(r: Any, c: int) -> statements.BinaryRow:
            return statements.decode_binary_row(r, c, cols)

        return ReplyRead(decode(pkt, "binary_row", bin_fn))
    names = tuple(c.name for c in rr.columns) or None

    def fn(r: Any, c: int) -> results.TextRow:
        return results.decode_text_row(r, c, names)

    d = decode(pkt, "text_row", fn)
    if isinstance(d.value, results.TextRow):
        if len(rr.rows) < rr.max_rows:
            rr.rows.append(d.value)
        else:
            rr.truncated = True
    return ReplyRead(d)


def _query(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
           deprecate_eof: bool) -> ReplyRead | None:
    if first in (0x00, 0xFF):
        return None  # OK / ERR
    if first == 0xFB:
        rr.expect = Reply.NONE
        return ReplyRead(decode(pkt, "local_infile_request", None))
    d = decode(pkt, "column_count", None)
    if isinstance(d.value, results.ColumnCount):
        rr.reset()
        rr.result_offset = pkt.offset
        rr.cols_left = d.value.column_count
        if d.value.metadata_follows == 0:  # the client has the column definitions cached
            rr.expect = Reply.ROWS if deprecate_eof else Reply.COLUMNS_EOF
        else:
            rr.expect = Reply.COLUMNS if d.value.column_count else Reply.ROWS
    return ReplyRead(d)


def _execute(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
             deprecate_eof: bool) -> ReplyRead | None:
    got = _query(rr, pkt, first, decode, caps, deprecate_eof)
    if got is not None:
        rr.binary = True  # the rows of this result set are binary
    return got


def _prepare(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
             deprecate_eof: bool) -> ReplyRead | None:
    if first != 0x00:
        return None  # ERR
    d = decode(pkt, "stmt_prepare_ok", None)
    ok = d.value
    if isinstance(ok, StmtPrepareOk):
        rr.reset()
        rr.preparing = True
        rr.params_left, rr.cols_left = ok.num_params, ok.num_columns
        rr.expect = (Reply.PARAMS if ok.num_params else Reply.COLUMNS if ok.num_columns
                     else Reply.NONE)
        if rr.expect is Reply.NONE:
            rr.preparing = False
    else:
        rr.expect = Reply.NONE
    return ReplyRead(d, Answer.OK)


def _params(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
            deprecate_eof: bool) -> ReplyRead | None:
    if first == 0xFF:
        return None
    d = decode(pkt, "param_definition", None)
    rr.params_left -= 1
    if rr.params_left <= 0:
        rr.expect = (Reply.PARAMS_EOF if not deprecate_eof else Reply.COLUMNS if rr.cols_left
                     else Reply.NONE)
    return ReplyRead(d)


def _params_eof(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
                deprecate_eof: bool) -> ReplyRead | None:
    if first != 0xFE:
        return None
    rr.expect = Reply.COLUMNS if rr.cols_left else Reply.NONE
    if rr.expect is Reply.NONE:
        rr.reset()
    return ReplyRead(decode(pkt, "eof", None))


def _raw(rr: ReplyReader, pkt: Packet, first: int, decode: Decode, caps: int,
         deprecate_eof: bool) -> ReplyRead | None:
    return None if first == 0xFF else ReplyRead(decode(pkt, "raw", None))


#: the reader of each expected reply (None: only the fresh replies of _fresh_reply)
_READERS: dict[Reply, Reader] = {
    Reply.COLUMNS: _columns,
    Reply.FIELD_LIST: _field_list,
    Reply.COLUMNS_EOF: _columns_eof,
    Reply.ROWS: _rows,
    Reply.QUERY: _query,
    Reply.EXECUTE: _execute,
    Reply.PREPARE: _prepare,
    Reply.PARAMS: _params,
    Reply.PARAMS_EOF: _params_eof,
    Reply.RAW: _raw,
}

#: the expectations under which an OK packet (0x00) is a reply
_OK_EXPECTED = (Reply.OK, Reply.QUERY, Reply.EXECUTE, Reply.NONE)


def _fresh_reply(rr: ReplyReader, pkt: Packet, first: int, decode: Decode) -> ReplyRead:
    """A packet that starts a reply: ERR, OK, or one that was not expected."""
    if first == 0xFF:
        rr.reset()
        rr.expect = Reply.NONE
        return ReplyRead(decode(pkt, "err", None), Answer.ERR)
    if first == 0x00 and rr.expect in _OK_EXPECTED:
        d = decode(pkt, "ok", None)
        if not isinstance(d.value, handshake.OkPacket):
            return ReplyRead(d)
        more = d.value.status_flags & StatusFlag.SERVER_MORE_RESULTS_EXISTS
        rr.expect = Reply.QUERY if more else Reply.NONE
        return ReplyRead(d, Answer.OK)
    d = decode(pkt, "raw", None)
    if rr.expect is Reply.NONE:
        last = "none" if rr.last_command is None else command_name(rr.last_command)
        d.error = d.error or (f"at offset {pkt.offset}: server packet while no reply "
                              f"was expected (last command {last})")
    return ReplyRead(d)


__all__ = ["COMMAND_KIND", "COMMAND_REPLY", "Answer", "Reply", "ReplyRead", "ReplyReader"]
