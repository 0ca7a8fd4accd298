"""Build binlog events in Python: a test writes the stream it needs without a server.

::

    b = EventBuilder(flavor="mariadb")
    t = b.table("shop", "orders", [("id", "INT"), ("name", "VARCHAR(20)"), ("at", "DATETIME(3)")])
    b.begin()                                   # GTID (MariaDB) / GTID (MySQL) + BEGIN
    b.insert(t, [(1, "a", datetime(2024, 1, 1)), (2, None, None)])
    b.update(t, [((1, "a", None), (1, "b", None))])
    b.delete(t, [(2, None, None)])
    b.commit()                                  # XID
    b.query("CREATE TABLE x (a INT)", schema="shop")   # DDL: its own GTID
    b.rotate()                                  # ROTATE + a new file
    stream = b.build()                          # EventStream for the mock master

Events carry CRC32 checksums (``checksum=False`` for none), MariaDB uses the v1 row events and
GTID/GTID_LIST/BINLOG_CHECKPOINT events, MySQL the v2 row events and GTID_LOG events. TABLE_MAP
events carry FULL row metadata (signedness, charset, column names, primary key), so clients get
column names without asking information_schema. Every event is written by binlogscope's wire
encoders (``binlogscope.wire.binlog.encode_*``), the inverse of the decoders.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.control_events import (
    BinlogCheckpointEvent,
    RotateEvent,
    XidEvent,
)
from binlogscope.wire.binlog.encode_events import (
    encode_binlog_checkpoint,
    encode_event,
    encode_format_description,
    encode_gtid,
    encode_gtid_list,
    encode_mariadb_gtid,
    encode_previous_gtids,
    encode_rotate,
    encode_xid,
    format_description,
)
from binlogscope.wire.binlog.encode_query import encode_query, query_event
from binlogscope.wire.binlog.encode_rows import (
    encode_rows_event,
    encode_table_map,
    rows_event,
    rows_event_type,
)
from binlogscope.wire.binlog.gtid_events import (
    GtidEvent,
    GtidListEvent,
    MariadbGtid,
    MariadbGtidEvent,
    PreviousGtidsEvent,
)
from binlogscope.wire.binlog.rows import DELETE, INSERT, UPDATE
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from mock_master.history.sources import BinlogFile, EventStream

#: a table the builder writes events for: the decoder's TABLE_MAP value
Table = TableMap

_UTF8MB4 = 45  # utf8mb4_general_ci
_BINARY = 63

_INT_TYPES = {"TINYINT": T.MYSQL_TYPE_TINY, "SMALLINT": T.MYSQL_TYPE_SHORT,
              "MEDIUMINT": T.MYSQL_TYPE_INT24, "INT": T.MYSQL_TYPE_LONG,
              "INTEGER": T.MYSQL_TYPE_LONG, "BIGINT": T.MYSQL_TYPE_LONGLONG}
_BLOBS = {"TINYBLOB": 1, "BLOB": 2, "MEDIUMBLOB": 3, "LONGBLOB": 4, "TINYTEXT": 1, "TEXT": 2,
          "MEDIUMTEXT": 3, "LONGTEXT": 4}


def parse_column(name: str, sql: str, index: int = 0) -> ColumnInfo:
    """The TABLE_MAP column (type, metadata, charset, signedness) of SQL type text."""
    text = sql.strip().upper()
    m = re.match(r"([A-Z]+)\s*(?:\(([^)]*)\))?", text)
    if not m:
        raise ValueError(f"column {name!r}: cannot parse type {sql!r}")
    base, args = m.group(1), m.group(2)
    nums = [int(x) for x in args.split(",")] if args and args[0].isdigit() else []
    c = ColumnInfo(index, 0, name=name, nullable="NOT NULL" not in text)
    if base in _INT_TYPES:
        c.type = _INT_TYPES[base]
        c.unsigned = "UNSIGNED" in text
    elif base == "FLOAT":
        c.type, c.meta = T.MYSQL_TYPE_FLOAT, 4
        c.unsigned = "UNSIGNED" in text
    elif base in ("DOUBLE", "REAL"):
        c.type, c.meta = T.MYSQL_TYPE_DOUBLE, 8
        c.unsigned = "UNSIGNED" in text
    elif base in ("DECIMAL", "NUMERIC"):
        p = nums[0] if nums else 10
        scale = nums[1] if len(nums) > 1 else 0
        c.type, c.meta = T.MYSQL_TYPE_NEWDECIMAL, p << 8 | scale
        c.unsigned = "UNSIGNED" in text
    elif base == "YEAR":
        c.type = T.MYSQL_TYPE_YEAR
    elif base == "DATE":
        c.type = T.MYSQL_TYPE_DATE
    elif base in ("DATETIME", "TIMESTAMP", "TIME"):
        c.type = {"DATETIME": T.MYSQL_TYPE_DATETIME2, "TIMESTAMP": T.MYSQL_TYPE_TIMESTAMP2,
                  "TIME": T.MYSQL_TYPE_TIME2}[base]
        c.meta = nums[0] if nums else 0
    elif base in ("VARCHAR", "VARBINARY"):
        n = nums[0] if nums else 255
        c.charset = _BINARY if base == "VARBINARY" else _UTF8MB4
        c.type, c.meta = T.MYSQL_TYPE_VARCHAR, n * (4 if c.charset == _UTF8MB4 else 1)
    elif base in ("CHAR", "BINARY"):
        n = nums[0] if nums else 1
        c.charset = _BINARY if base == "BINARY" else _UTF8MB4
        maxb = n * (4 if c.charset == _UTF8MB4 else 1)
        if maxb > 1023:
            raise ValueError(f"column {name!r}: CHAR too long for this builder")
        # real type in byte 0 (the high length bits folded in), length low byte in byte 1
        c.type, c.real_type = T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_STRING
        c.meta = (254 ^ ((maxb & 0x300) >> 4)) << 8 | (maxb & 0xFF)
    elif base in _BLOBS:
        c.charset = _BINARY if "BLOB" in base else _UTF8MB4
        c.type, c.meta = T.MYSQL_TYPE_BLOB, _BLOBS[base]
    else:
        raise ValueError(f"column {name!r}: type {sql!r} is not supported by the builder")
    return c


# ------------------------------------------------------------------------------- the builder
class EventBuilder:
    """Accumulates events into binlog files (see the module docstring)."""

    def __init__(self, flavor: str = "mariadb", *, server_id: int = 1,
                 server_version: str | None = None, checksum: bool = True,
                 basename: str = "mysql-bin", domain_id: int = 0,
                 server_uuid: str = "3e11fa47-71ca-11e1-9e33-c80aa9429562",
                 timestamp: int = 1_700_000_000) -> None:
        if flavor not in ("mariadb", "mysql"):
            raise ValueError("flavor must be 'mariadb' or 'mysql'")
        self.flavor = flavor
        self.server_id = server_id
        self.server_version = server_version or (
            "10.11.19-MariaDB-log" if flavor == "mariadb" else "8.0.45")
        self.checksum = checksum
        self.basename = basename
        self.domain_id = domain_id
        self.server_uuid = uuid.UUID(server_uuid)
        self.timestamp = timestamp
        self.seq = 0
        self._table_ids = 0x12
        self.tables: dict[tuple[str, str], Table] = {}
        self.files: list[BinlogFile] = []
        self._events: list[bytes] = []
        self._in_txn = False
        self._mapped: set[int] = set()
        self._new_file(1)

    # ---------------------------------------------------------------- framing
    @property
    def _pos(self) -> int:
        return 4 + sum(len(e) for e in self._events)

    def _event(self, type_code: int, body: bytes, *, flags: int = 0,
               server_id: int | None = None) -> bytes:
        def make(log_pos: int) -> bytes:
            return encode_event(type_code, body, timestamp=self.timestamp,
                                server_id=self.server_id if server_id is None else server_id,
                                log_pos=log_pos, flags=flags, checksum=self.checksum)

        ev = make(self._pos + len(make(0)))  # log_pos: where the event ends in its file
        self._events.append(ev)
        return ev

    def _new_file(self, number: int) -> None:
        self._events = []
        self.files.append(BinlogFile(f"{self.basename}.{number:06d}", self._events,
                                     self.checksum))
        self._mapped = set()
        fde = format_description(self.server_version, checksum=self.checksum,
                                 create_timestamp=self.timestamp)
        self._event(E.FORMAT_DESCRIPTION_EVENT, encode_format_description(fde))
        if self.flavor == "mariadb":
            gtids = [MariadbGtid(self.domain_id, self.server_id, self.seq)] if self.seq else []
            self._event(E.GTID_LIST_EVENT, encode_gtid_list(
                GtidListEvent(",".join(map(str, gtids)), gtids, 0)))
            self._event(E.BINLOG_CHECKPOINT_EVENT, encode_binlog_checkpoint(
                BinlogCheckpointEvent(self.files[-1].name)))
        else:
            self._event(E.PREVIOUS_GTIDS_LOG_EVENT, encode_previous_gtids(
                PreviousGtidsEvent("")))

    # ---------------------------------------------------------------- public API
    def table(self, schema: str, name: str, columns: list[tuple[str, str]],
              primary_key: tuple[int, ...] = (0,)) -> Table:
        """Declare a table (column name + SQL type); row events refer to it."""
        key = (schema, name)
        if key in self.tables:
            return self.tables[key]
        t = TableMap(self._table_ids, schema, name,
                     [parse_column(n, s, i) for i, (n, s) in enumerate(columns)],
                     primary_key=list(primary_key))
        self._table_ids += 1
        self.tables[key] = t
        return t

    def gtid(self, *, standalone: bool = False) -> str:
        """A GTID event opening the next transaction; returns the GTID text."""
        self.seq += 1
        if self.flavor == "mariadb":
            g = MariadbGtidEvent(f"{self.domain_id}-{self.server_id}-{self.seq}", self.seq,
                                 self.domain_id, self.server_id, 0x29 if standalone else 0x0C)
            self._event(E.GTID_EVENT, encode_mariadb_gtid(g), flags=0x8)
            return g.gtid
        sid = str(self.server_uuid)
        my = GtidEvent(f"{sid}:{self.seq}", 1, sid, self.seq, lt_type=2,
                       last_committed=self.seq - 1, sequence_number=self.seq)
        self._event(E.GTID_LOG_EVENT, encode_gtid(my))
        return my.gtid

    def query(self, sql: str, *, schema: str = "", gtid: bool = True) -> None:
        """A statement in a QUERY event (DDL gets its own standalone GTID)."""
        if gtid and not self._in_txn:
            self.gtid(standalone=True)
        self._query_event(sql, schema)

    def _query_event(self, sql: str, schema: str) -> None:
        self._event(E.QUERY_EVENT, encode_query(query_event(sql, schema)))

    def begin(self) -> str:
        """GTID + BEGIN: a transaction starts."""
        g = self.gtid()
        self._query_event("BEGIN", "")
        self._in_txn = True
        return g

    def commit(self, xid: int | None = None) -> None:
        """XID: the transaction commits."""
        self._event(E.XID_EVENT, encode_xid(XidEvent(xid if xid is not None else self.seq + 100)))
        self._in_txn = False

    def _rows(self, kind: str, t: Table, rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            for image in (row if kind == UPDATE else (row,)):
                if len(image) != len(t.columns):
                    raise ValueError(f"{t.schema}.{t.table}: row {i} has {len(image)} values, "
                                     f"the table {len(t.columns)} columns")
        # every row event gets its TABLE_MAP, as servers write them
        self._event(E.TABLE_MAP_EVENT, encode_table_map(t))
        version = 2 if self.flavor == "mysql" else 1
        ev = rows_event(t, kind, rows, version=version)
        self._event(rows_event_type(kind, version),
                    encode_rows_event(ev, t, mariadb=self.flavor == "mariadb"))

    def insert(self, t: Table, rows: list[tuple[Any, ...]]) -> None:
        self._rows(INSERT, t, rows)

    def update(self, t: Table, pairs: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
        self._rows(UPDATE, t, pairs)

    def delete(self, t: Table, rows: list[tuple[Any, ...]]) -> None:
        self._rows(DELETE, t, rows)

    def transaction(self, t: Table, rows: list[tuple[Any, ...]]) -> str:
        """Shorthand: begin + insert + commit; returns the GTID."""
        g = self.begin()
        self.insert(t, rows)
        self.commit()
        return g

    def rotate(self) -> str:
        """ROTATE to the next file, which starts with its own FDE; returns the new name."""
        number = len(self.files) + 1
        name = f"{self.basename}.{number:06d}"
        self._event(E.ROTATE_EVENT, encode_rotate(RotateEvent(4, name)))
        self._new_file(number)
        return name

    def build(self) -> EventStream:
        for f in self.files:
            f.reindex()
        return EventStream(list(self.files))
