"""Round trips of the TABLE_MAP, row-event and column-value encoders, for every column type the
decoder reads: ``make_reader(col)(encode_value(col, v), 0) == (v, len)`` and whole events."""

from __future__ import annotations

import calendar
import json
import struct
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.encode_events import encode_event
from binlogscope.wire.binlog.encode_rows import (
    encode_rows_event,
    encode_table_map,
    rows_event,
    rows_event_type,
)
from binlogscope.wire.binlog.encode_values import encode_json_binary, encode_value
from binlogscope.wire.binlog.json_binary import json_binary_to_text
from binlogscope.wire.binlog.rows import DELETE, INSERT, UPDATE, RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import make_reader
from tests.helpers import body_of
from tests.native_switch import NativeSwitch
from tests.property.test_encode_events import MARIADB, MYSQL, context

Case = tuple[ColumnInfo, st.SearchStrategy[Any]]
utf8_text = st.text(st.characters(categories=("L", "M", "N", "P", "S", "Z")), max_size=30)
member = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)


def _frac(draw: st.DrawFn, fsp: int) -> str:
    if not fsp:
        return ""
    return "." + str(draw(st.integers(0, 10**fsp - 1))).rjust(fsp, "0")


def _date(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}"


@st.composite
def datetimes(draw: st.DrawFn, fsp: int, *, year_min: int = 0) -> str:
    y, m, d = draw(st.integers(year_min, 9999)), draw(st.integers(0, 12)), draw(
        st.integers(0, 31))
    hh, mi, ss = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    return f"{_date(y, m, d)} {hh:02d}:{mi:02d}:{ss:02d}{_frac(draw, fsp)}"


@st.composite
def times(draw: st.DrawFn, fsp: int) -> str:
    hh, mi, ss = draw(st.integers(0, 838)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    frac = _frac(draw, fsp)
    zero = hh == mi == ss == 0 and not frac.strip(".0")
    sign = "-" if not zero and draw(st.booleans()) else ""
    return f"{sign}{hh:02d}:{mi:02d}:{ss:02d}{frac}"


@st.composite
def timestamps(draw: st.DrawFn, fsp: int) -> str:
    secs = draw(st.integers(0, (1 << 31) - 1))
    frac = _frac(draw, fsp)
    if secs == 0 and not frac.strip(".0"):
        return "0000-00-00 00:00:00" + frac
    t = time.gmtime(secs)
    return time.strftime("%Y-%m-%d %H:%M:%S", t) + frac


@st.composite
def decimals(draw: st.DrawFn, precision: int, scale: int) -> str:
    n = draw(st.integers(0, 10**precision - 1))
    digits = str(n).rjust(scale + 1, "0")
    textv = digits[:-scale] + "." + digits[-scale:] if scale else digits
    return ("-" + textv) if n and draw(st.booleans()) else textv


def _string_meta(maxb: int) -> int:
    return ((254 ^ ((maxb & 0x300) >> 4)) << 8) | (maxb & 0xFF)


@st.composite
def cases(draw: st.DrawFn, mariadb: bool = False) -> Case:
    """One column (type, metadata) and a strategy of its decoded values."""
    kind = draw(st.sampled_from([
        "int", "float", "double", "decimal", "year", "date", "time2", "datetime2",
        "timestamp2", "time", "datetime", "timestamp", "hires", "varchar", "char", "binary",
        "enum", "set", "blob", "text", "json", "geometry", "vector", "bit", "null"]))
    c = ColumnInfo(0, 0)
    s: st.SearchStrategy[Any]
    if kind == "int":
        c.type, size = draw(st.sampled_from([(T.MYSQL_TYPE_TINY, 1), (T.MYSQL_TYPE_SHORT, 2),
                                             (T.MYSQL_TYPE_INT24, 3), (T.MYSQL_TYPE_LONG, 4),
                                             (T.MYSQL_TYPE_LONGLONG, 8)]))
        c.unsigned = draw(st.booleans())
        bits = 8 * size
        s = (st.integers(0, (1 << bits) - 1) if c.unsigned
             else st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1))
    elif kind == "float":
        c.type, c.meta = T.MYSQL_TYPE_FLOAT, 4
        s = st.floats(width=32, allow_nan=False)
    elif kind == "double":
        c.type, c.meta = T.MYSQL_TYPE_DOUBLE, 8
        s = st.floats(allow_nan=False)
    elif kind == "decimal":
        p = draw(st.integers(1, 65))
        sc = draw(st.integers(0, min(p, 30)))
        c.type, c.meta = T.MYSQL_TYPE_NEWDECIMAL, p << 8 | sc
        s = decimals(p, sc)
    elif kind == "year":
        c.type = T.MYSQL_TYPE_YEAR
        s = st.one_of(st.just(0), st.integers(1901, 2155))
    elif kind == "date":
        c.type = draw(st.sampled_from([T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE]))
        s = st.builds(_date, st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31))
    elif kind in ("time2", "datetime2", "timestamp2"):
        fsp = draw(st.integers(0, 6))
        c.meta = fsp
        c.type, s = {"time2": (T.MYSQL_TYPE_TIME2, times(fsp)),
                     "datetime2": (T.MYSQL_TYPE_DATETIME2, datetimes(fsp)),
                     "timestamp2": (T.MYSQL_TYPE_TIMESTAMP2, timestamps(fsp))}[kind]
    elif kind == "time":
        c.type, s = T.MYSQL_TYPE_TIME, times(0)
    elif kind == "datetime":
        c.type, s = T.MYSQL_TYPE_DATETIME, datetimes(0)
    elif kind == "timestamp":
        c.type, s = T.MYSQL_TYPE_TIMESTAMP, timestamps(0)
    elif kind == "hires":
        dec = draw(st.integers(1, 6))
        c.hires_dec = dec
        c.type, s = draw(st.sampled_from([
            (T.MYSQL_TYPE_TIME, times(dec)), (T.MYSQL_TYPE_DATETIME, datetimes(dec)),
            (T.MYSQL_TYPE_TIMESTAMP, timestamps(dec))]))
    elif kind == "varchar":
        c.type = draw(st.sampled_from([T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING]))
        c.meta = draw(st.sampled_from([30, 255, 256, 1000, 65535]))
        c.charset = draw(st.sampled_from([45, 33, 63]))
        s = (st.binary(max_size=30) if c.charset == 63
             else utf8_text.filter(lambda x: len(x.encode()) <= 30))
    elif kind in ("char", "binary"):
        maxb = draw(st.sampled_from([1, 10, 255, 256, 600, 1020]))
        c.type, c.meta, c.real_type = T.MYSQL_TYPE_STRING, _string_meta(maxb), 254
        if kind == "binary":
            c.charset = 63
            s = st.binary(min_size=maxb, max_size=maxb)  # BINARY(n) values are n bytes
        else:
            c.charset = 45
            s = utf8_text.filter(lambda x: len(x.encode()) <= maxb)
    elif kind in ("enum", "set"):
        real = T.MYSQL_TYPE_ENUM if kind == "enum" else T.MYSQL_TYPE_SET
        names = draw(st.lists(member, min_size=1, max_size=12, unique=True))
        size = draw(st.integers(1, 2)) if kind == "enum" else (len(names) + 7) // 8
        c.type, c.meta, c.real_type = T.MYSQL_TYPE_STRING, real << 8 | size, real
        if kind == "enum":
            c.enum_values = names
            s = st.sampled_from(["", *names])
        else:
            c.set_values = names
            s = st.lists(st.sampled_from(names), unique=True).map(
                lambda xs: ",".join(n for n in c.set_values or [] if n in xs))
    elif kind in ("blob", "text"):
        c.type, c.meta = draw(st.sampled_from([(T.MYSQL_TYPE_TINY_BLOB, 1), (T.MYSQL_TYPE_BLOB, 2),
                                               (T.MYSQL_TYPE_MEDIUM_BLOB, 3),
                                               (T.MYSQL_TYPE_LONG_BLOB, 4),
                                               (T.MYSQL_TYPE_BLOB, 1)]))
        if kind == "blob":
            c.charset = draw(st.sampled_from([None, 63]))
            s = st.binary(max_size=200)
        else:
            c.charset = 45
            s = utf8_text
    elif kind == "json":
        c.type, c.meta = T.MYSQL_TYPE_JSON, 4
        c.charset = 63
        if mariadb:
            s = utf8_text
        else:
            s = st.recursive(
                st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | utf8_text,
                lambda kids: st.lists(kids, max_size=4)
                | st.dictionaries(utf8_text, kids, max_size=4), max_leaves=12)
    elif kind == "geometry":
        c.type, c.meta = T.MYSQL_TYPE_GEOMETRY, 4
        s = st.binary(max_size=60)
    elif kind == "vector":
        c.type, c.meta = T.MYSQL_TYPE_VECTOR, 4
        # below FLT_MAX: the decoder's display text (float32_shortest) overflows near it
        s = st.lists(st.floats(-2.0**126, 2.0**126, width=32), max_size=8)
    elif kind == "bit":
        nbits = draw(st.integers(1, 64))
        c.type, c.meta = T.MYSQL_TYPE_BIT, (nbits // 8) << 8 | nbits % 8
        s = st.integers(0, (1 << nbits) - 1)
    else:
        c.type = T.MYSQL_TYPE_NULL
        s = st.none()
    return c, s


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_every_column_type(data: st.DataObject, mariadb: bool) -> None:
    c, values = data.draw(cases(mariadb))
    v = data.draw(values)
    json_text = c.type == T.MYSQL_TYPE_JSON and not mariadb
    raw = encode_value(c, json.dumps(v) if json_text else v, mariadb=mariadb)
    got, end = make_reader(c, mariadb=mariadb)(raw + b"\x99", 0)
    assert end == len(raw)
    if json_text:
        assert json.loads(got) == v
        assert got == json_binary_to_text(encode_json_binary(json.loads(got)))
    else:
        assert got == v


def test_timestamp_from_datetime() -> None:
    import datetime as dt

    c = ColumnInfo(0, T.MYSQL_TYPE_TIMESTAMP2, meta=3)
    when = dt.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=dt.UTC)
    raw = encode_value(c, when)
    assert struct.unpack(">I", raw[:4])[0] == calendar.timegm(when.utctimetuple())
    assert make_reader(c)(raw, 0)[0] == "2024-02-29 12:34:56.789"


@st.composite
def tables(draw: st.DrawFn, mariadb: bool) -> tuple[TableMap, list[st.SearchStrategy[Any]]]:
    picked = draw(st.lists(cases(mariadb), min_size=1, max_size=10))
    cols: list[ColumnInfo] = []
    strategies: list[st.SearchStrategy[Any]] = []
    names = draw(st.lists(member, min_size=len(picked), max_size=len(picked), unique=True))
    with_names = draw(st.booleans())
    for i, (c, s) in enumerate(picked):
        old_temporal = c.type in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME,
                                  T.MYSQL_TYPE_TIMESTAMP)
        if old_temporal and (c.hires_dec or mariadb):
            # the TABLE_MAP does not carry the decimals of MariaDB hi-res columns, and a
            # MariaDB decoder guesses them from the row bytes: such columns are tested value
            # by value (test_every_column_type) only
            c.hires_dec = 0
            c.type, c.meta, s = T.MYSQL_TYPE_DATETIME2, 0, datetimes(0)
        if c.type == T.MYSQL_TYPE_JSON and not mariadb:
            s = s.map(json.dumps)  # the decoded form of MySQL JSON is its text
        c.index = i
        c.nullable = draw(st.booleans())
        c.name = names[i] if with_names else None
        if c.type in (T.MYSQL_TYPE_GEOMETRY,):
            c.geometry_type = draw(st.integers(0, 7))
        if c.type == T.MYSQL_TYPE_VECTOR:
            c.vector_dimensionality = draw(st.integers(1, 16))
        if c.type in (T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
                      T.MYSQL_TYPE_LONG_BLOB) and c.charset is None:
            c.charset = 63
        if c.type in (T.MYSQL_TYPE_JSON,):
            c.charset = None
        c.visible = draw(st.booleans()) or i == 0
        cols.append(c)
        strategies.append(st.none() | s if c.nullable else s)
    pk = draw(st.lists(st.integers(0, len(cols) - 1), unique=True, max_size=2))
    prefixed: bool = draw(st.booleans())
    if pk and prefixed:
        for i in pk:
            cols[i].key_prefix = draw(st.integers(0, 10))
    tm = TableMap(draw(st.integers(1, (1 << 48) - 1)), draw(member), draw(member), cols,
                  flags=draw(st.integers(0, 1)), primary_key=pk)
    return tm, strategies


def _normal(rows: list[dict[str, Any]], tm: TableMap, mariadb: bool) -> list[dict[str, Any]]:
    """What the decoder returns for the rows (MySQL JSON as its text)."""
    def fix(img: dict[str, Any] | None) -> dict[str, Any] | None:
        if img is None:
            return None
        out = dict(img)
        for c in tm.columns:
            v = out.get(c.label)
            if v is not None and c.type == T.MYSQL_TYPE_JSON and not mariadb:
                out[c.label] = json_binary_to_text(encode_json_binary(json.loads(v)))
        return out

    return [{"before": fix(r["before"]), "after": fix(r["after"])} for r in rows]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mariadb=st.booleans(), kind=st.sampled_from([INSERT, UPDATE, DELETE]),
       variant=st.sampled_from([(1, False), (2, False), (1, True), (2, True)]))
def test_table_map_and_rows(data: st.DataObject, mariadb: bool, kind: str,
                            variant: tuple[int, bool], native: NativeSwitch) -> None:
    version, compressed = variant
    if compressed and not mariadb:
        compressed = False
    tm, strategies = data.draw(tables(mariadb))
    ctx = context(MARIADB if mariadb else MYSQL)
    for record in (True, False):
        ev = decode_event(encode_event(19, encode_table_map(tm)), ctx, record=record)
        assert ev.error is None, ev.error
        assert body_of(ev, TableMapEvent).columns == tm.columns
        tmb = body_of(ev, TableMapEvent)
        assert (tmb.table_id, tmb.schema, tmb.table, tmb.flags) == (
            tm.table_id, tm.schema, tm.table, tm.flags)
        table_map = body_of(ev, TableMapEvent).table_map
        assert table_map is not None and table_map.primary_key == tm.primary_key

    def row() -> tuple[Any, ...]:
        return tuple(data.draw(s) for s in strategies)

    n = data.draw(st.integers(0, 4))
    rows = [(row(), row()) if kind == UPDATE else row() for _ in range(n)]
    rv = rows_event(tm, kind, rows, version=version, compressed=compressed)
    raw = encode_event(rows_event_type(kind, version, compressed),
                       encode_rows_event(rv, tm, mariadb=mariadb))
    for record in (True, False):
        ev = decode_event(raw, ctx, record=record)
        assert ev.error is None, ev.error
        got = body_of(ev, RowsEvent)
        assert got.rows == _normal(rv.rows, tm, mariadb)
        assert (got.table_id, got.kind, got.flags, got.version, got.columns) == (
            rv.table_id, rv.kind, rv.flags, version, rv.columns)
    # the kernel on and off (the rows read on demand, and the JSON line): the same bytes
    lines = [dumps_line(binlog_event_json(decode_event(raw, ctx, record=False), "f"))]
    if native.loaded:
        with native.off():
            lines.append(dumps_line(binlog_event_json(decode_event(raw, ctx, record=False),
                                                      "f")))
        assert lines[0] == lines[1]


def test_partition_extra_data() -> None:
    tm = TableMap(5, "s", "t", [ColumnInfo(0, T.MYSQL_TYPE_LONG, name="id")])
    ctx = context(MYSQL)
    decode_event(encode_event(19, encode_table_map(tm)), ctx)
    rv = rows_event(tm, UPDATE, [((1,), (2,))])
    rv.partition_id, rv.source_partition_id = 3, 4
    rv.extra_data = [(0, bytes([4, 0, 7, 7]))]
    ev = decode_event(encode_event(31, encode_rows_event(rv, tm)), ctx)
    assert ev.error is None
    b = body_of(ev, RowsEvent)
    assert (b.partition_id, b.source_partition_id, b.extra_data) == (
        3, 4, [(0, bytes([4, 0, 7, 7]))])
