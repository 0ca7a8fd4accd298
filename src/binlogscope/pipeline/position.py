"""Where a replica is in the stream, and where it must restart so nothing is lost or repeated.

Pure: fed decoded events in stream order. A restart point is ``(file, pos, skip)``: dump from
``file:pos`` (always a transaction boundary, because row events need the TABLE_MAP that opens
their transaction) and drop the first ``skip`` real events, which were already delivered. GTIDs
are tracked as MariaDB ``domain-server-seq`` lists (the form ``@slave_connect_state`` takes) or a
MySQL ``uuid:interval`` set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.control_events import RotateEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.header import in_no_file
from binlogscope.wire.binlog.types import EventType

# plain ints: update() runs once per event on the replica's ACK path
_TXN_START = frozenset(int(t) for t in (
    EventType.GTID_LOG_EVENT, EventType.ANONYMOUS_GTID_LOG_EVENT,
    EventType.GTID_TAGGED_LOG_EVENT, EventType.GTID_EVENT))
_ROTATE = int(EventType.ROTATE_EVENT)
_QUERY = int(EventType.QUERY_EVENT)
_QUERIES = frozenset((_QUERY, int(EventType.QUERY_COMPRESSED_EVENT)))
_TXN_END = frozenset((int(EventType.XID_EVENT), int(EventType.XA_PREPARE_LOG_EVENT)))


@dataclass(slots=True)
class RestartPoint:
    log_file: str | None
    log_pos: int | None
    skip: int = 0
    gtid_set: str | None = None


@dataclass(slots=True)
class PositionTracker:
    log_file: str | None = None
    next_pos: int | None = None
    txn_start: int | None = None
    txn_events: int = 0
    in_txn: bool = False
    maria_gtid: dict[int, tuple[int, int]] = field(default_factory=dict)
    mysql_gtid: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _pending_gtid: str | None = None
    _gtid_text: str | None = None  # cache of gtid_set (it changes only at commits)
    _gtid_stale: bool = True

    def update(self, ev: DecodedEvent) -> bool:
        """Account for one event; returns True when it is a real event (counts for ``skip``)."""
        h = ev.header
        if h is None:
            return False
        code = h.type_code
        body = ev.body
        if code == _ROTATE and isinstance(body, RotateEvent):
            self.log_file = body.next_log_name
            self.next_pos = body.position
            self.in_txn = False
            self.txn_events = 0
            return False
        if in_no_file(h):
            return False  # heartbeats, the dump's fake ROTATE, artificial events
        log_pos = h.log_pos
        if log_pos == 0:  # MariaDB 11.4 inside a transaction: where the stream put it
            fp = ev.file_pos
            if fp is None:
                return False  # the FDE re-sent at a mid-file start: in no file
            log_pos = fp + h.event_size
        if code in _TXN_START:
            self.in_txn = True
            self.txn_start = log_pos - h.event_size
            self.txn_events = 0
            self._pending_gtid = bodies.gtid(ev)
        elif code == _QUERY and not self.in_txn:
            q = (bodies.statement(ev) or "").strip().upper()
            if q == "BEGIN" or q.startswith("XA START"):
                self.in_txn = True
                self.txn_start = log_pos - h.event_size
                self.txn_events = 0
        self.next_pos = log_pos
        if self.in_txn:
            self.txn_events += 1
            if code in _TXN_END or (code in _QUERIES and self._ends_txn(ev)):
                self.in_txn = False
                self.txn_events = 0
                self._commit_gtid()
        return True

    def _ends_txn(self, ev: DecodedEvent) -> bool:
        assert ev.header is not None
        code = ev.header.type_code
        if code in _TXN_END:
            return True
        if code in _QUERIES:
            q = (bodies.statement(ev) or "").strip().upper()
            return not (q == "BEGIN" or q.startswith("XA START") or q.startswith("XA END"))
        return False

    def _commit_gtid(self) -> None:
        self._gtid_stale = True
        g = self._pending_gtid
        self._pending_gtid = None
        if not g or g == "ANONYMOUS":
            return
        parts = g.split("-")
        if len(parts) == 3:
            d, s, n = parts
            if d.isdigit() and s.isdigit() and n.isdigit():
                self.maria_gtid[int(d)] = (int(s), int(n))
                return
        sid, _, gno = g.rpartition(":")
        if sid and gno.isdigit():
            _add_interval(self.mysql_gtid.setdefault(sid, []), int(gno))

    @property
    def gtid_set(self) -> str | None:
        if self._gtid_stale:
            self._gtid_text = self._format_gtid()
            self._gtid_stale = False
        return self._gtid_text

    def _format_gtid(self) -> str | None:
        maria = self.maria_gtid
        if len(maria) == 1:
            for d, (s, n) in maria.items():
                return f"{d}-{s}-{n}"
        if maria:
            return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(maria.items()))
        if self.mysql_gtid:
            parts = []
            for sid, ivs in sorted(self.mysql_gtid.items()):
                parts.append(sid + "".join(
                    f":{a}" if a == b else f":{a}-{b}" for a, b in ivs))
            return ",".join(parts)
        return None

    def restart_point(self) -> RestartPoint:
        if self.in_txn and self.txn_start is not None:
            return RestartPoint(self.log_file, self.txn_start, self.txn_events, self.gtid_set)
        return RestartPoint(self.log_file, self.next_pos, 0, self.gtid_set)

    def seed_gtid(self, gtid_set: str | None) -> None:
        """Start from a known executed set (the state file's)."""
        if not gtid_set:
            return
        self._gtid_stale = True
        for part in gtid_set.split(","):
            part = part.strip()
            bits = part.split("-")
            if len(bits) == 3 and all(b.isdigit() for b in bits):
                self.maria_gtid[int(bits[0])] = (int(bits[1]), int(bits[2]))
                continue
            sid, *ranges = part.split(":")
            ivs = self.mysql_gtid.setdefault(sid, [])
            for rg in ranges:
                a, _, b = rg.partition("-")
                if a.isdigit():
                    ivs.append((int(a), int(b or a)))
            ivs.sort()
            merged: list[tuple[int, int]] = []
            for a2, b2 in ivs:
                if merged and a2 <= merged[-1][1] + 1:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b2))
                else:
                    merged.append((a2, b2))
            ivs[:] = merged


def _add_interval(ivs: list[tuple[int, int]], n: int) -> None:
    for i, (a, b) in enumerate(ivs):
        if a <= n <= b:
            return
        if n == b + 1:
            ivs[i] = (a, n)
            if i + 1 < len(ivs) and ivs[i + 1][0] == n + 1:
                ivs[i] = (a, ivs[i + 1][1])
                del ivs[i + 1]
            return
        if n == a - 1:
            ivs[i] = (n, b)
            return
        if n < a:
            ivs.insert(i, (n, n))
            return
    ivs.append((n, n))
