"""MySQL GTID sets: the set arithmetic the dump's auto-positioning and the server's
``@@gtid_executed``/``@@gtid_purged`` answers share, and the sets a served stream holds.

A set is ``tsid -> sorted, merged half-open intervals [start, end)``; a tsid is the UUID, or
``uuid:tag`` for MySQL 8.3+ tagged GTIDs (see :func:`tsid`). It is written as
``Gtid_set::to_string`` writes it by default (``uuid:1-5:7``, SIDs in UUID order separated by
",\\n"; a UUID's tagged intervals follow its untagged ones as ``:tag:1-3``, tags in order:
``uuid:1-13:mytag:1-2``, as the 9.6 fixture's PREVIOUS_GTIDS and ``mysqlbinlog`` print it).
"""

from __future__ import annotations

from binlogscope.wire.binlog.gtid_events import GtidEvent, PreviousGtidsEvent
from mock_master.history.sources import EventStream, decode_stored

PREVIOUS_GTIDS = 35
#: sid -> sorted, merged half-open intervals [start, end)
GtidSet = dict[str, list[tuple[int, int]]]
Triples = list[tuple[str, int, int]]


def tsid(sid: str, tag: str = "") -> str:
    """The key of a (uuid, tag) pair in a set: the UUID, or ``uuid:tag`` (lower case)."""
    return f"{sid}:{tag}".lower() if tag else sid.lower()


# ------------------------------------------------------------------------------- set arithmetic
def gtid_set(triples: Triples) -> GtidSet:
    out: GtidSet = {}
    for sid, a, b in triples:
        if b > a:
            out.setdefault(sid.lower(), []).append((a, b))
    for sid, ivs in out.items():
        ivs.sort()
        merged: list[tuple[int, int]] = []
        for a, b in ivs:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        out[sid] = merged
    return out


def subtract(a: GtidSet, b: GtidSet) -> GtidSet:
    """The GTIDs of ``a`` that ``b`` does not have."""
    out: Triples = []
    for sid, ivs in a.items():
        for start, end in ivs:
            cur = start
            for bs, be in b.get(sid, []):
                if be <= cur or bs >= end:
                    continue
                if bs > cur:
                    out.append((sid, cur, bs))
                cur = max(cur, be)
            if cur < end:
                out.append((sid, cur, end))
    return gtid_set(out)


def to_text(s: GtidSet) -> str:
    """``Gtid_set::to_string`` with its default separators."""
    parts: list[str] = []
    last_uuid = None
    for key in sorted(s):
        uuid, _, tag = key.partition(":")
        ivs = ":".join(str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in s[key])
        text = f"{tag}:{ivs}" if tag else ivs
        if uuid == last_uuid:
            parts[-1] += f":{text}"
        else:
            parts.append(f"{uuid}:{text}")
        last_uuid = uuid
    return ",\n".join(parts)


# ------------------------------------------------------------------------------- the stream
def previous_gtids(stream: EventStream, fi: int) -> Triples | None:
    """The PREVIOUS_GTIDS of file ``fi`` (None: the file has none before its first other
    event, as read_gtids_from_binlog reads it)."""
    f = stream.files[fi]
    for i in range(min(4, f.count)):
        ev = f.event(i)
        if ev[4] == PREVIOUS_GTIDS:
            body = decode_stored(ev, f.checksum).body
            if isinstance(body, PreviousGtidsEvent):
                return [(tsid(e.sid, e.tag), iv.start, iv.end) for e in body.entries
                        for iv in e.intervals]
            return None
    return None


def executed(stream: EventStream) -> GtidSet:
    """gtid_executed: the oldest file's PREVIOUS_GTIDS and every GTID in the served files."""
    triples: Triples = list(previous_gtids(stream, 0) or []) if stream.files else []
    for g in stream.gtids:
        sid, sep, gno = g.gtid.rpartition(":")
        if sep and gno.isdigit():
            triples.append((sid, int(gno), int(gno) + 1))
    return gtid_set(triples)


def purged(stream: EventStream) -> GtidSet:
    """gtid_purged (lost_gtids): the oldest served file's PREVIOUS_GTIDS."""
    return gtid_set(previous_gtids(stream, 0) or []) if stream.files else {}




def in_gtid_set(ev: bytes, checksum: bool, skip: Triples) -> bool:
    """Is the transaction this MySQL GTID (or GTID_TAGGED) event starts in the client's GTID
    set?"""
    g = decode_stored(ev, checksum).body
    if not isinstance(g, GtidEvent):
        return False
    key = tsid(g.sid, g.tag)
    return any(s == key and a <= g.gno < b for s, a, b in skip)
