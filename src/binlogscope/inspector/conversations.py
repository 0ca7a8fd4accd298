"""The conversations view (``S`` in the TUI; Wireshark's Statistics > Conversations, what
``pcap --summary`` prints): one entry per connection of a packet stream, or per binlog file of a
file source, computed from the rows the source shows.

A connection: its endpoints (from the capture's note), the dump request, packets and bytes each
way (a packet's bytes include its 4-byte header), binlog events by type, semi-sync ACKs asked and
sent with their latency (the event's arrival -> the ACK's, as the links pair them), heartbeats,
ERR packets and decode errors. A binlog file: events by type, bytes, transactions, first and
last event time, tables.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from binlogscope.drivers.health import STATUS_QUERY
from binlogscope.drivers.live.lag import LagTracker
from binlogscope.inspector.source import Row, RowSource, format_time

_ENDPOINTS = re.compile(r"^flow \d+: (\S+ -> \S+)")
#: the replica's heartbeat request (nanoseconds), as its COM_QUERY row shows it
#: a health row's head (drivers/live/lag.py LagSample.text)
_HEAD = re.compile(r"server head (\S+):(\d+) \((\w+)\)")
_PERIOD = re.compile(r"@(?:master|source)_heartbeat_period\s*=\s*(\d+)", re.I)


@dataclass
class Conversation:
    key: str  # "flow 1" / "mysql-bin.000004"
    filter: str  # the filter that shows only its rows ("flow:1", "file:mysql-bin.000004")
    title: str = ""
    rows: int = 0
    first_time: float | None = None
    last_time: float | None = None
    packets: Counter[str] = field(default_factory=Counter)  # "->" / "<-" / "" (file events)
    bytes: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    tables: Counter[str] = field(default_factory=Counter)
    transactions: int = 0
    asked: int = 0
    acks: int = 0
    latencies: list[float] = field(default_factory=list)
    heartbeats: int = 0
    err_packets: int = 0
    decode_errors: int = 0
    dump: str = ""
    # the health of a dump (as pcap --summary's): last event, GTID and ACK, heartbeats
    period: float | None = None  # seconds between heartbeats the replica asked for
    last_event: str = ""
    last_gtid: str = ""
    last_ack: str = ""
    heartbeat_gaps: list[float] = field(default_factory=list)
    last_heartbeat: float | None = None
    last_server: float | None = None  # the dump's last server row
    longest_silence: float = 0.0
    end: float | None = None  # the source's last time (the state at the end is judged there)
    closed: bool = False
    #: the server's head (heartbeats) against the events received (drivers/live/lag.py)
    lag: LagTracker = field(default_factory=LagTracker)

    def lines(self) -> list[str]:
        """The entry as text lines (the first is its title)."""
        out = [f"{self.key}: {self.title}" if self.title else self.key]
        if self.dump:
            out.append(f"  dump      {self.dump}")
        span = (f"{format_time(self.first_time, True, True)} .. "
                f"{format_time(self.last_time, True, True)}") if self.first_time else ""
        if span:
            out.append(f"  time      {span} UTC")
        if self.packets.get("->") or self.packets.get("<-"):
            out.append(f"  packets   client->server {self.packets['->']:,}, "
                       f"server->client {self.packets['<-']:,}")
            out.append(f"  bytes     client->server {self.bytes['->']:,}, "
                       f"server->client {self.bytes['<-']:,}")
        else:
            out.append(f"  bytes     {self.bytes['']:,} in {self.rows:,} events")
        if self.events:
            top = ", ".join(f"{k} {v}" for k, v in self.events.most_common())
            out.append(f"  events    {sum(self.events.values()):,}: {top}")
        if self.transactions:
            out.append(f"  commits   {self.transactions:,}")
        if self.tables:
            out.append("  tables    " + ", ".join(f"{k} {v}" for k, v in
                                                   self.tables.most_common(8)))
        if self.asked or self.acks:
            lat = sorted(self.latencies)
            text = f"  semi-sync {self.acks} ACKs ({self.asked} requested)"
            if lat:
                text += (f", latency min {lat[0] * 1000:.3f} ms, median "
                         f"{lat[len(lat) // 2] * 1000:.3f} ms, max {lat[-1] * 1000:.3f} ms")
            out.append(text)
        if self.heartbeats:
            out.append(f"  heartbeats {self.heartbeats:,}")
        if self.err_packets or self.decode_errors:
            out.append(f"  errors    {self.err_packets} ERR packet(s), "
                       f"{self.decode_errors} decode error(s)")
        if self.dump:
            out.extend(self.health_lines())
        return out

    def health_lines(self) -> list[str]:
        """The dump's health: the state at the end, heartbeats, the last event/GTID/ACK."""
        quiet = (self.end or 0.0) - (self.last_server or self.end or 0.0)
        if self.closed:
            state = "closed"
        elif self.period and quiet > 2 * self.period:
            state = (f"stalled or half-open: no byte from the server for {quiet:.1f} s while "
                     f"heartbeats are due every {self.period:g} s")
        elif self.period and (self.last_heartbeat or 0) >= (self.last_server or 0):
            state = f"idle (heartbeats every {self.period:g} s)"
        else:
            state = f"streaming (last server packet {quiet:.1f} s before the end)"
        hb = (f"  heartbeat asked every {self.period:g} s" if self.period
              else "  heartbeat period not seen")
        gaps = sorted(self.heartbeat_gaps)
        if gaps:
            hb += f"; came every {gaps[len(gaps) // 2]:.3f} s (median), longest {gaps[-1]:.3f} s"
        hb += f"; longest server silence {self.longest_silence:.3f} s"
        out = [f"  health    {state}", hb, *self.lag.lines()]
        if self.last_event:
            out.append(f"  last      event {self.last_event}"
                       + (f", GTID {self.last_gtid}" if self.last_gtid else "")
                       + (f", ACK {self.last_ack}" if self.last_ack else ""))
        return out


def conversations(source: RowSource) -> list[Conversation]:
    packets = "direction" in source.columns
    convs: dict[str, Conversation] = {}
    pending: dict[tuple[int | None, int], float | None] = {}  # (flow, log_pos) -> asked at
    asked: set[str] = set()  # conversations whose SHOW MASTER STATUS answer is due
    for i in range(len(source)):
        row = source.row(i)
        if packets:
            key = f"flow {row.flow or 0}"
            conv = convs.get(key)
            if conv is None:
                conv = convs[key] = Conversation(key, f"flow:{row.flow or 0}")
        else:
            name = row.binlog_file or "binlog"
            conv = convs.get(name)
            if conv is None:
                conv = convs[name] = Conversation(name, f"file:{name}")
        conv.rows += 1
        if row.time is not None:
            conv.first_time = conv.first_time if conv.first_time is not None else row.time
            conv.last_time = row.time
        if packets and row.event_type == "NOTE" and not conv.title:
            m = _ENDPOINTS.match(row.summary)
            if m:
                conv.title = m.group(1)
        if row.event_type.startswith("COM_BINLOG_DUMP") and not conv.dump:
            conv.dump = f"{row.event_type} {row.summary}".strip()
        elif packets and not conv.dump and row.direction == "<-" and row.log_pos is not None \
                and row.event_type.endswith("_EVENT"):
            # a capture joined mid-stream: no dump request, but the server streams events
            # (as pcap --summary's health: drivers/health.py)
            conv.dump = "(joined mid-stream: the dump request is not in the capture)"
            conv.last_server = row.time
        _health(conv, row)
        if packets and row.direction == "->" and row.event_type == "COM_QUERY":
            (asked.add if STATUS_QUERY.match(row.summary) else asked.discard)(conv.key)
        elif conv.key in asked and row.event_type == "TEXT_ROW" and row.time is not None:
            asked.discard(conv.key)  # the server's head: for every dump (of this source)
            cells = [c.strip() for c in row.summary.split("|")]
            if len(cells) >= 2 and cells[0] and cells[1].isdigit():
                for other in convs.values():
                    if other.dump and not other.closed:
                        other.lag.head_at(cells[0], int(cells[1]), row.time, "status")
        if row.direction is not None and row.kind not in ("note", "step"):
            conv.packets[row.direction] += 1
            conv.bytes[row.direction] += row.length + 4
        elif not packets:
            conv.bytes[""] += row.length
        if row.log_pos is not None and row.kind != "ack" and (
                not packets or row.file_pos is not None or row.event_type.endswith("EVENT")):
            conv.events[row.event_type] += 1
        if row.table and row.kind in ("write", "update", "delete"):
            conv.tables[row.table] += 1
        if row.kind == "commit":
            conv.transactions += 1
        if row.kind == "heartbeat":
            conv.heartbeats += 1
        if row.error:
            conv.decode_errors += 1
        if row.event_type in ("ERR", "ERR_PACKET"):
            conv.err_packets += 1
        semi = row.semi_sync or ""
        if semi == "ef ACK?" and row.log_pos:
            conv.asked += 1
            pending[(row.flow, row.log_pos)] = row.time
        elif semi.startswith("ACK"):
            conv.acks += 1
            pos = semi.partition(" ")[2]
            asked_at = pending.pop((row.flow, int(pos)), None) if pos.isdigit() else None
            if asked_at is not None and row.time is not None:
                conv.latencies.append(row.time - asked_at)
    end = max((c.last_time for c in convs.values() if c.last_time is not None), default=None)
    if getattr(source, "live", False):
        import time

        end = max(end or 0.0, time.time())
    for c in convs.values():
        c.end = end
    return list(convs.values())


def _health(conv: Conversation, row: Row) -> None:
    """Feed one row to its conversation's health (packet streams)."""
    if row.direction == "->" and row.event_type == "COM_QUERY":
        m = _PERIOD.search(row.summary)
        if m:
            conv.period = int(m.group(1)) / 1e9
        return
    if row.kind == "health":  # live --lag-every: "lag: ...: server head F:P (source), ..."
        m = _HEAD.search(row.summary)
        if m and row.time is not None and m.group(3) != "heartbeat":  # (its own row counts)
            conv.lag.head_at(m.group(1), int(m.group(2)), row.time, m.group(3))
        return
    if row.kind == "note" and "closed the connection" in row.summary:
        conv.closed = True
        return
    if row.direction != "<-" or not conv.dump or row.time is None:
        if row.semi_sync and row.semi_sync.startswith("ACK ") and row.direction == "->":
            conv.last_ack = row.semi_sync[4:]
        return
    if conv.last_server is not None:
        conv.longest_silence = max(conv.longest_silence, row.time - conv.last_server)
    conv.last_server = row.time
    if row.kind == "heartbeat":
        if conv.last_heartbeat is not None:
            conv.heartbeat_gaps.append(row.time - conv.last_heartbeat)
        conv.last_heartbeat = row.time
        # (a heartbeat row does not carry its file name: the file of the last event, where
        # the dump thread waits when it sends one)
        if row.log_pos and conv.lag.consumed is not None:
            conv.lag.head_at(conv.lag.consumed[0], row.log_pos, row.time, "heartbeat")
        return
    if row.event_type == "ROTATE_EVENT":
        # the next file, or (the dump's fake ROTATE) where the dump starts
        name, _, pos = row.summary.rpartition(":")
        if name and pos.isdigit():
            conv.lag.consumed_to(name, int(pos))
    elif row.log_pos and row.binlog_file:
        conv.lag.consumed_to(row.binlog_file, row.log_pos)
    if row.log_pos:
        conv.last_event = (f"{row.event_type} ending at "
                           f"{row.binlog_file + ':' if row.binlog_file else ''}{row.log_pos}")
        if row.gtid:
            conv.last_gtid = row.gtid


__all__ = ["Conversation", "conversations"]
