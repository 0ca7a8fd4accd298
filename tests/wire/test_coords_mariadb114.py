"""MariaDB 11.4+ ``log_pos`` 0 inside a transaction, and the fake ROTATE test of MariaDB's
clients.

MariaDB 11.4 added ``binlog_legacy_event_pos`` (default OFF; its documentation: "Fill in the
end_log_pos field of *all* events in the binlog, even when doing so costs performance"): with
it off, the events a transaction's cache is copied with (ANNOTATE_ROWS, TABLE_MAP, the rows
events, the statements between BEGIN and COMMIT) are written with ``end_log_pos`` 0; the GTID
event in front of them and the event ending the transaction carry the real position. There is
no 11.4 server here, so the streams below are real MariaDB binlogs (the 10.0 fixture of
zalora/binlog-parser in ../shared/fixtures and the repository's 10.11 workload binlog) sent
as a dump sends them - fake ROTATE (timestamp 0, LOG_EVENT_ARTIFICIAL_F, ``log_pos`` 0), then
the file's events - with every event strictly inside a transaction rewritten to ``log_pos`` 0
(CRC32 recomputed), as an 11.4 server writes them. The coordinates and the restart point
must come out as for the original stream: from the stream, not from ``log_pos``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from binlogscope.pipeline.position import PositionTracker
from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Phase, Role
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.encode_events import encode_event
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import HEADER, EventHeader, is_artificial, is_fake_rotate
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.framing import encode_packet
from tests.helpers import CAPTURES, FIXTURES, body_of
from tests.wire._binlog_fixtures import decode_file, fixture

ZALORA = FIXTURES / "zalora__binlog-parser/data/fixtures/mysql-bin.07"  # MariaDB 10.0.15
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"  # MariaDB 10.11.19
_GTID = int(E.GTID_EVENT)
_ENDS = (int(E.XID_EVENT),)


def _zero_inside(data: bytes, events: list[DecodedEvent]) -> tuple[bytes, int]:
    """``data`` with the events strictly inside each GTID group at ``log_pos`` 0 (as MariaDB
    11.4 writes them); how many were rewritten."""
    out = bytearray(data)
    inside = False
    n = 0
    crc = body_of(events[0], FormatDescriptionEvent).checksum_alg == 1
    for i, ev in enumerate(events):
        h = ev.header
        assert h is not None
        if h.type_code == _GTID:
            # a group (not a standalone statement)
            inside = not body_of(ev, MariadbGtidEvent).flags2 & 0x01
            continue
        last = (h.type_code in _ENDS or (h.type_code == int(E.QUERY_EVENT)
                and body_of(ev, QueryEvent).query.strip().upper() in ("COMMIT", "ROLLBACK")))
        if inside and not last and i + 1 < len(events):
            o = ev.offset
            out[o + 13:o + 17] = b"\0\0\0\0"
            if crc:
                body = bytes(out[o:o + h.event_size - 4])
                out[o + h.event_size - 4:o + h.event_size] = \
                    (zlib.crc32(body) & 0xFFFFFFFF).to_bytes(4, "little")
            n += 1
        if last:
            inside = False
    return bytes(out), n


def _dump(data: bytes, events: list[DecodedEvent], name: str) -> bytes:
    """What a MariaDB dump from position 4 sends: the fake ROTATE, then every event."""
    crc = body_of(events[0], FormatDescriptionEvent).checksum_alg == 1
    rotate = encode_event(int(E.ROTATE_EVENT), (4).to_bytes(8, "little") + name.encode(),
                          timestamp=0, server_id=1, log_pos=0, flags=0x20, checksum=crc)
    packets = [encode_packet(b"\0" + rotate, 1)]
    for k, ev in enumerate(events):
        raw = data[ev.offset:ev.offset + ev.header.event_size]  # type: ignore[union-attr]
        packets.append(encode_packet(b"\0" + raw, (k + 2) & 0xFF))
    return b"".join(packets)


def _stream(wire: bytes) -> list[DecodedEvent]:
    s = Session(Role.OBSERVER, start_phase=Phase.BINLOG_STREAM, semi_sync=False, record=False)
    s.receive_data(wire)
    return [e.binlog_event for e in s.events()
            if isinstance(e, PacketDecoded) and e.binlog_event is not None]


@pytest.mark.parametrize("path", [ZALORA, WORKLOAD], ids=["mariadb-10.0", "mariadb-10.11"])
def test_log_pos_zero_inside_a_transaction_is_placed_from_the_stream(path: Path) -> None:
    data = fixture(path)
    events = decode_file(data, record=False)
    rewritten, n = _zero_inside(data, events)
    assert n >= 2  # the fixture has transactions with events inside
    name = path.name
    legacy = _stream(_dump(data, events, name))
    new = _stream(_dump(rewritten, decode_file(rewritten, record=False), name))
    assert len(legacy) == len(new) == len(events) + 1
    assert sum(1 for e in new if e.header is not None and e.header.log_pos == 0) == n + 1
    # every event where it is in the file (the fake ROTATE at no offset), the GTIDs the same
    want = [(name, None)] + [(name, ev.offset) for ev in events]
    assert [(e.binlog_file, e.file_pos) for e in legacy] == want
    assert [(e.binlog_file, e.file_pos) for e in new] == want
    assert [e.trx_gtid for e in new] == [e.trx_gtid for e in legacy]
    # the restart point (a transaction boundary) and the events counted for a resume
    for old_t, new_t in ((PositionTracker(), PositionTracker()),):
        real_old = [old_t.update(e) for e in legacy]
        real_new = [new_t.update(e) for e in new]
        assert real_new == real_old
        assert new_t.restart_point() == old_t.restart_point()
        assert (new_t.log_file, new_t.next_pos) == (old_t.log_file, old_t.next_pos)


def test_fake_rotate_is_told_by_timestamp_0_or_the_artificial_flag() -> None:
    """MariaDB's mysqlbinlog.cc takes a ROTATE with ``when == 0`` as the fake one; its replica
    (and MySQL's) the LOG_EVENT_ARTIFICIAL_F flag. A real ROTATE (end of a file) has neither,
    and is in the file; an artificial event is never told by ``log_pos`` 0 alone."""
    fake_both = EventHeader(0, int(E.ROTATE_EVENT), 1, 44, 0, 0x20)
    fake_ts = EventHeader(0, int(E.ROTATE_EVENT), 1, 44, 0, 0)
    fake_flag = EventHeader(1700000000, int(E.ROTATE_EVENT), 1, 44, 0, 0x20)
    real = EventHeader(1700000000, int(E.ROTATE_EVENT), 1, 44, 900, 0)
    assert is_fake_rotate(fake_both) and is_fake_rotate(fake_ts) and is_fake_rotate(fake_flag)
    assert not is_fake_rotate(real)
    inside = EventHeader(1700000000, int(E.TABLE_MAP_EVENT), 1, 60, 0, 0)
    assert not is_artificial(inside) and is_artificial(fake_flag)
    assert HEADER.size == 19
