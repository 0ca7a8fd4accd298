"""The proxy's fault actions in ``--summary``: each fault it fired (when, on which connection)
and what the client did next - its next packet on that connection, its close, or, when the
fault closed the connection, its reconnect (a later connection from the same host and what it
asked for).

The relay reports a fired fault as a ``note`` item ``fault: ...`` on the connection's flow
(:mod:`binlogscope.drivers.proxy.faults`); a close the proxy made itself has ``closed_by``
"proxy"; damage an action made on purpose is marked ``injected`` on its items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid, ComQuery, gtid_set_text
from binlogscope.wire.fields import escaped
from binlogscope.wire.replication import SemiSyncAck

if TYPE_CHECKING:
    from binlogscope.drivers.items import Flow, SourceItem

FAULT_NOTE = "fault: "
#: relay notes that say the actions do not apply (not a fault fired)
_NOT_FIRED = "fault actions are off"


@dataclass
class FaultFired:
    """One fault the proxy fired on a connection."""

    text: str  # the relay's words: "corrupt_checksum_at at event 6: fired on event 6"
    time: float
    frame: int
    then: str | None = None  # what the client did next
    then_time: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"fault": self.text, "frame": self.frame, "time": round(self.time, 6),
                "client_next": self.then,
                "client_next_after_s": (None if self.then_time is None
                                        else round(self.then_time - self.time, 6))}

    def line(self, start: float) -> str:
        after = "" if self.then_time is None else \
            f" ({(self.then_time - self.time) * 1000:.1f} ms later)"
        return (f"  fault     {self.text} at frame {self.frame} (+{self.time - start:.3f} s); "
                f"then the client: {self.then or 'nothing more on this connection'}{after}")


def is_fault_note(item: SourceItem) -> bool:
    return item.text.startswith(FAULT_NOTE) and _NOT_FIRED not in item.text


def client_action(ev: PacketDecoded) -> str:
    """A client packet in a few words (what it did after a fault)."""
    v = ev.value
    if isinstance(v, SemiSyncAck):
        return f"semi-sync ACK of {escaped(v.binlog_filename)}:{v.binlog_pos}"
    if isinstance(v, ComBinlogDumpGtid):
        return (f"COM_BINLOG_DUMP_GTID {gtid_set_text(v.gtid_set) if v.gtid_set else ''}"
                .rstrip())
    if isinstance(v, ComBinlogDump):
        return f"COM_BINLOG_DUMP {escaped(v.binlog_filename)}:{v.binlog_pos}"
    if isinstance(v, ComQuery):
        q = escaped(v.query)
        return f"COM_QUERY {q[:60]}{'...' if len(q) > 60 else ''}"
    return ev.kind.upper()


class FaultLog:
    """The faults fired on one flow and the client's answer to each (fed the flow's items)."""

    def __init__(self) -> None:
        self.faults: list[FaultFired] = []
        self._open: list[FaultFired] = []  # fired, the client's answer not seen yet

    def add(self, item: SourceItem) -> None:
        if item.kind == "note":
            if is_fault_note(item):
                f = FaultFired(item.text[len(FAULT_NOTE):], item.time or 0.0, item.frame or 0)
                self.faults.append(f)
                self._open.append(f)
            elif self._open and item.text.startswith("client closed the connection"):
                self._answer(item.text.split(" - ", 1)[0], item.time)
            return
        ev = item.event
        if self._open and type(ev) is PacketDecoded and ev.direction is Peer.CLIENT:
            self._answer(client_action(ev), item.time)

    def _answer(self, what: str, when: float | None) -> None:
        for f in self._open:
            f.then, f.then_time = what, when
        self._open.clear()

    def waiting(self) -> bool:
        """A fault the client has not answered yet (its next packets are looked at)."""
        return bool(self._open)

    def unanswered(self) -> list[FaultFired]:
        return list(self._open)


def link_reconnects(flows: list[tuple[Flow, FaultLog, str | None]]) -> None:
    """A fault the client did not answer on its own connection (the proxy or the server
    closed it): its answer is the next connection from the same host, if any, with the dump
    it asked for (``flows``: each flow, its log and its dump request in words)."""
    for flow, log, _ in flows:
        if flow.closed_by == "client":
            continue
        host = flow.client.rsplit(":", 1)[0]
        for f in log.unanswered():
            later = [(g, dump) for g, _, dump in flows
                     if g.id != flow.id and g.first_timestamp >= f.time
                     and g.client.rsplit(":", 1)[0] == host]
            if later:
                g, dump = min(later, key=lambda x: x[0].first_timestamp)
                f.then = f"reconnected (flow {g.id})" + (f", {dump}" if dump else "")
                f.then_time = g.first_timestamp
            elif flow.closed_by is not None:
                f.then = "did not reconnect while the proxy ran"


__all__ = ["FAULT_NOTE", "FaultFired", "FaultLog", "client_action", "is_fault_note",
           "link_reconnects"]
