"""``binlogscope pcap``: MySQL/MariaDB replication traffic from pcap/pcapng captures.

Plain text (the annotated packets), ``--json`` (one object per packet: flow, direction, frame,
timestamp, seq, payload_length, semi_sync and the decoded fields) or ``--summary`` (per flow:
packets, bytes, events by type, semi-sync ACKs and their latency, heartbeats, errors). On a
terminal without an output option the TUI opens when it has a pcap source; otherwise plain text.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from binlogscope.drivers.pcap import CaptureError, CaptureItem, Flow, read_capture_batches
from binlogscope.events import DecodeError, PacketDecoded, Peer, SequenceMismatch
from binlogscope.gc_tuning import fewer_gc_passes
from binlogscope.render import json_lines as jl
from binlogscope.render.packets import event_json, event_text
from binlogscope.summary import event_table
from binlogscope.wire.replication import SemiSyncAck

PROG = "binlogscope"


def add_pcap_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pcap", help="decode MySQL/MariaDB replication traffic from pcap/pcapng captures",
        description="Decode every MySQL connection in a capture (both directions: handshake, "
        "queries, results, REGISTER_SLAVE, BINLOG_DUMP, the binlog events, semi-sync ACKs), "
        "with the capture frame each packet starts in.")
    p.add_argument("file", metavar="FILE", help="a pcap or pcapng capture (.gz too)")
    p.add_argument("--port", type=int, action="append", default=[], metavar="N",
                   help="a server port carrying MySQL (repeatable; default 3306; ports where "
                   "a server greeting is seen are always added)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--plain", action="store_true", help="the annotated packets as text")
    out.add_argument("--json", action="store_true", help="one JSON object per packet")
    p.add_argument("--summary", action="store_true",
                   help="per flow statistics instead of the packets (with --json: one object "
                   "per flow)")
    p.add_argument("--brief", action="store_true", help="one line per packet, no field dump")
    p.add_argument("--flow", action="append", default=[], metavar="FLOW",
                   help="only this flow: its number (as in --summary) or text in "
                   "'client ip:port -> server ip:port' (repeatable)")
    p.add_argument("--table", metavar="REGEX",
                   help=r"only binlog events on tables whose 'schema.table' matches")
    p.add_argument("--type", action="append", default=[], metavar="EVENT_TYPE",
                   help="only these binlog event types or packet kinds, e.g. WRITE_ROWS_EVENT, "
                   "write_rows, com_query, semi_sync_ack (repeatable)")


# ---------------------------------------------------------------------------- filters
@dataclass
class _Filter:
    flows: list[str]
    table: re.Pattern[str] | None
    types: set[str]

    def flow_ok(self, flow: Flow) -> bool:
        if not self.flows:
            return True
        return any(f == str(flow.id) or (not f.isdigit() and f in flow.name) for f in self.flows)

    def item_ok(self, item: CaptureItem) -> bool:
        if not self.flow_ok(item.flow):
            return False
        if self.table is None and not self.types:
            return True
        ev = item.event
        if not isinstance(ev, PacketDecoded):
            return False
        bev = ev.binlog_event
        if self.table is not None:
            if bev is None:
                return False
            schema, table = event_table(bev)
            if table is None or not self.table.fullmatch(f"{schema}.{table}"):
                return False
        if self.types:
            names = {ev.kind.lower()}
            if bev is not None:
                t = bev.type_name.lower()
                names |= {t, t.removesuffix("_event"), t.removesuffix("_log_event")}
            if not names & self.types:
                return False
        return True


def _norm_type(t: str) -> str:
    return t.strip().lower()


# ---------------------------------------------------------------------------- output
def item_json(item: CaptureItem) -> dict[str, Any] | None:
    head: dict[str, Any] = {"flow": item.flow.name, "flow_id": item.flow.id,
                            "frame": item.frame, "timestamp": item.timestamp}
    if item.kind != "event":
        return {**head, "kind": item.kind, "text": item.text}
    obj = event_json(item.event)
    if obj is None:
        return None
    ev = item.event
    direction = obj.pop("direction", None)
    out = {**head, "direction": direction}
    if isinstance(ev, PacketDecoded):
        out["seq"] = obj.pop("seq")
        out["payload_length"] = obj.pop("payload_length")
        out["semi_sync"] = obj.pop("semi_sync")
    # "timestamp" is the capture time of the frame; a binlog event's own header timestamp
    # (when the statement began on the source) is "event_timestamp", in its place
    out.update((_EVENT_KEYS.get(k, k), v) for k, v in obj.items())
    return out


_EVENT_KEYS = {"timestamp": "event_timestamp"}


class JsonLines:
    """``json.dumps(item_json(item), ensure_ascii=False)``, fast for packets (see
    :mod:`binlogscope.render.json_lines`): the text of every item, without the dicts."""

    def __init__(self) -> None:
        self.heads: dict[Flow, str] = {}  # per flow: '{"flow": ..., "flow_id": N, "frame": '
        self.type_names: dict[int, str] = {}  # event type code -> its JSON string
        self._c_line = jl.c_packet_line()  # the same text from C (None: not built/turned off)

    def line(self, item: CaptureItem) -> str | None:
        ev = item.event
        if type(ev) is not PacketDecoded or item.kind != "event":
            obj = item_json(item)
            return None if obj is None else jl.dumps(obj)
        flow = item.flow
        head = self.heads.get(flow)
        if head is None:
            head = self.heads[flow] = (f'{{"flow": {jl.string(flow.name)}, "flow_id": '
                                        f'{jl.scalar(flow.id)}, "frame": ')
        c_line = self._c_line
        if c_line is not None:
            text = c_line(head, item.frame, item.timestamp, ev, self.type_names)
            if text is not None:
                return text
        return self.python_line(head, item)

    def python_line(self, head: str, item: CaptureItem) -> str:
        """:meth:`line` for a packet, in Python: the definition the C writer follows."""
        ev = item.event
        assert type(ev) is PacketDecoded
        bev = ev.binlog_event
        if bev is None and ev.node is not None:  # record mode: the payload's fields too
            return jl.dumps(item_json(item))
        semi = ev.semi_sync
        semi_text = "null" if semi is None else _SEMI_JSON[semi.flag & 0x01]
        frame: Any = item.frame  # an int is written as is, anything else as JSON
        seq: Any = ev.seq
        plen: Any = ev.payload_length
        at: Any = ev.offset
        error = ev.error
        if not type(frame) is type(seq) is type(plen) is type(at) is int:
            frame, seq, plen, at = (jl.scalar(frame), jl.scalar(seq), jl.scalar(plen),
                                    jl.scalar(at))
        d = ev.direction  # (identity tests: hashing an Enum runs Python code)
        direction = ('"server"' if d is Peer.SERVER else '"client"' if d is Peer.CLIENT
                     else jl.string(d.value))
        if bev is None:
            return (f'{head}{frame}, "timestamp": {jl.scalar(item.timestamp)}, "direction": '
                    f'{direction}, "seq": {seq}, "payload_length": {plen}, "semi_sync": '
                    f'{semi_text}, "kind": {jl.string(ev.kind)}, "packet_offset": {at}, '
                    f'"error": {"null" if error is None else jl.scalar(error)}}}')
        # event_json's binlog keys (summary.event_summary); the event header's timestamp is
        # "event_timestamp", as in item_json ("timestamp" stays the capture time)
        h = bev.header
        ts: Any
        code: Any
        sid: Any
        size: Any
        pos: Any
        flags: Any
        name: str | None
        if h is None:
            ts = code = sid = size = pos = flags = "null"
            name = jl.scalar(bev.type_name)
        else:
            ts, code, sid, size, pos, flags = (h.timestamp, h.type_code, h.server_id,
                                               h.event_size, h.log_pos, h.flags)
            if not type(ts) is type(code) is type(sid) is type(size) is type(pos) \
                    is type(flags) is int:
                ts, sid, size, pos, flags = (jl.scalar(ts), jl.scalar(sid), jl.scalar(size),
                                             jl.scalar(pos), jl.scalar(flags))
                name = jl.scalar(bev.type_name)
                code = jl.scalar(code)
            else:
                name = self.type_names.get(code)
                if name is None:
                    name = self.type_names[code] = jl.scalar(bev.type_name)
        body = bev.body
        if body is None:
            tail = '"schema": null, "table": null, "rows": null, "gtid": null, "query": null}'
        else:
            schema = getattr(body, "schema", None)
            table = getattr(body, "table", None)
            rows = getattr(body, "rows", None)
            gtid = getattr(body, "gtid", None)
            query = getattr(body, "query", None)
            tail = (f'"schema": {jl.string(schema) if isinstance(schema, str) else "null"}, '
                    f'"table": {jl.string(table) if isinstance(table, str) else "null"}, '
                    f'"rows": {"null" if rows is None else jl.rows(rows)}, '
                    f'"gtid": {jl.string(gtid) if isinstance(gtid, str) else "null"}, '
                    f'"query": {jl.string(query) if isinstance(query, str) else "null"}}}')
        ok = bev.checksum_ok
        return (f'{head}{frame}, "timestamp": {jl.scalar(item.timestamp)}, "direction": '
                f'{direction}, "seq": {seq}, '
                f'"payload_length": {plen}, "semi_sync": {semi_text}, "kind": "binlog_event", '
                f'"packet_offset": {at}, "error": {"null" if error is None else jl.scalar(error)}'
                f', "offset": {jl.scalar(bev.offset)}, "event_type": {name}, "type_code": '
                f'{code}, "event_timestamp": {ts}, "server_id": {sid}, "event_size": {size}, '
                f'"log_pos": {pos}, "flags": '
                f'{flags}, "checksum_ok": {"true" if ok is True else jl.scalar(ok)}, {tail}')


_SEMI_JSON = ('{"ack_requested": false}', '{"ack_requested": true}')


def item_text(item: CaptureItem, brief: bool) -> list[str]:
    where = f"[{item.flow.id}] #{item.frame} "
    if item.kind == "flow":
        return [f"== flow {item.flow.id}: {item.flow.name} (frame {item.frame}): {item.text}"]
    if item.kind == "note":
        return [f"{where}-- {item.text}"]
    if item.kind == "error":
        return [f"{where}!! {item.text}"]
    return event_text(item.event, brief, prefix=where)


# ---------------------------------------------------------------------------- summary
@dataclass
class _FlowStats:
    flow: Flow
    packets: Counter[str] = field(default_factory=Counter)  # per direction
    bytes: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    acks: int = 0
    acks_requested: int = 0
    latencies: list[float] = field(default_factory=list)
    heartbeats: int = 0
    errors: int = 0
    first_error: str = ""
    awaiting: dict[tuple[str, int], float] = field(default_factory=dict)
    log_file: str = ""

    def add(self, item: CaptureItem) -> None:
        ev = item.event
        if item.kind == "error":
            self._error(item.text)
            return
        if isinstance(ev, DecodeError):
            self._error(ev.message)
            return
        if isinstance(ev, SequenceMismatch):
            self._error(f"sequence id {ev.got}, expected {ev.expected}")
            return
        if not isinstance(ev, PacketDecoded):
            return
        d = ev.direction.value
        self.packets[d] += 1
        self.bytes[d] += ev.wire_length
        self.kinds[ev.kind] += 1
        bev = ev.binlog_event
        if bev is not None:
            name = bev.type_name
            self.events[name] += 1
            if "HEARTBEAT" in name:
                self.heartbeats += 1
            body = bev.body
            nxt = getattr(body, "next_log_name", None)
            if isinstance(nxt, str) and nxt:
                self.log_file = nxt
            if ev.semi_sync is not None and ev.semi_sync.ack_requested and bev.header:
                self.acks_requested += 1
                self.awaiting[(self.log_file, bev.header.log_pos)] = item.timestamp
        if isinstance(ev.value, SemiSyncAck) and ev.direction == Peer.CLIENT:
            self.acks += 1
            key = (ev.value.binlog_filename, ev.value.binlog_pos)
            sent = self.awaiting.pop(key, None)
            if sent is None:  # file name unknown (joined mid-stream): match the position
                k2 = next((k for k in self.awaiting if k[1] == ev.value.binlog_pos), None)
                sent = self.awaiting.pop(k2) if k2 is not None else None
            if sent is not None:
                self.latencies.append(item.timestamp - sent)

    def _error(self, msg: str) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = msg

    def latency(self) -> dict[str, float] | None:
        if not self.latencies:
            return None
        xs = sorted(self.latencies)

        def pct(p: float) -> float:
            i = min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))
            return xs[i]

        return {"min_ms": xs[0] * 1000, "median_ms": pct(0.5) * 1000, "p99_ms": pct(0.99) * 1000}

    def to_json(self) -> dict[str, Any]:
        f = self.flow
        return {
            "flow": f.name, "flow_id": f.id, "first_frame": f.first_frame,
            "mid_stream": f.mid_stream, "encrypted": f.encrypted, "compressed": f.compressed,
            "packets": dict(self.packets), "bytes": dict(self.bytes),
            "packet_kinds": dict(self.kinds), "events": dict(self.events),
            "semi_sync_acks": self.acks, "semi_sync_acks_requested": self.acks_requested,
            "ack_latency": self.latency(), "heartbeats": self.heartbeats, "errors": self.errors,
            "first_error": self.first_error or None,
            "tcp": {"retransmitted_segments": f.client_stats.retransmitted_segments
                    + f.server_stats.retransmitted_segments,
                    "out_of_order_segments": f.client_stats.out_of_order_segments
                    + f.server_stats.out_of_order_segments,
                    "gaps": f.client_stats.gaps + f.server_stats.gaps,
                    "lost_bytes": f.client_stats.lost_bytes + f.server_stats.lost_bytes},
            "opaque_bytes": f.opaque_bytes,
        }

    def text(self) -> list[str]:
        j = self.to_json()
        f = self.flow
        flags = [w for w, on in (("joined mid-stream", f.mid_stream), ("TLS-encrypted",
                                 f.encrypted), ("compressed", f.compressed)) if on]
        lines = [f"flow {f.id}: {f.name}" + (f" ({', '.join(flags)})" if flags else "")]
        lines.append(f"  packets   client->server {self.packets['client']}, "
                     f"server->client {self.packets['server']}")
        lines.append(f"  bytes     client->server {self.bytes['client']}, "
                     f"server->client {self.bytes['server']}"
                     + (f", {f.opaque_bytes} encrypted/undecoded" if f.opaque_bytes else ""))
        if self.events:
            lines.append(f"  events    {sum(self.events.values())}: " + ", ".join(
                f"{k} {v}" for k, v in sorted(self.events.items(), key=lambda kv: -kv[1])))
        lat = j["ack_latency"]
        ack = f"  semi-sync {self.acks} ACKs ({self.acks_requested} requested)"
        if lat:
            ack += (f", latency min {lat['min_ms']:.3f} ms, median {lat['median_ms']:.3f} ms, "
                    f"p99 {lat['p99_ms']:.3f} ms")
        lines.append(ack)
        lines.append(f"  heartbeats {self.heartbeats}")
        tcp = j["tcp"]
        lines.append(f"  errors    {self.errors}" + (f" (first: {self.first_error})"
                                                      if self.first_error else ""))
        if any(tcp.values()):
            lines.append(f"  tcp       {tcp['retransmitted_segments']} retransmitted, "
                         f"{tcp['out_of_order_segments']} out of order, {tcp['gaps']} gaps "
                         f"({tcp['lost_bytes']} bytes lost)")
        return lines


# ---------------------------------------------------------------------------- command
def _wants_tui(args: argparse.Namespace, out: TextIO) -> bool:
    if args.json or args.summary or args.plain or out is not sys.stdout:
        return False
    return sys.stdin.isatty() and out.isatty()


def _run_tui(args: argparse.Namespace, err: TextIO) -> int | None:
    """Open the TUI when a pcap source exists for it (None: not available, print instead)."""
    try:
        from binlogscope.inspector.sources.pcap import PcapSource
    except ImportError:
        return None
    from binlogscope.tui import run_tui

    return run_tui(PcapSource(args.file, ports=args.port or None), table_regex=args.table)


def cmd_pcap(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    table = None
    if args.table:
        try:
            table = re.compile(args.table)
        except re.error as exc:
            print(f"{PROG}: error: --table: bad regular expression: {exc}", file=err)
            return 2
    flt = _Filter(args.flow, table, {_norm_type(t) for t in args.type})
    if _wants_tui(args, out):
        rc = _run_tui(args, err)
        if rc is not None:
            return rc
    ports = set(args.port) if args.port else None
    record = not (args.json or args.summary or args.brief)
    stats: dict[int, _FlowStats] = {}
    errors = 0
    if hasattr(signal, "SIGPIPE") and out is sys.stdout:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    write = out.write
    filtering = bool(flt.flows or flt.table is not None or flt.types)
    fast_json = args.json and not args.summary and not filtering
    json_lines = JsonLines()
    json_line = json_lines.line
    c_lines = jl.c_packet_lines() if fast_json else None  # a frame's packets at once, in C
    heads, type_names = json_lines.heads, json_lines.type_names
    pending: list[str] = []  # JSON lines not written yet: written in batches
    add = pending.append
    batch = 1 if out.isatty() else 256
    try:
        try:
            with fewer_gc_passes():  # (gc_tuning: ~25 % less CPU on big captures)
                for items in read_capture_batches(args.file, ports, record=record):
                    i, n = 0, len(items)
                    while i < n:
                        if c_lines is not None:
                            i = c_lines(items, i, heads, type_names, pending)
                            if i >= n:
                                break
                        item = items[i]
                        i += 1
                        if fast_json and type(item.event) is PacketDecoded:
                            text = json_line(item)  # (a packet is never an error item)
                            if text is not None:
                                add(text)
                            continue
                        if item.kind == "error" or isinstance(item.event, DecodeError):
                            errors += 1
                        if args.summary:
                            if flt.flow_ok(item.flow):
                                st = stats.get(item.flow.id)
                                if st is None:
                                    st = stats[item.flow.id] = _FlowStats(item.flow)
                                st.add(item)
                            continue
                        if filtering and not flt.item_ok(item):
                            continue
                        if args.json:
                            text = json_line(item)
                            if text is not None:
                                add(text)
                        else:
                            for line in item_text(item, args.brief):
                                write(line + "\n")
                            if not args.brief and isinstance(item.event, PacketDecoded):
                                write("\n")
                    if len(pending) >= batch:
                        write("\n".join(pending) + "\n")
                        pending.clear()
        finally:
            if pending:
                text = "\n".join(pending) + "\n"
                pending.clear()
                write(text)
    except CaptureError as exc:
        _print_summary(args, stats, out)
        print(f"{PROG}: error: {exc}", file=err)
        return 1
    except BrokenPipeError:
        return 0
    _print_summary(args, stats, out)
    if not stats and args.summary:
        print(f"{PROG}: {args.file}: no MySQL connection found (server ports: "
              f"{', '.join(map(str, sorted(ports or {3306})))} and any port with a server "
              "greeting; try --port)", file=err)
    if errors:
        print(f"{PROG}: {args.file}: {errors} decode error(s) (shown in the output)", file=err)
        return 1
    return 0


def _print_summary(args: argparse.Namespace, stats: dict[int, _FlowStats], out: TextIO) -> None:
    if not args.summary:
        return
    for st in stats.values():
        if args.json:
            out.write(json.dumps(st.to_json(), ensure_ascii=False) + "\n")
        else:
            out.write("\n".join(st.text()) + "\n\n")


__all__ = ["JsonLines", "add_pcap_parser", "cmd_pcap", "item_json", "item_text"]
