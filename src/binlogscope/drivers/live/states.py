"""The live connection's state changes as ``health`` items (issue 29 item 4): ``streaming``
(events arriving), ``idle`` (heartbeats arriving, no events), ``stalled`` (no byte from the
server for over two heartbeat periods while the dump is open: stalled or half-open - the wire
cannot tell them apart, nothing arrives either way), ``recovered`` (the first bytes after a
stall, with how long it lasted) and ``reconnect`` (the replica lost the connection and dumps
again: :func:`reconnect_item`, put by the fetcher).

The same words and thresholds as :class:`~binlogscope.drivers.health.Health` (``--summary``,
the export's ``health`` table), but told as they happen: :class:`StateWatch` runs on the
consumer's side of :func:`~binlogscope.drivers.live.replica.run_live`. Times are arrival times
(the packet's ``wire_time``); a stall is noticed while the store is empty (the consumer has
everything the socket brought) from when the fetcher's socket last returned bytes, and the
item carries that time as ``since`` and the time it was noticed as ``time``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from binlogscope.drivers.items import SourceItem
from binlogscope.session.events import LinesWritten, PacketDecoded
from binlogscope.wire.binlog.types import HEARTBEATS, is_heartbeat

#: a stall: no byte for more than this many heartbeat periods (as drivers/health.py)
STALL_PERIODS = 2
#: no state change
_NONE: tuple[SourceItem, ...] = ()


def state_item(state: str, t: float, text: str, **fields: Any) -> SourceItem:
    """The ``health`` item of one state change (``live --json``: ``{"kind": "health",
    "state": ..., "time": ..., ...}``; ``--brief``: ``-- health: TEXT``)."""
    return SourceItem("health", text=f"health: {text}", time=t,
                      health={"state": state, "time": round(t, 6), **fields, "text": text})


def reconnect_item(reason: str, attempt: int, resume_at: str) -> SourceItem:
    """The replica lost its connection and reconnects (``attempt``), to resume at
    ``resume_at`` (FILE:POS)."""
    return state_item("reconnect", time.time(),
                      f"reconnect {attempt}: connection lost ({reason}); resuming at {resume_at}",
                      attempt=attempt, reason=reason, resume_at=resume_at)


class StateWatch:
    """The state of the dump as the consumer sees its items (see the module doc).
    ``period``: the heartbeat period asked for (0: none, so a stall cannot be told from an
    idle server and is not reported); ``last_read``: when the fetcher's socket last returned
    bytes (seconds since the epoch; None: no connection)."""

    def __init__(self, period: float, last_read: Callable[[], float | None]) -> None:
        self.period = period
        self._last_read = last_read
        self.state: str | None = None  # None: no dump open (yet, or since a reconnect)
        self._stalled_since: float | None = None

    def after(self, item: SourceItem) -> Sequence[SourceItem]:
        """``item`` was consumed: the state changes it brings, in order."""
        ev = item.event
        if self.state == "streaming" and self._stalled_since is None \
                and type(ev) is PacketDecoded and item.kind == "packet":
            # (once per event: while streaming only a heartbeat changes the state)
            bev = ev.binlog_event
            if bev is None or bev.header is None or bev.header.type_code not in HEARTBEATS:
                return _NONE
        if item.kind == "health":
            if item.health is not None and item.health.get("state") == "reconnect":
                self.state, self._stalled_since = None, None
            return []
        if item.kind != "packet":
            return []
        if type(ev) is LinesWritten:  # (the kernel's lines of events, never of heartbeats)
            if self.state == "streaming" and self._stalled_since is None:
                return _NONE
            heartbeat = False
        elif type(ev) is not PacketDecoded:
            return []
        else:
            bev = ev.binlog_event
            if bev is None or bev.header is None:
                return []
            heartbeat = is_heartbeat(bev.header.type_code)
        t = ev.wire_time if ev.wire_time is not None else time.time()
        out: list[SourceItem] = []
        since = self._stalled_since
        if since is not None:
            self._stalled_since = None
            quiet = max(0.0, t - since)
            out.append(state_item("recovered", t, f"recovered: bytes from the server again "
                                  f"after {quiet:.1f} s of silence", since=round(since, 6),
                                  seconds=round(quiet, 6)))
        if heartbeat:
            if self.state != "idle":
                self.state = "idle"
                out.append(state_item("idle", t, f"idle: heartbeats arriving (every "
                                      f"{self.period:g} s asked), no events",
                                      heartbeat_period_s=self.period))
        elif self.state != "streaming":
            self.state = "streaming"
            out.append(state_item("streaming", t, "streaming: events arriving"))
        return out

    def tick(self, now: float | None = None) -> list[SourceItem]:
        """The stream is quiet (the store is empty): a ``stalled`` item once the server has
        sent nothing for over :data:`STALL_PERIODS` heartbeat periods."""
        if self.state is None or not self.period or self._stalled_since is not None:
            return []
        last = self._last_read()
        if last is None:
            return []
        now = time.time() if now is None else now
        quiet = now - last
        if quiet <= STALL_PERIODS * self.period:
            return []
        self._stalled_since = last
        self.state = "stalled"
        return [state_item("stalled", now, f"stalled or half-open: no byte from the server for "
                           f"{quiet:.1f} s while heartbeats are due every {self.period:g} s",
                           since=round(last, 6), seconds=round(quiet, 6),
                           heartbeat_period_s=self.period)]


__all__ = ["STALL_PERIODS", "StateWatch", "reconnect_item", "state_item"]
