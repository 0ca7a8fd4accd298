"""What one case run observed, and the evidence a report shows for it.

The client talks to the mock master through a recording relay
(:class:`mock_master.diff.capture.Relay`), so both directions are kept with the time each chunk
was read. They are decoded with binlogscope's own observer session
(:func:`mock_master.diff.compare.decode`): every packet an annotated tree, rendered as the TUI's
field pane shows it (offset, bytes, field = value; scrambles and auth responses redacted).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from binlogscope.render.text import render_node
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.fields import redact, redact_bytes
from mock_master.conformance.setup import Setup
from mock_master.diff.capture import CLIENT, SERVER, Conversation
from mock_master.diff.compare import decode

#: packets per connection and tree lines per packet an evidence keeps
MAX_PACKETS = 120
MAX_TREE_LINES = 48


@dataclass
class Packet:
    """A decoded packet with its connection, direction and time (seconds after the run began)."""

    conn: int
    sender: str  # "client" | "server"
    at: float
    p: PacketDecoded
    source: bytes  # the sender's bytes the packet's offsets point into

    @property
    def kind(self) -> str:
        return self.p.kind

    @property
    def event_type(self) -> int | None:
        ev = self.p.binlog_event
        return ev.header.type_code if ev is not None and ev.header is not None else None

    def label(self) -> str:
        ev = self.p.binlog_event
        what = f"{self.p.kind} {ev.type_name}" if ev is not None else self.p.kind
        if self.p.kind == "err":
            what += (f" {getattr(self.p.value, 'error_code', '')} "
                     f"{str(getattr(self.p.value, 'error_message', ''))[:100]!r}")
        if self.p.kind == "com_query":
            what += f" {str(getattr(self.p.value, 'query', ''))[:120]!r}"
        ss = " semi-sync" if self.p.semi_sync is not None else ""
        return (f"+{self.at:.3f}s conn {self.conn} {self.sender:<6} {what} "
                f"(seq {self.p.seq}, {self.p.payload_length} bytes{ss})")

    def tree(self, limit: int = MAX_TREE_LINES) -> list[str]:
        node = self.p.node
        if node is None:
            return []
        lo = node.offset
        raw = self.source[lo:node.end] if node.end <= len(self.source) else None
        if raw is not None:
            raw = redact_bytes(node, raw)
        lines = list(render_node(redact(node), raw, base=lo, explain=False))
        if len(lines) > limit:
            lines = [*lines[:limit], f"... {len(lines) - limit} more lines"]
        return lines


def _times(conv: Conversation, sender: str) -> tuple[list[int], list[float]]:
    """Cumulative end offsets of ``sender``'s chunks and their read times."""
    ends: list[int] = []
    times: list[float] = []
    total = 0
    for who, data, t in conv.chunks:
        if who == sender:
            total += len(data)
            ends.append(total)
            times.append(t)
    return ends, times


def packets_of(conv: Conversation, t0: float) -> list[Packet]:
    """Every packet of one connection, both directions, with the time its last byte came."""
    decoded = decode(conv)
    out: list[Packet] = []
    idx = {s: _times(conv, s) for s in (CLIENT, SERVER)}
    src = {s: conv.data(s) for s in (CLIENT, SERVER)}
    for p in decoded:
        sender = CLIENT if p.direction == Peer.CLIENT else SERVER
        ends, times = idx[sender]
        i = bisect.bisect_left(ends, p.offset + max(p.wire_length, 1))
        at = (times[min(i, len(times) - 1)] - t0) if times else 0.0
        out.append(Packet(conv.index, sender, at, p, src[sender]))
    return out


#: the setup dialog's answers: a label says enough (their trees would be most of a report)
_LABEL_ONLY = {"column_count", "column_definition41", "text_row", "eof", "ok"}


def _worth_a_tree(p: Packet) -> bool:
    return p.kind not in _LABEL_ONLY


#: characters of one reported string an evidence keeps (a 17 MB statement is not evidence)
MAX_TEXT = 4000


def _clip(v: Any) -> Any:
    """``v`` with every string longer than MAX_TEXT cut, saying how much was left out."""
    if isinstance(v, str) and len(v) > MAX_TEXT:
        return f"{v[:MAX_TEXT]}... ({len(v) - MAX_TEXT} more characters)"
    if isinstance(v, dict):
        return {k: _clip(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clip(x) for x in v]
    return v


@dataclass
class Observation:
    """Everything one run of one case against one client produced."""

    case_id: str
    flavor: str
    setup: Setup
    conversations: list[Conversation]
    t0: float
    #: the client's adapter lines (decoded JSON objects, in order), each with "_at" (seconds)
    lines: list[dict[str, Any]]
    #: the client's stdout lines that were not adapter JSON (kept for the evidence)
    other_output: list[str]
    stderr: str
    exit_code: int | None  # None: still running at the time limit (stopped)
    timed_out: bool
    seconds: float
    #: the mock master's run log, one dict per client connection (see docs/conformance.md)
    clients: list[dict[str, Any]]
    #: the client reports values (it has an adapter)
    has_adapter: bool = True
    _packets: list[Packet] | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ the wire
    @property
    def packets(self) -> list[Packet]:
        if self._packets is None:
            self._packets = [p for c in self.conversations for p in packets_of(c, self.t0)]
        return self._packets

    def client_packets(self, kind: str | None = None) -> list[Packet]:
        return [p for p in self.packets if p.sender == CLIENT and (kind is None or p.kind == kind)]

    def server_packets(self, kind: str | None = None) -> list[Packet]:
        return [p for p in self.packets if p.sender == SERVER and (kind is None or p.kind == kind)]

    def events_sent(self, conn: int | None = None) -> list[Packet]:
        return [p for p in self.server_packets("binlog_event")
                if conn is None or p.conn == conn]

    def queries(self) -> list[str]:
        return [str(getattr(p.p.value, "query", "")) for p in self.client_packets("com_query")]

    def dumps(self) -> list[Packet]:
        return [p for p in self.client_packets()
                if p.kind in ("com_binlog_dump", "com_binlog_dump_gtid")]

    def client_bytes(self, conn: int) -> bytes:
        return self.conversations[conn].data(CLIENT)

    # ------------------------------------------------------------------ the adapter
    def rows(self) -> list[dict[str, Any]]:
        return [ln for ln in self.lines if ln.get("type") in ("insert", "update", "delete")]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [ln for ln in self.lines if ln.get("type") in types]

    @property
    def crashed(self) -> bool:
        """The client ended with an error of its own (a traceback, a non-zero exit) rather
        than an ``error`` line."""
        return (self.exit_code not in (0, None)
                and ("Traceback" in self.stderr or not self.of_type("error")))

    # ------------------------------------------------------------------ evidence
    def evidence(self, *, trees: bool = True) -> dict[str, Any]:
        packets: list[dict[str, Any]] = []
        per_conn: dict[int, int] = {}
        for p in self.packets:
            n = per_conn.get(p.conn, 0)
            per_conn[p.conn] = n + 1
            if n >= MAX_PACKETS:
                continue
            item: dict[str, Any] = {"conn": p.conn, "from": p.sender, "at": round(p.at, 4),
                                    "label": p.label()}
            if trees and _worth_a_tree(p):
                item["tree"] = p.tree()
            packets.append(item)
        dropped = sum(max(0, n - MAX_PACKETS) for n in per_conn.values())
        return {
            "packets": packets,
            "packets_not_shown": dropped,
            "connections": [{"index": c.index, "closed_by": c.closed_by,
                             "client_bytes": len(c.data(CLIENT)),
                             "server_bytes": len(c.data(SERVER))} for c in self.conversations],
            "client_output": [{k: _clip(v) for k, v in ln.items()} for ln in self.lines[:200]],
            "client_output_not_shown": max(0, len(self.lines) - 200),
            "client_other_output": [_clip(x) for x in self.other_output[-40:]],
            "client_stderr": self.stderr[-4000:],
            "client_exit": self.exit_code,
            "timed_out": self.timed_out,
            "mock_master_log": self.clients,
        }
