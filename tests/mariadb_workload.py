"""A MariaDB workload that touches every column type, shared by the workload test and bench/.

``Workload(conn).run_full()`` runs the test workload: edge values of every type, NULLs, multi-row
INSERT/UPDATE/DELETE, a 10,000-row transaction, a rolled-back transaction, DDL, a binlog rotation
and a table in the pre-10.0 temporal format. When ``record`` is on, each logged statement is
remembered with the row images the server holds before and after it (SELECT over the text
protocol, values kept as the server's own text), so a test can compare them with the binlog.

``Workload(conn, record=False).run_bulk(...)`` writes many small transactions of mixed rows fast
(several statements per round trip) for the benchmark binlog.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------------------------- SQL literals


class Raw(str):
    """An SQL expression inserted as is (not quoted)."""


def lit(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, bytes | bytearray):
        return f"X'{bytes(v).hex()}'" if v else "''"
    if isinstance(v, str):
        s = v.replace("\\", "\\\\").replace("'", "\\'").replace("\0", "\\0")
        return f"'{s}'"
    raise TypeError(f"no SQL literal for {type(v).__name__}")


def values_sql(rows: list[tuple[Any, ...]]) -> str:
    return ",".join("(" + ",".join(lit(v) for v in row) + ")" for row in rows)


# ---------------------------------------------------------------------------------- schema

TEMPORAL_FSP = range(7)

TABLES: dict[str, str] = {
    "t_int": """
        ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
        mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
        bi BIGINT, biu BIGINT UNSIGNED""",
    "t_num": """
        d10_2 DECIMAL(10,2), d65_30 DECIMAL(65,30), d38_38 DECIMAL(38,38), d5_0 DECIMAL(5,0),
        d18_9u DECIMAL(18,9) UNSIGNED, d1_1 DECIMAL(1,1), f FLOAT, dbl DOUBLE""",
    "t_bit": "b1 BIT(1), b7 BIT(7), b8 BIT(8), b17 BIT(17), b63 BIT(63), b64 BIT(64)",
    "t_temporal": "y YEAR, d DATE, "
    + ", ".join(f"t{n} TIME({n})" for n in TEMPORAL_FSP) + ", "
    + ", ".join(f"dt{n} DATETIME({n})" for n in TEMPORAL_FSP) + ", "
    + ", ".join(f"ts{n} TIMESTAMP({n}) NULL DEFAULT NULL" for n in TEMPORAL_FSP),
    "t_str": """
        c10 CHAR(10), c255 CHAR(255), vc VARCHAR(300), vc_l1 VARCHAR(20) CHARACTER SET latin1,
        c_l1 CHAR(5) CHARACTER SET latin1, vc_bin VARCHAR(20) COLLATE utf8mb4_bin,
        tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT, tx_l1 TEXT CHARACTER SET latin1""",
    "t_bin": """
        bn BINARY(8), bn1 BINARY(1), vb VARBINARY(300), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB,
        lb LONGBLOB""",
    "t_enum": """
        e ENUM('a','b','c'),
        e300 ENUM(""" + ",".join(f"'m{k:03d}'" for k in range(300)) + """),
        s64 SET(""" + ",".join(f"'s{k:02d}'" for k in range(64)) + """),
        s2 SET('x','y'), e_utf ENUM('ä','😀','z')""",
    "t_json": "j JSON, j2 JSON",
    "t_geo": """
        g GEOMETRY, p POINT, ls LINESTRING, pg POLYGON, mp MULTIPOINT, gc GEOMETRYCOLLECTION""",
    "t_bulk": """
        i INT, u BIGINT UNSIGNED, vc VARCHAR(100), d DECIMAL(12,4), dt DATETIME(3),
        ts TIMESTAMP(6) NULL DEFAULT NULL, b VARBINARY(32), f DOUBLE, e ENUM('red','green','blue'),
        tx TEXT, n SMALLINT""",
}

#: the pre-MariaDB-10.1 / MySQL-5.5 temporal formats, made with mysql56_temporal_format=OFF
OLD_TEMPORAL_TABLE = "t_old_temporal"
OLD_TEMPORAL_COLUMNS = """
    t0 TIME, t3 TIME(3), t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
    ts0 TIMESTAMP NULL DEFAULT NULL, ts3 TIMESTAMP(3) NULL DEFAULT NULL,
    ts6 TIMESTAMP(6) NULL DEFAULT NULL"""


def create_sql(table: str, columns: str) -> str:
    return (f"CREATE TABLE {table} (id INT NOT NULL PRIMARY KEY, rev INT NOT NULL DEFAULT 0, "
            f"{' '.join(columns.split())}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")


def column_names(columns: str) -> list[str]:
    names = []
    depth = 0
    start = 0
    text = " ".join(columns.split())
    for k, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(text[start:k].split()[0])
            start = k + 1
    names.append(text[start:].split()[0])
    return names


# ---------------------------------------------------------------------------------- edge values

_TIMES = ["-838:59:59.999999", "838:59:59.999999", "00:00:00", "-00:00:01.5",
          "12:34:56.123456", "-12:34:56.654321", "100:00:00.000001"]
_DATETIMES = ["1000-01-01 00:00:00", "9999-12-31 23:59:59.999999", "0000-00-00 00:00:00",
              "2024-02-29 12:34:56.123456", "2024-00-00 00:00:00", "1999-12-31 23:59:59.5",
              "2000-01-01 00:00:00.000001"]
_TIMESTAMPS = ["1970-01-01 00:00:01", "2038-01-19 03:14:07.999999", "0000-00-00 00:00:00",
               "2024-02-29 12:34:56.123456", "2001-09-09 01:46:40", "1999-12-31 23:59:59.5",
               "2000-01-01 00:00:00.000001"]
_YEARS = [1901, 2155, 0, 2024, 1999, 2000, 1970]
_DATES = ["1000-01-01", "9999-12-31", "0000-00-00", "2024-02-29", "2024-00-00", "1999-12-31",
          "2000-01-01"]


def edge_rows(table: str, rng: random.Random, big: bool = True) -> list[tuple[Any, ...]]:
    """Rows (without id/rev) holding the edge values of every column of ``table``.

    ``big=False`` shrinks the large TEXT/BLOB values (1 MB -> a few KB) for small captures.
    """
    k = 1 if big else 0
    if table == "t_int":
        return [
            (-128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -(1 << 63), 0),
            (127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,
             (1 << 63) - 1, (1 << 64) - 1),
            (-1, 1, -1, 1, -1, 1, -1, 1, -1, 1),
            (0,) * 10,
            (100, 200, -300, 40000, 1234567, 9999999, -123456789, 3000000000,
             -1234567890123456789, 12345678901234567890),
        ]
    if table == "t_num":
        return [
            ("99999999.99", "9" * 35 + "." + "9" * 30, "0." + "9" * 38, "99999",
             "999999999.999999999", "0.9", 1.5, 1.7976931348623157e308),
            ("-99999999.99", "-" + "9" * 35 + "." + "9" * 30, "-0." + "9" * 38, "-99999",
             "0", "-0.9", -3.25, -2.2250738585072014e-308),
            ("0", "0", "0", "0", "0", "0", 0.0, 0.0),
            ("-0.01", "0." + "0" * 29 + "1", "0." + "0" * 37 + "1", "-1", "0.000000001", "-0.1",
             1.1, 0.1),
            ("-1234.56", "-12345678901234567890.123456789012345678901234567890",
             "-0.12345678901234567890123456789012345678", "12345", "123456789.123456789",
             "0.5", -0.25, -123456.789e-10),
        ]
    if table == "t_bit":
        return [
            (0, 0, 0, 0, 0, 0),
            (1, 127, 255, (1 << 17) - 1, (1 << 63) - 1, (1 << 64) - 1),
            (1, 0x55, 0x80, 0x10001, 1 << 62, 1 << 63),
            (0, 1, 1, 1, 1, 1),
        ]
    if table == "t_temporal":
        out = []
        for k in range(len(_TIMES)):
            out.append((_YEARS[k], _DATES[k], *([_TIMES[k]] * 7), *([_DATETIMES[k]] * 7),
                        *([_TIMESTAMPS[k]] * 7)))
        return out
    if table == OLD_TEMPORAL_TABLE:
        return [(t, t, t, dt, dt, dt, ts, ts, ts)
                for t, dt, ts in zip(_TIMES, _DATETIMES, _TIMESTAMPS, strict=True)]
    if table == "t_str":
        return [
            ("", "", "", "", "", "", "", "", "", "", ""),
            ("abc", "x" * 255, "héllo wörld", "café €", "ÿ€", "Abc", "tiny", "text",
             "medium", "long", "latin1 text: àéîõü ß"),
            ("日本語", "😀" * 255, "😀🎉👍 emoji" + "ü" * 280, "trail  ", "ab ", "x ",
             "😀" * 63, "ü" * (16000 if k else 300), "m" * (70000 if k else 300),
             "😀" * (50000 if k else 100), "€" * 1000),
            ("trail  ", " lead", "tab\tnew\nline\\ 'q' \"dq\"", "\x7f\x01", "a'b", "",
             "\u0000nul", "zero\u0000byte", "", "", ""),
        ]
    if table == "t_bin":
        mb = rng.randbytes(1 << 20 if big else 2000)
        return [
            (b"\x01\x02", b"\x00", b"\x00\xab\x00", b"", b"", b"", b""),
            (b"\x00" * 8, b"\xff", b"\x00" * 10, b"\x00", b"\xff" * 300, mb,
             rng.randbytes(70000 if big else 3000)),
            (b"\xff" * 8, b"a", b"", b"tiny\x00", bytes(range(256)), b"\x00\x00", b"x" * 100),
            (b"ab\x00\x00cd", b"\x20", b"trail  ", b"\x20", b"\x20\x00", b" ", b"\x00 "),
        ]
    if table == "t_enum":
        all64 = ",".join(f"s{k:02d}" for k in range(64))
        return [
            ("a", "m000", "", "", "ä"),
            ("c", "m299", all64, "x,y", "😀"),
            ("b", "m255", "s00,s63", "y", "z"),
            ("", "m256", "s07,s08,s15,s16,s31,s32", "x", ""),
        ]
    if table == "t_json":
        return [
            ('{"a": [1, 2.5, "x", null, true, false], "b": {"c": {}}}', "[]"),
            ('"é😀"', '{"n": -1.5e300, "s": "tab\\t", "u": "\\u00e9"}'),
            ("null", "123"),
        ]
    if table == "t_geo":
        return [
            (Raw("ST_GeomFromText('POINT(1 2)')"), Raw("ST_GeomFromText('POINT(-1.5 2.25)')"),
             Raw("ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)')"),
             Raw("ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))')"),
             Raw("ST_GeomFromText('MULTIPOINT(1 1, 2 2)')"),
             Raw("ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))')")),
            (Raw("ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))', 4326)"),
             Raw("ST_GeomFromText('POINT(10 20)', 4326)"),
             Raw("ST_GeomFromText('LINESTRING(1 1, 2 2)', 3857)"),
             Raw("ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')"),
             Raw("ST_GeomFromText('MULTIPOINT(0 0)')"),
             Raw("ST_GeomFromText('GEOMETRYCOLLECTION EMPTY')")),
        ]
    raise KeyError(table)


def bulk_row(rng: random.Random) -> tuple[Any, ...]:
    """One random row of ``t_bulk`` (without id/rev)."""
    null = rng.random() < 0.05
    return (
        rng.randint(-(1 << 31), (1 << 31) - 1),
        rng.getrandbits(64),
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyzäö€ ", k=rng.randint(0, 16))),
        f"{rng.randint(-99999999, 99999999)}.{rng.randint(0, 9999):04d}",
        f"20{rng.randint(0, 38):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f".{rng.randint(0, 999):03d}",
        None if null else f"20{rng.randint(10, 37):02d}-{rng.randint(1, 12):02d}-"
        f"{rng.randint(1, 28):02d} 12:{rng.randint(0, 59):02d}:00.{rng.randint(0, 999999):06d}",
        rng.randbytes(rng.randint(0, 16)),
        round(rng.uniform(-1e6, 1e6), 3),
        rng.choice(["red", "green", "blue"]),
        None if null else "text " * rng.randint(0, 3),
        None if null else rng.randint(-32768, 32767),
    )


def mariadb_types_available(version: tuple[int, int]) -> dict[str, str]:
    """MariaDB-only column types this server version has (column name -> type)."""
    out = {}
    if version >= (10, 5):
        out["i6"] = "INET6"
    if version >= (10, 7):
        out["u"] = "UUID"
    if version >= (10, 10):
        out["i4"] = "INET4"
    return out


def parse_version(text: str) -> tuple[int, int]:
    major, minor = text.split("-", 1)[0].split(".")[:2]
    return int(major), int(minor)


# ---------------------------------------------------------------------------------- runner


@dataclass
class Expected:
    """One logged statement: its SQL, table and row images as text (keyed by id)."""

    sql: str
    table: str
    kind: str  # "insert" | "update" | "delete"
    before: dict[int, dict[str, Any]] = field(default_factory=dict)
    after: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Workload:
    conn: Any  # a pymysql connection (``conv={}`` when recording)
    record: bool = True
    seed: int = 20240229
    expected: list[Expected] = field(default_factory=list)
    #: statements that were rolled back: their rows must not be in the binlog
    rolled_back_ids: dict[str, set[int]] = field(default_factory=dict)
    pending: list[Expected] = field(default_factory=list)
    in_tx: bool = False
    mariadb_types: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.next_id: dict[str, int] = {}

    # ----------------------------------------------------------------- plumbing
    def execute(self, sql: str) -> int:
        with self.conn.cursor() as cur:
            return int(cur.execute(sql))

    def select(self, table: str, where: str) -> dict[int, dict[str, Any]]:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY id")
            names = [d[0] for d in cur.description]
            out = {}
            for row in cur.fetchall():
                d = dict(zip(names, row, strict=True))
                out[int(d["id"])] = d
            return out

    def ids(self, table: str, n: int) -> list[int]:
        start = self.next_id.get(table, 1)
        self.next_id[table] = start + n
        return list(range(start, start + n))

    def _log(self, e: Expected) -> None:
        if self.in_tx:
            self.pending.append(e)
        else:
            self.expected.append(e)

    def begin(self) -> None:
        self.execute("BEGIN")
        self.in_tx = True

    def commit(self) -> None:
        self.execute("COMMIT")
        self.expected.extend(self.pending)
        self.pending.clear()
        self.in_tx = False

    def rollback(self) -> None:
        self.execute("ROLLBACK")
        for e in self.pending:
            if e.kind == "insert":
                self.rolled_back_ids.setdefault(e.table, set()).update(e.after)
        self.pending.clear()
        self.in_tx = False

    # ----------------------------------------------------------------- statements
    def insert(self, table: str, rows: list[tuple[Any, ...]]) -> list[int]:
        ids = self.ids(table, len(rows))
        sql = (f"INSERT INTO {table} VALUES "
               + values_sql([(i, 0, *row) for i, row in zip(ids, rows, strict=True)]))
        n = self.execute(sql)
        assert n == len(rows), (sql[:200], n)
        if self.record:
            e = Expected(sql, table, "insert")
            e.after = self.select(table, f"id BETWEEN {ids[0]} AND {ids[-1]}")
            assert len(e.after) == len(rows)
            self._log(e)
        return ids

    def update(self, table: str, assignments: str, where: str) -> int:
        sql = f"UPDATE {table} SET rev = rev + 1, {assignments} WHERE {where}"
        e = Expected(sql, table, "update")
        if self.record:
            e.before = self.select(table, where)
        n = self.execute(sql)
        if self.record:
            e.after = self.select(table, where)
            assert n == len(e.before) == len(e.after) > 0, (sql[:200], n)
            self._log(e)
        return n

    def delete(self, table: str, where: str) -> int:
        sql = f"DELETE FROM {table} WHERE {where}"
        e = Expected(sql, table, "delete")
        if self.record:
            e.before = self.select(table, where)
        n = self.execute(sql)
        if self.record:
            assert n == len(e.before) > 0, (sql[:200], n)
            self._log(e)
        return n

    def null_row(self, table: str, ncols: int) -> list[int]:
        return self.insert(table, [(None,) * ncols])

    # ----------------------------------------------------------------- the test workload
    def run_full(self, *, version: str, flush: bool = True, bulk_rows: int = 10_000,
                 big: bool = True) -> None:
        """The test workload (every type, edge values, DML, DDL, rotation, 10k-row tx)."""
        rng = self.rng
        self.execute("SET SESSION sql_mode = ''")  # zero dates, '' for a bad ENUM
        self.execute("SET SESSION time_zone = '+00:00'")
        for table, cols in TABLES.items():
            self.execute(create_sql(table, cols))
        self.execute("SET GLOBAL mysql56_temporal_format = OFF")
        try:
            self.execute(create_sql(OLD_TEMPORAL_TABLE, OLD_TEMPORAL_COLUMNS))
        finally:
            self.execute("SET GLOBAL mysql56_temporal_format = ON")
        self.mariadb_types = mariadb_types_available(parse_version(version))
        if self.mariadb_types:
            cols = ", ".join(f"{c} {t}" for c, t in self.mariadb_types.items())
            self.execute(create_sql("t_mariadb", cols))

        typed = [t for t in TABLES if t != "t_bulk"] + [OLD_TEMPORAL_TABLE]
        for table in typed:
            cols = TABLES.get(table, OLD_TEMPORAL_COLUMNS)
            rows = edge_rows(table, rng, big)
            if table in ("t_bin", "t_str"):  # big rows: one statement each
                for row in rows:
                    self.insert(table, [row])
            else:
                self.insert(table, rows)
            self.null_row(table, len(column_names(cols)))
        if self.mariadb_types:
            vals: dict[str, list[Any]] = {
                "INET6": ["::", "2001:db8::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                          "::ffff:192.0.2.1"],
                "UUID": ["00000000-0000-0000-0000-000000000000",
                         "123e4567-e89b-12d3-a456-426655440000",
                         "ffffffff-ffff-ffff-ffff-ffffffffffff",
                         "6ccd780c-baba-4026-9564-5b8c656024db"],
                "INET4": ["0.0.0.0", "192.0.2.1", "255.255.255.255", "10.0.0.1"],
            }
            rows4 = list(zip(*(vals[t] for t in self.mariadb_types.values()), strict=True))
            self.insert("t_mariadb", rows4)
            self.null_row("t_mariadb", len(self.mariadb_types))

        # UPDATE and DELETE with before images, multi-row
        self.update("t_int", "ti = -ti - 1, biu = 18446744073709551615 - biu", "id <= 4")
        self.update("t_num", "d10_2 = -d10_2, f = f * 2, dbl = -dbl", "id BETWEEN 1 AND 5")
        self.update("t_temporal", "t3 = '-01:02:03.456', dt6 = '2000-02-29 00:00:00.000001'",
                    "id IN (1, 3, 5)")
        self.update("t_str", "vc = CONCAT(vc, '✓'), c10 = 'upd'", "id <= 3")
        self.update("t_enum", "e = 'b', s64 = 's01,s62'", "id <= 5")
        self.update("t_bit", "b64 = b64 ^ 1, b1 = 1 - b1", "id <= 4")
        self.delete("t_int", "id IN (2, 3)")
        self.delete("t_json", "id = 1")

        if flush:
            self.execute("FLUSH BINARY LOGS")  # rotation mid-workload

        # a large blob changed again (the before image is 1 MB too)
        self.update("t_bin", "bl = X'00', vb = X'ff00'", "id = 2")
        self.delete("t_bin", "id = 1")

        # a rolled back transaction: nothing of it may reach the binlog
        self.begin()
        self.insert("t_int", [(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)] * 3)
        self.update("t_num", "d5_0 = 7", "id = 1")
        self.rollback()

        # one transaction with 10,000 inserted and 10,000 updated rows
        self.begin()
        for _ in range(bulk_rows // 2000):
            self.insert("t_bulk", [bulk_row(rng) for _ in range(2000)])
        rest = bulk_rows % 2000
        if rest:
            self.insert("t_bulk", [bulk_row(rng) for _ in range(rest)])
        self.update("t_bulk", "i = i DIV 2, vc = LEFT(CONCAT('u', vc), 100), "
                    "dt = dt + INTERVAL 1 SECOND", "id >= 1")
        self.commit()
        self.delete("t_bulk", f"id > {bulk_rows - 100}")

        # DDL: create, insert, alter (add/drop columns), insert, update, drop
        self.execute(create_sql("t_ddl", "a INT, b VARCHAR(10)"))
        self.insert("t_ddl", [(1, "one"), (2, "two")])
        self.execute("ALTER TABLE t_ddl ADD COLUMN c DATETIME(2) AFTER a, DROP COLUMN b")
        self.insert("t_ddl", [(3, "2024-01-01 00:00:00.12")])
        self.update("t_ddl", "a = a + 10", "id >= 1")
        self.delete("t_ddl", "id = 1")
        self.execute("DROP TABLE t_ddl")

    # ----------------------------------------------------------------- the benchmark workload
    def run_bulk(self, row_changes: int, *, flush_every: int = 0,
                 statements_per_batch: int = 50) -> int:
        """Mixed small transactions on ``t_bulk`` (+ some typed tables); ~row_changes rows.

        Returns the number of row changes written. Not recorded (``record`` is ignored).
        """
        rng = self.rng
        self.execute("SET SESSION sql_mode = ''")
        self.execute("SET SESSION time_zone = '+00:00'")
        for table, cols in TABLES.items():
            if table in ("t_bulk", "t_int", "t_temporal", "t_num", "t_enum"):
                self.execute(create_sql(table, cols).replace("CREATE TABLE",
                                                             "CREATE TABLE IF NOT EXISTS"))
        done = 0
        live: list[tuple[int, int]] = []  # (first id, last id) ranges still present
        next_id = 1
        batch: list[str] = []
        since_flush = 0
        side = {"t_int": 1, "t_temporal": 1, "t_num": 1, "t_enum": 1}

        def flush_batch() -> None:
            if batch:
                self.execute(";".join(batch))  # closing the cursor drains every result
                batch.clear()

        while done < row_changes:
            r = rng.random()
            if r < 0.55 or len(live) < 20:
                n = rng.randint(1, 5)
                rows = [(next_id + k, 0, *bulk_row(rng)) for k in range(n)]
                batch.append(f"INSERT INTO t_bulk VALUES {values_sql(rows)}")
                live.append((next_id, next_id + n - 1))
                next_id += n
            elif r < 0.80:
                a, b = live[rng.randrange(len(live))]
                n = b - a + 1
                batch.append(f"UPDATE t_bulk SET rev = rev + 1, i = i + 1, "
                             f"vc = LEFT(CONCAT('u', vc), 100) WHERE id BETWEEN {a} AND {b}")
            elif r < 0.97:
                a, b = live.pop(rng.randrange(len(live)))
                n = b - a + 1
                batch.append(f"DELETE FROM t_bulk WHERE id BETWEEN {a} AND {b}")
            else:
                table = rng.choice(list(side))
                rows = edge_rows(table, rng)
                n = len(rows)
                start = side[table]
                side[table] += n
                batch.append(f"INSERT INTO {table} VALUES "
                             + values_sql([(start + k, 0, *row) for k, row in enumerate(rows)]))
            done += n
            since_flush += n
            if len(batch) >= statements_per_batch:
                flush_batch()
            if flush_every and since_flush >= flush_every:
                flush_batch()
                self.execute("FLUSH BINARY LOGS")
                since_flush = 0
        flush_batch()
        return done
