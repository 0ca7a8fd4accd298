"""drivers/items.py: the one item type, and the live stream's positional constructor."""

from __future__ import annotations

import dataclasses

from binlogscope.drivers.items import NO_FLOW, SourceItem, stream_item
from binlogscope.pipeline.position import RestartPoint
from binlogscope.session.events import ConnectionClosed, Peer


def test_stream_item_is_the_keyword_form() -> None:
    """stream_item passes the fields by position (cheaper, once per event): every field must
    land where the keyword form puts it, whatever order the dataclass's fields take."""
    ev = ConnectionClosed(Peer.SERVER, 12)
    at = RestartPoint("mysql-bin.000002", 340, 0, "0-1-7")
    for skip, deliver in ((0, True), (3, False)):
        fast = stream_item(ev, at, skip, deliver)
        slow = SourceItem("packet", ev, at=at, skip=skip, deliver=deliver)
        assert dataclasses.astuple(fast) == dataclasses.astuple(slow)
        assert fast.flow is NO_FLOW and fast.kind == "packet" and fast.event is ev


def test_restart_is_the_boundary_with_the_events_to_skip() -> None:
    at = RestartPoint("mysql-bin.000002", 340, 0, "0-1-7")
    assert stream_item(ConnectionClosed(Peer.SERVER, 0), at, 0, True).restart is at
    assert stream_item(ConnectionClosed(Peer.SERVER, 0), at, 2, True).restart == \
        RestartPoint("mysql-bin.000002", 340, 2, "0-1-7")
    assert SourceItem("note", text="x").restart is None
