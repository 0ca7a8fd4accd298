"""Round trips of the event encoders: ``decode_event(encode_event(encode_x(v))).body == v``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    FormatDescriptionEvent,
    HeartbeatEvent,
    IgnorableEvent,
    IncidentEvent,
    IntvarEvent,
    RandEvent,
    RotateEvent,
    RowsQueryEvent,
    StartEncryptionEvent,
    StopEvent,
    TransactionContextEvent,
    UserVarEvent,
    ViewChangeEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.encode_events import (
    EVENT_ENCODERS,
    encode_event,
    encode_header,
    encode_heartbeat_v2,
    encode_value_event,
    format_description,
    user_var_value_bytes,
)
from binlogscope.wire.binlog.encode_query import encode_query, encode_status_vars, query_event
from binlogscope.wire.binlog.gtid_events import (
    GtidEvent,
    GtidInterval,
    GtidListEvent,
    GtidSetEntry,
    MariadbGtid,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    format_gtid_set,
)
from binlogscope.wire.binlog.header import EventHeader, decode_header
from binlogscope.wire.binlog.payload_events import TransactionPayloadEvent
from binlogscope.wire.binlog.query_event import ExecuteLoadQueryEvent, QueryEvent
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.reader import ByteReader
from tests.helpers import body_of

MARIADB = "10.11.19-MariaDB-log"
MYSQL = "8.0.45"

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, (1 << 64) - 1)
text = st.text(st.characters(categories=("L", "M", "N", "P", "S", "Z")), max_size=40)
name = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)


def context(version: str = MARIADB, checksum: bool = True) -> DecodeContext:
    """A context that has read a FORMAT_DESCRIPTION of ``version``."""
    ctx = DecodeContext()
    ev = decode_event(encode_value_event(format_description(version, checksum=checksum)), ctx)
    assert ev.error is None
    return ctx


def roundtrip(v: Any, *, version: str = MARIADB, checksum: bool = True, **kw: Any) -> Any:
    ctx = context(version, checksum)
    raw = encode_value_event(v, checksum=checksum, **kw)
    for record in (True, False):
        ev = decode_event(raw, ctx, record=record)
        assert ev.error is None, ev.error
        assert ev.size == len(raw)
        if checksum:
            assert ev.checksum_ok is True
    return ev.body


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(u32, st.integers(1, 255), u32, u32, u32, u16)
def test_header(ts: int, code: int, sid: int, size: int, pos: int, flags: int) -> None:
    h = EventHeader(ts, code, sid, size, pos, flags)
    assert decode_header(ByteReader(encode_header(h))) == h


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([MARIADB, MYSQL, "5.5.62-log", "5.6.51", "10.4.1-MariaDB"]),
       st.booleans(), u32)
def test_format_description(version: str, checksum: bool, ts: int) -> None:
    old = version.startswith("5.5")  # no checksum-alg byte (nor checksums) before 5.6.1
    checksum = checksum and not old
    v = format_description(version, checksum=checksum, create_timestamp=ts)
    ctx = DecodeContext()
    ev = decode_event(encode_value_event(v, checksum=checksum), ctx)
    assert ev.error is None
    expect = v
    if old:
        expect = dataclasses.replace(v, checksum_alg=0xFF)
    assert ev.body == dataclasses.replace(expect, post_header_len=tuple(expect.post_header_len))
    assert ctx.post_header_len == v.post_header_len


def _simple() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(RotateEvent, u64, name),
        st.builds(XidEvent, u64),
        st.builds(IntvarEvent, st.integers(0, 2), u64),
        st.builds(RandEvent, u64, u64),
        st.builds(IncidentEvent, u16, st.text(st.characters(max_codepoint=126), max_size=60)),
        st.builds(HeartbeatEvent, name, u32),
        st.builds(IgnorableEvent, st.binary(max_size=50)),
        st.builds(RowsQueryEvent, text),
        st.builds(AnnotateRowsEvent, text),
        st.builds(BinlogCheckpointEvent, name),
        st.builds(StartEncryptionEvent, u8, u32, st.binary(min_size=12, max_size=12)),
        st.builds(XaPrepareEvent, st.booleans(), u32, st.binary(max_size=64),
                  st.binary(max_size=64)),
        st.builds(TransactionContextEvent, st.text("0123456789abcdef-", max_size=36), u32,
                  st.booleans(), st.binary(max_size=40),
                  st.lists(st.binary(max_size=30), max_size=4),
                  st.lists(st.binary(max_size=30), max_size=3)),
        st.builds(ViewChangeEvent, st.text("0123456789:", max_size=40), u64,
                  st.dictionaries(st.text("0123456789abcdef", max_size=20),
                                  st.binary(max_size=30), max_size=4)),
        st.just(StopEvent()),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_simple(), st.booleans())
def test_simple_events(v: Any, checksum: bool) -> None:
    assert roundtrip(v, checksum=checksum) == v


def test_every_encoder_is_tested() -> None:
    tested = {RotateEvent, XidEvent, IntvarEvent, RandEvent, IncidentEvent, HeartbeatEvent,
              IgnorableEvent, RowsQueryEvent, AnnotateRowsEvent, BinlogCheckpointEvent,
              StartEncryptionEvent, XaPrepareEvent, StopEvent, FormatDescriptionEvent,
              TransactionContextEvent, ViewChangeEvent,
              UserVarEvent, MariadbGtidEvent, GtidListEvent, PreviousGtidsEvent}
    assert set(EVENT_ENCODERS) == tested


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name, u64)
def test_heartbeat_v2(log_file: str, pos: int) -> None:
    ctx = context(MYSQL)
    raw = encode_event(EventType.HEARTBEAT_LOG_EVENT_V2, encode_heartbeat_v2(
        HeartbeatEvent(log_file, pos)))
    ev = decode_event(raw, ctx)
    assert ev.error is None
    assert ev.body == HeartbeatEvent(log_file, pos)


@st.composite
def user_vars(draw: st.DrawFn) -> UserVarEvent:
    var = draw(name)
    if draw(st.booleans()):
        return UserVarEvent(var, True)
    t = draw(st.sampled_from([0, 1, 2, 4]))
    flags = draw(st.sampled_from([None, 0, 1]))
    cs = 45 if t == 0 else 63
    value: Any
    if t == 0:
        value = draw(text)
    elif t == 1:
        value = draw(st.floats(allow_nan=False))
    elif t == 2:
        unsigned = bool(flags)
        value = draw(st.integers(0, (1 << 64) - 1) if unsigned
                     else st.integers(-(1 << 63), (1 << 63) - 1))
    else:
        scale = draw(st.integers(0, 10))
        digits = draw(st.integers(0, 10**12))
        value = str(digits).rjust(scale + 1, "0")
        if scale:
            value = value[:-scale] + "." + value[-scale:]
        if digits and draw(st.booleans()):
            value = "-" + value
    raw = user_var_value_bytes(t, value, cs, flags)
    return UserVarEvent(var, False, t, cs, value, raw, flags)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user_vars())
def test_user_var(v: UserVarEvent) -> None:
    assert roundtrip(v) == v


@st.composite
def mariadb_gtids(draw: st.DrawFn) -> MariadbGtidEvent:
    seq, dom, sid = draw(u64), draw(u32), draw(u32)
    flags2 = draw(u8)
    v = MariadbGtidEvent(f"{dom}-{sid}-{seq}", seq, dom, sid, flags2)
    if flags2 & 0x02:
        v.commit_id = draw(u64)
    if flags2 & 0xC0:
        v.xa_format_id = draw(u32)
        v.xa_gtrid = draw(st.binary(max_size=64))
        v.xa_bqual = draw(st.binary(max_size=64))
    fx = draw(st.sampled_from([0, 1, 2, 4, 8, 5]))
    v.flags_extra = fx
    if fx & 1:
        v.extra_engines = draw(u8)
    if fx & 0x0C:
        v.sa_seq_no = draw(u64)
    return v


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mariadb_gtids())
def test_mariadb_gtid(v: MariadbGtidEvent) -> None:
    assert roundtrip(v) == v


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.builds(MariadbGtid, u32, u32, u64), max_size=5), st.integers(0, 3))
def test_gtid_list(gtids: list[MariadbGtid], flags: int) -> None:
    v = GtidListEvent(",".join(str(g) for g in gtids), gtids, flags)
    assert roundtrip(v) == v


@st.composite
def mysql_gtids(draw: st.DrawFn) -> GtidEvent:
    anonymous = draw(st.booleans())
    sid = str(draw(st.uuids()))
    gno = draw(st.integers(1, (1 << 63) - 1))
    v = GtidEvent("ANONYMOUS" if anonymous else f"{sid}:{gno}", draw(st.integers(0, 1)), sid,
                  gno)
    level = draw(st.integers(0, 5))
    if level >= 1:
        v.lt_type = 2
        v.last_committed, v.sequence_number = draw(u64), draw(u64)
    if level >= 2:
        ts = st.integers(0, (1 << 55) - 1)
        v.immediate_commit_timestamp = draw(ts)
        v.original_commit_timestamp = draw(st.one_of(st.just(v.immediate_commit_timestamp), ts))
    if level >= 3:
        v.transaction_length = draw(u64)
    if level >= 4:
        sv = st.integers(0, (1 << 31) - 1)
        v.immediate_server_version = draw(sv)
        v.original_server_version = draw(st.one_of(st.just(v.immediate_server_version), sv))
    if level >= 5:
        v.commit_group_ticket = draw(u64)
    return v


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mysql_gtids())
def test_mysql_gtid(v: GtidEvent) -> None:
    assert roundtrip(v, version=MYSQL) == v


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.uuids(), st.lists(st.tuples(st.integers(1, 1 << 40),
                                                         st.integers(1, 1000)), max_size=3)),
                max_size=3))
def test_previous_gtids(sets: list[Any]) -> None:
    entries = [GtidSetEntry(str(u), "", [GtidInterval(a, a + n) for a, n in ivs])
               for u, ivs in sets]
    v = PreviousGtidsEvent(format_gtid_set(entries), entries, False)
    assert roundtrip(v, version=MYSQL) == v


# ----------------------------------------------------------------------------- QUERY
_status = st.fixed_dictionaries({}, optional={
    "Q_FLAGS2_CODE": u32,
    "Q_SQL_MODE_CODE": u64,
    "Q_CATALOG_NZ_CODE": st.just("std"),
    "Q_AUTO_INCREMENT": st.tuples(u16, u16),
    "Q_CHARSET_CODE": st.tuples(st.sampled_from([33, 45, 224, 8, 63]), u16, u16),
    "Q_TIME_ZONE_CODE": st.sampled_from(["SYSTEM", "+00:00", "Europe/Paris"]),
    "Q_LC_TIME_NAMES_CODE": u16,
    "Q_CHARSET_DATABASE_CODE": u16,
    "Q_TABLE_MAP_FOR_UPDATE_CODE": u64,
    "Q_INVOKER": st.tuples(name, name),
    "Q_UPDATED_DB_NAMES": st.one_of(st.none(), st.lists(name, max_size=3)),
    "Q_MICROSECONDS": st.integers(0, 999_999),
    "Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP": st.integers(0, 1),
    "Q_DDL_LOGGED_WITH_XID": u64,
    "Q_DEFAULT_COLLATION_FOR_UTF8MB4": u16,
    "Q_SQL_REQUIRE_PRIMARY_KEY": st.integers(0, 1),
    "Q_DEFAULT_TABLE_ENCRYPTION": st.integers(0, 1),
    "Q_HRNOW": st.integers(0, 999_999),
    "Q_XID": u64,
    "Q_GTID_FLAGS3": st.one_of(st.tuples(st.sampled_from([0, 1, 2]), st.none()),
                               st.tuples(st.sampled_from([4, 8]), u64)),
    "Q_CHARACTER_SET_COLLATIONS": st.lists(st.tuples(u16, u16), max_size=3),
})


@st.composite
def queries(draw: st.DrawFn) -> QueryEvent:
    status = draw(_status)
    cs: Any = status.get("Q_CHARSET_CODE")
    sql = draw(st.text(st.characters(max_codepoint=126), max_size=80) if cs and cs[0] in (8, 63)
               else text)
    if sql.startswith("# Dummy"):
        sql = "x" + sql
    schema = draw(st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20))
    args = (draw(u32), draw(u32), len(schema), draw(u16), len(encode_status_vars(status)),
            status, schema, sql)
    if draw(st.booleans()):
        return ExecuteLoadQueryEvent(*args, file_id=draw(u32), start_pos=draw(u32),
                                     end_pos=draw(u32), dup_handling=draw(st.integers(0, 2)))
    return QueryEvent(*args)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), st.sampled_from([MARIADB, MYSQL]))
def test_query(v: QueryEvent, version: str) -> None:
    code = (EventType.EXECUTE_LOAD_QUERY_EVENT if isinstance(v, ExecuteLoadQueryEvent)
            else EventType.QUERY_EVENT)
    ctx = context(version)
    ev = decode_event(encode_event(code, encode_query(v)), ctx)
    assert ev.error is None, ev.error
    assert ev.body == v


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text)
def test_query_compressed(sql: str) -> None:
    v = query_event(sql, "db")
    ev = decode_event(encode_event(EventType.QUERY_COMPRESSED_EVENT,
                                   encode_query(v, compressed=True)), context())
    assert ev.error is None, ev.error
    assert body_of(ev, QueryEvent).query == sql
    q = body_of(ev, QueryEvent)
    assert q == dataclasses.replace(v, compressed_query=q.compressed_query)


def test_unknown_status_vars_kept() -> None:
    v = dataclasses.replace(query_event("SELECT 1"), unknown_status_vars=b"\x0e\x01\x02")
    v.status_vars_length += 3
    ev = decode_event(encode_event(2, encode_query(v)), context())
    assert ev.body == v


@pytest.mark.parametrize("checksum", [True, False])
def test_event_sizes_and_positions(checksum: bool) -> None:
    raw = encode_value_event(XidEvent(7), server_id=9, log_pos=1234, timestamp=5,
                             checksum=checksum)
    ev = decode_event(raw, context(checksum=checksum))
    assert ev.header == EventHeader(5, EventType.XID_EVENT, 9, len(raw), 1234, 0)


@pytest.mark.parametrize("ctype", [0, 255])
def test_transaction_payload(ctype: int) -> None:
    from binlogscope.wire.binlog.encode_events import encode_transaction_payload

    ctx = context(MYSQL, checksum=False)
    inner = (encode_value_event(XidEvent(1), checksum=False)
             + encode_value_event(XidEvent(2), checksum=False))
    ev = decode_event(encode_event(EventType.TRANSACTION_PAYLOAD_EVENT,
                                   encode_transaction_payload(inner, ctype), checksum=False), ctx)
    assert ev.error is None, ev.error
    assert body_of(ev, TransactionPayloadEvent).uncompressed == inner
    inner_events = body_of(ev, TransactionPayloadEvent).events
    assert [e.body for e in inner_events] == [XidEvent(1), XidEvent(2)]
