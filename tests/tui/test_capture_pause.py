"""Pause (``p``) in the TUI of a live capture (``sniff``) and of the ``proxy``.

The session being watched is someone else's: pausing must not stop the capture or the relay
(the kernel's ring would drop, the proxy's decoder channel would fill and skip). The view
freezes instead: what arrives is decoded and held, the status bar counts it, and resuming shows
it all, in order, following the newest row again.

The capture tests feed :class:`LiveCaptureSource` (the one path of ``sniff`` and ``proxy``)
the frames of a real capture, a few at a time as the test releases them, so what is held and
when is exact. The proxy and sniff tests put a real client (``mariadb-binlog``) and the mock
master on either side of ``ReplicationProxy`` or of a capture on ``lo``: the client's whole
dump completes while the TUI is paused. A capture file's TUI keeps ``p`` hidden
and inert (a finite stream has nothing to pause).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture_batches
from binlogscope.drivers.capture.sniff import open_capture
from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.inspector.sources.packets import PacketStreamSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.inspector.sources.sniff import LiveCaptureSource, ProxySource, SniffSource
from binlogscope.inspector.view import RowFilter
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.status_bar import StatusBar
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from tests.helpers import CAPTURES, can_capture
from tests.tui.conftest import sync, wait_for

pytestmark = pytest.mark.timeout(120)

SEMISYNC = CAPTURES / "pcap-semisync.pcap"
PORTS = [39041]
#: frames shown before the pause (the first binlog events among them)
FIRST = 40
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"
MARIADB_BINLOG = shutil.which("mariadb-binlog")


class Feed:
    """A live capture's batches, paced by the test: the frames of a real capture, handed out
    as :meth:`release` allows (the producer blocks in between, as a capture with no traffic)."""

    def __init__(self, path: Path) -> None:
        self.batches = list(read_capture_batches(str(path), PORTS))
        self._allowed = 0
        #: batches the consumer has asked for and been given, and whether it waits for more
        self.taken = 0
        self.waiting = False
        self._cond = threading.Condition()

    def release(self, n: int | None = None) -> None:
        with self._cond:
            self._allowed = len(self.batches) if n is None else min(self._allowed + n,
                                                                     len(self.batches))
            self._cond.notify_all()

    def idle_at(self, n: int) -> bool:
        """Every item of the first ``n`` batches taken in (the consumer asks for batch n)."""
        return self.taken == n and self.waiting

    def __call__(self, stop: Callable[[], bool]) -> Iterator[list[SourceItem]]:
        for i, batch in enumerate(self.batches):
            with self._cond:
                self.waiting = True
                while self._allowed <= i and not stop():
                    self._cond.wait(0.02)
                self.waiting = False
                if self._allowed <= i:
                    return
                self.taken = i + 1
            yield batch
        with self._cond:
            self.waiting = True


def _footer(scr: MainScreen) -> list[str]:
    """The key descriptions the footer shows."""
    from textual.widgets._footer import FooterKey

    return [k.description for k in scr.query(FooterKey)]


def _rows(src: PacketStreamSource, n: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(n):
        r = src.row(i)
        out.append((r.event_type, r.flow, r.frame, r.direction, r.offset, r.time, r.summary))
    return out


def _reference() -> list[tuple[Any, ...]]:
    """The capture's rows as ``binlogscope pcap`` shows them."""
    ref = PcapSource(SEMISYNC, ports=PORTS)
    ref.run(lambda: False)
    return _rows(ref, len(ref))


def _start(src: LiveCaptureSource) -> threading.Thread:
    t = threading.Thread(target=src.run, args=(lambda: False,), daemon=True)
    t.start()
    return t


def _until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_pause_holds_what_keeps_arriving_and_resume_shows_it_in_order() -> None:
    ref = _reference()
    feed = Feed(SEMISYNC)
    last = len(feed.batches)
    src = LiveCaptureSource("test capture", feed)
    worker = _start(src)
    feed.release(FIRST)
    _until(lambda: feed.idle_at(FIRST))
    shown = len(src)
    before = src.info()
    assert 0 < shown < len(ref) and before.extra["state"] == "live"
    assert before.events > 0  # (binlog events among the shown rows: their count must freeze)
    src.set_paused(True)
    feed.release(last - 1 - FIRST)  # the capture goes on: all but its last frame
    _until(lambda: feed.idle_at(last - 1))  # the producer took every frame while paused
    taken = src._n
    assert taken > shown + 50
    assert len(src) == shown  # the view's rows: frozen
    rows, packets = src.held()
    assert rows == taken - shown and 0 < packets <= rows
    info = src.info()
    assert info.extra["state"] == "PAUSED" and info.rows == shown
    assert (info.events, info.errors) == (before.events, before.errors)
    held = f"{packets:,} packets" + (f" ({rows:,} rows)" if rows != packets else "")
    assert info.extra["held"] == held
    # go-to (like filters and search) sees the rows shown, not the held ones
    held_event = next(i for i in range(shown, taken) if (src.row(i).log_pos or 0) > 0)
    pos = (src.row(held_event).log_pos or 0) - 1
    assert src.find_offset(pos) in (None, *range(shown))
    src.set_paused(False)
    assert src.find_offset(pos) == held_event
    assert len(src) == taken and src.held() == (0, 0)
    assert _rows(src, taken) == ref[:taken]  # every held row, in capture order
    assert src.info().extra["state"] == "live" and "held" not in src.info().extra
    feed.release()
    worker.join(10)
    assert _rows(src, len(src)) == ref and src.info().extra["state"] == "ended"


def test_pause_while_the_capture_ends_keeps_the_view_until_resumed() -> None:
    feed = Feed(SEMISYNC)
    src = LiveCaptureSource("test capture", feed)
    src.set_paused(True)  # paused before the first frame: every row is held
    worker = _start(src)
    feed.release()
    worker.join(10)
    assert src.info().done and len(src) == 0 and src.held()[0] == src._n > 0
    assert src.info().extra["state"] == "PAUSED"
    src.set_paused(False)
    assert _rows(src, len(src)) == _reference()


@sync
async def test_tui_pause_freezes_the_list_counts_held_packets_and_resume_follows() -> None:
    ref = _reference()
    feed = Feed(SEMISYNC)
    last = len(feed.batches)
    src = LiveCaptureSource("test capture", feed)
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen) and scr.live and scr.follow
        await wait_for(lambda: "Pause" in _footer(scr))  # the footer offers p
        status = scr.query_one(StatusBar)
        feed.release(FIRST)
        await wait_for(lambda: feed.idle_at(FIRST))
        shown = len(src)
        await wait_for(lambda: scr.events.row_count == shown and scr.events.cursor == shown - 1)
        assert " LIVE " in str(status.render())

        await pilot.press("p")
        assert scr.paused and src.paused
        feed.release(last - 1 - FIRST)
        await wait_for(lambda: feed.idle_at(last - 1))
        await pilot.pause(0.6)  # (ticks: the list would take new rows in every 0.2 s)
        taken = src._n
        assert taken > shown
        assert scr.events.row_count == len(scr.view) == shown
        assert scr.events.cursor == shown - 1
        rows, packets = src.held()
        assert rows == taken - shown and packets > 0
        await wait_for(lambda: f"held {packets:,} packets" in str(status.render()))
        text = str(status.render())
        assert " PAUSED " in text and f"{shown:,} rows" in text
        # a filter applied while paused sees the rows shown only
        scr.apply_filter(RowFilter.parse("dir:server"))
        await wait_for(lambda: scr.view.filter.active)
        want = [i for i in range(shown) if src.row(i).direction == "<-"]
        assert [scr.view.row_index(i) for i in range(len(scr.view))] == want
        scr.apply_filter(RowFilter())
        await wait_for(lambda: not scr.view.filter.active)
        assert scr.follow

        await pilot.press("p")  # resume: every held row, in order, and follow goes on
        assert not scr.paused and not src.paused
        await wait_for(lambda: scr.events.row_count == taken)
        await wait_for(lambda: scr.events.cursor == taken - 1)
        assert [_rows(src, taken)[scr.view.row_index(i)] for i in range(taken)] == ref[:taken]
        await wait_for(lambda: " LIVE " in str(status.render()))
        assert "held" not in str(status.render())
        feed.release()
        await wait_for(lambda: scr.events.row_count == len(ref))
        assert scr.events.cursor == len(ref) - 1
        await pilot.press("q")


@sync
async def test_pause_is_hidden_and_inert_for_a_capture_file() -> None:
    src = PcapSource(SEMISYNC, ports=PORTS)
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src))
        n = len(src)
        await wait_for(lambda: "Quit" in _footer(scr))
        assert "Pause" not in _footer(scr) and "Follow" not in _footer(scr)
        await pilot.press("p")
        assert not scr.paused and not src.paused and len(src) == n
        assert "PAUSED" not in str(scr.query_one(StatusBar).render())
        await pilot.press("q")


def _served() -> list[str]:
    """The event types the mock master serves from WORKLOAD (after its fake ROTATE)."""
    dec = BinlogStreamDecoder(record=False)
    dec.receive_data(WORKLOAD.read_bytes())
    return [ev.type_name for ev in dec.events()]


async def _paused_dump(src: LiveCaptureSource, port: int, tmp_path: Path) -> None:
    """The TUI over ``src`` while real clients talk to the mock master at ``port``: a first
    connection shows as usual; paused, a whole binlog dump completes (the client has every
    byte) and its rows are decoded and held; resumed, they show in order, following."""
    import pymysql

    served = _served()
    app = BinlogScopeApp(src)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
        scr = app.screen
        assert isinstance(scr, MainScreen)
        status = scr.query_one(StatusBar)
        with pymysql.connect(host="127.0.0.1", port=port, user="repl",
                             password="replpass") as c, c.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            name = str(cur.fetchall()[0][0])
        await wait_for(lambda: sum(src.row(i).event_type == "CLOSED"
                                   for i in range(len(src))) == 2, 30)
        await pilot.pause(0.3)
        shown = len(src)
        await wait_for(lambda: scr.events.row_count == shown)

        await pilot.press("p")
        out = tmp_path / "dump"
        out.mkdir()
        res = await asyncio.to_thread(
            subprocess.run,
            [MARIADB_BINLOG or "", "--read-from-remote-server", "--raw", "--host=127.0.0.1",
             f"--port={port}", "--user=repl", "--password=replpass", f"--result-file={out}/",
             name], capture_output=True, text=True, timeout=60)
        # the session went on: the client has the whole file
        assert res.returncode == 0, res.stderr
        assert (out / name).read_bytes() == WORKLOAD.read_bytes()
        # and so did the decoder: every binlog event decoded, and held
        await wait_for(lambda: src.binlog_events == 1 + len(served), 30)
        await pilot.pause(0.5)
        assert len(src) == shown and scr.events.row_count == shown
        rows, packets = src.held()
        assert packets >= 1 + len(served)
        await wait_for(lambda: f"held {packets:,} packets" in str(status.render()))
        text = str(status.render())
        assert " PAUSED " in text and f"{shown:,} rows, 0 binlog events" in text

        await pilot.press("p")
        total = len(src)
        assert total == shown + rows
        await wait_for(lambda: scr.events.row_count == total and scr.events.cursor == total - 1)
        seen = [src.row(i).event_type for i in range(total) if src.row(i).log_pos is not None]
        assert seen[0] == "ROTATE_EVENT" and seen[1:] == served  # (the fake ROTATE first)
        await pilot.press("q")
    assert src.ended.wait(30)


@pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog not installed")
@sync
async def test_proxy_tui_paused_keeps_relaying_and_holds_the_rows(
        mock_master: Callable[..., Any], tmp_path: Path) -> None:
    mm = mock_master(binlogs=[WORKLOAD])
    proxy = ReplicationProxy(("127.0.0.1", 0), (mm.host, mm.port))
    port = proxy.start()
    src = ProxySource(proxy)
    try:
        await _paused_dump(src, port, tmp_path)
    finally:
        src.ended.wait(30)
        proxy.stop()
    assert proxy.connections == 2


@pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog not installed")
@pytest.mark.skipif(not can_capture(), reason="no AF_PACKET socket (root or CAP_NET_RAW)")
@sync
async def test_sniff_tui_paused_keeps_capturing_and_holds_the_rows(
        mock_master: Callable[..., Any], tmp_path: Path) -> None:
    mm = mock_master(binlogs=[WORKLOAD])
    src = SniffSource(open_capture("lo", f"port {mm.port}"), ports=[mm.port])
    try:
        await _paused_dump(src, mm.port, tmp_path)
    finally:
        src.stop()
        src.ended.wait(30)
    st = src.capture.stats()
    assert st.dropped == 0 and st.buffer_dropped == 0
