"""An event type neither MySQL nor MariaDB defines: without LOG_EVENT_IGNORABLE_F it is still
one event (its bytes are sound: the stream decoder does not take it for damage, with or
without a checksum) but carries the error a replica stops with; flagged ignorable it has no
error (MariaDB/MySQL ``Log_event::read_log_event``: an ``Ignorable_log_event``)."""

from __future__ import annotations

import pytest

from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER, HEADER_LEN
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.binlog.types import UNKNOWN_TYPE_ERROR, unknown_not_ignorable


def _ev(type_code: int, body: bytes, pos: int, flags: int) -> bytes:
    size = HEADER_LEN + len(body)
    return HEADER.pack(1_700_000_000, type_code, 1, size, pos + size, flags) + body


@pytest.mark.parametrize("flags", [0, 0x80])
def test_unknown_type_without_checksum_is_an_event(flags: int) -> None:
    a = _ev(188, b"x" * 40, 4, flags)
    b = _ev(188, b"tail", 4 + len(a), flags)
    dec = BinlogStreamDecoder(record=True)
    dec.receive_data(BINLOG_MAGIC + a + b)
    dec.receive_data(b"")
    got = list(dec.events())
    assert [(e.offset, e.size) for e in got] == [(4, len(a)), (4 + len(a), len(b))]
    for e in got:
        if flags:
            assert e.error is None
        else:
            assert e.error is not None and e.error.startswith(UNKNOWN_TYPE_ERROR)
            assert e.node is not None and e.node.error == e.error


def test_known_types_have_no_such_error() -> None:
    assert unknown_not_ignorable(2, 0) is None  # QUERY
    assert unknown_not_ignorable(162, 0) is None  # MariaDB GTID
    assert unknown_not_ignorable(188, 0x80) is None
    assert unknown_not_ignorable(188, 0) is not None
