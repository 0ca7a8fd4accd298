"""The values cases' expectations checked against a real MariaDB: each case's table created from
its DDL, its rows inserted, and what the server's SELECT prints graded with the same grading
as a client (it must pass: the expected values are the server's own text).

Cases MariaDB cannot produce are left out by name (MySQL binary JSON, MariaDB 5.3's hi-res
temporal formats, which need a pre-10.3 server's tables; compressed row events are a stream
form of ordinary rows, checked through values/int-edges & co)."""

from __future__ import annotations

from typing import Any

import pytest

from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import effective_type
from mock_master.conformance.catalogue import catalogue
from mock_master.conformance.grade import compare_value
from mock_master.conformance.model import Case, Verdict

pytestmark = [pytest.mark.mysql, pytest.mark.network]

NOT_ON_MARIADB = {"values/json-mysql", "values/mariadb-hires-temporal",
                  "values/mariadb-compressed-rows"}
_NUMERIC = (T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
            T.MYSQL_TYPE_LONGLONG, T.MYSQL_TYPE_YEAR)


def _cases() -> list[Case]:
    return [c for c in catalogue() if c.section == "values" and "mariadb" in c.flavors
            and c.id not in NOT_ON_MARIADB]


def _as_reported(col: Any, v: Any) -> Any:
    """A text-protocol value as an adapter would report it: numbers as numbers, bytes as
    {"hex"}, text as text."""
    if v is None:
        return None
    t = effective_type(col)
    if isinstance(v, bytes | bytearray):
        if t in _NUMERIC:
            return int(v)
        if t == T.MYSQL_TYPE_BIT:
            return {"hex": bytes(v).hex()}
        if col.charset == 63 or t == T.MYSQL_TYPE_GEOMETRY:
            return {"hex": bytes(v).hex()}
        return bytes(v).decode("utf-8")
    if t in _NUMERIC:
        return int(v)
    return v


@pytest.mark.parametrize("cid", [c.id for c in _cases()])
def test_the_expected_values_are_what_mariadb_prints(mariadb: Any, cid: str) -> None:
    case = next(c for c in _cases() if c.id == cid)
    setup = case.build("mariadb")
    ddl = setup.scenario.schema_ddl or ""
    exp = setup.expected[0]
    t = exp.table
    import pymysql.converters

    # encoders only: every value comes back as the text (or bytes) the server sent
    encoders = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}
    conn = mariadb.connect(conv=encoders, database=None)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
        cur.execute(f"DROP TABLE IF EXISTS `conf`.`{t.table}`")
        for stmt in ddl.split(";\n"):
            if stmt.strip():
                cur.execute(stmt)
        images = [r[1] if exp.kind == "update" else r for r in exp.rows]
        marks = ", ".join(["%s"] * len(t.columns))
        for img in images:
            cur.execute(f"INSERT INTO `conf`.`{t.table}` VALUES ({marks})", list(img))
        first = t.columns[0].name
        cur.execute(f"SELECT * FROM `conf`.`{t.table}` ORDER BY `{first}`")
        got = cur.fetchall()
    finally:
        conn.close()
    want = sorted(images, key=lambda r: r[0])
    assert len(got) == len(want)
    bad = []
    for w, g in zip(want, got, strict=True):
        for col, wv, gv in zip(t.columns, w, g, strict=True):
            v, why = compare_value(col, wv, _as_reported(col, gv))
            if v != Verdict.PASS:
                bad.append(why)
    assert not bad, "\n".join(bad)
