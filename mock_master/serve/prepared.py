"""Server-side prepared statements of one mock-master connection.

COM_STMT_PREPARE counts the ``?`` markers with sqlglot's tokenizer (markers inside strings and
comments are not parameters) and answers PREPARE_OK with MariaDB's parameter definitions
(``?``, type NULL, binary) and the statement's column definitions (the ones its answer will
have). COM_STMT_EXECUTE decodes the parameters, puts them into the statement text as literals
and answers it like COM_QUERY (:class:`mock_master.answers.queries.Answerer`), as a binary result
set.
COM_STMT_CLOSE (no reply), COM_STMT_RESET (OK), COM_STMT_SEND_LONG_DATA (no reply; the data is
appended to the parameter) are handled; an unknown statement id gets MariaDB's ERR 1243.
EXECUTE with CURSOR_TYPE_READ_ONLY opens a cursor as MariaDB does (definitions, then an EOF with
SERVER_STATUS_CURSOR_EXISTS); COM_STMT_FETCH sends up to the asked number of rows and an EOF
with CURSOR_EXISTS, or LAST_ROW_SENT once the rows ran out (the cursor then closed: ERR 1421).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from binlogscope.wire import results
from binlogscope.wire.handshake import EofPacket, ErrPacket, OkPacket
from binlogscope.wire.prepared import (
    PARAM_DEFINITION,
    StmtPrepareOk,
    decode_stmt_execute,
    encode_binary_row,
    encode_stmt_prepare_ok,
    sql_literal,
)
from binlogscope.wire.results import MARIADB_CACHE_METADATA
from mock_master.answers.base import Answer
from mock_master.schema.sql import MariaDBDialect
from mock_master.serve.host import StatementHost

COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA = 0x16, 0x17, 0x18
COM_STMT_CLOSE, COM_STMT_RESET, COM_STMT_FETCH = 0x19, 0x1A, 0x1C
STMT_COMMANDS = (COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE,
                 COM_STMT_RESET, COM_STMT_FETCH)
CURSOR_TYPE_READ_ONLY = 0x01  # COM_STMT_EXECUTE flags
CURSOR_EXISTS, LAST_ROW_SENT = 0x40, 0x80  # SERVER_STATUS_*
_RESULT_HEADS = ("SELECT", "SHOW", "WITH", "DESC", "DESCRIBE", "EXPLAIN", "(")


@dataclass
class Statement:
    id: int
    query: str
    #: (start, end) character offsets of each ``?`` in the text
    markers: list[tuple[int, int]]
    columns: list[results.ColumnDefinition41]
    types: tuple[tuple[int, bool], ...] = ()
    long_data: dict[int, bytes] = field(default_factory=dict)
    #: an open read-only cursor (EXECUTE with CURSOR_TYPE_READ_ONLY): its columns, rows left
    cursor: tuple[list[results.ColumnDefinition41], list[results.TextRow]] | None = None


def find_markers(query: str) -> list[tuple[int, int]]:
    """Where the ``?`` parameter markers are (sqlglot's tokenizer: not in strings/comments)."""
    tokens = MariaDBDialect().tokenize(query)
    return [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.PLACEHOLDER
            and t.text == "?"]


def bind(query: str, markers: list[tuple[int, int]], values: list[Any]) -> str:
    out, last = [], 0
    for (start, end), v in zip(markers, values, strict=True):
        out.append(query[last:start])
        out.append(sql_literal(v))
        last = end
    out.append(query[last:])
    return "".join(out)


class PreparedStatements:
    """The statements one connection prepared."""

    def __init__(self, conn: StatementHost) -> None:
        self.conn = conn
        self.stmts: dict[int, Statement] = {}
        self.next_id = 1

    def handle(self, command: int, args: bytes) -> None:
        """Answer one COM_STMT_* command (written to the connection)."""
        c = self.conn
        if command == COM_STMT_PREPARE:
            self._prepare(args.decode("utf-8", "replace"))
        elif command == COM_STMT_EXECUTE:
            self._execute(args)
        elif command == COM_STMT_CLOSE:
            self.stmts.pop(int.from_bytes(args[:4], "little"), None)
        elif command == COM_STMT_RESET:
            st = self._get(args, "mysqld_stmt_reset")
            if st is not None:
                st.long_data.clear()
                st.cursor = None
                c.send(OkPacket(status_flags=c.status_flags()))
        elif command == COM_STMT_SEND_LONG_DATA:
            st = self.stmts.get(int.from_bytes(args[:4], "little"))
            if st is not None and len(args) >= 6:
                n = int.from_bytes(args[4:6], "little")
                st.long_data[n] = st.long_data.get(n, b"") + args[6:]
        else:
            st = self._get(args, "mysqld_stmt_fetch")
            if st is not None:
                self._fetch(st, int.from_bytes(args[4:8], "little"))

    def _get(self, args: bytes, where: str) -> Statement | None:
        sid = int.from_bytes(args[:4], "little")
        st = self.stmts.get(sid)
        if st is None:
            self._err(ErrPacket(1243, f"Unknown prepared statement handler ({sid}) given to "
                                f"{where}", "HY000"))
        return st

    def _err(self, e: ErrPacket) -> None:
        self.conn.log.errors.append(f"ERR {e.error_code}: {e.error_message}")
        self.conn.send(e)

    def _prepare(self, query: str) -> None:
        c = self.conn
        c.log.queries.append(f"PREPARE {query}")
        try:
            markers = find_markers(query)
        except SqlglotError as exc:
            self._err(ErrPacket(1064, "You have an error in your SQL syntax; check the manual "
                                "that corresponds to your MariaDB server version for the right "
                                f"syntax to use near '{query[:80]}' at line 1: {exc}", "42000"))
            return
        columns: list[results.ColumnDefinition41] = []
        head = query.lstrip().split(None, 1)[0].upper() if query.strip() else ""
        if head in _RESULT_HEADS or head.startswith("("):
            ans = c.answer_query(bind(query, markers, [None] * len(markers)), log=False)
            if ans is None:
                self._unknown(query)
                return
            if ans.err is not None:
                self._err(ans.err)
                return
            if ans.ok is None:
                columns = ans.columns
        st = Statement(self.next_id, query, markers, columns)
        self.next_id += 1
        self.stmts[st.id] = st
        c.send_raw(encode_stmt_prepare_ok(StmtPrepareOk(st.id, len(columns), len(markers))))
        s = c.session
        status = c.status_flags()
        for _ in markers:
            c.send(PARAM_DEFINITION)
        if markers and not s.deprecate_eof:
            c.send(EofPacket(0, status))
        for col in columns:
            c.send(col)
        if columns and not s.deprecate_eof:
            c.send(EofPacket(0, status))

    def _unknown(self, query: str) -> None:
        c = self.conn
        c.log.unknown_queries.append(query)
        c.m.log.notes.append(f"client {c.log.id}: unknown prepared statement {query!r}")
        self._err(ErrPacket(1105, f"mock master: no answer for this statement: {query[:200]!r}; "
                            "add one to the scenario's [[answers]]", "HY000"))

    def _execute(self, args: bytes) -> None:
        c = self.conn
        st = self._get(args, "mysqld_stmt_execute")
        if st is None:
            return
        try:
            ex = decode_stmt_execute(args, len(st.markers), st.types)
        except (ValueError, IndexError) as exc:
            c.log.violations.append(f"malformed COM_STMT_EXECUTE: {exc}")
            self._err(ErrPacket(1210, "Incorrect arguments to mysqld_stmt_execute", "HY000"))
            return
        st.types = ex.types
        values = [st.long_data.get(i, v) if v is None and i in st.long_data else v
                  for i, v in enumerate(ex.params)]
        st.long_data.clear()
        q = bind(st.query, st.markers, values)
        ans = c.answer_query(q)
        if ans is None:
            self._unknown(q)
            return
        st.cursor = None
        self._send_answer(ans, st, ex.flags)

    def _send_answer(self, ans: Answer, st: Statement, flags: int) -> None:
        c = self.conn
        if ans.err is not None:
            self._err(ans.err)
            return
        if ans.ok is not None:
            ok = ans.ok
            c.send(OkPacket(ok.affected_rows, ok.last_insert_id, c.status_flags(), ok.warnings,
                            ok.info))
            return
        cursor = bool(flags & CURSOR_TYPE_READ_ONLY)
        status = c.status_flags(ans.extra_status | (CURSOR_EXISTS if cursor else 0))
        # MARIADB_CLIENT_CACHE_METADATA: the client keeps the PREPARE's definitions; they are
        # sent again only when they changed
        cached = bool(c.session.capabilities & MARIADB_CACHE_METADATA) \
            and ans.columns == st.columns
        c.send(results.ColumnCount(len(ans.columns), 0 if cached else 1))
        for col in [] if cached else ans.columns:
            c.send(col)
        if cursor:  # the rows wait for COM_STMT_FETCH
            st.cursor = (ans.columns, list(ans.rows))
            c.send(EofPacket(0, status))
            return
        if not c.session.deprecate_eof:
            c.send(EofPacket(0, status))
        for row in ans.rows:
            c.send_raw(encode_binary_row(ans.columns, row.values))
        c.send(EofPacket(0, status))

    def _fetch(self, st: Statement, n: int) -> None:
        c = self.conn
        if st.cursor is None:
            self._err(ErrPacket(1421, f"The statement ({st.id}) has no open cursor", "HY000"))
            return
        columns, rows = st.cursor
        batch, rest = rows[:n], rows[n:]
        for row in batch:
            c.send_raw(encode_binary_row(columns, row.values))
        if len(batch) < n:  # the end was reached during this fetch: the cursor closes
            st.cursor = None
            c.send(EofPacket(0, c.status_flags(LAST_ROW_SENT)))
        else:
            st.cursor = (columns, rest)
            c.send(EofPacket(0, c.status_flags(CURSOR_EXISTS)))
