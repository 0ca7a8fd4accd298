"""The health of a replication connection from the wire, for ``--summary`` (``pcap``, ``sniff``,
``proxy``): the last event, GTID and ACK; the heartbeat period the replica asked for, the
cadence the heartbeats came at and the longest silence of the server; how the connection stood
at the end (streaming, idle with heartbeats, or silent while heartbeats were due: stalled - or
half-open, which the wire cannot tell apart: nothing arrives either way); the semi-sync ACK
latency of each transaction; and reconnects (a later dump from the same client host).

Fed the flow's decoded packets in order (:meth:`Health.packet`); all times are capture/arrival
times. :attr:`Health.timeline` keeps each sample and transition as a row (the export's
``health`` table): a dump request and its end, each heartbeat (with the interval since the
last), a server silence over two heartbeat periods (stalled or half-open while it lasted),
each semi-sync ACK (its latency, with ``pair_acks`` the flow pairs them itself as ``pcap
--summary`` does), each lag sample (drivers/live/lag.py) and the state at the end
(:meth:`Health.finish`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.live.lag import LagTracker
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.binlog.control_events import HeartbeatEvent, RotateEvent
from binlogscope.wire.binlog.header import in_no_file
from binlogscope.wire.binlog.types import EventType, is_heartbeat
from binlogscope.wire.commands import ComQuery
from binlogscope.wire.replication import SemiSyncAck
from binlogscope.wire.results import TextRow

_ROTATE = int(EventType.ROTATE_EVENT)
#: a query for the server's binlog head (its answer's first row: File, Position, ...)
STATUS_QUERY = re.compile(r"^\s*SHOW\s+(?:MASTER|BINARY\s+LOG)\s+STATUS\s*;?\s*$", re.I)
#: the replica's heartbeat request (MariaDB and MySQL: nanoseconds; MySQL 8.0.26+ source_)
_PERIOD = re.compile(r"@(?:master|source)_heartbeat_period\s*=\s*(\d+)", re.I)
#: per-transaction ACK latencies kept for the JSON (the count and the percentiles use all)
MAX_ACKS_LISTED = 1000
#: timeline rows kept per flow (the oldest tenth dropped beyond it)
MAX_TIMELINE = 200_000


@dataclass
class Health:
    """What one flow's packets say about its health."""

    period: float | None = None  # seconds between heartbeats the replica asked for (0: none)
    dumping: bool = False
    dumped: bool = False  # a dump was seen (it may have ended since)
    #: the last event (decoded) and when it came: :attr:`last_event` shapes it when asked
    _last_ev: tuple[Any, float] | None = None
    last_gtid: dict[str, Any] | None = None
    last_ack: dict[str, Any] | None = None
    heartbeats: int = 0
    _last_heartbeat: float | None = None
    heartbeat_intervals: list[float] = field(default_factory=list)
    _last_server: float | None = None  # the last server packet of the dump
    longest_silence: float = 0.0  # the longest time without a server packet while dumping
    longest_silence_at: float | None = None
    last_seen: float = 0.0
    closed_at: float | None = None  # the first close of the connection (either side)
    #: (transaction GTID or None, log_pos acknowledged, seconds) per acknowledged event
    acks: list[tuple[str | None, int, float]] = field(default_factory=list)
    _gtid_at: dict[int, str | None] = field(default_factory=dict)  # log_pos -> its GTID
    #: the server's head (heartbeats) against the events received (drivers/live/lag.py)
    lag: LagTracker = field(default_factory=LagTracker)
    #: pair each ACK with the event it acknowledges here (the export; pcap --summary's flow
    #: statistics pair them and call :meth:`ack`)
    pair_acks: bool = False
    _awaiting: dict[tuple[str, int], float] = field(default_factory=dict)
    #: the health samples and transitions, in order (the ``health`` table's rows)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    #: this connection asked SHOW MASTER STATUS and its first row is due
    _status_asked: bool = False
    #: the server's head this connection was told (file, position, time), until taken with
    #: :meth:`take_status_head` (the dumping connections to the same server use it)
    status_head: tuple[str, int, float] | None = None

    @property
    def last_event(self) -> dict[str, Any] | None:
        if self._last_ev is None:
            return None
        bev, t = self._last_ev
        return {"type": bev.type_name, "binlog_file": bev.binlog_file,
                "log_pos": bev.header.log_pos or None, "time": round(t, 6)}

    def take_status_head(self) -> tuple[str, int, float] | None:
        head, self.status_head = self.status_head, None
        return head

    def head_seen(self, file: str, pos: int, t: float, source: str) -> None:
        """The server's head from elsewhere (``live --lag-every``: SHOW MASTER STATUS)."""
        self._lag(file, pos, t, source)

    def mark(self, t: float, kind: str, **fields: Any) -> None:
        """A row of the timeline from outside the packets (a live reconnect)."""
        self._mark(t, kind, **fields)

    def _mark(self, t: float, kind: str, **fields: Any) -> None:
        if len(self.timeline) >= MAX_TIMELINE:
            del self.timeline[: MAX_TIMELINE // 10]
        fields["time"] = t
        fields["kind"] = kind
        self.timeline.append(fields)

    def _lag(self, file: str | None, pos: int, t: float, source: str) -> None:
        s = self.lag.head_at(file, pos, t, source)
        if s is not None:
            self._mark(t, "lag", binlog_file=s.consumed_file, log_pos=s.consumed_pos,
                       head_file=s.head_file, head_pos=s.head_pos,
                       files_behind=s.files_behind, bytes_behind=s.bytes_behind,
                       text=s.text())

    def packet(self, ev: PacketDecoded, t: float) -> None:
        self.last_seen = max(self.last_seen, t)
        if ev.direction is Peer.CLIENT:
            v = ev.value
            if type(v) is ComQuery:
                m = _PERIOD.search(v.query)
                if m:
                    self.period = int(m.group(1)) / 1e9
                self._status_asked = bool(STATUS_QUERY.match(v.query))
            elif ev.kind in ("com_binlog_dump", "com_binlog_dump_gtid"):
                self.dumping = self.dumped = True
                self._last_server = t
                self._mark(t, "dump", text=ev.kind.upper())
            elif self.pair_acks and type(v) is SemiSyncAck:
                key = (v.binlog_filename, v.binlog_pos)
                sent = self._awaiting.pop(key, None)
                if sent is None:  # file name unknown (joined mid-stream): match the position
                    k2 = next((k for k in self._awaiting if k[1] == v.binlog_pos), None)
                    sent = self._awaiting.pop(k2) if k2 is not None else None
                self.ack(v.binlog_filename, v.binlog_pos, t, None if sent is None else t - sent)
            return
        if self._status_asked and ev.kind == "text_row" and type(ev.value) is TextRow:
            self._status_asked = False
            vals = ev.value.values
            if len(vals) >= 2 and vals[0] and vals[1] and vals[1].isdigit():
                self.status_head = (vals[0].decode("utf-8", "replace"), int(vals[1]), t)
        if not self.dumping:
            if ev.binlog_event is None or ev.kind != "binlog_event" or self.dumped:
                return
            # a capture joined mid-stream: no dump request, but the server streams events
            self.dumping = self.dumped = True
            self._mark(t, "dump", text="(joined mid-stream)")
        if self._last_server is not None and t - self._last_server > self.longest_silence:
            self.longest_silence = t - self._last_server
            self.longest_silence_at = self._last_server
        if self._last_server is not None and self.period and \
                t - self._last_server > 2 * self.period:
            quiet = t - self._last_server
            self._mark(self._last_server, "silence", seconds=quiet,
                       text=f"stalled or half-open for {quiet:.1f} s: no byte from the server "
                            f"while heartbeats were due every {self.period:g} s")
        self._last_server = t
        bev = ev.binlog_event
        if bev is None or bev.header is None:
            if ev.kind in ("eof", "err"):
                self.dumping = False
                self._mark(t, "dump_end", text=ev.kind.upper())
            return
        h = bev.header
        if is_heartbeat(h.type_code):
            self.heartbeats += 1
            body = bev.body
            name = body.log_file if isinstance(body, HeartbeatEvent) and body.log_file else None
            gap = None if self._last_heartbeat is None else t - self._last_heartbeat
            if gap is not None:
                self.heartbeat_intervals.append(gap)
            self._last_heartbeat = t
            self._mark(t, "heartbeat", seconds=gap, binlog_file=name or bev.binlog_file,
                       log_pos=h.log_pos or None)
            self._lag(name or bev.binlog_file, h.log_pos, t, "heartbeat")
            return
        body = bev.body if h.type_code == _ROTATE else None  # (bodies decode on access)
        if isinstance(body, RotateEvent):
            # the end of a file (the reader goes on in the next), or the dump's fake ROTATE:
            # where it starts (what comes before is not this reader's to read)
            self.lag.consumed_to(body.next_log_name, body.position)
        elif not in_no_file(h):
            fp = bev.file_pos
            end = h.log_pos or (fp + h.event_size if fp is not None else 0)
            self.lag.consumed_to(bev.binlog_file, end)
        self._last_ev = (bev, t)
        if bev.trx_gtid is not None:
            if self.last_gtid is None or self.last_gtid["gtid"] != bev.trx_gtid:
                self.last_gtid = {"gtid": bev.trx_gtid, "time": round(t, 6)}
            if ev.semi_sync is not None and ev.semi_sync.ack_requested and h.log_pos:
                self._gtid_at[h.log_pos] = bev.trx_gtid
        if self.pair_acks and ev.semi_sync is not None and ev.semi_sync.ack_requested:
            self._awaiting[(bev.binlog_file or "", h.log_pos)] = t

    def ack(self, file: str, pos: int, t: float, latency: float | None) -> None:
        self.last_seen = max(self.last_seen, t)
        self.last_ack = {"binlog_file": file, "log_pos": pos, "time": round(t, 6)}
        gtid = self._gtid_at.pop(pos, None) if latency is not None else None
        if latency is not None:
            self.acks.append((gtid, pos, latency))
        self._mark(t, "ack", seconds=latency, gtid=gtid, binlog_file=file or None,
                   log_pos=pos)

    def finish(self, end: float, closed: bool) -> None:
        """The state at the end (of the capture, or before the close) as the last row."""
        if self.timeline or self.dumping:
            self._mark(end, "state", text=self.state(end, closed))

    def state(self, end: float, closed: bool) -> str:
        """How the connection stood at ``end`` (the capture's last time), or, when it was
        closed, just before its close (a stall that ended in a close reads as one)."""
        if closed:
            if self.closed_at is None or self._last_server is None or not self.period:
                return "closed"
            before = self._assess(self.closed_at)
            return "closed" if before.startswith("streaming") else f"closed; before: {before}"
        if not self.dumping:
            return "not dumping"
        return self._assess(end)

    def _assess(self, end: float) -> str:
        quiet = end - (self._last_server or end)
        if self.period:
            if quiet > 2 * self.period:
                return (f"stalled or half-open: no byte from the server for {quiet:.1f} s "
                        f"while heartbeats are due every {self.period:g} s")
            if self.last_event is None or (self._last_heartbeat or 0) > \
                    float(self.last_event["time"]):
                return f"idle (heartbeats every {self.period:g} s, last {quiet:.1f} s ago)"
        return f"streaming (last server packet {quiet:.1f} s before the end)"

    def cadence(self) -> dict[str, float] | None:
        xs = sorted(self.heartbeat_intervals)
        if not xs:
            return None
        return {"median_s": round(xs[len(xs) // 2], 6), "max_s": round(xs[-1], 6)}

    def to_json(self, end: float, closed: bool) -> dict[str, Any]:
        return {
            "state": self.state(end, closed), "heartbeat_period_s": self.period,
            "heartbeat_cadence": self.cadence(),
            "longest_server_silence_s": round(self.longest_silence, 6),
            "last_event": self.last_event, "last_gtid": self.last_gtid,
            "last_ack": self.last_ack, "lag": self.lag.to_json(),
            "ack_latency_per_transaction": [
                {"gtid": g, "log_pos": p, "ms": round(s * 1000, 3)}
                for g, p, s in self.acks[-MAX_ACKS_LISTED:]],
        }

    def lines(self, end: float, closed: bool) -> list[str]:
        out = [f"  health    {self.state(end, closed)}"]
        cad = self.cadence()
        hb = (f"  heartbeat asked every {self.period:g} s" if self.period
              else "  heartbeat none asked" if self.period == 0 else "  heartbeat period not seen")
        if cad:
            hb += f"; came every {cad['median_s']:.3f} s (median), longest {cad['max_s']:.3f} s"
        if self.dumping or self.longest_silence:
            hb += f"; longest server silence {self.longest_silence:.3f} s"
        out.append(hb)
        out.extend(self.lag.lines())
        if self.last_event:
            e = self.last_event
            where = f"{e['binlog_file'] or '?'}:{e['log_pos']}" if e["log_pos"] else "?"
            out.append(f"  last      event {e['type']} ending at {where}"
                       + (f", GTID {self.last_gtid['gtid']}" if self.last_gtid else "")
                       + (f", ACK {self.last_ack['binlog_file']}:{self.last_ack['log_pos']}"
                          if self.last_ack else ""))
        return out


def reconnects(flows: list[tuple[int, str, float, bool]]) -> dict[int, int]:
    """flow id -> the earlier flow it reconnects (a dumping flow from the same client host
    after another dumping one); ``flows``: (id, client "host:port", first time, dumped)."""
    out: dict[int, int] = {}
    last: dict[str, int] = {}
    for fid, client, _, dumped in sorted(flows, key=lambda f: f[2]):
        if not dumped:
            continue
        host = client.rsplit(":", 1)[0]
        if host in last:
            out[fid] = last[host]
        last[host] = fid
    return out


def share_status_head(source: Health, server: str, others: Iterable[tuple[Health, str]]
                      ) -> None:
    """A SHOW MASTER STATUS answer ``source`` (a connection to ``server``) just got: a head
    for every dumping connection to the same server (``others``: their health and server)."""
    head = source.take_status_head()
    if head is None:
        return
    for h, srv in others:
        if srv == server and h.dumping:
            h.head_seen(head[0], head[1], head[2], "status")


__all__ = ["MAX_ACKS_LISTED", "STATUS_QUERY", "Health", "reconnects", "share_status_head"]
