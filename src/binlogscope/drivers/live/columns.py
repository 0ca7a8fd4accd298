"""Column names from information_schema for TABLE_MAPs written without them.

A source with ``binlog_row_metadata=MINIMAL`` (MySQL 8's default) writes no column names in
its TABLE_MAPs, and with no optional metadata at all (MySQL 5.7, ``NO_LOG``, older MariaDB)
no signedness or charsets either: an INT UNSIGNED then reads as signed and a VARBINARY as
text. The decoder keeps to the bytes; completing the map is a driver's job (docs/architecture):
the live replica has the server at hand, so on the first TABLE_MAP of a table without names it
asks, on a second connection of its own (the dump connection streams),

    SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLLATION_NAME FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = ... AND TABLE_NAME = ... ORDER BY ORDINAL_POSITION

(as CDC connectors do) and fills in the names, the signedness of numeric columns and the
collation of text/binary columns the map lacks. The answer is kept per table until a TABLE_MAP
of that table with other bytes comes (then it asks again). A note item says where the names
came from. A failure (no privilege, the server gone, another column count than the map's: the
table changed since the event was written) is one note and the map stays as written: the
stream never waits on it again for that map.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from binlogscope.drivers.live.connect import Connection, authenticate, open_socket
from binlogscope.drivers.live.dialog import query as run_query
from binlogscope.drivers.live.items import LiveError, LiveSettings, ServerInfo
from binlogscope.drivers.live.setup import sql_quote
from binlogscope.session.events import ResultSetComplete, Role
from binlogscope.session.machine import Session
from binlogscope.wire.binlog._collations import COLLATIONS
from binlogscope.wire.binlog.context import TableMap
from binlogscope.wire.handshake import ErrPacket

#: information_schema DATA_TYPEs whose UNSIGNED matters to the row decoder
_NUMERIC = frozenset(("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal",
                      "float", "double", "year"))
#: DATA_TYPEs stored as bytes (no collation in information_schema)
_BINARY = frozenset(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"))
_BINARY_COLLATION = 63
_COLLATION_IDS = {name: i for i, name in COLLATIONS.items()}


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    data_type: str
    unsigned: bool
    collation: int | None


#: (schema, table) -> (the map bytes it was asked for, the columns, or None: not applied)
_Cache = dict[tuple[str, str], tuple[bytes, "list[_Column] | None"]]
Query = Callable[[str], "list[list[bytes | None]]"]


class ColumnNames:
    """The ``table_map_hook`` of the live replica's decode context (see the module doc).

    ``query(sql)``: the rows of a query on a connection of its own (raises ``OSError`` or
    ``LiveError`` when it cannot); ``note(text)``: a note item in the output; ``wanted(schema,
    table)``: whether the table's rows are shown (the table filter; None: all)."""

    def __init__(self, query: Query, note: Callable[[str], None],
                 wanted: Callable[[str, str], bool] | None = None) -> None:
        self._query = query
        self._note = note
        #: (schema, table) -> shown at all (``--table``/``--exclude``): others are not asked
        self._wanted = wanted
        self._cache: _Cache = {}
        #: set when the connection itself failed: not tried again in this session
        self.broken: str | None = None

    def __call__(self, tm: TableMap) -> None:
        if not tm.columns or all(c.name is not None for c in tm.columns):
            return
        if self._wanted is not None and not self._wanted(tm.schema, tm.table):
            return
        key = (tm.schema, tm.table)
        got = self._cache.get(key)
        if got is None or got[0] != tm.raw:
            got = (tm.raw, self._ask(tm))
            self._cache[key] = got
        cols = got[1]
        if cols is not None:
            _apply(tm, cols)

    def _ask(self, tm: TableMap) -> list[_Column] | None:
        where = f"{tm.schema}.{tm.table}"
        if self.broken is not None:
            return None
        sql = ("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLLATION_NAME FROM "
               f"information_schema.COLUMNS WHERE TABLE_SCHEMA = {sql_quote(tm.schema)} AND "
               f"TABLE_NAME = {sql_quote(tm.table)} ORDER BY ORDINAL_POSITION")
        try:
            rows = self._query(sql)
        except Exception as exc:  # (any failure: the stream goes on without the names)
            self.broken = str(exc) or type(exc).__name__
            self._note(f"the TABLE_MAP of {where} carries no column names and information_schema"
                       f" could not be asked ({self.broken}): its rows show @1, @2, ... and "
                       "values as the map describes them; not asked again")
            return None
        cols = [_column(r) for r in rows if len(r) >= 4 and r[0] is not None]
        if len(cols) != len(tm.columns):
            self._note(f"the TABLE_MAP of {where} carries no column names and information_schema"
                       f" lists {len(cols)} columns where the map has {len(tm.columns)} (the "
                       "table changed since, or is not there): names not taken from it")
            return None
        self._note(f"column names of {where} taken from information_schema.COLUMNS (its "
                   "TABLE_MAP carries none: binlog_row_metadata=MINIMAL or no metadata), "
                   "with the signedness and collations the map lacks")
        return cols


def _text(v: bytes | None) -> str:
    return "" if v is None else v.decode("utf-8", "replace")


def _column(r: list[bytes | None]) -> _Column:
    data_type = _text(r[1]).lower()
    collation = _COLLATION_IDS.get(_text(r[3])) if r[3] is not None else None
    if collation is None and data_type in _BINARY:
        collation = _BINARY_COLLATION
    return _Column(_text(r[0]), data_type, "unsigned" in _text(r[2]).lower(), collation)


def _apply(tm: TableMap, cols: list[_Column]) -> None:
    for c, info in zip(tm.columns, cols, strict=True):
        if c.name is None:
            c.name = info.name
        if info.data_type in _NUMERIC and info.unsigned:
            c.unsigned = True
        if c.charset is None and info.collation is not None:
            c.charset = info.collation


class InformationSchema:
    """``query(sql)`` on a connection of its own, opened on first use (the dump connection
    streams): logged in as the replica is, nothing shown of its packets."""

    def __init__(self, settings: LiveSettings) -> None:
        self._s = settings
        self._rd: Connection | None = None

    def __call__(self, sql: str) -> list[list[bytes | None]]:
        rd = self._rd
        if rd is None:
            sock = open_socket(self._s)
            rd = Connection(sock, Session(Role.REPLICA), _discard, _discard, None)
            self._rd = rd
            rd.session.record = False
            authenticate(rd, self._s.conn, ServerInfo(), _discard)
            rd.sock.settimeout(self._s.connect_timeout)
        res = run_query(rd, sql)
        if isinstance(res, ErrPacket):
            raise LiveError(f"ERR {res.error_code} {res.error_message}", res.error_code)
        if not isinstance(res, ResultSetComplete):
            return []
        return [list(row.values) for row in res.rows]

    def close(self) -> None:
        rd, self._rd = self._rd, None
        if rd is not None:
            try:
                rd.sock.close()
            except OSError:
                pass


def _discard(*_a: object) -> None:
    return None


__all__ = ["ColumnNames", "InformationSchema"]
