"""Where a replica is in the stream, and where it must restart so nothing is lost or repeated.

Pure: fed decoded events in stream order. A restart point is ``(file, pos, skip)``: dump from
``file:pos`` (always a transaction boundary, because row events need the TABLE_MAP that opens
their transaction) and drop the first ``skip`` real events, which were already delivered. GTIDs
are tracked as MariaDB ``domain-server-seq`` lists (the form ``@slave_connect_state`` takes) or a
MySQL ``uuid:interval`` set.

A replica asks for the restart point after every event (each item in its store carries it), so
the tracker keeps it as a shared :class:`RestartPoint` of the current boundary (:attr:`at`: the
open transaction's start, or the position after the last event outside one), rebuilt only when
that boundary moves (a transaction starts or commits, a ROTATE, an event outside a
transaction), plus the count of the open transaction's events (:attr:`txn_events`, the skip):
``(at, txn_events)`` names the restart point without building an object per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.control_events import RotateEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.header import ARTIFICIAL, is_fake_rotate
from binlogscope.wire.binlog.types import HEARTBEATS, EventType

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
    """Dump from ``log_file:log_pos`` and drop the first ``skip`` real events. Read-only by
    convention: one is shared by every item of a transaction (:attr:`PositionTracker.at`)."""

    log_file: str | None
    log_pos: int | None
    skip: int = 0
    gtid_set: str | None = None

    def skipping(self, skip: int) -> RestartPoint:
        """This boundary with ``skip`` events of its transaction delivered (``self`` for 0)."""
        if not skip:
            return self
        return RestartPoint(self.log_file, self.log_pos, skip, self.gtid_set)


@dataclass(slots=True)
class PositionTracker:
    log_file: str | None = None
    next_pos: int | None = None
    txn_start: int | None = None
    txn_events: int = 0  # events of the open transaction so far (0 outside one)
    in_txn: bool = False
    maria_gtid: dict[int, tuple[int, int]] = field(default_factory=dict)
    mysql_gtid: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _pending_gtid: str | None = None
    _gtid_text: str | None = None  # cache of gtid_set (it changes only at commits)
    _gtid_stale: bool = True
    #: the current boundary (skip 0) as a shared restart point; None: to be rebuilt
    #: (:meth:`boundary`). The restart point is ``at.skipping(txn_events)``
    at: RestartPoint | None = None

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
            self.at = None
            return False
        # in no file (header.in_no_file, inline: once per event on the replica's path):
        # heartbeats, artificial events, the dump's fake ROTATE
        if code in HEARTBEATS or h.flags & ARTIFICIAL or (code == _ROTATE
                                                           and is_fake_rotate(h)):
            return False
        log_pos = h.log_pos
        if log_pos == 0:  # MariaDB 11.4 inside a transaction: where the stream put it
            fp = ev.file_pos
            if fp is None:
                return False  # the FDE re-sent at a mid-file start: in no file
            log_pos = fp + h.event_size
        if code in _TXN_START:
            self._begin(log_pos - h.event_size, bodies.gtid(ev))
        elif code == _QUERY and not self.in_txn:
            q = (bodies.statement(ev) or "").strip().upper()
            if q == "BEGIN" or q.startswith("XA START"):
                self.in_txn = True
                self.txn_start = log_pos - h.event_size
                self.txn_events = 0
                self.at = None
        self.next_pos = log_pos
        if self.in_txn:
            self.txn_events += 1
            if code in _TXN_END or (code in _QUERIES and self._ends_txn(ev)):
                self._end()
        else:  # outside a transaction the boundary is after every event
            self.at = None
        return True

    def written(self, code: int, start: int, log_pos: int, gtid: str | None) -> None:
        """:meth:`update` of a real event that was not decoded (the native kernel wrote its
        ``live --json`` line: ``session/packets.py`` ``stream_run``): of type ``code``,
        from ``start`` to ``log_pos`` in the current file, a GTID event's ``gtid`` - never a
        ROTATE, QUERY, heartbeat or artificial event, never with log_pos 0."""
        if code in _TXN_START:
            self._begin(start, gtid)
        self.next_pos = log_pos
        if self.in_txn:
            self.txn_events += 1
            if code in _TXN_END:
                self._end()
        else:
            self.at = None

    def _begin(self, start: int, gtid: str | None) -> None:
        self.in_txn = True
        self.txn_start = start
        self.txn_events = 0
        self._pending_gtid = gtid
        self.at = None

    def _end(self) -> None:
        self.in_txn = False
        self.txn_events = 0
        self._commit_gtid()
        self.at = None

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

    def boundary(self) -> RestartPoint:
        """The current boundary: the open transaction's start, else after the last event
        (skip 0; shared until it moves)."""
        b = self.at
        if b is None:
            if self.in_txn and self.txn_start is not None:
                b = RestartPoint(self.log_file, self.txn_start, 0, self.gtid_set)
            else:
                b = RestartPoint(self.log_file, self.next_pos, 0, self.gtid_set)
            self.at = b
        return b

    def restart_point(self) -> RestartPoint:
        """Where to restart after the events so far (``boundary()`` with the open
        transaction's events to skip)."""
        return self.boundary().skipping(self.txn_events if self.in_txn else 0)

    def seed_gtid(self, gtid_set: str | None) -> None:
        """Start from a known executed set (the state file's)."""
        if not gtid_set:
            return
        self._gtid_stale = True
        self.at = None
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
