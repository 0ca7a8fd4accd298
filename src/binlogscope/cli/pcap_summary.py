"""``binlogscope pcap --summary``: what each flow of a capture did, as :class:`FlowStats`.

Per flow: the dump request (COM_BINLOG_DUMP's file:position, COM_BINLOG_DUMP_GTID's set, or
the GTID state a MariaDB replica set with ``@slave_connect_state``), how the dump ended (an EOF
of a non-blocking dump, an ERR with its code and text), who closed the connection (the side
whose FIN or RST came first, at that frame), packets and bytes per direction, events by type,
semi-sync ACKs and their latency (through ``proxy`` also on each leg: the replica's and the
server's), heartbeats, the server's ERR packets (count and the first), decode errors and the
TCP gaps (each with its frame, and the bytes skipped after them to the next packet header).
For a live capture (``sniff``), :func:`capture_loss_lines` / :func:`capture_loss_json` close
the summary with what was lost before decoding (kernel and
decode-buffer drops) beside the sum of the flows' gaps.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from binlogscope.cli.fault_report import FaultLog
from binlogscope.drivers.health import Health
from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    PacketDecoded,
    Peer,
    SequenceMismatch,
    TlsStarted,
)
from binlogscope.session.readers import UNTIL_GTID_QUERY, dump_eof_reason
from binlogscope.wire.binlog import bodies
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid, ComQuery, gtid_set_text
from binlogscope.wire.constants import BinlogDumpFlag
from binlogscope.wire.fields import escaped
from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.replication import SemiSyncAck

if TYPE_CHECKING:
    from binlogscope.drivers.items import Flow, SourceItem

_CONNECT_STATE = re.compile(r"@slave_connect_state\s*=\s*'([^']*)'", re.I)
_GAP = "TCP gap"
#: how the proxy's note on a terminated TLS connection starts (drivers/proxy_tls.established)
_TLS_NOTE = "TLS terminated by the proxy"
#: gaps listed one by one (the count is always complete)
MAX_GAPS_LISTED = 20


def _err_json(err: ErrPacket, frame: int) -> dict[str, Any]:
    return {"code": err.error_code, "sql_state": err.sql_state, "message": err.error_message,
            "frame": frame}


def _err_text(e: dict[str, Any]) -> str:
    state = f" ({e['sql_state']})" if e["sql_state"] else ""
    return f"ERR {e['code']}{state} {e['message']} at frame {e['frame']}"


@dataclass
class FlowStats:
    """The summary of one flow, fed its capture items in order (:meth:`add`)."""

    flow: Flow
    packets: Counter[str] = field(default_factory=Counter)  # per direction
    bytes: Counter[str] = field(default_factory=Counter)  # on the wire (frames, compressed)
    _framed: set[str] = field(default_factory=set)  # directions in the compressed protocol
    events: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    acks: int = 0
    acks_requested: int = 0
    latencies: list[float] = field(default_factory=list)
    #: ``proxy``: the ACK latency on each leg - the replica's ("client": the event forwarded to
    #: it -> its ACK read) and the server's ("server": the event read from it -> the ACK
    #: forwarded to it, which is what the server waits, less the wire)
    leg_latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"client": [], "server": []})
    heartbeats: int = 0
    #: decode errors, sequence mismatches, capture errors (the damage binlogscope saw)
    errors: int = 0
    first_error: str = ""
    #: ERR packets the server sent
    server_errors: int = 0
    first_server_error: dict[str, Any] | None = None
    #: the dump request: command, file, position, flags, server id, GTID set or state
    dump: dict[str, Any] | None = None
    #: how the dump ended: {"how": "eof" | "err", "frame": ..., ...}; None: it did not
    dump_end: dict[str, Any] | None = None
    gaps: list[dict[str, Any]] = field(default_factory=list)
    #: (binlog file, position) -> (seen/forwarded, read by the proxy's relay or None)
    awaiting: dict[tuple[str, int], tuple[float, float | None]] = field(default_factory=dict)
    log_file: str = ""
    _gtid_state: str | None = None
    _until_gtid: str | None = None
    #: after an SSLRequest: "terminated" (``proxy``: decoded on) or "encrypted" (opaque)
    tls: str | None = None
    #: ``proxy``: the TLS versions and ciphers of both legs (its note when TLS was set up)
    tls_detail: str | None = None
    #: ``proxy``: the faults its actions fired on this connection, and the client's answers
    fault_log: FaultLog = field(default_factory=FaultLog)
    #: ``proxy``: errors its own fault actions made (shown, not counted as damage)
    injected: int = 0
    first_injected: str = ""
    #: last event/GTID/ACK, heartbeat cadence, silences, the state at the end (drivers/health.py)
    health: Health = field(default_factory=Health)
    #: the capture's last time (set before printing: the state at the end is judged there)
    end_time: float = 0.0
    #: the earlier flow this one reconnects (a dump from the same client host)
    reconnect_of: int | None = None

    def add(self, item: SourceItem) -> None:
        ev = item.event
        frame, t = item.frame or 0, item.time or 0.0  # (a capture's items have both)
        if item.kind == "note" or self.fault_log.waiting():
            self.fault_log.add(item)
            if self.health.closed_at is None and "closed the connection" in item.text:
                self.health.closed_at = t
        if item.injected and isinstance(ev, DecodeError):
            self.injected += 1
            self.first_injected = self.first_injected or ev.message
            return
        if item.kind == "error":
            self._error(item.text)
            return
        if item.kind == "note" and item.text.startswith(_TLS_NOTE) and "):" in item.text:
            self.tls_detail = item.text[len(_TLS_NOTE):].split("):", 1)[0].strip(" (")
            return
        if isinstance(ev, TlsStarted):
            self.tls = "terminated" if ev.terminated else "encrypted"
            return
        if isinstance(ev, DecodeError):
            if _GAP in ev.message:
                self.gaps.append({"direction": ev.direction.value, "frame": frame,
                                  "text": ev.message})
            self._error(ev.message)
            return
        if isinstance(ev, SequenceMismatch):
            self._error(f"sequence id {ev.got}, expected {ev.expected}")
            return
        if isinstance(ev, CompressedFrame):  # (the bytes on the wire: the frames')
            self._framed.add(ev.direction.value)
            self.bytes[ev.direction.value] += ev.frame.wire_length
            return
        if not isinstance(ev, PacketDecoded):
            return
        self.health.packet(ev, t)
        d = ev.direction.value
        self.packets[d] += 1
        if d not in self._framed:
            self.bytes[d] += ev.wire_length
        self.kinds[ev.kind] += 1
        value = ev.value
        if ev.direction is Peer.SERVER:
            if type(value) is ErrPacket:
                self._server_error(value, frame)
            elif ev.kind == "eof" and self.dump is not None and self.dump_end is None:
                flags = None if self.dump is None else self.dump["flags"]
                self.dump_end = {"how": "eof", "frame": frame, "text": dump_eof_reason(
                    None if flags is None else bool(flags & BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK),
                    self._until_gtid)}
        elif type(value) is ComQuery:
            m = _CONNECT_STATE.search(value.query)
            if m:
                self._gtid_state = m.group(1)
            m = UNTIL_GTID_QUERY.search(value.query)
            if m:
                self._until_gtid = m.group(1) or None
        elif type(value) is ComBinlogDump or type(value) is ComBinlogDumpGtid:
            self._dump(value, ev.kind, frame)
        bev = ev.binlog_event
        if bev is not None:
            name = bev.type_name
            self.events[name] += 1
            if "HEARTBEAT" in name:
                self.heartbeats += 1
            rotate = bodies.rotate(bev)
            if rotate is not None and rotate.next_log_name:
                self.log_file = rotate.next_log_name
            if ev.semi_sync is not None and ev.semi_sync.ack_requested and bev.header:
                self.acks_requested += 1
                self.awaiting[(self.log_file, bev.header.log_pos)] = (t,
                                                                      item.received)
        if isinstance(value, SemiSyncAck) and ev.direction == Peer.CLIENT:
            self.acks += 1
            key = (value.binlog_filename, value.binlog_pos)
            sent = self.awaiting.pop(key, None)
            if sent is None:  # file name unknown (joined mid-stream): match the position
                k2 = next((k for k in self.awaiting if k[1] == value.binlog_pos), None)
                sent = self.awaiting.pop(k2) if k2 is not None else None
            self.health.ack(value.binlog_filename, value.binlog_pos, t,
                            None if sent is None else t - sent[0])
            if sent is not None:
                self.latencies.append(t - sent[0])
                if sent[1] is not None and item.received is not None:
                    self.leg_latencies["client"].append(item.received - sent[0])
                    self.leg_latencies["server"].append(t - sent[1])

    def _dump(self, value: ComBinlogDump | ComBinlogDumpGtid, kind: str, frame: int) -> None:
        dump: dict[str, Any] = {
            "command": kind.upper(), "frame": frame, "file": value.binlog_filename,
            "position": value.binlog_pos, "flags": value.flags, "server_id": value.server_id}
        if type(value) is ComBinlogDumpGtid:
            dump["gtid_set"] = (gtid_set_text(value.gtid_set) if value.gtid_set is not None
                                else None)
        elif self._gtid_state is not None:
            dump["gtid_state"] = self._gtid_state  # MariaDB: a GTID dump
        self.dump = dump
        self.dump_end = None

    def _server_error(self, err: ErrPacket, frame: int) -> None:
        self.server_errors += 1
        e = _err_json(err, frame)
        if self.first_server_error is None:
            self.first_server_error = e
        if self.dump is not None and self.dump_end is None:
            self.dump_end = {"how": "err", **e}

    def _error(self, msg: str) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = msg

    def latency(self, values: list[float] | None = None) -> dict[str, float] | None:
        """min, median and p99 in ms of ``values`` (the ACK latencies as seen)."""
        xs = sorted(self.latencies if values is None else values)
        if not xs:
            return None

        def pct(p: float) -> float:
            i = min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))
            return xs[i]

        return {"min_ms": xs[0] * 1000, "median_ms": pct(0.5) * 1000, "p99_ms": pct(0.99) * 1000}

    def closed(self) -> dict[str, Any] | None:
        f = self.flow
        if f.closed_by is None:
            return None
        return {"by": f.closed_by, "flag": f.close_flag, "frame": f.close_frame}

    def to_json(self) -> dict[str, Any]:
        f = self.flow
        return {
            "flow": f.name, "flow_id": f.id, "first_frame": f.first_frame,
            "mid_stream": f.mid_stream, "encrypted": f.encrypted, "compressed": f.compressed,
            "dump": self.dump, "dump_end": self.dump_end, "closed": self.closed(),
            "packets": dict(self.packets), "bytes": dict(self.bytes),
            "packet_kinds": dict(self.kinds), "events": dict(self.events),
            "semi_sync_acks": self.acks, "semi_sync_acks_requested": self.acks_requested,
            "tls": (None if self.tls is None else
                    {"terminated": self.tls == "terminated", "detail": self.tls_detail}),
            "ack_latency": self.latency(),
            "ack_latency_legs": ({leg: self.latency(xs) for leg, xs in self.leg_latencies.items()}
                                 if self.leg_latencies["client"] else None),
            "heartbeats": self.heartbeats,
            "server_errors": self.server_errors, "first_server_error": self.first_server_error,
            "errors": self.errors, "first_error": self.first_error or None,
            "faults": [f.to_json() for f in self.fault_log.faults],
            "injected_errors": self.injected,
            "tcp": {"retransmitted_segments": f.client_stats.retransmitted_segments
                    + f.server_stats.retransmitted_segments,
                    "out_of_order_segments": f.client_stats.out_of_order_segments
                    + f.server_stats.out_of_order_segments,
                    "gaps": f.client_stats.gaps + f.server_stats.gaps,
                    "lost_bytes": f.client_stats.lost_bytes + f.server_stats.lost_bytes,
                    "skipped_bytes": f.skipped_bytes},
            "gaps": self.gaps[:MAX_GAPS_LISTED],
            "opaque_bytes": f.opaque_bytes,
            "reconnect_of": self.reconnect_of,
            "health": self.health.to_json(self.end_time or self.health.last_seen,
                                          f.closed_by is not None),
        }

    def dump_words(self) -> str | None:
        """The dump request in a few words (a reconnect after a fault)."""
        d = self.dump
        if d is None:
            return None
        return f"{d['command']} {escaped(d['file']) or '(current file)'}:{d['position']}"

    def _dump_text(self) -> str:
        d = self.dump
        assert d is not None
        if d["command"] == "COM_BINLOG_DUMP_GTID":
            what = f"GTID set {d['gtid_set'] or '(empty)'}"
            if d["file"]:
                what += f", {escaped(d['file'])}:{d['position']}"
        else:
            what = f"{escaped(d['file']) or '(current file)'}:{d['position']}"
            if "gtid_state" in d:
                what = f"GTID state {d['gtid_state'] or '(empty)'} (@slave_connect_state)"
        return (f"  dump      {d['command']} {what} (flags {d['flags']}, server id "
                f"{d['server_id']}) at frame {d['frame']}")

    def _end_text(self) -> str:
        parts = []
        e = self.dump_end
        if e is not None:
            parts.append(_err_text(e) if e["how"] == "err"
                         else f"EOF ({e['text']}) at frame {e['frame']}")
        c = self.closed()
        if c is not None:
            parts.append(f"{c['by']} closed the connection ({c['flag']}) at frame {c['frame']}")
        else:
            parts.append("still open at the end of the capture")
        return "  ended     " + "; ".join(parts)

    def text(self) -> list[str]:
        j = self.to_json()
        f = self.flow
        flags = [w for w, on in (("joined mid-stream", f.mid_stream), ("TLS-encrypted",
                                 f.encrypted), ("compressed", f.compressed)) if on]
        lines = [f"flow {f.id}: {f.name}" + (f" ({', '.join(flags)})" if flags else "")]
        if self.dump is not None:
            lines.append(self._dump_text())
        lines.append(self._end_text())
        if self.tls is not None:
            lines.append("  TLS       " + (
                f"terminated by the proxy ({self.tls_detail or 'versions not known'}), the "
                "connection decoded" if self.tls == "terminated" else
                "the connection is encrypted from the SSLRequest on (not decoded)"))
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
        legs = j["ack_latency_legs"]
        if legs:
            for head, leg, what in (
                    ("  ACK legs  ", "client", "replica: event forwarded -> its ACK read"),
                    ("            ", "server", "server: event read -> ACK forwarded")):
                lat = legs[leg]
                lines.append(f"{head}{what}, median {lat['median_ms']:.3f} ms, "
                             f"p99 {lat['p99_ms']:.3f} ms")
        lines.append(f"  heartbeats {self.heartbeats}")
        if self.dump is not None or self.health.dumped:  # (or a dump joined mid-stream)
            lines.extend(self.health.lines(self.end_time or self.health.last_seen,
                                           f.closed_by is not None))
        if self.reconnect_of is not None:
            lines.append(f"  reconnect of flow {self.reconnect_of} (the same client host "
                         "dumped again)")
        first = self.first_server_error
        lines.append(f"  server    {self.server_errors} ERR packet(s)"
                     + (f" (first: {_err_text(first)})" if first else ""))
        lines.append(f"  damage    {self.errors} decode error(s)"
                     + (f" (first: {self.first_error})" if self.first_error else "")
                     + (f"; {self.injected} more made by the proxy's fault actions (first: "
                        f"{self.first_injected}), not counted" if self.injected else ""))
        lines.extend(f.line(self.flow.first_timestamp) for f in self.fault_log.faults)
        tcp = j["tcp"]
        if any(tcp.values()):
            lines.append(f"  tcp       {tcp['retransmitted_segments']} retransmitted, "
                         f"{tcp['out_of_order_segments']} out of order, {tcp['gaps']} gaps "
                         f"({tcp['lost_bytes']} bytes lost"
                         + (f", {tcp['skipped_bytes']} more skipped to the next packet header"
                            if tcp["skipped_bytes"] else "") + ")")
        for g in self.gaps[:MAX_GAPS_LISTED]:
            lines.append(f"  gap       {g['direction']} at frame {g['frame']}: {g['text']}")
        return lines


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def capture_loss_text(loss: dict[str, Any]) -> str:
    """One line: the frames a live capture decoded and the ones it lost before decoding
    (``loss``: the counters ``sniff`` passes to :func:`~binlogscope.cli.pcap.emit_capture`)."""
    kernel, buffered = loss["kernel_dropped"], loss["buffer_dropped"]
    head = f"{loss['frames_decoded']:,} frames decoded from {loss['interface']}"
    left = loss.get("frames_not_decoded", 0)
    tail = (f"; {left:,} more captured but not decoded (the capture ended before the decoder "
            "reached them)") if left else ""
    if not kernel and not buffered:
        return (head + ", none lost before decoding (0 kernel drops, 0 decode-buffer drops)"
                + tail)
    return (head + f", {kernel + buffered:,} LOST before decoding: {kernel:,} dropped by the "
            f"kernel (capture ring full), {buffered:,} dropped from the decode buffer (decoder "
            f"behind: {_mib(loss['buffer_peak_bytes'])} of {_mib(loss['buffer_bytes'])} "
            "used at most)" + tail)


def capture_loss_json(loss: dict[str, Any], flows: list[FlowStats]) -> dict[str, Any]:
    """``loss`` with the TCP gaps of every flow added (what the drops did to the streams)."""
    gaps = lost = skipped = 0
    for st in flows:
        f = st.flow
        gaps += f.client_stats.gaps + f.server_stats.gaps
        lost += f.client_stats.lost_bytes + f.server_stats.lost_bytes
        skipped += f.skipped_bytes
    return {**loss, "frames_lost": loss["kernel_dropped"] + loss["buffer_dropped"],
            "tcp_gaps": gaps, "tcp_lost_bytes": lost, "resync_skipped_bytes": skipped}


def capture_loss_lines(loss: dict[str, Any]) -> list[str]:
    """``--summary``'s closing lines of a live capture: the drops, then the TCP gaps."""
    gaps = (f"{loss['tcp_gaps']:,} TCP gaps in the flows above: {loss['tcp_lost_bytes']:,} "
            f"bytes missing, {loss['resync_skipped_bytes']:,} more bytes after the gaps "
            "skipped to the next packet header")
    return [f"capture   {capture_loss_text(loss)}", f"  gaps    {gaps}"]


__all__ = ["MAX_GAPS_LISTED", "FlowStats", "capture_loss_json", "capture_loss_lines",
           "capture_loss_text"]
