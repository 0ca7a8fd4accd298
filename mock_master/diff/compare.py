"""The differential comparison: what a real server and the mock master said to the same client.

Input: the conversations a :class:`~mock_master.diff.capture.Relay` recorded for each side.
Each is decoded with binlogscope's own session (:class:`binlogscope.session.Session`, the
observer role, one annotated tree per packet), and the server-to-client packets are compared
one by one, field by field (the leaves of the trees: names and decoded values, never byte
offsets). The client's packets are compared too; a client that sends something different is
reported as a note (it usually explains the server's difference).

Allowed differences (:data:`ALLOWED`, documented in docs/differential.md) are counted, not
reported: what two servers can never share (thread ids, scrambles, clocks, identity strings).
Heartbeats are time-driven: they are taken out of the packet sequence and compared among
themselves (the n-th real one with the n-th mock one; a side may send more of them).

:func:`compare` gives a :class:`DiffReport`: the differing packets with both annotated trees,
and a summary. ``report.ok`` is False when something differs.
"""

from __future__ import annotations

import difflib
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from binlogscope.render.text import render_node
from binlogscope.session import Role, Session
from binlogscope.session.events import PacketDecoded, Peer, Phase
from binlogscope.wire.binlog.header import is_artificial
from binlogscope.wire.binlog.types import is_heartbeat
from binlogscope.wire.fields import is_sensitive, redact, redact_bytes
from binlogscope.wire.node import Node, format_value
from mock_master.diff.capture import CLIENT, Conversation

_OPAQUE = (Phase.ENCRYPTED,)


# ------------------------------------------------------------------------------------ decoding
def decode(conv: Conversation) -> list[PacketDecoded]:
    """Every packet of a conversation (both directions, arrival order), with trees."""
    return _decode(conv)[0]


def _decode(conv: Conversation) -> tuple[list[PacketDecoded], Phase, bytes]:
    """The packets, the phase the conversation ended in (ENCRYPTED: the rest could not be
    decoded), and the server's bytes the packets' offsets point into. A compressed protocol
    conversation is inflated and decoded on (offsets then count inflated bytes)."""
    s = Session(Role.OBSERVER)
    out: list[PacketDecoded] = []
    fed = {Peer.CLIENT: bytearray(), Peer.SERVER: bytearray()}
    inner: Session | None = None
    zbuf = {Peer.CLIENT: bytearray(), Peer.SERVER: bytearray()}
    server_source = bytearray()
    for who, data, _ in conv.chunks:
        peer = Peer.CLIENT if who == CLIENT else Peer.SERVER
        if inner is None:
            fed[peer] += data
            s.receive_data(data, peer)
            out.extend(ev for ev in s.events() if isinstance(ev, PacketDecoded))
            if s.phase is not Phase.COMPRESSED:
                continue
            plain = {p: len(fed[p]) - s.opaque_bytes[p] for p in fed}
            server_source += fed[Peer.SERVER][: plain[Peer.SERVER]]
            inner = Session(Role.OBSERVER, start_phase=Phase.COMMAND,
                            capabilities=s.capabilities, client_offset=plain[Peer.CLIENT],
                            server_offset=plain[Peer.SERVER])
            for p in fed:
                zbuf[p] += fed[p][plain[p]:]
                _inflate(zbuf[p], inner, p, server_source)
        else:
            zbuf[peer] += data
            _inflate(zbuf[peer], inner, peer, server_source)
        out.extend(ev for ev in inner.events() if isinstance(ev, PacketDecoded))
    if inner is None:
        return out, s.phase, bytes(fed[Peer.SERVER])
    return out, inner.phase, bytes(server_source)


def _inflate(buf: bytearray, inner: Session, peer: Peer, server_source: bytearray) -> None:
    """Feed the complete compressed-protocol frames at the head of ``buf`` to ``inner``:
    3-byte compressed length, sequence id, 3-byte length before compression (0: stored)."""
    while len(buf) >= 7:
        clen = int.from_bytes(buf[0:3], "little")
        ulen = int.from_bytes(buf[4:7], "little")
        if len(buf) < 7 + clen:
            return
        body = bytes(buf[7 : 7 + clen])
        del buf[: 7 + clen]
        try:
            plain = zlib.decompress(body) if ulen else body
        except zlib.error:
            plain = body  # damaged: decoded as it is (the packets will show it)
        if peer is Peer.SERVER:
            server_source += plain
        inner.receive_data(plain, peer)


@dataclass(frozen=True, slots=True)
class Leaf:
    """One compared field: its dotted path under the packet, the value, the node."""

    path: str
    node: Node

    @property
    def key(self) -> object:
        v = self.node.value
        if isinstance(v, bytes | bytearray | memoryview):
            return bytes(v)
        return (self.node.display, repr(v))

    @property
    def text(self) -> str:
        if is_sensitive(self.node):
            return f"<secret, {self.node.length} bytes>"
        return self.node.text if self.node.display else format_value(self.node.value)


def leaves(node: Node) -> list[Leaf]:
    """The fields compared (a bit set is one field; the packet length is implied)."""
    out: list[Leaf] = []

    def walk(n: Node, prefix: str) -> None:
        for c in n.children:
            path = f"{prefix}{c.name}"
            if c.children and not all(g.wire == "bit" for g in c.children):
                walk(c, path + ".")
            elif path != "packet_header.payload_length":
                out.append(Leaf(path, c))

    walk(node, "")
    return out


# -------------------------------------------------------------------------- allowed differences
@dataclass(frozen=True, slots=True)
class FieldContext:
    """What a rule sees of one differing field."""

    path: str
    real: Leaf
    mock: Leaf
    packet: PacketDecoded  # the real side's packet
    request: PacketDecoded | None  # the client packet the server answers
    column: str | None  # text_row cell: its column name (SHOW VARIABLES: the variable name)


@dataclass(frozen=True, slots=True)
class Allowance:
    """A documented difference two honest servers may show."""

    name: str
    why: str
    test: Callable[[FieldContext], bool]


_IDENTITY = re.compile(r"(?i)^(@@)?(global\.|session\.)?(server_uuid|hostname|version|"
                       r"version\(\)|version_comment|version_compile_\w+|"
                       r"version_source_revision|pid_file|report_host)$")
_CLOCK = re.compile(r"(?i)^(unix_timestamp\(\)|now\(\)|current_timestamp(\(\))?|sysdate\(\)|"
                    r"@@timestamp|timestamp|utc_timestamp\(\))$")
_THREAD = re.compile(r"(?i)^(connection_id\(\)|@@pseudo_thread_id|pseudo_thread_id|"
                     r"thread_id)$")


def _event_type(p: PacketDecoded) -> int | None:
    ev = p.binlog_event
    return ev.header.type_code if ev is not None and ev.header is not None else None


def _artificial(p: PacketDecoded) -> bool:
    ev = p.binlog_event
    if ev is None or ev.header is None:
        return False
    return is_artificial(ev.header) or is_heartbeat(ev.header.type_code)


def _request_text(c: FieldContext) -> str:
    r = c.request
    if r is None or r.kind != "com_query":
        return ""
    return str(getattr(r.value, "query", "") or "")


#: the statistics columns of information_schema.TABLES and SHOW TABLE STATUS (data the mock
#: master does not have: row counts, lengths, the next AUTO_INCREMENT, times)
_TABLE_STATS = frozenset(s.lower() for s in (
    "TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH", "MAX_DATA_LENGTH", "INDEX_LENGTH",
    "DATA_FREE", "MAX_INDEX_LENGTH", "AUTO_INCREMENT", "CREATE_TIME", "UPDATE_TIME",
    "CHECK_TIME", "Rows", "Avg_row_length", "Data_length", "Max_data_length", "Index_length",
    "Data_free", "Max_index_length", "Auto_increment", "Create_time", "Update_time",
    "Check_time"))
_ABOUT_TABLES = re.compile(r"(?is)\binformation_schema\s*\.\s*`?tables\b|"
                           r"^\s*show\s+table\s+status\b")
_ABOUT_INDEXES = re.compile(r"(?is)\binformation_schema\s*\.\s*`?statistics\b|"
                            r"^\s*show\s+(index|indexes|keys)\b")


def _table_statistics(c: FieldContext) -> bool:
    if not c.path.startswith("text_row.") or c.column is None:
        return False
    col, query = c.column.lower(), _request_text(c)
    return ((col in _TABLE_STATS and bool(_ABOUT_TABLES.search(query)))
            or (col == "cardinality" and bool(_ABOUT_INDEXES.search(query))))


ALLOWED: tuple[Allowance, ...] = (
    Allowance("scramble", "auth scrambles and auth data are random per connection",
              lambda c: is_sensitive(c.real.node) or is_sensitive(c.mock.node)),
    Allowance("thread_id", "connection (thread) ids are the server's counter",
              lambda c: c.path == "handshake_v10.thread_id"
              or (c.column is not None and bool(_THREAD.match(c.column)))),
    Allowance("server_version", "the version string (the mock serves its own, or the files')",
              lambda c: c.path == "handshake_v10.server_version"
              or (c.column is not None and bool(_IDENTITY.match(c.column))
                  and "version" in c.column.lower())),
    Allowance("server_identity", "server_uuid, hostname, pid file: a different machine",
              lambda c: c.column is not None and bool(_IDENTITY.match(c.column))),
    Allowance("clock", "wall-clock values: timestamps of artificial events (fake ROTATE, "
              "heartbeats, fake GTID_LIST) and clock queries",
              lambda c: (c.path == "binlog_event.event.header.timestamp"
                         and _artificial(c.packet))
              or (c.column is not None and bool(_CLOCK.match(c.column)))),
    Allowance("statistics", "server statistics and status counters (COM_STATISTICS, "
              "SHOW STATUS values)",
              lambda c: (c.request is not None and c.request.kind == "command"
                         and c.request.payload[:1] == b"\x09")
              or (c.path.startswith("text_row.") and c.column is not None
                  and bool(re.match(r"(?is)^\s*show\s+(global\s+|session\s+)?status",
                                    _request_text(c))))),
    Allowance("table_statistics", "table statistics the mock master cannot know (it has no "
              "table data): TABLES/SHOW TABLE STATUS rows, lengths, AUTO_INCREMENT and times, "
              "STATISTICS/SHOW INDEX Cardinality", _table_statistics),
)
#: COM_STMT_PREPARE_OK's statement id (MariaDB numbers statements server-wide, the mock per
#: connection): the reply's bytes 1-4, compared apart (the packet is not decoded by field)
STATEMENT_ID = "statement_id"
COM_STMT_PREPARE = 0x16

#: a checksum differing only because an allowed field in the same event differs
CHECKSUM_PATH = "binlog_event.event.checksum"


# ------------------------------------------------------------------------------ the comparison
@dataclass(frozen=True, slots=True)
class FieldDiff:
    path: str
    real: str
    mock: str


@dataclass
class PacketDiff:
    """Server packet ``index`` (0-based, among the server's packets of connection
    ``conversation``; heartbeats are counted apart) differs."""

    conversation: int
    index: int
    real: PacketDecoded | None
    mock: PacketDecoded | None
    fields: list[FieldDiff]
    real_source: bytes = b""
    mock_source: bytes = b""
    heartbeat: bool = False
    mock_index: int | None = None  # the mock's packet number, when not ``index``
    request: str = ""  # the client packet the (real) server packet answers

    def title(self) -> str:
        what = "heartbeat" if self.heartbeat else "server packet"
        other = ("" if self.mock_index is None or self.mock_index == self.index
                 else f" (mock: {self.mock_index})")
        answering = f", answering {self.request}" if self.request else ""
        return f"connection {self.conversation}, {what} {self.index}{other}{answering}"


@dataclass
class DiffReport:
    """The outcome of one differential run."""

    real_connections: int
    mock_connections: int
    packets_compared: int = 0
    heartbeats: tuple[int, int] = (0, 0)
    differences: list[PacketDiff] = field(default_factory=list)
    allowed: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing differs - and there was something to compare (a client that never
        connected proves nothing)."""
        return (not self.differences and self.real_connections == self.mock_connections
                and self.real_connections > 0)

    def summary(self) -> str:
        allowed = ", ".join(f"{k} {v}" for k, v in sorted(self.allowed.items())) or "none"
        head = (f"{self.real_connections} connection(s) to the real server, "
                f"{self.mock_connections} to the mock; {self.packets_compared} server packets "
                f"compared, heartbeats {self.heartbeats[0]} real / {self.heartbeats[1]} mock; "
                f"allowed differences: {allowed}")
        if self.ok:
            return f"SAME: {head}"
        if not self.differences and self.real_connections == self.mock_connections == 0:
            return f"NOTHING COMPARED: the client never connected; {head}"
        n = len(self.differences)
        extra = "" if self.real_connections == self.mock_connections else \
            " (a different number of connections)"
        return f"DIFFERENT: {n} differing packet(s){extra}; {head}"

    def text(self, *, max_tree_lines: int = 60, max_more: int = 20) -> str:
        """The summary, the first difference with both annotated trees, then one line per
        further difference and the notes."""
        lines = [self.summary()]
        if self.differences:
            first = self.differences[0]
            lines.append(f"first difference: {first.title()}")
            lines.extend(f"  {f.path}: real {f.real} | mock {f.mock}" for f in first.fields[:20])
            for side, p, src in (("real", first.real, first.real_source),
                                 ("mock", first.mock, first.mock_source)):
                lines.append(f"--- {side}:")
                lines.extend(_tree_lines(p, src, {f.path for f in first.fields}, max_tree_lines))
            for d in self.differences[1 : 1 + max_more]:
                f = d.fields[0] if d.fields else FieldDiff("?", "?", "?")
                more = f" (+{len(d.fields) - 1} more fields)" if len(d.fields) > 1 else ""
                lines.append(f"also: {d.title()}: {f.path}: real {f.real} | mock {f.mock}{more}")
            if len(self.differences) > 1 + max_more:
                lines.append(f"... {len(self.differences) - 1 - max_more} more differing packets")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


_BIT_LINE = re.compile(r" = (set|-) \(bit \d+, 0x[0-9a-f]+\)")


def _tree_lines(p: PacketDecoded | None, source: bytes, marked: set[str],
                limit: int) -> list[str]:
    if p is None or p.node is None:
        return ["  (no packet)"]
    out: list[str] = []
    raw = redact_bytes(p.node, source[p.node.offset : p.node.end]) if source else None
    for line in render_node(redact(p.node), raw, base=p.node.offset, explain=False):
        hit = any(re.search(rf"\s{re.escape(path)}( =|$)", line) for path in marked)
        if not hit and _BIT_LINE.search(line) and not any(f" {m}." in line for m in marked):
            continue  # the flags of an unmarked bit set: its hex value says it all
        out.append((">> " if hit else "   ") + line)
    if len(out) > limit:
        # the title line, then a window around the first marked field
        keep = [i for i, s in enumerate(out) if s.startswith(">>")]
        lo = max(1, (keep[0] if keep else 1) - limit // 2)
        cut = out[lo : lo + limit]
        out = out[:1] + ([f"   ... {lo - 1} lines"] if lo > 1 else []) + cut + \
            ([f"   ... {len(out) - lo - limit} lines"] if len(out) > lo + limit else [])
    return out


def _span(packets: Sequence[tuple[PacketDecoded, PacketDecoded | None]], who: str) -> str:
    """What a run of unmatched packets is: ``3 packets: err 1105 '...', ok, ...``."""
    if not packets:
        return f"(nothing: {who} sent no such packets)"
    shown = ", ".join(_describe(p) for p, _ in packets[:4])
    more = ", ..." if len(packets) > 4 else ""
    return f"{len(packets)} packet(s): {shown}{more}"


def _first_request(packets: Sequence[tuple[PacketDecoded, PacketDecoded | None]]) -> str:
    req = packets[0][1] if packets else None
    return _request(req) if req is not None else ""


def _describe(p: PacketDecoded) -> str:
    if p.kind == "err":
        code = getattr(p.value, "error_code", None)
        msg = str(getattr(p.value, "error_message", "") or "")
        return f"err {code} {msg[:120]!r}"
    return _label(p)


def _label(p: PacketDecoded) -> str:
    ev = p.binlog_event
    if ev is not None:
        return f"{p.kind} {ev.type_name}"
    return p.kind


def _text(v: object) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else str(v)


def _compare_packets(r: PacketDecoded, m: PacketDecoded, request: PacketDecoded | None,
                     rules: Sequence[Allowance],
                     allowed: Counter[str]) -> list[FieldDiff]:
    if (request is not None and request.payload[:1] == bytes([COM_STMT_PREPARE])
            and r.payload[:1] == m.payload[:1] == b"\x00" and len(r.payload) == len(m.payload)
            and len(r.payload) >= 12 and r.payload[5:] == m.payload[5:]):
        if r.payload[1:5] != m.payload[1:5]:
            allowed[STATEMENT_ID] += 1
        return []
    if _label(r) != _label(m):
        return [FieldDiff("kind", _label(r), _label(m))]
    if r.node is None or m.node is None:
        return [] if r.payload == m.payload else [FieldDiff("payload", r.payload.hex(),
                                                             m.payload.hex())]
    rl, ml = leaves(r.node), leaves(m.node)
    diffs: list[FieldDiff] = []
    hits: list[str] = []
    checksum: FieldDiff | None = None
    for i, (a, b) in enumerate(zip(rl, ml, strict=False)):
        if a.path != b.path:
            diffs.append(FieldDiff(f"{a.path} | {b.path}", a.text, b.text))
            break
        if a.key == b.key:
            continue
        column = None
        if a.path.startswith("text_row."):
            column = a.path[len("text_row."):]
            if i > 0 and column.lower() == "value" and rl[i - 1].path.startswith("text_row."):
                column = _text(rl[i - 1].node.value)  # SHOW VARIABLES: the variable's name
        elif a.path == "column_definition41.column_length":
            # a column's declared length follows its value's length (VERSION(), @@hostname)
            name = next((x for x in rl if x.path == "column_definition41.name"), None)
            column = _text(name.node.value) if name is not None else None
        ctx = FieldContext(a.path, a, b, r, request, column)
        rule = next((x.name for x in rules if x.test(ctx)), None)
        if rule is not None:
            hits.append(rule)
        elif a.path == CHECKSUM_PATH and a.text.endswith(" ok") and b.text.endswith(" ok"):
            checksum = FieldDiff(a.path, a.text, b.text)
        else:
            diffs.append(FieldDiff(a.path, a.text, b.text))
    else:
        if len(rl) != len(ml):
            longer, side = (rl, "real") if len(rl) > len(ml) else (ml, "mock")
            extra = longer[min(len(rl), len(ml))]
            diffs.append(FieldDiff(extra.path, extra.text if side == "real" else "(absent)",
                                   extra.text if side == "mock" else "(absent)"))
    if checksum is not None:
        if hits and not diffs:
            hits.append("checksum of an allowed difference")
        else:
            diffs.append(checksum)
    allowed.update(hits)
    return diffs


def _server_packets(packets: list[PacketDecoded]
                    ) -> tuple[list[tuple[PacketDecoded, PacketDecoded | None]],
                               list[PacketDecoded]]:
    """(server packet, the client packet it answers) in order, and the heartbeats apart."""
    out: list[tuple[PacketDecoded, PacketDecoded | None]] = []
    beats: list[PacketDecoded] = []
    request: PacketDecoded | None = None
    for p in packets:
        if p.direction is Peer.CLIENT:
            if p.kind != "semi_sync_ack":
                request = p
        elif (code := _event_type(p)) is not None and is_heartbeat(code):
            beats.append(p)
        else:
            out.append((p, request))
    return out, beats


def compare(real: Sequence[Conversation], mock: Sequence[Conversation],
            rules: Sequence[Allowance] = ALLOWED) -> DiffReport:
    """Compare the conversations pairwise (the n-th connection to each side)."""
    rep = DiffReport(len(real), len(mock))
    hb_real = hb_mock = 0
    for rc, mc in zip(real, mock, strict=False):
        (rp, rphase, rsrc), (mp, mphase, msrc) = _decode(rc), _decode(mc)
        for side, phase in (("real server", rphase), ("mock", mphase)):
            if phase in _OPAQUE:
                rep.notes.append(f"connection {rc.index}: with the {side} the conversation "
                                 f"turned {phase.value} (TLS): compared only "
                                 "up to there")
        if rphase != mphase and (rphase in _OPAQUE or mphase in _OPAQUE):
            rep.differences.append(PacketDiff(rc.index, 0, None, None, [FieldDiff(
                "phase", rphase.value, mphase.value)]))
        _client_notes(rc.index, rp, mp, rep.notes)
        (rs, rbeats), (ms, mbeats) = _server_packets(rp), _server_packets(mp)
        hb_real += len(rbeats)
        hb_mock += len(mbeats)
        matcher = difflib.SequenceMatcher(None, [_label(p) for p, _ in rs],
                                          [_label(p) for p, _ in ms], autojunk=False)
        shifted: PacketDecoded | None = None  # the request whose answer lost or got packets
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                for k in range(i2 - i1):
                    (a, req), (b, _) = rs[i1 + k], ms[j1 + k]
                    rep.packets_compared += 1
                    diffs = _compare_packets(a, b, req, rules, rep.allowed)
                    if shifted is not None and shifted is req:
                        # the sequence ids after a missing/extra packet: already reported
                        diffs = [f for f in diffs if f.path != "packet_header.sequence_id"]
                    if diffs:
                        rep.differences.append(PacketDiff(
                            rc.index, i1 + k, a, b, diffs, rsrc, msrc, mock_index=j1 + k,
                            request=_request(req) if req is not None else ""))
                continue
            shifted = rs[i1][1] if i1 < i2 else (rs[i1 - 1][1] if 0 < i1 <= len(rs) else None)
            rep.differences.append(PacketDiff(
                rc.index, i1, rs[i1][0] if i1 < i2 else None, ms[j1][0] if j1 < j2 else None,
                [FieldDiff("packets", _span(rs[i1:i2], "the real server"),
                           _span(ms[j1:j2], "the mock"))], rsrc, msrc, mock_index=j1,
                request=_first_request(rs[i1:i2] or ms[j1:j2])))
        for i, (a0, b0) in enumerate(zip(rbeats, mbeats, strict=False)):
            diffs = _compare_packets(a0, b0, None, rules, rep.allowed)
            if diffs:
                rep.differences.append(PacketDiff(rc.index, i, a0, b0, diffs, rsrc, msrc,
                                                  heartbeat=True))
        rclose, mclose = _close_state(rc, rp), _close_state(mc, mp)
        if rclose != mclose and QUIT not in (rclose, mclose):
            rep.differences.append(PacketDiff(
                rc.index, len(rs), None, None, [FieldDiff("connection", rclose, mclose)]))
    rep.heartbeats = (hb_real, hb_mock)
    return rep


#: how a connection ended: the server closed it unasked / the client left without COM_QUIT
#: (or the relay stopped) / the client sent COM_QUIT (then nobody can tell whether the server
#: would have closed it anyway: not compared)
CLOSED_BY_SERVER = "the server closed it (no COM_QUIT)"
LEFT_OPEN = "left open (the client left without COM_QUIT)"
QUIT = "the client sent COM_QUIT"


def _close_state(conv: Conversation, packets: list[PacketDecoded]) -> str:
    """How the connection ended. A real server closes it unasked after a dump ends, or after
    an error it treats as fatal; a client that sends COM_QUIT at once races with that."""
    if any(p.direction is Peer.CLIENT and p.kind == "command" and p.payload[:1] == b"\x01"
           for p in packets):
        return QUIT
    return CLOSED_BY_SERVER if conv.closed_by == "server" else LEFT_OPEN


def _client_notes(index: int, rp: list[PacketDecoded], mp: list[PacketDecoded],
                  notes: list[str]) -> None:
    """The first client packet that differs (the client reacted to a different answer)."""
    rcl = [p for p in rp if p.direction is Peer.CLIENT and p.kind != "semi_sync_ack"]
    mcl = [p for p in mp if p.direction is Peer.CLIENT and p.kind != "semi_sync_ack"]
    for i in range(max(len(rcl), len(mcl))):
        a = rcl[i] if i < len(rcl) else None
        b = mcl[i] if i < len(mcl) else None
        if a is None or b is None:
            p = a or b
            assert p is not None
            notes.append(f"connection {index}: the client sent {len(rcl)} packets to the real "
                         f"server, {len(mcl)} to the mock (first extra: {_request(p)})")
            return
        if a.node is None or b.node is None or a.kind != b.kind:
            same = a.payload == b.payload
        else:
            same = all(x.key == y.key or is_sensitive(x.node) or "attr" in x.path
                       for x, y in zip(leaves(a.node), leaves(b.node), strict=False))
        if not same:
            notes.append(f"connection {index}: client packet {i} differs: to the real server "
                         f"{_request(a)}, to the mock {_request(b)}")
            return


def _request(p: PacketDecoded) -> str:
    q = getattr(p.value, "query", None)
    if p.kind == "com_query" and q is not None:
        text = str(q)
        return f"COM_QUERY {text[:100]!r}"
    return p.kind
