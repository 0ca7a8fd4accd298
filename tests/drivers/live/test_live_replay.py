"""The live replica's fetcher loop on a recorded semi-sync session: the items (events,
restart points, deliver flags), the tracker's moves (GTID sets), the semi-sync ACKs on the wire.

The server side is the real semi-sync session of ``captures/pcap-semisync.pcap`` (recorded from
``binlogscope live --semi-sync`` against MariaDB), replayed segment by segment through a socket
stand-in: every server->replica TCP payload of the capture is one ``recv``; what the replica
writes is kept. (The real-server tests in tests/drivers/live/test_live_mariadb.py run the same
code against a live MariaDB.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import iter_records, parse_frame
from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveReplica, LiveSettings
from binlogscope.pipeline.filter import TableFilter
from binlogscope.session.events import PacketDecoded

CAPTURE = Path(__file__).resolve().parents[3] / "captures" / "pcap-semisync.pcap"
SERVER_PORT = 39041


def _server_segments() -> list[bytes]:
    out = []
    for _, _, linktype, data in iter_records(str(CAPTURE)):
        seg = parse_frame(linktype, data)
        if seg is not None and seg.payload and seg.sport == SERVER_PORT:
            out.append(seg.payload)
    return out


class _ReplaySocket:
    """recv_into hands out the recorded server segments in order (then EOF); sendall keeps
    what the replica wrote."""

    def __init__(self, segments: list[bytes]) -> None:
        self.segments = segments
        self.i = 0
        self.sent: list[bytes] = []

    def recv_into(self, buf: Any) -> int:
        if self.i >= len(self.segments):
            return 0
        data = self.segments[self.i]
        self.i += 1
        buf[: len(data)] = data
        return len(data)

    def sendall(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def settimeout(self, t: float | None) -> None:
        pass

    def close(self) -> None:
        pass

    def shutdown(self, how: int) -> None:
        pass


def _run(monkeypatch: pytest.MonkeyPatch, skip: int = 0,
         gtids: str | None = None, **settings: Any
         ) -> tuple[list[SourceItem], _ReplaySocket, LiveReplica]:
    sock = _ReplaySocket(_server_segments())
    with monkeypatch.context() as m:
        m.setattr(LiveReplica, "_connect", lambda self: sock)
        if skip or gtids:  # as after a restart from a state file: the first real events
            dump = LiveReplica._register_and_dump  # were delivered, the GTID set is known

            def dump_then_skip(self: LiveReplica, rd: Any) -> None:
                dump(self, rd)
                self.resume_skip = skip
                self.fetch_pos.seed_gtid(gtids)

            m.setattr(LiveReplica, "_register_and_dump", dump_then_skip)
        conn = ConnectionOptions(host="127.0.0.1", port=SERVER_PORT, user="repl",
                                 password="replpass", ssl_mode="DISABLED")
        rep = LiveReplica(LiveSettings(conn=conn, server_id=4242, semi_sync=True,
                                       heartbeat=1.0, start="mysql-bin.000001:4",
                                       reconnect=False, stream_tree=False, **settings))
        rep.state.slave_uuid = "5e6f2a9c-0000-4000-8000-000000000001"
        rep.start()
        items = []
        for cursor, item in rep.items(timeout=0.05):
            items.append(item)
            rep.ack(cursor, item)
        rep.join(5)
    return items, sock, rep


#: executed GTID sets the tracker starts from: the capture's domain 0, and another domain besides
SEEDS = {"same-domain": "0-1-3", "two-domains": "0-1-3,5-9-100"}


@pytest.mark.parametrize("case", ["plain", "resume-skip", "table-filter", *SEEDS])
def test_fetch_loop_on_recorded_session(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    skip = 7 if case == "resume-skip" else 0
    extra: dict[str, Any] = {}
    if case == "table-filter":
        extra["table_filter"] = TableFilter(include=["test\\.t1"])
    gtids = SEEDS.get(case)
    items, sock, rep = _run(monkeypatch, skip, gtids, **extra)
    assert not rep.error or "closed" in rep.error
    assert rep.acks_sent == 8  # the capture's 8 ACKed transactions
    assert sum(1 for d in sock.sent if d[4:5] == b"\xef") == 8
    assert rep.heartbeats > 0
    events = [i for i in items if isinstance(i.event, PacketDecoded)
              and i.event.binlog_event is not None]
    assert len(events) > 40
    hot = [i for i in events if _ordinary(i.event)]
    assert hot and all(i.restart is not None for i in hot)
    if case == "resume-skip":
        assert sum(1 for i in events if not i.deliver) == skip
    if gtids:  # the capture's commits moved domain 0 on; the other domain stayed
        final = rep.fetch_pos.gtid_set
        assert final is not None and final.startswith("0-1-") and final != "0-1-3"
        assert final.endswith(",5-9-100") == (case == "two-domains")
    if case == "table-filter":
        assert any(not i.deliver for i in events)
        assert any(i.deliver for i in hot)
    elif case != "resume-skip":
        assert all(i.deliver for i in events)


_HOT = {16, 19, 23, 24, 25, 30, 31, 32, 160, 162}


def _ordinary(ev: Any) -> bool:
    bev = ev.binlog_event
    h = bev.header
    return (bev.error is None and h is not None and h.type_code in _HOT
            and not h.flags & 0x20 and h.log_pos != 0)
