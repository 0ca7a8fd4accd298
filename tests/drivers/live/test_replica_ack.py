"""LiveReplica's acks: the restart point of the last acked item, built from the item's
shared boundary and its events to skip only when it is read (the state file's save)."""

from __future__ import annotations

import json
from pathlib import Path

from binlogscope.drivers.items import SourceItem, stream_item
from binlogscope.drivers.live.items import LiveSettings
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveReplica
from binlogscope.pipeline.position import RestartPoint
from binlogscope.session.events import ConnectionClosed, Peer


def test_acked_position_is_the_last_placed_items_boundary_and_skip(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    rep = LiveReplica(LiveSettings(conn=ConnectionOptions(), server_id=900,
                                   state_path=str(state), state_interval=3600))
    ev = ConnectionClosed(Peer.SERVER, 0)
    txn = RestartPoint("mysql-bin.000003", 500, 0, "0-1-41")
    assert rep.acked_pos is None
    rep.ack(0, stream_item(ev, txn, 0, True))  # the transaction's GTID: its start, skip 0
    assert rep.acked_pos is txn
    rep.ack(1, stream_item(ev, txn, 3, True))  # its third event: the same boundary, skip 3
    assert rep.acked_pos == RestartPoint("mysql-bin.000003", 500, 3, "0-1-41")
    rep.ack(2, SourceItem("note", text="no position"))  # an item without one changes nothing
    assert rep.acked_pos == RestartPoint("mysql-bin.000003", 500, 3, "0-1-41")
    rep.save_state()
    saved = json.loads(state.read_text())
    assert (saved["log_file"], saved["log_pos"], saved["skip"], saved["gtid_set"]) == (
        "mysql-bin.000003", 500, 3, "0-1-41")
    after = RestartPoint("mysql-bin.000003", 900, 0, "0-1-42")  # committed: the next boundary
    rep.ack_upto(5, after)
    assert rep.acked_pos is after
