"""MariaDB hi-res TIME/DATETIME/TIMESTAMP (mysql56_temporal_format=OFF): the decimals, which the
TABLE_MAP does not carry, from the CREATE TABLE or from the row bytes."""

from __future__ import annotations

from binlogscope.wire.binlog._rowcode import table_plan
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.rows import INSERT, decode_rows_fast, resolve_mariadb_hires
from binlogscope.wire.binlog.types import ColumnType as T

# Two row images of a WRITE_ROWS_EVENT_V1 written by MariaDB 10.11 for
#   CREATE TABLE t_old_temporal (id INT NOT NULL PRIMARY KEY, rev INT NOT NULL DEFAULT 0,
#     t0 TIME, t3 TIME(3), t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
#     ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL)
# made with SET GLOBAL mysql56_temporal_format = OFF (tests/mariadb_workload.py edge rows)
ROWS = bytes.fromhex(
    # row 1
    "00f8"  # null bitmap: no column NULL (bits 11-15 are unused and set)
    "01000000"  # id 1
    "00000000"  # rev 0
    "590a80"  # t0: old TIME, 3-byte signed HHMMSS = -8385959
    "0000000001"  # t3: TIME(3) big-endian, zero point (838:59:59 + 1 s) * 10^3
    "000000000001"  # t6: TIME(6)
    "40c3775418090000"  # dt0: old DATETIME, 8-byte YYYYMMDDhhmmss
    "0020b127eddc00"  # dt3: DATETIME(3): packed y*13+m.. shifted, / 10^3, 7 bytes big-endian
    "007fb403f9236000"  # dt6: DATETIME(6), 8 bytes
    "01000000"  # ts0: old TIMESTAMP, 4-byte little-endian seconds
    "000000010000"  # ts3: 4-byte big-endian seconds + 2 bytes of milliseconds
    "00000001000000"  # ts6: 4-byte big-endian seconds + 3 bytes of microseconds
    # row 2
    "00f8" "02000000" "00000000"
    "a7f57f" "01680f4aff" "057e7bbcf7ff"
    "7787d105f15a0000" "0146e4ebd7ffff" "04fcee3943bfffff"
    "ffffff7f" "7fffffff03e7" "7fffffff0f423f"
)
NAMES = ["id", "rev", "t0", "t3", "t6", "dt0", "dt3", "dt6", "ts0", "ts3", "ts6"]
TYPES = [T.MYSQL_TYPE_LONG] * 2 + [T.MYSQL_TYPE_TIME] * 3 + [T.MYSQL_TYPE_DATETIME] * 3 + [
    T.MYSQL_TYPE_TIMESTAMP] * 3
ALL = (1 << len(NAMES)) - 1
EXPECTED = [
    {"id": 1, "rev": 0, "t0": "-838:59:59", "t3": "-838:59:59.999", "t6": "-838:59:59.999999",
     "dt0": "1000-01-01 00:00:00", "dt3": "1000-01-01 00:00:00.000",
     "dt6": "1000-01-01 00:00:00.000000", "ts0": "1970-01-01 00:00:01",
     "ts3": "1970-01-01 00:00:01.000", "ts6": "1970-01-01 00:00:01.000000"},
    {"id": 2, "rev": 0, "t0": "838:59:59", "t3": "838:59:59.999", "t6": "838:59:59.999999",
     "dt0": "9999-12-31 23:59:59", "dt3": "9999-12-31 23:59:59.999",
     "dt6": "9999-12-31 23:59:59.999999", "ts0": "2038-01-19 03:14:07",
     "ts3": "2038-01-19 03:14:07.999", "ts6": "2038-01-19 03:14:07.999999"},
]


def _table() -> TableMap:
    cols = [ColumnInfo(i, t, name=n) for i, (t, n) in enumerate(zip(TYPES, NAMES, strict=True))]
    return TableMap(7, "workload", "t_old_temporal", cols)


def _rows(tm: TableMap) -> list[dict[str, object]]:
    return [r["after"] for r in decode_rows_fast(ROWS, INSERT, table_plan(tm, ALL, True), None)]


def test_decimals_inferred_from_row_bytes() -> None:
    tm = _table()
    resolve_mariadb_hires(tm, ROWS, INSERT, ALL, ALL, DecodeContext())
    assert [c.hires_dec for c in tm.columns] == [0, 0, 0, 3, 6, 0, 3, 6, 0, 3, 6]
    assert {c.hires_source for c in tm.columns[2:]} == {"row bytes"}
    assert tm.hires_resolved is True
    assert _rows(tm) == EXPECTED


def test_decimals_from_create_table() -> None:
    ctx = DecodeContext(server_version="10.11.19-MariaDB-log")
    ctx.declared[("workload", "t_old_temporal")] = [
        ("id", None, 0), ("rev", None, 0), ("t0", "TIME", 0), ("t3", "TIME", 3),
        ("t6", "TIME", 6), ("dt0", "DATETIME", 0), ("dt3", "DATETIME", 3),
        ("dt6", "DATETIME", 6), ("ts0", "TIMESTAMP", 0), ("ts3", "TIMESTAMP", 3),
        ("ts6", "TIMESTAMP", 6)]
    tm = _table()
    resolve_mariadb_hires(tm, ROWS, INSERT, ALL, ALL, ctx)
    assert [c.hires_dec for c in tm.columns] == [0, 0, 0, 3, 6, 0, 3, 6, 0, 3, 6]
    assert {c.hires_source for c in tm.columns[2:]} == {"CREATE TABLE"}
    assert _rows(tm) == EXPECTED


def test_create_table_that_does_not_fit_the_rows_is_not_trusted() -> None:
    ctx = DecodeContext()
    # an older definition (e.g. before an ALTER the binlog did not show): wrong decimals
    ctx.declared[("workload", "t_old_temporal")] = [
        (n, {"t": "TIME", "d": "DATETIME"}.get(n[:1], "TIMESTAMP") if n[:1] in "tds" and n != "id"
         else None, 1) for n in NAMES]
    tm = _table()
    resolve_mariadb_hires(tm, ROWS, INSERT, ALL, ALL, ctx)
    assert {c.hires_source for c in tm.columns[2:]} == {"row bytes"}
    assert _rows(tm) == EXPECTED


def test_all_null_column_stays_unknown_until_it_has_a_value() -> None:
    cols = [ColumnInfo(0, T.MYSQL_TYPE_LONG, name="id"),
            ColumnInfo(1, T.MYSQL_TYPE_TIME, name="t")]
    tm = TableMap(1, "db", "t", cols)
    null_row = bytes.fromhex("02" "05000000")  # t is NULL
    resolve_mariadb_hires(tm, null_row, INSERT, 0b11, 0b11, DecodeContext())
    assert tm.hires_resolved is None and cols[1].hires_source == ""
    t3 = (3020400 * 1000 + 1 * 1000 + 500).to_bytes(5, "big")  # TIME(3) 00:00:01.500
    resolve_mariadb_hires(tm, bytes.fromhex("00" "06000000") + t3, INSERT, 0b11, 0b11,
                           DecodeContext())
    assert (cols[1].hires_dec, tm.hires_resolved) == (3, True)
