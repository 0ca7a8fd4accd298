"""The coordinates tracker (wire/binlog/coords.py): the file through ROTATEs, the offset from
``log_pos``, no offset for events in no file, the transaction's GTID on each of its events."""

from __future__ import annotations

from typing import Any

from binlogscope.wire.binlog.coords import CoordTracker, statement_kind
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.types import EventType as E
from tests.helpers import event_body


def _ev(code: E, log_pos: int, size: int = 40, flags: int = 0, offset: int = 999,
        **body: Any) -> DecodedEvent:
    return DecodedEvent(offset, EventHeader(1, int(code), 1, size, log_pos, flags),
                        event_body(int(code), **body), None, True)


def _run(t: CoordTracker, evs: list[DecodedEvent]) -> list[tuple[Any, Any, Any]]:
    for ev in evs:
        t.stamp(ev)
    return [(e.binlog_file, e.file_pos, e.trx_gtid) for e in evs]


def test_stream_file_offsets_and_rotates() -> None:
    evs = [
        _ev(E.ROTATE_EVENT, 0, flags=0x20, next_log_name="b.000001", position=4),  # fake
        _ev(E.FORMAT_DESCRIPTION_EVENT, 0),  # re-sent for a dump that starts mid-file
        _ev(E.HEARTBEAT_LOG_EVENT, 500),
        _ev(E.GTID_EVENT, 540, gtid="0-1-5", flags2=0),
        _ev(E.QUERY_EVENT, 600, size=60, query="BEGIN"),
        _ev(E.TABLE_MAP_EVENT, 640),
        _ev(E.WRITE_ROWS_EVENT_V1, 680),
        _ev(E.XID_EVENT, 720),
        _ev(E.ROTATE_EVENT, 760, next_log_name="b.000002", position=4),  # the file's last
        _ev(E.FORMAT_DESCRIPTION_EVENT, 256, size=252),
        _ev(E.GTID_EVENT, 296, gtid="0-1-6", flags2=1),  # standalone: DDL
        _ev(E.QUERY_EVENT, 356, size=60, query="ALTER TABLE t ADD c INT"),
        _ev(E.QUERY_EVENT, 416, size=60, query="ALTER TABLE t ADD d INT"),  # no GTID
    ]
    assert _run(CoordTracker.for_stream(), evs) == [
        ("b.000001", None, None), ("b.000001", None, None), ("b.000001", None, None),
        ("b.000001", 500, "0-1-5"), ("b.000001", 540, "0-1-5"), ("b.000001", 600, "0-1-5"),
        ("b.000001", 640, "0-1-5"), ("b.000001", 680, "0-1-5"),
        ("b.000001", 720, None),
        ("b.000002", 4, None), ("b.000002", 256, "0-1-6"), ("b.000002", 296, "0-1-6"),
        ("b.000002", 356, None)]


def test_a_new_file_without_its_rotate_is_unknown() -> None:
    t = CoordTracker.for_stream("x.000001")
    got = _run(t, [_ev(E.FORMAT_DESCRIPTION_EVENT, 256, size=252),
                   _ev(E.QUERY_EVENT, 300, size=44, query="CREATE TABLE a (i INT)"),
                   _ev(E.FORMAT_DESCRIPTION_EVENT, 256, size=252)])
    assert got == [("x.000001", 4, None), ("x.000001", 256, None), (None, 4, None)]


def test_mysql_gtid_with_begin_commit_and_a_gap() -> None:
    t = CoordTracker.for_stream("m.000003")
    g = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"
    got = _run(t, [_ev(E.GTID_LOG_EVENT, 100, gtid=g),
                   _ev(E.QUERY_EVENT, 160, size=60, query="BEGIN"),
                   _ev(E.WRITE_ROWS_EVENT, 200)])
    assert [x[2] for x in got] == [g, g, g]
    t.lost()  # the commit and the next GTID were in a gap of the capture
    got = _run(t, [_ev(E.WRITE_ROWS_EVENT, 900), _ev(E.QUERY_EVENT, 960, size=60,
                                                    query="COMMIT")])
    assert got == [("m.000003", 860, None), ("m.000003", 900, None)]
    got = _run(t, [_ev(E.ANONYMOUS_GTID_LOG_EVENT, 1000, gtid="ANONYMOUS"),
                   _ev(E.QUERY_EVENT, 1060, size=60, query="/* c */ DROP TABLE x")])
    assert [x[2] for x in got] == [None, None]


def test_file_offsets_are_the_read_offsets() -> None:
    t = CoordTracker.for_file("/var/lib/mysql/relay-bin.000007.gz")
    assert t.file == "relay-bin.000007"
    got = _run(t, [_ev(E.ROTATE_EVENT, 0, flags=0x20, offset=4, next_log_name="m.000001",
                       position=4),
                   _ev(E.QUERY_EVENT, 5000, offset=51)])  # a relay log: the source's log_pos
    assert got == [("relay-bin.000007", 4, None), ("relay-bin.000007", 51, None)]


def test_statement_kind() -> None:
    assert [statement_kind(q) for q in ("BEGIN", " /* x */ start transaction", "XA START 'a'",
                                        "COMMIT", "ROLLBACK", "ROLLBACK TO SAVEPOINT a",
                                        "XA COMMIT 'a'", "SAVEPOINT a", None, "")] == [
        "BEGIN", "BEGIN", "BEGIN", "END", "END", "OTHER", "END", "OTHER", "OTHER", "OTHER"]


def test_moved_run_equals_moved_event_by_event() -> None:
    """``moved_run`` (a run of the kernel's values, in one loop that passes over the events
    which change nothing) leaves the tracker exactly as ``moved`` called event by event, after
    every prefix of random runs of GTIDs (group and standalone), BEGIN/COMMIT/DDL statements,
    XIDs, FORMAT_DESCRIPTIONs and the events of a group."""
    import random

    codes = [E.GTID_EVENT, E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.QUERY_EVENT,
             E.XID_EVENT, E.FORMAT_DESCRIPTION_EVENT, E.TABLE_MAP_EVENT, E.WRITE_ROWS_EVENT,
             E.UPDATE_ROWS_EVENT_V1, E.ANNOTATE_ROWS_EVENT, E.INTVAR_EVENT, E.ROTATE_EVENT,
             E.XA_PREPARE_LOG_EVENT, E.HEARTBEAT_LOG_EVENT]
    statements = ["BEGIN", "COMMIT", "ALTER TABLE t ADD c INT", "XA END 'x'", None]
    rnd = random.Random(7)

    def state(t: CoordTracker) -> tuple[Any, ...]:
        return (t.open_gtid, t._open, t._in_trx)

    skipped = 0
    for _ in range(300):
        run: list[tuple[Any, ...]] = []
        for _ in range(rnd.randint(1, 30)):
            code = int(rnd.choice(codes))
            gtid = f"0-1-{rnd.randint(1, 9)}" if code in (E.GTID_EVENT, E.GTID_LOG_EVENT) \
                else None
            run.append((code, 0, gtid, rnd.choice([0, 1]) if code == E.GTID_EVENT else None,
                        rnd.choice(statements) if code == E.QUERY_EVENT else None))
        one, each = CoordTracker(), CoordTracker()
        for i in range(len(run) + 1):
            one.__init__()  # type: ignore[misc]
            one.moved_run(run[:i])
            each.__init__()  # type: ignore[misc]
            for v in run[:i]:
                before = state(each)
                each.moved(v[0], v[2], v[3], v[4])
                skipped += before == state(each)
            assert state(one) == state(each), run[:i]
    assert skipped  # (the loop passes over events: the equality is not of two full calls)
