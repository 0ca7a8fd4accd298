"""TRANSACTION_PAYLOAD_EVENT from the three real MySQL 8.0 files that have one: header fields,
the one-leaf payload in the outer tree, and the inner events decoded from the decompressed
buffer (offsets relative to it) with the stream's context."""

from __future__ import annotations

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import RowsQueryEvent, XidEvent
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.payload_events import COMPRESSION_NONE, TransactionPayloadEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ChecksumAlg, EventType
from binlogscope.wire.node import check_tiling
from tests.helpers import FIXTURES, body_of, decode_bytes, read_all
from tests.wire.event_builder import (
    build_event,
    decode_one,
    event_at,
    fixture_events,
    fixture_fast,
    of_type,
)

OSH = "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.compressed"
APE = "apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000057"
BB = "blackbeam__rust_mysql_common/test-data/binlogs/transaction_compression.000001"


def test_payload_header_and_outer_spans() -> None:
    ev = event_at(OSH, 236)
    b = ev.body
    assert isinstance(b, TransactionPayloadEvent)
    assert (b.compression_type, b.compression_name) == (0, "ZSTD")
    assert (b.payload_size, b.uncompressed_size) == (451, 960)
    assert len(b.uncompressed) == 960
    n = ev.node
    assert n is not None
    hdr = n.find("body.payload_header")
    assert (hdr.offset, hdr.length) == (236 + 19, 14)
    assert [(c.name, c.value) for c in hdr.children] == [
        ("compression_type", 0), ("uncompressed_size", 960), ("payload_size", 451),
        ("end_mark", 0)]
    ct = n.find("body.payload_header.compression_type")
    assert [(c.name, c.value) for c in ct.children] == [("type", 2), ("length", 1), ("value", 0)]
    leaf = n.find("body.payload")
    assert (leaf.offset, leaf.length) == (269, 451)
    assert not leaf.children  # one leaf: the outer tree still tiles the file
    assert leaf.value is b.events
    assert leaf.display.startswith("ZSTD 451 -> 960 bytes, 4 events: QUERY_EVENT")
    assert n.find("checksum").offset == 236 + 488 - 4


@pytest.mark.parametrize(("rel", "kinds"), [
    (OSH, [["QUERY_EVENT", "TABLE_MAP_EVENT", "UPDATE_ROWS_EVENT", "XID_EVENT"]]),
    (BB, [["QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]]),
    (APE, [["QUERY_EVENT", "ROWS_QUERY_LOG_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT",
            "XID_EVENT"],
           ["QUERY_EVENT", "ROWS_QUERY_LOG_EVENT", "TABLE_MAP_EVENT", "UPDATE_ROWS_EVENT",
            "ROWS_QUERY_LOG_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]]),
])
def test_inner_events(rel: str, kinds: list[list[str]]) -> None:
    payloads = of_type(rel, "TRANSACTION_PAYLOAD_EVENT")
    # MANIFEST counts
    assert [[i.type_name for i in body_of(p, TransactionPayloadEvent).events]
            for p in payloads] == kinds
    for p in payloads:
        b = body_of(p, TransactionPayloadEvent)
        pos = 0
        for inner in b.events:
            assert inner.error is None, inner.error
            assert inner.checksum_ok is None  # inner events carry no checksum
            assert inner.offset == pos  # offsets are within the decompressed payload
            assert inner.node is not None and not check_tiling(inner.node)
            assert inner.node.offset == pos and inner.node.length == inner.size
            pos += inner.size
        assert pos == b.uncompressed_size
        assert body_of(b.events[0], QueryEvent).query == "BEGIN"
        assert b.events[-1].type_name == "XID_EVENT"


def test_inner_xid_and_rows_query_values() -> None:
    first, second = of_type(APE, "TRANSACTION_PAYLOAD_EVENT")
    one, two = (body_of(e, TransactionPayloadEvent) for e in (first, second))
    assert all(isinstance(body_of(p.events[-1], XidEvent).xid, int) for p in (one, two))
    assert body_of(one.events[-1], XidEvent).xid != body_of(two.events[-1], XidEvent).xid
    rq = body_of(one.events[1], RowsQueryEvent).query
    assert rq.upper().startswith("INSERT")


def test_inner_table_map_feeds_inner_rows_through_the_shared_context() -> None:
    """The rows inside a payload can only be decoded with the TABLE_MAP inside it."""
    ev = of_type(BB, "TRANSACTION_PAYLOAD_EVENT")[0]
    tm, rows = body_of(ev, TransactionPayloadEvent).events[1:3]
    assert rows.error is None
    assert body_of(rows, RowsEvent).table_id == body_of(tm, TableMapEvent).table_id


def _inner(e: object) -> list[tuple[object, ...]]:
    # TABLE_MAP bodies hold a lazily compiled row decoder (a cache), so compare the others
    return [(i.type_name, i.offset, i.size, None if i.type_name == "TABLE_MAP_EVENT" else i.body)
            for i in e.body.events]  # type: ignore[attr-defined]


def test_fast_path_same_inner_values() -> None:
    for rel in (OSH, APE, BB):
        tree = [_inner(e) for e in fixture_events(rel)
                if e.type_name == "TRANSACTION_PAYLOAD_EVENT"]
        fast = [_inner(e) for e in fixture_fast(rel)
                if e.type_name == "TRANSACTION_PAYLOAD_EVENT"]
        assert tree == fast
        assert all(i.node is None for e in fixture_fast(rel)
                   if e.type_name == "TRANSACTION_PAYLOAD_EVENT"
                   for i in body_of(e, TransactionPayloadEvent).events)


def _payload_event_bytes(rel: str) -> tuple[bytes, int, int, DecodeContext]:
    """Raw bytes of the first payload event and a context primed by the events before it."""
    data = read_all(FIXTURES / rel)
    events, _ = decode_bytes(data)
    ev = next(e for e in events if e.type_name == "TRANSACTION_PAYLOAD_EVENT")
    ctx = DecodeContext()
    pos = 4
    for e in events:
        if e.offset == ev.offset:
            break
        decode_event(data, ctx, start=pos, record=False)
        pos += e.size
    return data, ev.offset, ev.size, ctx


def test_corrupt_zstd_payload_is_an_error_node_not_a_crash() -> None:
    data, off, size, ctx = _payload_event_bytes(BB)
    broken = bytearray(data[off : off + size])
    for i in range(40, 60):  # scribble over the zstd frame
        broken[i] ^= 0x5A
    ctx.verify_checksums = False
    ev = decode_event(bytes(broken), ctx, base=off)
    assert ev.error is not None and "decompress" in ev.error
    assert ev.node is not None and not check_tiling(ev.node)
    err = ev.node.errors()[-1]
    assert err.offset == off + 19 + 10  # the payload leaf's first byte


def _packed(v: int) -> str:
    return f"{v:02x}" if v < 251 else "fc" + v.to_bytes(2, "little").hex()


def test_uncompressed_payload_type_none() -> None:
    """compression_type 255 (NONE): the payload bytes are the events themselves. The TLV
    header is hand-built around the real inner events of a fixture."""
    payload = of_type(BB, "TRANSACTION_PAYLOAD_EVENT")[0]
    plain = body_of(payload, TransactionPayloadEvent).uncompressed
    _, _, _, ctx = _payload_event_bytes(BB)
    ctx.checksum_alg = ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF  # the hand-built event has none
    n = len(plain)
    raw = build_event(EventType.TRANSACTION_PAYLOAD_EVENT, f"""
        02 03 fc ff 00          # compression_type: length 3, packed 255 (NONE)
        03 01 {_packed(n)}      # uncompressed_size
        01 01 {_packed(n)}      # payload_size
        00                      # end mark
        {plain.hex()}           # the events, stored as is
    """)
    ev = decode_one(raw, ctx)
    assert ev.error is None
    b = body_of(ev, TransactionPayloadEvent)
    assert (b.compression_name, b.payload_size, b.uncompressed) == ("NONE", n, plain)
    assert [e.type_name for e in b.events] == ["QUERY_EVENT", "TABLE_MAP_EVENT",
                                               "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert all(e.error is None for e in b.events)
    assert ev.node is not None and ev.node.find("body.payload").offset == 19 + 12
    assert ctx.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF  # restored after the inner
    assert COMPRESSION_NONE == 255
