"""``explain``: from a recognised error line (:class:`Clue`) to the event it points at, with its
transaction, its TABLE_MAP, the FORMAT_DESCRIPTION and checksum setting in force, and what in
it is unusual.

One pass over the source (:mod:`.walk`), keeping only the context an answer needs: the last
FORMAT_DESCRIPTION, the TABLE_MAPs since it, the events of the open transaction. Once the
event is found, the walk goes on to the end of its transaction and stops. The event is then
decoded once more with a tree (the same decoder, ``record=True``) for the annotated dump.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from binlogscope.diagnose.patterns import END, START, Clue
from binlogscope.diagnose.walk import Seen
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.gtid_events import GtidListEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ChecksumAlg, EventFlag, EventType, event_type_name

E = EventType
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_ROTATE = int(E.ROTATE_EVENT)
_TABLE_MAP = int(E.TABLE_MAP_EVENT)
_MARIADB_GTID = int(E.GTID_EVENT)
_GTID_LIST = int(E.GTID_LIST_EVENT)
_GTIDS = frozenset(int(t) for t in (E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT,
                                    E.GTID_TAGGED_LOG_EVENT, E.GTID_EVENT))
_COMPRESSED = frozenset(int(t) for t in (
    E.TRANSACTION_PAYLOAD_EVENT, E.QUERY_COMPRESSED_EVENT, E.WRITE_ROWS_COMPRESSED_EVENT_V1,
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1, E.DELETE_ROWS_COMPRESSED_EVENT_V1,
    E.WRITE_ROWS_COMPRESSED_EVENT, E.UPDATE_ROWS_COMPRESSED_EVENT,
    E.DELETE_ROWS_COMPRESSED_EVENT))
_KNOWN_TYPES = frozenset(int(t) for t in E)
_KNOWN_FLAGS = sum(int(f) for f in EventFlag)
#: the largest payload of one protocol packet: a bigger event spans several packets
PACKET_MAX = 0xFFFFFF
#: events shown after the found one when its transaction does not end sooner
_MAX_AFTER = 64


@dataclass(slots=True)
class Step:
    """One event in the answer's listing."""

    offset: int | None
    end: int | None
    type_name: str
    line: str
    gtid: str | None = None


@dataclass(slots=True)
class Finding:
    """The answer: the event (if found) and what surrounds it."""

    clue: Clue
    source: str  # what was searched
    looked_for: str  # in words
    found: DecodedEvent | None = None
    origin: str = ""  # the found event's file path, flow and frame, or server
    agrees: str | None = None  # what the line says of the event, compared with the event
    transaction: list[Step] = field(default_factory=list)
    table_map: DecodedEvent | None = None
    fde: DecodedEvent | None = None
    fde_origin: str = ""
    checksum: str = ""
    unusual: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)  # when no event is the answer (or besides)
    tree: Any = None  # the event's annotated Node
    near: list[Step] = field(default_factory=list)  # boundaries around a position not on one
    #: not found, but the source answers the line (not a boundary, past the end, purged...)
    answered: bool = False


def _base(name: str | None) -> str | None:
    if name is None:
        return None
    b = name.replace("\\", "/").rsplit("/", 1)[-1]
    return b[:-3] if b.endswith(".gz") else b


def _bounds(ev: DecodedEvent) -> tuple[int | None, int | None]:
    """(start, end) of the event in its binlog file, where known."""
    h = ev.header
    if ev.file_pos is not None:
        size = h.event_size if h is not None else ev.size
        return ev.file_pos, ev.file_pos + size
    if h is not None and h.log_pos:
        return h.log_pos - h.event_size, h.log_pos
    return None, None


def step_of(ev: DecodedEvent) -> Step:
    from binlogscope.render.text import event_line

    start, end = _bounds(ev)
    return Step(start, end, ev.type_name, event_line(ev), ev.trx_gtid)


_ROOTS = ("write", "update", "delete", "tablemap", "table_map", "query", "xid", "gtid",
          "rotate", "formatdescription", "format_desc", "annotate", "heartbeat", "partial",
          "payload", "previous", "intvar", "rand", "uservar", "incident", "stop", "checkpoint")


def _root(name: str) -> str:
    n = name.lower().replace("_", "")
    for r in _ROOTS:
        if r.replace("_", "") in n:
            return r.replace("_", "")
    return n


def type_agreement(clue_type: str | None, ev: DecodedEvent) -> str | None:
    """What the line says the event is, beside what it is."""
    if not clue_type or ev.header is None:
        return None
    code = ev.header.type_code
    if clue_type.isdigit():
        same = int(clue_type) == code
    else:
        same = _root(clue_type) == _root(event_type_name(code))
    verdict = "agrees" if same else "DOES NOT agree: another event than the line's"
    return f"the line says {clue_type}; the event there is {event_type_name(code)} ({verdict})"


def unusual(ev: DecodedEvent, ctx_fde: DecodedEvent | None, table_map: DecodedEvent | None,
            *, rows_without_map: bool = False) -> list[str]:
    """What in the event is out of the ordinary, one sentence each."""
    out: list[str] = []
    h = ev.header
    if h is None:
        return [f"no complete header: {ev.error or 'truncated'}"]
    code = h.type_code
    if code not in _KNOWN_TYPES:
        out.append(f"unknown event type {code}: no server binlogscope knows writes it")
    if h.flags & ~_KNOWN_FLAGS & 0xFFFF:
        out.append(f"unknown header flags 0x{h.flags & ~_KNOWN_FLAGS & 0xFFFF:04x}")
    if h.flags & EventFlag.LOG_EVENT_IGNORABLE_F:
        out.append("LOG_EVENT_IGNORABLE_F: a replica that does not know the type skips it")
    if h.flags & EventFlag.LOG_EVENT_ARTIFICIAL_F:
        out.append("LOG_EVENT_ARTIFICIAL_F: made up by the dump thread, in no file")
    if ev.checksum_ok is False:
        out.append(f"checksum mismatch: the stored CRC32 is 0x{ev.checksum_stored or 0:08x}, "
                   f"its bytes give 0x{ev.checksum_computed or 0:08x}")
    if ev.error and "truncat" in ev.error.lower():
        out.append(f"truncated: {ev.error}")
    elif ev.error:
        out.append(f"could not be decoded: {ev.error}")
    if h.event_size > PACKET_MAX:
        out.append(f"an event over 16 MiB ({h.event_size:,} bytes): sent in several protocol "
                   "packets, over a client's max_allowed_packet unless it is raised")
    if code in _COMPRESSED:
        out.append(f"a compressed payload ({event_type_name(code)}): a client must "
                   "decompress it to read the events inside")
    if h.log_pos == 0 and code not in (_ROTATE, _FDE):
        out.append("log_pos 0: an event in no file (artificial), or written by a server that "
                   "does not fill log_pos")
    if h.timestamp == 0 and code not in (_ROTATE, _FDE):
        out.append("timestamp 0")
    if rows_without_map:
        out.append("unknown context: its TABLE_MAP is not in this source (it came before "
                   "the source begins - an earlier file, connection or capture start)")
    if table_map is not None:
        tm_body = table_map.body
        cols = tm_body.columns if isinstance(tm_body, TableMapEvent) else []
        if cols and all(c.name is None for c in cols):
            out.append("metadata missing: the TABLE_MAP names no columns "
                       "(binlog_row_metadata=MINIMAL): clients see @1, @2, ...")
    if ctx_fde is None and code != _FDE:
        out.append("no FORMAT_DESCRIPTION before it in this source: checksums and "
                   "post-header lengths are guessed")
    return out


def checksum_text(fde: DecodedEvent | None) -> str:
    body = fde.body if fde is not None else None
    alg = body.checksum_alg if isinstance(body, FormatDescriptionEvent) else None
    if body is None:
        return "unknown (no FORMAT_DESCRIPTION seen)"
    names = {int(ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF): "NONE",
             int(ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32): "CRC32"}
    if alg is None or alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF:
        return "NONE (the server predates binlog checksums)"
    return names.get(int(alg), f"algorithm {alg}")


class _Walker:
    """The context kept while walking a source."""

    def __init__(self) -> None:
        self.fde: Seen | None = None
        self.maps: dict[int, Seen] = {}
        self.trx: list[Seen] = []
        self.files: list[str] = []
        self.last: dict[str, tuple[int, int]] = {}  # file -> (events, last end)
        #: a relay log (read as a file): the source's binlog its events come from (its
        #: first ROTATE, log_pos 0, names it); their log_pos are that file's positions
        self.relay_of: str | None = None
        #: MariaDB GTIDs per domain: the first and last transaction, the first GTID_LIST
        self.first_gtid: dict[int, tuple[int, int, int]] = {}
        self.last_gtid: dict[int, tuple[int, int, int]] = {}
        self.gtid_list: dict[int, tuple[int, int, int]] = {}

    def feed(self, s: Seen) -> None:
        ev = s.ev
        h = ev.header
        if s.fresh:
            self.fde = None
            self.maps.clear()
            self.trx = []
            self.relay_of = None
        f = _base(ev.binlog_file)
        if f is not None:
            if f not in self.last:
                self.files.append(f)
            _, end = _bounds(ev)
            n, e = self.last.get(f, (0, 0))
            self.last[f] = (n + 1, max(e, end or 0))
        if h is None:
            return
        code = h.type_code
        if code == _FDE:
            self.fde = s
            self.maps.clear()
            self.trx = []
        elif code == _ROTATE and h.log_pos == 0 and ev.file_pos is not None:
            rotate = bodies.rotate(ev)
            self.relay_of = rotate.next_log_name if rotate is not None else None
        elif code == _TABLE_MAP:
            tid = bodies.table_id(ev)
            if tid is not None:
                self.maps[tid] = s
        elif code == _MARIADB_GTID:
            g = _gtid_parts(bodies.gtid(ev) or "")
            if g is not None:
                self.first_gtid.setdefault(g[0], g)
                self.last_gtid[g[0]] = g
        elif code == _GTID_LIST:
            body = ev.body
            for item in body.gtids if isinstance(body, GtidListEvent) else []:
                g = _gtid_parts(str(item))
                if g is not None:
                    self.gtid_list.setdefault(g[0], g)
        if code in _GTIDS or _begins(ev):
            self.trx = [s]
        elif self.trx_open():
            self.trx.append(s)
        else:
            self.trx = []  # outside a transaction

    def trx_open(self) -> bool:
        return bool(self.trx) and not _ends(self.trx[-1].ev)


def _begins(ev: DecodedEvent) -> bool:
    h = ev.header
    if h is None or h.type_code not in (int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)):
        return False
    from binlogscope.wire.binlog.coords import statement_kind

    return statement_kind(bodies.statement(ev)) == "BEGIN"


def _ends(ev: DecodedEvent) -> bool:
    h = ev.header
    if h is None:
        return True
    code = h.type_code
    if code in (int(E.XID_EVENT), int(E.XA_PREPARE_LOG_EVENT), _ROTATE, _FDE):
        return True
    if code in (int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)):
        from binlogscope.wire.binlog.coords import statement_kind

        return statement_kind(bodies.statement(ev)) != "BEGIN"
    return False


def _matches(clue: Clue, ev: DecodedEvent, relay_of: str | None = None) -> bool:
    h = ev.header
    if relay_of is not None and h is not None and h.log_pos:
        # a relay log: its events keep their source's log_pos, in the source's file
        if clue.binlog_file is not None and _base(clue.binlog_file) not in (
                _base(relay_of), _base(ev.binlog_file)):
            return False
        if clue.position_kind == END:
            return h.log_pos == clue.position
        return h.log_pos - h.event_size == clue.position
    if clue.binlog_file is not None and ev.binlog_file is not None and (
            _base(clue.binlog_file) != _base(ev.binlog_file)):
        return False
    start, end = _bounds(ev)
    if clue.position_kind == END:
        h = ev.header
        return end == clue.position or (ev.file_pos is None and h is not None
                                        and h.log_pos == clue.position)
    return start == clue.position


def _gtid_parts(g: str) -> tuple[int, int, int] | None:
    p = g.split("-")
    if len(p) != 3 or not all(x.isdigit() for x in p):
        return None
    return int(p[0]), int(p[1]), int(p[2])


def _gtid_answer(f: Finding, gtid: str, w: _Walker) -> None:
    """Where ``gtid`` (MariaDB d-s-n) stands against the GTIDs the source holds."""
    want = _gtid_parts(gtid.split(",")[0].strip())
    if want is None:
        f.answer.append(f"{gtid} is not in {f.source}")
        return
    d = want[0]
    first = w.first_gtid.get(d)
    last = w.last_gtid.get(d)
    listed = w.gtid_list.get(d)
    if first is None and listed is None:
        f.answer.append(f"{f.source} holds no transaction of GTID domain {d}")
    elif last is not None and want[2] > last[2]:
        f.answer.append(f"{gtid} is AFTER the last transaction of domain {d} in {f.source} "
                        f"({'-'.join(map(str, last))}): the replica is ahead of this source "
                        "(its GTID comes from another server, or this binlog lost commits)")
    elif first is not None and want[2] < first[2]:
        before = f" (the oldest file's GTID_LIST starts at {'-'.join(map(str, listed))})" \
            if listed else ""
        f.answer.append(f"{gtid} is BEFORE the first transaction of domain {d} in {f.source} "
                        f"({'-'.join(map(str, first))}){before}: the files that held it are "
                        "purged")
    else:
        f.answer.append(f"{gtid}: no such transaction in {f.source} (seq_no inside the range "
                        "of the domain: another server_id, or a gap in the history)")
    f.answered = True


def _in_file(clue: Clue, ev: DecodedEvent) -> bool:
    return clue.binlog_file is None or ev.binlog_file is None or (
        _base(clue.binlog_file) == _base(ev.binlog_file))


def explain(clue: Clue, seen: Iterable[Seen], source: str) -> Finding:
    """Find the event ``clue`` points at in ``seen`` and annotate it."""
    pos = clue.position
    if clue.position_kind == END:
        looked = (f"the event that ENDS at {clue.binlog_file or 'any file'}:{pos} (its "
                  "log_pos / end_log_pos: where a replica resumes after it)")
    elif clue.position_kind == START:
        looked = (f"the event that STARTS at {clue.binlog_file or 'any file'}:{pos} "
                  "(an event boundary)")
    elif clue.gtid:
        looked = f"the transaction of GTID {clue.gtid}"
    else:
        looked = "no position in the line: the source's coordinates are summed up"
    f = Finding(clue, source, looked)
    w = _Walker()
    found: Seen | None = None
    after = 0
    before_near: Seen | None = None
    covering: Seen | None = None
    map_for_found: Seen | None = None
    rows_without_map = False
    for s in seen:
        w.feed(s)
        ev = s.ev
        if found is None:
            if pos is None and not (clue.gtid and ev.trx_gtid == clue.gtid and ev.header
                                    is not None and ev.header.type_code in _GTIDS):
                continue
            if pos is None or _matches(clue, ev, w.relay_of):
                found = s
                f.fde = w.fde.ev if w.fde else None
                f.fde_origin = w.fde.origin if w.fde else ""
                tid = bodies.table_id(ev)
                if ev.header is not None and ev.header.type_code != _TABLE_MAP and (
                        tid is not None):
                    map_for_found = w.maps.get(tid)
                    rows_without_map = map_for_found is None
                f.tree = _tree(ev, w)
                if not w.trx_open():
                    break
                continue
            if _in_file(clue, ev):
                start, end = _bounds(ev)
                if start is not None and end is not None:
                    if start < pos < end:
                        covering = s
                    if end <= pos:
                        before_near = s
        else:
            after += 1
            if not w.trx_open() or after >= _MAX_AFTER or s.fresh:
                break
    if found is None:
        _not_found(f, clue, w, before_near, covering)
        return f
    ev = found.ev
    f.found = ev
    f.origin = found.origin
    f.agrees = type_agreement(clue.event_type, ev)
    f.transaction = [step_of(x.ev) for x in w.trx] if any(x is found for x in w.trx) \
        else [step_of(ev)]
    f.table_map = map_for_found.ev if map_for_found is not None else (
        ev if ev.header is not None and ev.header.type_code == _TABLE_MAP else None)
    f.checksum = checksum_text(f.fde)
    f.unusual = unusual(ev, f.fde, f.table_map, rows_without_map=rows_without_map)
    if w.relay_of is not None and ev.header is not None:
        f.answer.append(f"a relay log of {w.relay_of}: its events keep their source's "
                        f"positions (this one ends at {w.relay_of}:{ev.header.log_pos}); the "
                        "offsets shown are the relay log's")
    elif clue.position_kind == START and ev.header is not None:
        _, end = _bounds(ev)
        f.answer.append(f"the position is the start of this event; it ends at {end}")
    return f


def _tree(ev: DecodedEvent, w: _Walker) -> Any:
    """The event decoded once more, with its tree, in the context it was read in."""
    if ev.raw is None:
        return None
    ctx = DecodeContext()
    if w.fde is not None and w.fde.ev.raw is not None and w.fde.ev is not ev:
        decode_event(w.fde.ev.raw, ctx, base=w.fde.ev.file_pos or 0, record=False)
    for m in w.maps.values():
        if m.ev.raw is not None and m.ev is not ev:
            decode_event(m.ev.raw, ctx, record=False)
    start = ev.file_pos if ev.file_pos is not None else ev.offset
    return decode_event(ev.raw, ctx, base=start, record=True).node


def _not_found(f: Finding, clue: Clue, w: _Walker, before: Seen | None,
               covering: Seen | None) -> None:
    name = _base(clue.binlog_file)
    if clue.position is None:
        span = ", ".join(f"{n} ({w.last[n][0]} events, ends at {w.last[n][1]})"
                         for n in w.files) or "no events"
        f.answer.append(f"{f.source} holds: {span}")
        if clue.gtid:
            _gtid_answer(f, clue.gtid, w)
        else:
            f.answered = True
        return
    if name is not None and w.files and name not in w.last:
        f.answer.append(f"{name} is not in {f.source} (it holds {', '.join(w.files)}): the "
                        "file was purged, or the line comes from another server")
        f.answered = True
        return
    if covering is not None:
        start, end = _bounds(covering.ev)
        f.answer.append(f"{clue.position} is not an event boundary: it falls inside "
                        f"{covering.ev.type_name} at {start}..{end} ({covering.origin})")
        f.near = [step_of(covering.ev)]
        if before is not None:
            f.near.insert(0, step_of(before.ev))
        f.unusual = unusual(covering.ev, w.fde.ev if w.fde else None, None)
        f.answered = True
        return
    last = w.last.get(name) if name is not None else None
    if last is not None and clue.position >= last[1]:
        f.answer.append(f"{clue.position} is at or beyond the end of {name} in {f.source} "
                        f"(its last event ends at {last[1]}): nothing starts there yet")
        if before is not None:
            f.near = [step_of(before.ev)]
        f.answered = True
        return
    f.answer.append(f"no event {'ends' if clue.position_kind == END else 'starts'} at "
                    f"{clue.position} in {f.source}")
    if before is not None:
        f.near = [step_of(before.ev)]


__all__ = ["Finding", "Step", "checksum_text", "explain", "step_of", "type_agreement",
           "unusual"]
