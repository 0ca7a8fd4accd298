"""The TUI driven with Pilot over a live replica session against the in-process mock master.

The mock master serves the real MariaDB 10.11 binlog in captures/ with semi-sync on, so every
session has the whole conversation: handshake, auth, setup queries, REGISTER, DUMP, the stream
with 0xEF headers and the ACKs binlogscope sends back.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings
from binlogscope.inspector.sources.live import LiveSource
from binlogscope.inspector.view import RowFilter
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.tui.widgets.phase_strip import PhaseStrip
from binlogscope.tui.widgets.status_bar import StatusBar
from mock_master.serve.server import ThreadedMockMaster
from tests.tui.conftest import sync, wait_for
from tests.watch_support import acking_master

pytestmark = pytest.mark.timeout(120)

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"
#: events in the capture's one file, as the dump sends them (fake ROTATE + FDE included)
PASSWORD = "replpass"


@pytest.fixture
def master() -> Iterator[ThreadedMockMaster]:
    # every replayed transaction asks for an ACK (the ACK rows and flags on screen)
    with acking_master() as mm:
        yield mm


def _settings(mm: ThreadedMockMaster, **kw: object) -> LiveSettings:
    conn = ConnectionOptions(host="127.0.0.1", port=mm.port, user="repl", password=PASSWORD,
                             ssl_mode="DISABLED")
    first = mm.master.stream.files[0].name
    opts: dict[str, object] = {"start": f"{first}:4", "non_blocking": True, "reconnect": False,
                               "semi_sync": True, "server_id": 4242}
    opts.update(kw)
    return LiveSettings(conn=conn, **opts)  # type: ignore[arg-type]


def _source(settings: LiveSettings, **kw: object) -> LiveSource:
    src = LiveSource(settings, **kw)  # type: ignore[arg-type]
    src.replica.state.slave_uuid = "00000000-0000-4000-8000-000000000001"
    return src


async def _screen(app: BinlogScopeApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    scr = app.screen
    assert isinstance(scr, MainScreen)
    return scr


async def _ended(scr: MainScreen) -> None:
    src = scr.source
    await wait_for(lambda: src.info().done and scr.events.row_count == len(src), 30)


def _rows(src: LiveSource, event_type: str) -> list[int]:
    return [i for i in range(len(src)) if src.row(i).event_type == event_type]


@sync
async def test_live_rows_show_direction_seq_semi_sync_and_acks(master: ThreadedMockMaster) -> None:
    src = _source(_settings(master))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        greet = src.row(_rows(src, "HANDSHAKE_V10")[0])
        assert (greet.direction, greet.seq, greet.kind) == ("<-", 0, "handshake")
        resp = src.row(_rows(src, "HANDSHAKE_RESPONSE41")[0])
        assert (resp.direction, resp.seq, resp.kind) == ("->", 1, "handshake")
        assert "user repl" in resp.summary
        query = src.row(_rows(src, "COM_QUERY")[0])
        assert (query.direction, query.seq, query.kind) == ("->", 0, "query")
        dump = src.row(_rows(src, "COM_BINLOG_DUMP")[0])
        assert dump.kind == "dump" and "server_id=4242" in dump.summary
        # every ACK the replica sent names the position of an event that asked for one
        acks = _rows(src, "SEMI_SYNC_ACK")
        assert acks and len(acks) == src.replica.acks_sent
        asked = [i for i in range(len(src)) if src.row(i).semi_sync == "ef ACK?"]
        assert len(asked) == len(acks)
        for a, e in zip(acks, asked, strict=True):
            ack, ev = src.row(a), src.row(e)
            assert ev.log_pos is not None and a > e
            assert (ack.direction, ack.seq, ack.kind) == ("->", 0, "ack")
            assert ack.semi_sync == f"ACK {ev.log_pos}"
        others = [src.row(i) for i in range(len(src)) if src.row(i).semi_sync == "ef"]
        assert others and all(r.direction == "<-" for r in others)
        # colours by kind: write rows are "write", the stream's GTIDs "gtid", steps "step"
        kinds = {src.row(i).kind for i in range(len(src))}
        assert {"handshake", "query", "result", "dump", "ack", "gtid", "write", "step",
                "note"} <= kinds
        # the status bar has the live counters
        status = str(scr.query_one(StatusBar).render())
        assert "ended" in status and f"ACKs {len(acks)}" in status
        assert "store fetched" in status and "10.11.19-MariaDB" in status and "CRC32" in status
        await pilot.press("q")


@sync
async def test_phase_strip_says_why_each_setup_step_is_sent(master: ThreadedMockMaster) -> None:
    src = _source(_settings(master))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        scr.follow = False
        strip = scr.query_one(PhaseStrip)
        q = next(i for i in _rows(src, "COM_QUERY") if "rpl_semi_sync_slave" in src.row(i).summary)
        scr.events.cursor = q
        await wait_for(lambda: scr.detail_row == q)
        await pilot.pause(0.3)
        text = str(strip.render())
        assert "connect > auth > setup > register > dump > stream" in text.replace(" stream ",
                                                                                    "stream")
        assert "semi-sync:" in text and "0xEF" in text  # SetupStep.why of the semi-sync step
        now, at, step = src.phase_at(q)
        assert (now, at) == (5, 2) and step is not None and step.what == "semi-sync"
        reg = _rows(src, "COM_REGISTER_SLAVE")[0]
        scr.events.cursor = reg
        await pilot.pause(0.3)
        assert "COM_REGISTER_SLAVE server_id=4242:" in str(strip.render())
        await pilot.press("q")


@sync
async def test_walking_a_live_rows_event_highlights_each_fields_bytes(
        master: ThreadedMockMaster) -> None:
    # a tree window of 5 rows: the selected event is re-decoded from its kept bytes
    src = _source(_settings(master), tree_window=5)
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        scr.follow = False
        w = _rows(src, "WRITE_ROWS_EVENT_V1")[0]
        assert w not in src._recent
        scr.events.cursor = w
        await wait_for(lambda: scr.detail_row == w and scr.field is not None)
        det = scr.detail
        assert det is not None
        row = src.row(w)
        hexp = scr.query_one(HexPane)
        # the hex pane shows the packet as it was on the wire: 4-byte header, 0x00, 0xEF, flag
        assert hexp.base == row.offset and len(hexp.data) == row.length + 4
        assert hexp.data[:3] == row.length.to_bytes(3, "little") and hexp.data[3] == row.seq
        assert hexp.data[4:6] == b"\x00\xef"
        tree = scr.query_one(FieldTree)
        tree.focus()
        seen = []
        for _ in range(12):
            await pilot.press("down")
            await pilot.pause()
            node = scr.field
            assert node is not None and tree.cursor_node is not None
            assert tree.cursor_node.data is node
            assert hexp.highlight == (node.offset, node.end)
            seen.append((node.name, node.offset - row.offset, node.length))
        assert seen[0] == ("packet_header", 0, 4)
        assert ("payload_length", 0, 3) in seen and ("sequence_id", 3, 1) in seen
        assert ("binlog_event", 4, row.length) in seen and ("status", 4, 1) in seen
        assert ("semi_sync_header", 5, 2) in seen
        assert any(off == 7 and n == row.length - 3 for _, off, n in seen)  # the event itself
        # a collapsed field, selected from the tree: its bytes light up
        flag = det.node.find("binlog_event.semi_sync_header.semi_sync_flag")
        assert flag is not None
        tree.select_field(flag)
        await wait_for(lambda: scr.field is flag)
        assert hexp.highlight == (row.offset + 6, row.offset + 7)
        assert row.semi_sync in ("ef", "ef ACK?")
        assert det.slice(flag) == (b"\x01" if row.semi_sync == "ef ACK?" else b"\x00")
        # the highlighted bytes are the field's: the event_type byte is 0x17 (WRITE_ROWS_V1)
        et = next(n for n in det.node.walk() if n[1].name == "event_type")[1]
        assert det.slice(et) == b"\x17"
        # the hex cursor selects the owning field
        hexp.focus()
        hexp.cursor = et.offset
        await pilot.pause()
        assert scr.field is et
        await pilot.press("q")


def test_redecoded_tree_equals_the_sessions_tree(master: ThreadedMockMaster) -> None:
    """Rows past the tree window are re-decoded from their payload: the session's tree."""
    src = _source(_settings(master), tree_window=100_000)
    src.run(lambda: False)
    compared = 0
    for i in range(len(src)):
        ev = src._recent.get(i)
        if ev is None or ev.node is None:
            continue
        again = src.redecoded(i)
        assert again is not None
        assert again.node is not None and again.node.to_dict() == ev.node.to_dict(), i
        assert src.detail(i).raw == src.detail(i).slice(ev.node)  # the wire bytes, rebuilt
        compared += 1
    assert compared > 300


@sync
async def test_filter_by_direction_and_type(master: ThreadedMockMaster) -> None:
    src = _source(_settings(master))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        await pilot.press("f")
        await pilot.press("ctrl+u", *"dir:client")
        await pilot.press("enter")
        await wait_for(lambda: scr.view.filter.direction == "->")
        n = len(scr.view)
        assert n and all(src.row(scr.view.row_index(i)).direction == "->" for i in range(n))
        assert n == sum(1 for i in range(len(src)) if src.row(i).direction == "->")
        scr.apply_filter(RowFilter.parse("type:SEMI_SYNC_ACK"))
        await wait_for(lambda: scr.view.filter.types == ("SEMI_SYNC_ACK",))
        assert len(scr.view) == src.replica.acks_sent
        await pilot.press("q")


@sync
async def test_goto_gtid_and_export(master: ThreadedMockMaster, tmp_path: Path) -> None:
    src = _source(_settings(master))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _screen(app)
        await _ended(scr)
        scr.goto("0-1-25")
        await wait_for(lambda: scr.events.current_row is not None
                       and src.row(scr.events.current_row).summary == "0-1-25")
        assert scr.events.current_row is not None
        assert src.row(scr.events.current_row).event_type == "GTID_EVENT"
        assert scr.follow is False  # a jump stops following
        out = tmp_path / "view.jsonl"
        scr.apply_filter(RowFilter.parse("type:GTID_EVENT,SEMI_SYNC_ACK,STEP"))
        await wait_for(lambda: scr.view.filter.active and len(scr.view) > 0)
        await pilot.press("x", "ctrl+u", *str(out), "enter")
        await wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == len(scr.view))
        objs = [json.loads(line) for line in out.read_text().splitlines()]
        steps = [o for o in objs if o["kind"] == "step"]
        assert steps[0]["phase"] == "connect" and all(s["why"] for s in steps)
        gtids = [o for o in objs if o.get("event_type") == "GTID_EVENT"]
        assert gtids and gtids[0]["direction"] == "server" and gtids[0]["semi_sync"] is not None
        acks = [o for o in objs if o["kind"] == "semi_sync_ack"]
        assert acks and acks[0]["direction"] == "client"
        assert acks[0]["fields"]["binlog_filename"] == "mysql-bin.000001"
        await pilot.press("q")


@sync
async def test_follow_stops_on_scroll_up_and_resumes(master: ThreadedMockMaster) -> None:
    # a blocking dump with heartbeats: the session stays up after the last event
    src = _source(_settings(master, non_blocking=False, heartbeat=0.3))
    app = BinlogScopeApp(src)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _screen(app)
        assert scr.follow is True
        await wait_for(lambda: src.replica.heartbeats >= 1, 30)
        await wait_for(lambda: scr.events.cursor == len(scr.view) - 1 and len(scr.view) > 300)
        await pilot.press("up", "up")
        assert scr.follow is False
        at = scr.events.cursor
        n = len(src)
        await wait_for(lambda: len(src) > n + 1, 10)  # heartbeats keep coming
        await pilot.pause(0.3)
        assert scr.events.cursor == at  # not dragged to the end
        await pilot.press("F")
        assert scr.follow is True
        await wait_for(lambda: scr.events.cursor == len(scr.view) - 1)
        await pilot.press("home")
        assert scr.follow is False
        await pilot.press("end")
        assert scr.follow is True
        status = str(scr.query_one(StatusBar).render())
        assert "LIVE" in status and "follow" in status and "heartbeats" in status
        await pilot.press("q")


@sync
async def test_pause_holds_the_fetcher_and_loses_nothing(master: ThreadedMockMaster) -> None:
    total = len(_reference_rows(master))
    src = _source(_settings(master, store_size=8))
    src.set_paused(True)  # paused from the start: the store fills and the fetcher waits
    app = BinlogScopeApp(src)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await _screen(app)
        scr.paused = True
        await wait_for(lambda: src.replica.store.cursors.fill == 8)
        await pilot.pause(0.5)
        c = src.replica.store.cursors
        assert (c.put, c.fill, len(src)) == (8, 8, 0)  # backpressure: nothing more fetched
        assert "PAUSED" in str(scr.query_one(StatusBar).render())
        await pilot.press("p")
        assert src.paused is False
        await _ended(scr)
        assert len(src) == total  # every item arrived once
        await pilot.press("q")


def _reference_rows(mm: ThreadedMockMaster) -> list[str]:
    src = _source(_settings(mm))
    src.run(lambda: False)
    return [src.row(i).event_type for i in range(len(src))]


@sync
async def test_quit_works_while_the_network_hangs() -> None:
    """A server that accepts and never says a word: q still quits at once."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    accepted: list[socket.socket] = []
    t = threading.Thread(target=lambda: accepted.append(srv.accept()[0]), daemon=True)
    t.start()
    conn = ConnectionOptions(host="127.0.0.1", port=srv.getsockname()[1], user="repl",
                             password="x", ssl_mode="DISABLED")
    src = LiveSource(LiveSettings(conn=conn, connect_timeout=60, reconnect=False))
    app = BinlogScopeApp(src)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            scr = await _screen(app)
            await wait_for(lambda: len(src) >= 1 and bool(accepted))
            assert src.row(0).event_type == "STEP"
            await pilot.pause(0.3)
            start = time.monotonic()
            await pilot.press("q")
        assert time.monotonic() - start < 2.0
        assert scr.source is src
        fetcher = src.replica._thread
        assert fetcher is not None
        fetcher.join(3)
        assert not fetcher.is_alive()  # stop() shut the socket: recv() returned
    finally:
        for s in accepted:
            s.close()
        srv.close()


def test_live_falls_back_to_plain_text_when_not_a_terminal(master: ThreadedMockMaster,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from binlogscope.cli.main import main

    monkeypatch.setenv("MYSQL_PWD", PASSWORD)
    first = master.master.stream.files[0].name
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--host", "127.0.0.1", "--port", str(master.port), "--user", "repl",
               "--ssl-mode", "DISABLED", "--start", f"{first}:4", "--non-blocking",
               "--no-reconnect", "--brief"], out, err)
    assert rc == 0, err.getvalue()
    text = out.getvalue()
    assert "== [connect] TCP connect" in text and "<- server handshake_v10" in text


def test_record_path_is_written_by_the_replica(master: ThreadedMockMaster,
                                               tmp_path: Path) -> None:
    """``live --record`` in the TUI: the replica writes the capture itself (no byte tap), and
    the capture reads back with the packets the TUI showed."""
    from binlogscope.drivers.capture.pcap import read_capture
    from binlogscope.session.events import PacketDecoded

    rec = tmp_path / "s.pcapng"
    src = _source(_settings(master, record_path=str(rec)))
    src.run(lambda: False)  # returns once the recording is closed
    assert rec.exists() and rec.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    shown = [src.row(i).event_type for i in range(len(src)) if src._ctx[i] >= 0]
    read = [it.event for it in read_capture(str(rec), [master.port])
            if isinstance(it.event, PacketDecoded)]
    assert len(read) == len(shown) > 300
    assert PASSWORD.encode() not in rec.read_bytes()
