"""The live replica's C fetcher loop (``_crows.fetch_run``) gives exactly what its Python loop
gives: the same items (events, restart points, deliver flags), the same tracker moves, the
same semi-sync ACKs on the wire.

The server side is the real semi-sync session of ``captures/pcap-semisync.pcap`` (recorded from
``binlogscope live --semi-sync`` against MariaDB), replayed segment by segment through a socket
stand-in: every server->replica TCP payload of the capture is one ``recv``; what the replica
writes is kept. (The real-server tests in tests/mysql/test_live.py run the same code against
a live MariaDB.)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers import live as live_mod
from binlogscope.drivers.live import LiveItem, LiveReplica, LiveSettings
from binlogscope.drivers.options import ConnectionOptions
from binlogscope.drivers.pcap import iter_records, parse_frame
from binlogscope.events import PacketDecoded
from binlogscope.pipeline.filter import TableFilter
from tests.ci_support import unavailable

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
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


def _run(monkeypatch: pytest.MonkeyPatch, c_loop: bool, skip: int = 0,
         gtids: str | None = None, **settings: Any
         ) -> tuple[list[LiveItem], _ReplaySocket, LiveReplica]:
    sock = _ReplaySocket(_server_segments())
    with monkeypatch.context() as m:
        m.setattr(LiveReplica, "_connect", lambda self: sock)
        if not c_loop:
            m.setattr(live_mod, "_fetch_run_c", None)
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
        rep.state.slave_uuid = "5e6f2a9c-0000-4000-8000-000000000001"  # the same in both runs
        rep.start()
        items = []
        for cursor, item in rep.items(timeout=0.05):
            items.append(item)
            rep.ack(cursor, item)
        rep.join(5)
    return items, sock, rep


def _comparable(item: LiveItem) -> tuple[Any, ...]:
    ev = item.event
    if isinstance(ev, PacketDecoded):
        bev = ev.binlog_event
        tm = getattr(getattr(bev, "body", None), "table_map", None)
        if tm is not None:  # each run compiled its own row readers (a cache, no value)
            tm.compiled = None
    step = item.step
    restart = None if item.restart is None else dataclasses.astuple(item.restart)
    return (item.kind, ev if item.kind == "packet" else None, step, item.text, restart,
            item.deliver)


#: executed GTID sets the tracker starts from: the capture's domain 0 (the C loop records its
#: commits itself) and another domain besides (the tracker's Python _commit_gtid does)
SEEDS = {"same-domain": "0-1-3", "two-domains": "0-1-3,5-9-100"}


@pytest.mark.parametrize("case", ["plain", "resume-skip", "table-filter", *SEEDS])
def test_c_fetch_loop_equals_python_loop(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    if live_mod._fetch_run_c is None:
        unavailable("the C fetcher loop (binlogscope.wire.binlog._crows) is not built")
    skip = 7 if case == "resume-skip" else 0
    extra: dict[str, Any] = {}
    if case == "table-filter":
        extra["table_filter"] = TableFilter(include=["test\\.t1"])
    calls = {"n": 0}
    real = live_mod._fetch_run_c

    def counting(evs: list[Any], i: int, tracker: Any, batch: list[Any]) -> tuple[int, bool]:
        before = len(batch)
        got = real(evs, i, tracker, batch)
        calls["n"] += len(batch) - before
        return got

    monkeypatch.setattr(live_mod, "_fetch_run_c", counting)
    gtids = SEEDS.get(case)
    c_items, c_sock, c_rep = _run(monkeypatch, True, skip, gtids, **extra)
    p_items, p_sock, p_rep = _run(monkeypatch, False, skip, gtids, **extra)
    assert not c_rep.error or "closed" in c_rep.error
    assert c_rep.error == p_rep.error
    assert [_comparable(i) for i in c_items] == [_comparable(i) for i in p_items]
    assert c_sock.sent == p_sock.sent  # the same handshake, setup, dump and ACK bytes
    assert c_rep.acks_sent == p_rep.acks_sent == 8  # the capture's 8 ACKed transactions
    assert c_rep.heartbeats == p_rep.heartbeats > 0
    assert dataclasses.astuple(c_rep.fetch_pos) == dataclasses.astuple(p_rep.fetch_pos)
    events = [i for i in c_items if isinstance(i.event, PacketDecoded)
              and i.event.binlog_event is not None]
    assert len(events) > 40
    if case == "resume-skip":
        assert sum(1 for i in events if not i.deliver) == skip
    if gtids:  # the capture's commits moved domain 0 on; the other domain stayed
        final = c_rep.fetch_pos.gtid_set
        assert final is not None and final.startswith("0-1-") and final != "0-1-3"
        assert final.endswith(",5-9-100") == (case == "two-domains")
    if case == "table-filter":
        assert calls["n"] == 0  # a filter on: the Python loop decides what is delivered
        assert any(not i.deliver for i in events)
    else:  # the C loop built the item of every ordinary event once nothing was being skipped
        hot = [i for i in events if _ordinary(i.event)]
        assert calls["n"] == sum(1 for i in hot if i.deliver) > 20


_HOT = {16, 19, 23, 24, 25, 30, 31, 32, 160, 162}


def _ordinary(ev: Any) -> bool:
    bev = ev.binlog_event
    h = bev.header
    return (bev.error is None and h is not None and h.type_code in _HOT
            and not h.flags & 0x20 and h.log_pos != 0)
