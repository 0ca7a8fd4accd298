from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.pipeline.filter import TableFilter
from binlogscope.pipeline.state import ReplicaState
from binlogscope.pipeline.store import EventStore


def test_store_cursors_and_backpressure() -> None:
    s: EventStore[int] = EventStore(size=3)
    for i in range(3):
        assert s.put(i)
    assert s.put(99, timeout=0.05) is False  # full: the reader is held back
    got = s.get()
    assert got == (0, 0)
    assert s.put(99, timeout=0.05) is False  # got but not acked still holds the slot
    s.ack(0)
    assert s.put(3, timeout=0.05)
    c = s.cursors
    assert (c.ack, c.get, c.put) == (1, 1, 4) and c.ack <= c.get <= c.put
    assert [s.get()[1] for _ in range(3)] == [1, 2, 3]  # type: ignore[index]
    with pytest.raises(ValueError):
        s.ack(10)


def test_store_blocks_producer_until_consumer_acks() -> None:
    s: EventStore[int] = EventStore(size=2)
    produced: list[int] = []

    def producer() -> None:
        for i in range(6):
            s.put(i)
            produced.append(i)

    t = threading.Thread(target=producer)
    t.start()
    time.sleep(0.1)
    assert produced == [0, 1]  # memory bounded: no more than the ring holds
    seen: list[Any] = []
    while len(seen) < 6:
        cur, item = s.get(timeout=2)  # type: ignore[misc]
        seen.append(item)
        s.ack(cur)
    t.join(2)
    assert seen == list(range(6))


def test_store_rollback_redelivers_unacked() -> None:
    s: EventStore[str] = EventStore(size=4)
    for x in "abc":
        s.put(x)
    s.get()
    s.ack(0)
    s.get()
    s.get()
    s.rollback()
    assert s.get() == (1, "b")


def test_store_put_without_wake_is_visible_and_wake_releases_a_waiter() -> None:
    st: EventStore[int] = EventStore(4)
    assert st.put_many([1, 2], wake=False) == 2
    assert st.get_many(10, 0) == [(0, 1), (1, 2)]  # stored: a get sees them at once
    got: list[list[tuple[int, int]]] = []
    t = threading.Thread(target=lambda: got.append(st.get_many(10, 5)))
    t.start()
    time.sleep(0.1)  # the consumer waits
    st.put_many([3], wake=False)
    time.sleep(0.1)
    assert not got  # not woken yet
    st.wake()
    t.join(2)
    assert got == [[(2, 3)]]


def test_position_tracker_transactions_and_gtid() -> None:
    from binlogscope.pipeline.position import PositionTracker
    from binlogscope.wire.binlog.decode import DecodedEvent
    from binlogscope.wire.binlog.header import EventHeader
    from tests.helpers import event_body

    def ev(code: int, log_pos: int, size: int = 40, **body: object) -> DecodedEvent:
        h = EventHeader(0, code, 1, size, log_pos, 0)
        return DecodedEvent(log_pos - size, h, event_body(code, **body), None, None)

    tr = PositionTracker()
    assert not tr.update(ev(4, 0, next_log_name="mysql-bin.000002", position=4))  # ROTATE
    assert tr.update(ev(162, 140, gtid="0-1-7"))  # MariaDB GTID: the transaction opens
    rp = tr.restart_point()
    assert (rp.log_file, rp.log_pos, rp.skip) == ("mysql-bin.000002", 100, 1)
    assert tr.update(ev(19, 200))  # TABLE_MAP
    assert tr.update(ev(16, 240))  # XID: commits 0-1-7
    rp = tr.restart_point()
    assert (rp.log_pos, rp.skip, rp.gtid_set) == (240, 0, "0-1-7")
    assert not tr.update(ev(27, 0))  # heartbeat (log_pos 0)
    assert tr.update(ev(2, 300, query="BEGIN"))
    assert tr.update(ev(2, 360, query="COMMIT"))
    assert (tr.restart_point().log_pos, tr.in_txn) == (360, False)
    tr.update(ev(162, 400, gtid="1-1-3"))
    tr.update(ev(16, 440))
    assert tr.gtid_set == "0-1-7,1-1-3"


def test_position_tracker_one_restart_point_per_boundary() -> None:
    """The replica asks for the restart point after every event: the tracker hands out one
    shared boundary per transaction (built when it moves, not per event) and the events to
    skip, and restart_point() is that boundary with the skip."""
    from binlogscope.pipeline.position import PositionTracker, RestartPoint
    from binlogscope.wire.binlog.decode import DecodedEvent
    from binlogscope.wire.binlog.header import EventHeader
    from tests.helpers import event_body

    def ev(code: int, log_pos: int, size: int = 40, flags: int = 0,
           **body: object) -> DecodedEvent:
        h = EventHeader(1, code, 1, size, log_pos, flags)
        return DecodedEvent(log_pos - size, h, event_body(code, **body), None, None)

    tr = PositionTracker()
    tr.seed_gtid("0-1-6")
    tr.update(ev(4, 0, next_log_name="mysql-bin.000002", position=4))  # ROTATE
    assert tr.boundary() == RestartPoint("mysql-bin.000002", 4, 0, "0-1-6")
    tr.update(ev(162, 140, gtid="0-1-7"))  # GTID: the transaction opens at 100
    at = tr.boundary()
    assert at == RestartPoint("mysql-bin.000002", 100, 0, "0-1-6")
    for n, pos in enumerate((200, 260, 300), 2):  # TABLE_MAP, rows, rows: the same boundary
        tr.update(ev(19, pos))
        assert tr.boundary() is at and tr.txn_events == n
        assert tr.restart_point() == RestartPoint("mysql-bin.000002", 100, n, "0-1-6")
    assert not tr.update(ev(27, 0))  # a heartbeat moves nothing
    assert not tr.update(ev(15, 0, flags=0x20))  # nor an artificial event
    assert tr.boundary() is at and tr.txn_events == 4
    tr.update(ev(16, 340))  # XID: commits 0-1-7, the boundary moves after it
    assert tr.txn_events == 0 and tr.restart_point() is tr.boundary()
    assert tr.boundary() == RestartPoint("mysql-bin.000002", 340, 0, "0-1-7")


def test_filter_include_exclude() -> None:
    f = TableFilter(include=[r"shop\..*"], exclude=[r"shop\.tmp_.*"])
    assert f.accepts("shop", "orders")
    assert not f.accepts("shop", "tmp_x")
    assert not f.accepts("other", "orders")
    assert f.accepts(None, None)  # no table: transaction boundaries pass
    assert TableFilter().accepts("a", "b")
    assert TableFilter(include=[r"a\.b, c\.d"]).accepts("c", "d")


def test_state_atomic_roundtrip(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    st = ReplicaState.load(p)
    uid = st.slave_uuid
    st.log_file, st.log_pos, st.gtid_set = "mysql-bin.000002", 1234, "0-1-5"
    st.save(p)
    back = ReplicaState.load(p)
    assert (back.log_file, back.log_pos, back.gtid_set, back.slave_uuid) == (
        "mysql-bin.000002", 1234, "0-1-5", uid)
    assert [x.name for x in tmp_path.iterdir()] == ["state.json"]  # no temp files left
    p.write_text("{broken")
    with pytest.raises(ValueError, match="unreadable"):
        ReplicaState.load(p)
