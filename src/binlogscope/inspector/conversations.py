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

from binlogscope.inspector.source import RowSource, format_time

_ENDPOINTS = re.compile(r"^flow \d+: (\S+ -> \S+)")


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
        return out


def conversations(source: RowSource) -> list[Conversation]:
    packets = "direction" in source.columns
    convs: dict[str, Conversation] = {}
    pending: dict[tuple[int | None, int], float | None] = {}  # (flow, log_pos) -> asked at
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
    return list(convs.values())


__all__ = ["Conversation", "conversations"]
