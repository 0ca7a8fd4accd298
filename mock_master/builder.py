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
column names without asking information_schema.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from binlogscope.wire.binlog.header import HEADER_LEN
from binlogscope.wire.fields import lenenc_int
from mock_master.sources import BinlogFile, EventStream, with_checksum

# post-header lengths of real FORMAT_DESCRIPTION events (MariaDB 10.11 and MySQL 8.0)
_MARIADB_POST_HEADERS = bytes(
    [56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 228, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0,
     0, 10, 10, 10, 0, 0, 0, 0, 0, 0, 10, 10, 10] + [0] * 119
    + [4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10])
_MYSQL_POST_HEADERS = bytes(
    [0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
     10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0])

_STMT_END_F = 1


@dataclass(frozen=True)
class Column:
    """One column: name, SQL type text (``INT UNSIGNED``, ``VARCHAR(20)``...), nullable."""

    name: str
    type_code: int
    meta: bytes
    unsigned: bool = False
    charset: int | None = None  # collation id for character columns
    real_type: int | None = None
    length: int = 0
    fsp: int = 0
    precision: int = 0
    scale: int = 0
    sql_type: str = ""
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    table_id: int
    schema: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[int, ...] = (0,)


_UTF8MB4 = 45  # utf8mb4_general_ci
_BINARY = 63

_INT_TYPES = {"TINYINT": (1, 1), "SMALLINT": (2, 2), "MEDIUMINT": (9, 3), "INT": (3, 4),
              "INTEGER": (3, 4), "BIGINT": (8, 8)}


def parse_column(name: str, sql: str) -> Column:
    """A :class:`Column` from SQL type text."""
    text = sql.strip().upper()
    unsigned = "UNSIGNED" in text
    nullable = "NOT NULL" not in text
    m = re.match(r"([A-Z]+)\s*(?:\(([^)]*)\))?", text)
    if not m:
        raise ValueError(f"column {name!r}: cannot parse type {sql!r}")
    base, args = m.group(1), m.group(2)
    nums = [int(x) for x in args.split(",")] if args and args[0].isdigit() else []
    c = dict(name=name, unsigned=unsigned, sql_type=sql.strip(), nullable=nullable)
    if base in _INT_TYPES:
        return Column(type_code=_INT_TYPES[base][0], meta=b"", **c)  # type: ignore[arg-type]
    if base == "FLOAT":
        return Column(type_code=4, meta=bytes([4]), **c)  # type: ignore[arg-type]
    if base in ("DOUBLE", "REAL"):
        return Column(type_code=5, meta=bytes([8]), **c)  # type: ignore[arg-type]
    if base in ("DECIMAL", "NUMERIC"):
        p = nums[0] if nums else 10
        s = nums[1] if len(nums) > 1 else 0
        return Column(type_code=246, meta=bytes([p, s]), precision=p, scale=s,
                      **c)  # type: ignore[arg-type]
    if base == "YEAR":
        return Column(type_code=13, meta=b"", **c)  # type: ignore[arg-type]
    if base == "DATE":
        return Column(type_code=10, meta=b"", **c)  # type: ignore[arg-type]
    if base in ("DATETIME", "TIMESTAMP", "TIME"):
        fsp = nums[0] if nums else 0
        code = {"DATETIME": 18, "TIMESTAMP": 17, "TIME": 19}[base]
        return Column(type_code=code, meta=bytes([fsp]), fsp=fsp, **c)  # type: ignore[arg-type]
    if base in ("VARCHAR", "VARBINARY"):
        n = nums[0] if nums else 255
        cs = _BINARY if base == "VARBINARY" else _UTF8MB4
        maxb = n * (4 if cs == _UTF8MB4 else 1)
        return Column(type_code=15, meta=struct.pack("<H", maxb), charset=cs, length=maxb,
                      **c)  # type: ignore[arg-type]
    if base in ("CHAR", "BINARY"):
        n = nums[0] if nums else 1
        cs = _BINARY if base == "BINARY" else _UTF8MB4
        maxb = n * (4 if cs == _UTF8MB4 else 1)
        if maxb > 1023:
            raise ValueError(f"column {name!r}: CHAR too long for this builder")
        # real type in byte 0 (with the high length bits folded in), length low byte in byte 1
        b0 = 254 ^ ((maxb & 0x300) >> 4)
        return Column(type_code=254, meta=bytes([b0, maxb & 0xFF]), charset=cs, length=maxb,
                      real_type=254, **c)  # type: ignore[arg-type]
    blobs = {"TINYBLOB": 1, "BLOB": 2, "MEDIUMBLOB": 3, "LONGBLOB": 4, "TINYTEXT": 1, "TEXT": 2,
             "MEDIUMTEXT": 3, "LONGTEXT": 4}
    if base in blobs:
        cs = _BINARY if "BLOB" in base else _UTF8MB4
        return Column(type_code=252, meta=bytes([blobs[base]]), charset=cs,
                      length=blobs[base], **c)  # type: ignore[arg-type]
    raise ValueError(f"column {name!r}: type {sql!r} is not supported by the builder")


# ------------------------------------------------------------------------------- value encoders
def _to_bytes(v: Any) -> bytes:
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    return str(v).encode("utf-8")


def _frac(us: int, fsp: int) -> bytes:
    if fsp == 0:
        return b""
    n = (fsp + 1) // 2
    val = us // (10 ** (6 - fsp))
    if fsp in (1, 2):
        val = us // 10000
    elif fsp in (3, 4):
        val = us // 100
    return int(val).to_bytes(n, "big", signed=False)


def _decimal(v: Any, precision: int, scale: int) -> bytes:
    d = Decimal(str(v))
    neg = d < 0
    d = abs(d)
    text = f"{d:.{scale}f}"
    ip, _, fp = text.partition(".")
    intg = precision - scale
    sizes = [0, 1, 1, 2, 2, 3, 3, 4, 4]

    def part(digits: str, n: int, leading: bool) -> bytes:
        out = b""
        full, rest = divmod(n, 9)
        if leading:
            digits = digits.rjust(n, "0")[-n:] if n else ""
            if rest:
                out += int(digits[:rest] or "0").to_bytes(sizes[rest], "big")
                digits = digits[rest:]
            for i in range(full):
                out += int(digits[i * 9:(i + 1) * 9]).to_bytes(4, "big")
        else:
            digits = digits.ljust(n, "0")[:n]
            for i in range(full):
                out += int(digits[i * 9:(i + 1) * 9]).to_bytes(4, "big")
            if rest:
                out += int(digits[full * 9:]).to_bytes(sizes[rest], "big")
        return out

    raw = bytearray(part(ip, intg, True) + part(fp, scale, False))
    raw[0] ^= 0x80
    if neg:
        raw = bytearray(b ^ 0xFF for b in raw)
    return bytes(raw)


def encode_value(col: Column, v: Any) -> bytes:
    t = col.type_code
    if t in (1, 2, 9, 3, 8):
        size = {1: 1, 2: 2, 9: 3, 3: 4, 8: 8}[t]
        n = int(v)
        if n < 0:
            n += 1 << (8 * size)
        return n.to_bytes(size, "little")
    if t == 4:
        return struct.pack("<f", float(v))
    if t == 5:
        return struct.pack("<d", float(v))
    if t == 246:
        return _decimal(v, col.precision, col.scale)
    if t == 13:
        return bytes([0 if int(v) == 0 else int(v) - 1900])
    if t == 10:
        d = v if isinstance(v, dt.date) else dt.date.fromisoformat(str(v))
        return (d.day + d.month * 32 + d.year * 16 * 32).to_bytes(3, "little")
    if t == 18:
        x = v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(str(v))
        ym = x.year * 13 + x.month
        packed = (ym << 22 | x.day << 17 | x.hour << 12 | x.minute << 6 | x.second) \
            + (1 << 39)
        return packed.to_bytes(5, "big") + _frac(x.microsecond, col.fsp)
    if t == 17:
        if isinstance(v, dt.datetime):
            ts = v.replace(tzinfo=v.tzinfo or dt.UTC).timestamp()
            sec, us = int(ts), v.microsecond
        else:
            sec, us = int(v), round((float(v) - int(v)) * 1_000_000)
        return struct.pack(">I", sec) + _frac(us, col.fsp)
    if t == 19:
        td = v if isinstance(v, dt.timedelta) else dt.timedelta(seconds=float(v))
        total_us = int(td.total_seconds() * 1_000_000)
        neg = total_us < 0
        total_us = abs(total_us)
        secs, us = divmod(total_us, 1_000_000)
        h, rem = divmod(secs, 3600)
        m, s = divmod(rem, 60)
        intpart = h << 12 | m << 6 | s
        fsp = col.fsp
        n = (fsp + 1) // 2
        frac_units = (us // (10 ** (6 - fsp))) if fsp else 0
        if fsp in (1, 2):
            frac_units = us // 10000
        elif fsp in (3, 4):
            frac_units = us // 100
        packed = (intpart << (8 * n)) + frac_units
        if neg:
            packed = -packed
        packed += 1 << (24 + 8 * n - 1)
        return packed.to_bytes(3 + n, "big")
    if t == 15:
        data = _to_bytes(v)
        return (bytes([len(data)]) if col.length < 256 else struct.pack("<H", len(data))) + data
    if t == 254:
        data = _to_bytes(v)
        return (bytes([len(data)]) if col.length < 256 else struct.pack("<H", len(data))) + data
    if t == 252:
        data = _to_bytes(v)
        return len(data).to_bytes(col.length, "little") + data
    raise ValueError(f"no encoder for column type {t}")


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

    def _event(self, type_code: int, body: bytes, *, flags: int = 0, log_pos: int | None = None,
               server_id: int | None = None) -> bytes:
        size = HEADER_LEN + len(body) + (4 if self.checksum else 0)
        end = self._pos + size if log_pos is None else log_pos
        hdr = struct.pack("<IBIIIH", self.timestamp, type_code,
                          self.server_id if server_id is None else server_id, size, end, flags)
        ev = hdr + body
        ev = with_checksum(ev) if self.checksum else ev
        self._events.append(ev)
        return ev

    def _new_file(self, number: int) -> None:
        self._events = []
        self.files.append(BinlogFile(f"{self.basename}.{number:06d}", self._events,
                                     self.checksum))
        self._mapped = set()
        self._fde()
        if self.flavor == "mariadb":
            self._gtid_list()
            name = self.files[-1].name.encode()
            self._event(161, struct.pack("<I", len(name)) + name)
        else:
            self._event(35, struct.pack("<Q", 0))  # PREVIOUS_GTIDS: empty set

    def _fde(self) -> None:
        ver = self.server_version.encode()[:50].ljust(50, b"\0")
        table = _MARIADB_POST_HEADERS if self.flavor == "mariadb" else _MYSQL_POST_HEADERS
        body = struct.pack("<H", 4) + ver + struct.pack("<I", self.timestamp) + bytes([19]) \
            + table + bytes([1 if self.checksum else 0])
        self._event(15, body)

    def _gtid_list(self) -> None:
        entries = b""
        count = 0
        if self.seq:
            entries = struct.pack("<IIQ", self.domain_id, self.server_id, self.seq)
            count = 1
        self._event(163, struct.pack("<I", count) + entries)

    # ---------------------------------------------------------------- public API
    def table(self, schema: str, name: str, columns: list[tuple[str, str]],
              primary_key: tuple[int, ...] = (0,)) -> Table:
        """Declare a table (column name + SQL type); row events refer to it."""
        key = (schema, name)
        if key in self.tables:
            return self.tables[key]
        t = Table(self._table_ids, schema, name,
                  tuple(parse_column(n, s) for n, s in columns), primary_key)
        self._table_ids += 1
        self.tables[key] = t
        return t

    def gtid(self, *, standalone: bool = False) -> str:
        """A GTID event opening the next transaction; returns the GTID text."""
        self.seq += 1
        if self.flavor == "mariadb":
            flags = 0x29 if standalone else 0x0C
            self._event(162, struct.pack("<QIB", self.seq, self.domain_id, flags) + b"\0" * 6,
                        flags=0x8)
            return f"{self.domain_id}-{self.server_id}-{self.seq}"
        body = bytes([1]) + self.server_uuid.bytes + struct.pack("<Q", self.seq) + bytes([2]) \
            + struct.pack("<QQ", self.seq - 1, self.seq)
        self._event(33, body)
        return f"{self.server_uuid}:{self.seq}"

    def query(self, sql: str, *, schema: str = "", gtid: bool = True) -> None:
        """A statement in a QUERY event (DDL gets its own standalone GTID)."""
        if gtid and not self._in_txn:
            self.gtid(standalone=True)
        self._query_event(sql, schema)

    def _query_event(self, sql: str, schema: str) -> None:
        status = (b"\x00" + struct.pack("<I", 0)  # Q_FLAGS2_CODE
                  + b"\x01" + struct.pack("<Q", 0)  # Q_SQL_MODE_CODE
                  + b"\x04" + struct.pack("<HHH", 33, 33, 8))  # Q_CHARSET_CODE
        db = schema.encode()
        body = struct.pack("<IIBHH", 1, 0, len(db), 0, len(status)) + status + db + b"\0" \
            + sql.encode()
        self._event(2, body)

    def begin(self) -> str:
        """GTID + BEGIN: a transaction starts."""
        g = self.gtid()
        self._query_event("BEGIN", "")
        self._in_txn = True
        return g

    def commit(self, xid: int | None = None) -> None:
        """XID: the transaction commits."""
        self._event(16, struct.pack("<Q", xid if xid is not None else self.seq + 100))
        self._in_txn = False

    def _table_map(self, t: Table) -> None:
        cols = t.columns
        types = bytes(c.type_code for c in cols)
        meta = b"".join(c.meta for c in cols)
        null_bits = bytearray((len(cols) + 7) // 8)
        for i, c in enumerate(cols):
            if c.nullable:
                null_bits[i // 8] |= 1 << (i % 8)
        s, n = t.schema.encode(), t.name.encode()
        body = t.table_id.to_bytes(6, "little") + struct.pack("<H", 1) \
            + bytes([len(s)]) + s + b"\0" + bytes([len(n)]) + n + b"\0" \
            + lenenc_int(len(cols)) + types + lenenc_int(len(meta)) + meta + bytes(null_bits)
        # optional metadata (binlog_row_metadata=FULL)
        numeric = [c for c in cols if c.type_code in (1, 2, 3, 4, 5, 8, 9, 246)]
        if numeric:
            bits = bytearray((len(numeric) + 7) // 8)
            for i, c in enumerate(numeric):
                if c.unsigned:
                    bits[i // 8] |= 0x80 >> (i % 8)
            body += b"\x01" + lenenc_int(len(bits)) + bytes(bits)
        if any(c.charset is not None for c in cols):
            body += b"\x02" + lenenc_int(1) + bytes([_UTF8MB4])
        names = b"".join(lenenc_int(len(c.name.encode())) + c.name.encode() for c in cols)
        body += b"\x04" + lenenc_int(len(names)) + names
        if t.primary_key:
            pk = b"".join(lenenc_int(i) for i in t.primary_key)
            body += b"\x08" + lenenc_int(len(pk)) + pk
        self._event(19, body)

    def _row_image(self, t: Table, row: tuple[Any, ...] | list[Any]) -> bytes:
        if len(row) != len(t.columns):
            raise ValueError(f"{t.schema}.{t.name}: row has {len(row)} values, the table "
                             f"{len(t.columns)} columns")
        nbytes = (len(t.columns) + 7) // 8
        nulls = bytearray(b"\xff" * nbytes)
        vals = b""
        for i, (c, v) in enumerate(zip(t.columns, row, strict=True)):
            if v is None:
                continue
            nulls[i // 8] &= ~(1 << (i % 8)) & 0xFF
            vals += encode_value(c, v)
        # unused trailing bits stay set, as MariaDB writes them
        for i in range(len(t.columns)):
            if row[i] is None:
                nulls[i // 8] |= 1 << (i % 8)
        return bytes(nulls) + vals

    def _rows(self, kind: int, t: Table, images: list[bytes]) -> None:
        self._table_map(t)  # every row event gets its TABLE_MAP, as servers write them
        ncols = len(t.columns)
        bitmap = b"\xff" * (ncols // 8) + (bytes([(1 << (ncols % 8)) - 1]) if ncols % 8 else b"")
        v2 = self.flavor == "mysql"
        code = {0: 30, 1: 31, 2: 32}[kind] if v2 else {0: 23, 1: 24, 2: 25}[kind]
        head = t.table_id.to_bytes(6, "little") + struct.pack("<H", _STMT_END_F)
        if v2:
            head += struct.pack("<H", 2)
        head += lenenc_int(ncols) + bitmap + (bitmap if kind == 1 else b"")
        self._event(code, head + b"".join(images))

    def insert(self, t: Table, rows: list[tuple[Any, ...]]) -> None:
        self._rows(0, t, [self._row_image(t, r) for r in rows])

    def update(self, t: Table, pairs: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
        self._rows(1, t, [self._row_image(t, a) + self._row_image(t, b) for a, b in pairs])

    def delete(self, t: Table, rows: list[tuple[Any, ...]]) -> None:
        self._rows(2, t, [self._row_image(t, r) for r in rows])

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
        self._event(4, struct.pack("<Q", 4) + name.encode())
        self._new_file(number)
        return name

    def build(self) -> EventStream:
        for f in self.files:
            f.reindex()
        return EventStream(list(self.files))
