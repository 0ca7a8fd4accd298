"""``live --lag-every SECONDS``: the server's head asked at an interval, against what the
consumer has consumed - a ``health`` item per answer (drivers/live/lag.py for the arithmetic).

A thread of its own asks ``SHOW MASTER STATUS`` (``SHOW BINARY LOG STATUS`` where the server
refuses the old name: MySQL 8.4 and 9) on a control connection of its own, logged in as the
replica is (the dump connection streams; nothing of the control connection is shown). Each
answer is stamped when it arrived and paired with where the last event the consumer was handed
ends at that moment: so a paused or slow reader (whose store filled and whose socket holds the
server back) shows a growing lag, and a caught-up one 0. The samples wait in a queue until the
consumer takes its next item (:meth:`LagWatch.after`); their times are those of the answers.

A heartbeat in the stream is a head too (the dump thread sends one at the end of its binlog):
the same tracker takes it, so an idle session's lag is known between polls.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.lag import LagSample, LagTracker
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.binlog.control_events import HeartbeatEvent, RotateEvent
from binlogscope.wire.binlog.header import in_no_file
from binlogscope.wire.binlog.types import EventType, is_heartbeat

#: query(sql) -> rows (raises OSError / LiveError when it cannot)
Query = Callable[[str], "list[list[bytes | None]]"]

_STATUS = ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS")
_ROTATE = int(EventType.ROTATE_EVENT)


def health_item(s: LagSample) -> SourceItem:
    """The ``health`` item of one lag sample."""
    return SourceItem("health", text=f"lag: {s.text()}", time=s.time, health=s.to_json())


class LagWatch:
    """The poller thread and the consumer's side (see the module doc)."""

    def __init__(self, query: Query, every: float) -> None:
        self._query = query
        self.every = every
        self.tracker = LagTracker()
        self._lock = threading.Lock()
        self._pending: deque[LagSample | str] = deque()  # samples and notes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sql = _STATUS[0]
        self.failed: str | None = None

    # ----- the poller (its own thread)
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="binlogscope-lag", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def close(self) -> None:
        """Close the control connection (when the query has one)."""
        close = getattr(self._query, "close", None)
        if close is not None:
            close()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            head = self.ask()
            if head is None:
                if self.failed is not None:
                    return
                continue
            with self._lock:
                s = self.tracker.head_at(head[0], head[1], head[2], "status")
                if s is not None:
                    self._pending.append(s)

    def ask(self) -> tuple[str, int, float] | None:
        """The server's head (file, position, when the answer came); None: no answer (once
        the control connection failed, :attr:`failed` says why and polling ends)."""
        try:
            try:
                rows = self._query(self._sql)
            except Exception:
                if self._sql != _STATUS[0]:
                    raise
                self._sql = _STATUS[1]  # MySQL 8.4+: the old name is gone
                rows = self._query(self._sql)
        except Exception as exc:  # (any failure: the stream goes on without polling)
            self.failed = str(exc) or type(exc).__name__
            self._pending.append(f"--lag-every: the server's binlog position could not be asked "
                       f"({self.failed}); no more lag samples from SHOW MASTER STATUS")
            return None
        t = time.time()
        if not rows or len(rows[0]) < 2 or rows[0][0] is None or rows[0][1] is None:
            return None
        pos = rows[0][1].decode("ascii", "replace")
        if not pos.isdigit():
            return None
        return rows[0][0].decode("utf-8", "replace"), int(pos), t

    # ----- the consumer's side
    def after(self, item: SourceItem) -> list[SourceItem]:
        """``item`` was consumed: where it ends counts as consumed; the health items of the
        samples taken since the last call (in order)."""
        ev = item.event
        if item.kind == "packet" and type(ev) is PacketDecoded:
            bev = ev.binlog_event
            h = bev.header if bev is not None else None
            if bev is not None and h is not None and bev.error is None:
                with self._lock:
                    code = h.type_code  # (bodies decode on access: only these two)
                    body = bev.body if code == _ROTATE or is_heartbeat(code) else None
                    if is_heartbeat(code):
                        name = body.log_file if isinstance(body, HeartbeatEvent) else ""
                        s = self.tracker.head_at(name or bev.binlog_file, h.log_pos,
                                                 ev.wire_time or time.time(), "heartbeat")
                        if s is not None:
                            self._pending.append(s)
                    elif isinstance(body, RotateEvent):  # (the dump's fake one: its start)
                        self.tracker.consumed_to(body.next_log_name, body.position)
                    elif not in_no_file(h):
                        fp = bev.file_pos
                        end = h.log_pos or (fp + h.event_size if fp is not None else 0)
                        self.tracker.consumed_to(bev.binlog_file, end)
        if not self._pending:
            return []
        with self._lock:
            out = [health_item(s) if isinstance(s, LagSample) else SourceItem("note", text=s)
                   for s in self._pending]
            self._pending.clear()
        return out


__all__ = ["LagWatch", "health_item"]
