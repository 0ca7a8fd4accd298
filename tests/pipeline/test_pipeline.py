from __future__ import annotations

import threading
import time
from pathlib import Path

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
    seen = []
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
