"""A live replica session (``binlogscope live``) as a :class:`RowSource`.

The replica's fetcher runs in its own thread
(:class:`~binlogscope.drivers.live.replica.LiveReplica`) and
fills the bounded store; :meth:`LiveSource.run` (a TUI worker thread) takes items out, turns them
into rows and acks them. Pausing simply stops taking items: the store fills up and its
backpressure holds the fetcher, so nothing is lost. Nothing here ever runs on the UI thread, and
:meth:`stop` unblocks a fetcher stuck on a silent socket.

The hex pane's bytes are each decoded packet's own payload (no tap on the socket); a ``--record``
file is written by the replica itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.items import counted_event
from binlogscope.drivers.live.replica import LiveReplica, LiveSettings
from binlogscope.drivers.live.states import StateWatch
from binlogscope.inspector.source import SourceInfo
from binlogscope.inspector.sources.packets import PacketStreamSource


class LiveSource(PacketStreamSource):
    """Rows from a live replica; pause/resume, stop, and live counters for the status bar."""

    live = True
    pause_doc = "the store fills and holds the fetcher back, nothing is lost"

    def __init__(self, settings: LiveSettings, *, count: int | None = None,
                 replica: LiveReplica | None = None, **kw: Any) -> None:
        super().__init__(label=settings.conn.describe(), **kw)
        self.settings = settings
        self.count = count
        self.replica: LiveReplica = replica or LiveReplica(settings)
        self.paused = False
        self.ended: str | None = None
        self._stopped = False
        self._conn_no = 0

    # ----- controls (UI thread)
    def set_paused(self, paused: bool) -> None:
        self.paused = paused

    def stop(self) -> None:
        """Close the connection and end the fetcher (never blocks)."""
        if not self._stopped:
            self._stopped = True
            self.replica.stop()

    # ----- producing (worker thread)
    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        rep = self.replica
        rep.start()
        watch = rep.lag_watch()  # --lag-every: health rows after the row that brought them
        if watch is not None:
            watch.start()
        # the connection's state changes (idle, streaming, stalled, recovered): health rows
        states = StateWatch(rep.s.heartbeat_period(), rep.last_read)
        delivered = 0
        try:
            while not cancelled():
                if self.paused:
                    time.sleep(0.05)
                    continue
                got = rep.store.get(0.1)
                if got is None:
                    thread = rep._thread
                    if thread is not None and not thread.is_alive():
                        got = rep.store.get(0)
                        if got is None:
                            self.ended = rep.error or "the session ended"
                            return
                    else:
                        for h in states.tick():  # (the store is empty)
                            h.conn = max(self._conn_no - 1, 0)
                            yield h
                        continue
                cursor, item = got
                if item.deliver:
                    yield self._item(item)
                    for h in states.after(item):
                        h.conn = max(self._conn_no - 1, 0)
                        yield h
                    if watch is not None:
                        for h in watch.after(item):
                            h.conn = max(self._conn_no - 1, 0)
                            yield h
                rep.ack(cursor, item)
                if self.count is not None and _is_event(item):
                    delivered += 1
                    if delivered >= self.count:
                        self.ended = f"--count {self.count} reached"
                        return
        finally:
            self.stop()
            if watch is not None:
                watch.stop()
                watch.close()
            rec = rep.recorder
            if rec is not None:  # --record: the fetcher's last bytes, then the file's end
                rep.join(5)
                rec.close()

    def _item(self, item: SourceItem) -> SourceItem:
        if item.kind == "step" and item.step is not None and item.step.phase == "connect":
            self._conn_no += 1
        conn = max(self._conn_no - 1, 0)  # 0 for the first connection, 1 after a reconnect...
        if item.kind == "packet":  # (its time: when its bytes crossed the socket)
            return SourceItem(event=item.event, conn=conn,
                              time=getattr(item.event, "wire_time", None))
        return SourceItem(kind=item.kind, text=item.text, step=item.step, conn=conn)

    # ----- status
    def info(self) -> SourceInfo:
        si = super().info()
        rep = self.replica
        c = rep.store.cursors
        x = si.extra
        fp = rep.fetch_pos
        if fp.log_file:
            x["binlog"] = f"{fp.log_file}:{fp.next_pos if fp.next_pos is not None else '?'}"
        if rep.info.version and not si.server_version:
            si.server_version = rep.info.version
        if rep.info.checksum and not si.checksum:
            si.checksum = rep.info.checksum
        x["ACKs"] = str(rep.acks_sent)
        x["heartbeats"] = str(rep.heartbeats)
        # the bounded store between the fetcher and this view, in words (its put/get/ack
        # cursors): events fetched, taken by the view, acknowledged, and waiting in it
        x["store"] = (f"fetched {c.put:,}, shown {c.get:,}, acked {c.ack:,}, "
                      f"{c.fill:,}/{c.size:,} waiting")
        if rep.reconnects:
            x["reconnects"] = f"{rep.reconnects}/{self.settings.max_reconnects}"
        if self.paused:
            x["state"] = "PAUSED"
        elif self.ended is not None:
            x["state"] = "ended"
        else:
            x["state"] = "live"
        if rep.error and not si.fatal:
            si.fatal = rep.error
        return si


def _is_event(item: SourceItem) -> bool:
    """What ``--count`` counts, as ``run_live`` counts them."""
    return counted_event(item)


__all__ = ["LiveSource"]
