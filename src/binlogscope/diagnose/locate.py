"""``locate``: binlog coordinates translated - FILE:POS <-> GTID <-> time - over an archive of
binlog files (with the per-file :mod:`.catalog` to skip files) or a live server (its binlog read
as a replica reads it).

The answers follow the server's own definitions, and the tests hold them equal to MariaDB's
``BINLOG_GTID_POS()`` and ``SHOW BINLOG EVENTS``:

- the **GTID position** at ``FILE:POS`` (``BINLOG_GTID_POS(FILE, POS)``): the file's starting
  state (its GTID_LIST event) updated, per replication domain, with the GTID of every
  transaction that starts before ``POS``; ``None`` when ``POS`` is not an event boundary (the
  server returns NULL) or past the file's end;
- a **GTID**'s place: the transaction's first event (its GTID event: where a replica that wants
  it starts) and the end of its last event (the position after it);
- a **time**: the first event whose header time is at or after it (``mysqlbinlog
  --start-datetime``'s rule), and the start of its transaction.

For MySQL files the state is the PREVIOUS_GTIDS set plus the transactions' GTIDs (a GTID set).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.diagnose import catalog as cat
from binlogscope.diagnose.walk import SourceError, binlog_paths
from binlogscope.drivers.binlog_file import BinlogFileError, read_binlog_file
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.gtid_events import (
    GtidEvent,
    GtidListEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
)
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.types import event_type_name

_MARIADB_GTID = int(E.GTID_EVENT)
_MYSQL_GTIDS = frozenset((int(E.GTID_LOG_EVENT), int(E.GTID_TAGGED_LOG_EVENT)))
_GTID_LIST = int(E.GTID_LIST_EVENT)
_PREVIOUS = int(E.PREVIOUS_GTIDS_LOG_EVENT)
_ALL_GTIDS = frozenset((_MARIADB_GTID, int(E.ANONYMOUS_GTID_LOG_EVENT))) | _MYSQL_GTIDS


class GtidState:
    """The GTID position while a file is read (BINLOG_GTID_POS's rule)."""

    def __init__(self) -> None:
        self.domains: dict[int, str] = {}  # MariaDB: domain -> last GTID
        self.sets: dict[str, list[list[int]]] = {}  # MySQL: uuid[:tag] -> [[first, last], ...]

    def feed(self, ev: DecodedEvent) -> None:
        h = ev.header
        if h is None:
            return
        match ev.body:
            case GtidListEvent(gtids=gtids):
                for g in gtids:
                    self.domains[g.domain_id] = str(g)
            case MariadbGtidEvent(domain_id=d, gtid=g):
                if d not in self.domains:  # a new domain goes in front (as the server's does)
                    self.domains = {d: g, **self.domains}
                else:
                    self.domains[d] = g
            case PreviousGtidsEvent(entries=entries):
                for e in entries:
                    key = f"{e.sid}:{e.tag}" if e.tag else e.sid
                    for iv in e.intervals:
                        self._add(key, iv.start, iv.end - 1)
            case GtidEvent(gtid=g) if h.type_code in _MYSQL_GTIDS:  # not ANONYMOUS
                sid, gno = cat.gtid_key(g)
                if sid is not None:
                    self._add(sid, gno, gno)

    def _add(self, key: str, a: int, b: int) -> None:
        ivs = self.sets.setdefault(key, [])
        ivs.append([a, b])
        ivs.sort()
        merged: list[list[int]] = []
        for iv in ivs:
            if merged and iv[0] <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], iv[1])
            else:
                merged.append(list(iv))
        self.sets[key] = merged

    def text(self) -> str:
        if self.domains:  # the server's order: the GTID_LIST's, new domains in front
            return ",".join(self.domains.values())
        parts = []
        for key in sorted(self.sets):
            ivs = ":".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.sets[key])
            parts.append(f"{key}:{ivs}")
        return ",".join(parts)


@dataclass(slots=True)
class Spot:
    """An event's place."""

    binlog_file: str | None
    offset: int | None
    end: int | None
    event_type: str
    timestamp: int | None
    gtid: str | None  # its transaction's

    @classmethod
    def of(cls, ev: DecodedEvent) -> Spot:
        h = ev.header
        start = ev.file_pos
        end = start + h.event_size if start is not None and h is not None else None
        return cls(ev.binlog_file, start, end, ev.type_name,
                   h.timestamp if h is not None else None, ev.trx_gtid)


@dataclass(slots=True)
class Answer:
    query: str
    kind: str  # "position" | "gtid" | "time"
    found: bool = False
    event: Spot | None = None
    #: position: BINLOG_GTID_POS(file, pos) (None: not an event boundary, or not in the file)
    gtid_position: str | None = None
    boundary: bool = False
    #: gtid/time: the transaction's first event and the end of its last
    trx_start: Spot | None = None
    trx_end: int | None = None
    note: str = ""
    files_read: list[str] = field(default_factory=list)
    files_skipped: list[str] = field(default_factory=list)


def _base(name: str | None) -> str | None:
    if name is None:
        return None
    b = name.replace("\\", "/").rsplit("/", 1)[-1]
    return b[:-3] if b.endswith(".gz") else b


class Archive:
    """Binlog files on disk, with their catalog entries."""

    def __init__(self, sources: list[str], cache: Path | None) -> None:
        self.paths = binlog_paths(sources)
        if not self.paths:
            raise SourceError("no binlog files in " + " ".join(sources))
        self.cache = cache
        self._entries: dict[Path, cat.FileCatalog] = {}

    def events(self, path: Path) -> Iterator[DecodedEvent]:
        """The file's events; its catalog entry is built on the way when it is missing."""
        entry = self._entries.get(path) or cat.load(path, self.cache)
        builder = cat.Builder(cat.new_entry(path)) if entry is None else None
        try:
            for ev in read_binlog_file(path, record=False):
                if builder is not None:
                    builder.feed(ev)
                yield ev
        except BinlogFileError as exc:
            raise SourceError(str(exc)) from None
        if builder is not None:  # read to the end: the entry is complete
            self._entries[path] = builder.c
            cat.save(builder.c, self.cache)
        elif entry is not None:
            self._entries[path] = entry

    def entry(self, path: Path) -> cat.FileCatalog:
        e = self._entries.get(path) or cat.load(path, self.cache)
        if e is None:
            for _ in self.events(path):
                pass
            e = self._entries[path]
        self._entries[path] = e
        return e

    def named(self, name: str) -> Path | None:
        for p in self.paths:
            if _base(str(p)) == _base(name):
                return p
        return None


def at_position(events: Iterable[DecodedEvent], name: str, pos: int, *, end: bool = False,
                query: str = "") -> Answer:
    """The event that starts (``end``: ends) at ``name:pos`` and the GTID position there."""
    a = Answer(query or f"{'end:' if end else ''}{name}:{pos}", "position")
    state = GtidState()
    last_end = None
    inside = False
    #: the answer came before the file's GTID_LIST: the server starts from that list anyway
    #: (it reads the file's GTID_LIST first), so the answer waits for it
    waiting = False
    listed = False
    for ev in events:
        if _base(ev.binlog_file) != _base(name):
            if a.files_read:
                break  # the file is over
            continue
        if not a.files_read:
            a.files_read.append(_base(name) or name)
        h = ev.header
        if waiting:
            if h is not None and h.type_code == _GTID_LIST:
                state.feed(ev)
                a.gtid_position = state.text()
                break
            if h is not None and h.type_code in _ALL_GTIDS:
                break
            continue
        s = Spot.of(ev)
        if s.offset is None or s.end is None:
            state.feed(ev)
            continue
        if s.offset == pos:
            a.boundary = True
            a.gtid_position = state.text()
            if not end:
                a.event, a.found = s, True
                if listed:
                    break
                waiting = True
                if h is not None and h.type_code == _GTID_LIST:
                    state.feed(ev)
                    a.gtid_position = state.text()
                    break
                continue
        elif s.offset < pos < s.end:
            inside = True
            if not end:
                a.event = s
                a.note = f"{pos} is inside {s.event_type} at {s.offset}..{s.end}"
                break
        if end and s.end == pos:
            a.event, a.found = s, True
        state.feed(ev)
        if h is not None and h.type_code == _GTID_LIST:
            listed = True
        last_end = s.end
        if end and a.found and a.boundary:
            if listed:
                break
            waiting = True
    if last_end is not None and pos == last_end and not inside and not waiting:
        a.boundary = True  # the end of the file: where the next event will be written
        a.gtid_position = state.text()
    if not a.files_read:
        a.note = f"{name} is not in the source"
    elif a.event is None and not a.boundary:
        a.note = f"{pos} is beyond the last event of {name} (it ends at {last_end})"
    elif end and a.event is None:
        a.note = f"no event ends at {pos}"
    return a


def at_gtid(events: Iterable[DecodedEvent], gtid: str) -> Answer:
    a = Answer(gtid, "gtid")
    for ev in events:
        h = ev.header
        if a.trx_start is None:
            if h is not None and h.type_code in _ALL_GTIDS and getattr(
                    ev.body, "gtid", None) == gtid:
                a.trx_start = a.event = Spot.of(ev)
                a.found = True
                a.trx_end = a.event.end
            continue
        if ev.trx_gtid != gtid:
            break
        a.trx_end = Spot.of(ev).end
    if not a.found:
        a.note = f"no transaction {gtid} in the source"
    return a


def at_time(events: Iterable[DecodedEvent], t: int) -> Answer:
    a = Answer(str(t), "time")
    trx: Spot | None = None
    for ev in events:
        h = ev.header
        if h is None or ev.file_pos is None:
            continue
        if h.type_code in _ALL_GTIDS:
            trx = Spot.of(ev)
        elif ev.trx_gtid is None:
            trx = None
        if h.timestamp >= t and h.type_code != int(E.FORMAT_DESCRIPTION_EVENT):
            a.event = Spot.of(ev)
            a.trx_start = trx if trx is not None and ev.trx_gtid is not None else a.event
            a.found = True
            break
    if not a.found:
        a.note = f"no event at or after {t} in the source"
    return a


def locate_in_archive(arch: Archive, query: str) -> Answer:
    """One query over the archive, skipping files by their catalog entries."""
    kind, value = parse_query(query)
    if kind == "position":
        name, pos, end = value
        path = arch.named(name)
        if path is None:
            return Answer(query, kind, note=f"{name} is not in the source "
                          f"({', '.join(p.name for p in arch.paths)})")
        return at_position(arch.events(path), name, pos, end=end, query=query)
    # a GTID or a time: the files in order, each skipped where its catalog entry rules it out
    could_hold: Callable[[cat.FileCatalog, Any], bool]
    find: Callable[[Iterable[DecodedEvent], Any], Answer]
    if kind == "gtid":
        could_hold, find = cat.FileCatalog.may_hold, at_gtid
        missing = f"no transaction {value} in the source"
    else:
        could_hold, find = cat.FileCatalog.covers_time, at_time
        missing = f"no event at or after {query}"
    skipped = []
    for path in arch.paths:
        if not could_hold(arch.entry(path), value):
            skipped.append(path.name)
            continue
        a = find(arch.events(path), value)
        if a.found:
            a.query = query
            a.files_skipped = skipped
            a.files_read = [path.name]
            return a
    return Answer(query, kind, note=missing, files_skipped=skipped)


def parse_query(query: str) -> tuple[str, Any]:
    """``[end:]FILE:POS`` | a GTID (``d-s-n`` / ``uuid:n``) | a time (``@EPOCH``, ISO 8601)."""
    import re
    from datetime import UTC, datetime

    q = query.strip()
    if re.fullmatch(r"\d+-\d+-\d+", q) or re.fullmatch(
            r"[0-9a-fA-F-]{36}(?::[A-Za-z_]\w*)?:\d+", q):
        return "gtid", q
    if q.startswith("@") and q[1:].isdigit():
        return "time", int(q[1:])
    m = re.fullmatch(r"(?:(end|start):)?(.+):(\d+)", q)
    if m and not re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ].*", q):
        return "position", (m.group(2), int(m.group(3)), m.group(1) == "end")
    try:
        dt = datetime.fromisoformat(q.replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(f"{query!r}: expected [end:]FILE:POS, a GTID (0-1-42 or "
                          "UUID:N) or a time (@EPOCH or 2026-11-27T22:52:43, UTC unless it "
                          "says)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return "time", int(dt.timestamp())


def answer_json(a: Answer) -> dict[str, Any]:
    def spot(s: Spot | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {"binlog_file": s.binlog_file, "offset": s.offset, "end": s.end,
                "event_type": s.event_type, "timestamp": s.timestamp, "gtid": s.gtid}

    return {"query": a.query, "kind": a.kind, "found": a.found, "event": spot(a.event),
            "gtid_position": a.gtid_position, "boundary": a.boundary,
            "transaction_start": spot(a.trx_start), "transaction_end": a.trx_end,
            "note": a.note or None, "files_read": a.files_read,
            "files_skipped": a.files_skipped}


def answer_lines(a: Answer) -> Iterator[str]:
    def where(s: Spot) -> str:
        return f"{s.binlog_file}:{s.offset}..{s.end} {s.event_type}" + (
            f" (GTID {s.gtid})" if s.gtid else "")

    if a.kind == "position":
        if a.event is None and a.boundary:
            yield f"{a.query}: the end of the file (the next event will start here)"
        if a.event is not None:
            yield f"{a.query}: {where(a.event)}" + ("" if a.found else "  (contains it)")
        if a.boundary:
            yield f"  GTID position here (BINLOG_GTID_POS): {a.gtid_position or '(empty)'}"
        else:
            yield "  not an event boundary: no GTID position (BINLOG_GTID_POS gives NULL)"
    elif a.found and a.trx_start is not None:
        yield f"{a.query}: {where(a.event or a.trx_start)}"
        yield (f"  its transaction: starts at {a.trx_start.binlog_file}:{a.trx_start.offset}"
               + (f", ends at {a.trx_end}" if a.trx_end is not None else ""))
        if a.event is not None and a.event.timestamp is not None:
            import time

            yield "  time: " + time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                             time.gmtime(a.event.timestamp))
    if a.note:
        yield f"  {a.note}"
    if a.files_skipped:
        yield f"  skipped by the catalog: {', '.join(a.files_skipped)}"


def event_type_text(code: int) -> str:
    return event_type_name(code)


__all__ = ["Answer", "Archive", "GtidState", "Spot", "answer_json", "answer_lines",
           "at_gtid", "at_position", "at_time", "locate_in_archive", "parse_query"]


def server_files(url: Any) -> list[str]:
    """``SHOW BINARY LOGS`` of a live server (a control connection, as ``live`` makes one)."""
    import pymysql

    opts = url.options()  # (the password as live takes it: option file, MYSQL_PWD, prompt)
    try:
        conn = pymysql.connect(host=opts.host, port=opts.port, user=opts.user,
                               password=opts.password or "", connect_timeout=10)
    except pymysql.MySQLError as exc:
        raise SourceError(f"{url.describe()}: {exc.args[-1] if exc.args else exc}") from None
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return [str(r[0]) for r in cur.fetchall()]
    except pymysql.MySQLError as exc:
        raise SourceError(f"{url.describe()}: SHOW BINARY LOGS: "
                          f"{exc.args[-1] if exc.args else exc}") from None
    finally:
        conn.close()


def locate_live(url: Any, queries: list[str]) -> list[Answer]:
    """The queries over a live server's binlog, read once as a replica reads it (from its
    first file to its end)."""
    from binlogscope.diagnose.walk import walk_live

    files = server_files(url)
    if not files:
        raise SourceError(f"{url.describe()}: the server has no binary logs (log_bin off?)")
    events = [s.ev for s in walk_live(url, f"{files[0]}:4")]
    out = []
    for q in queries:
        kind, value = parse_query(q)
        if kind == "position":
            name, pos, end = value
            a = at_position(events, name, pos, end=end, query=q)
        elif kind == "gtid":
            a = at_gtid(events, value)
        else:
            a = at_time(events, value)
            a.query = q
        out.append(a)
    return out
