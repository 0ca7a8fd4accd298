"""A stream of session events (live replica, pcap flows) as a :class:`RowSource`.

Generic on purpose: a producer yields :class:`SourceItem` objects - a
:class:`~binlogscope.session.events.SessionEvent` with optional connection/flow number, capture
frame and
timestamp, or a setup step / note / error - and :class:`PacketStreamSource` turns them into rows.
``binlogscope live`` feeds it from the replica's store (:mod:`binlogscope.inspector.sources.live`),
``binlogscope pcap`` from ``read_capture`` (:mod:`binlogscope.inspector.sources.pcap`); any other
driver plugs in with a generator.

Memory stays bounded for long sessions: per row only compact columns, the summary text, the
packet's payload (kept on every decoded packet) and the id of its decode context
(:class:`~binlogscope.inspector.redecode.ContextLog`) are kept; the decoded Node tree is kept for
the last :data:`TREE_WINDOW` rows and re-decoded on demand for older ones
(:func:`~binlogscope.inspector.redecode.redecode_packet`). Payloads are capped at
``max_raw_bytes``: the oldest rows lose theirs first and say so in their detail.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.setup import SetupStep
from binlogscope.inspector.packet_text import (
    fit,
    packet_kind,
    packet_summary,
    type_name,
    why_for_query,
)
from binlogscope.inspector.redecode import ContextLog, redecode_packet
from binlogscope.inspector.source import (
    KINDS,
    PHASE_DOCS,
    PHASES,
    Detail,
    Row,
    RowSignal,
    SourceInfo,
    masked_detail,
)
from binlogscope.inspector.sources.binlog_file import _alg_name, row_summary
from binlogscope.inspector.text_column import TextColumn
from binlogscope.pipeline.filter import event_table
from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import session_event_json
from binlogscope.session.events import (
    CompressedFrame,
    ConnectionClosed,
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    PhaseChanged,
    SequenceMismatch,
    TlsStarted,
)
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.node import Node

#: rows whose session-built tree is kept; older rows are re-decoded from their bytes
TREE_WINDOW = 2000
#: default cap on the packet bytes kept (the oldest rows lose theirs first)
MAX_RAW_BYTES = 256 << 20

_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
_OTHER = _KIND_INDEX["other"]
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)


def info_node(name: str, value: str, doc: str, error: str | None = None) -> Node:
    """A zero-length node for a row that is not a packet (a setup step, a note, a phase)."""
    return Node(name, 0, 0, value, "", value, doc, (), error)


@dataclass(slots=True)
class _Conn:
    """What one connection's rows show besides the packet (phase, setup step, binlog file)."""

    phase: int = 0
    step: int = -1  # index into steps
    file: int = -1  # current binlog file (index into _files)


class PacketStreamSource:
    """Rows from :class:`SourceItem` objects; subclasses (or ``items``) produce them."""

    columns: frozenset[str] = frozenset({"direction", "seq", "semi_sync", "wire_time"})
    live = False
    paused = False
    #: what pausing does, for the notification (live sources; a finite stream has no pause)
    pause_doc = ""

    def set_paused(self, paused: bool) -> None:
        """Live sources freeze what they show (or stop taking items); a finite stream has
        nothing to pause."""

    def stop(self) -> None:
        """Live sources close their connection; nothing to do for a finite stream."""

    def __init__(self, items: Iterable[SourceItem] | None = None, *, label: str = "stream",
                 tree_window: int = TREE_WINDOW, max_raw_bytes: int = MAX_RAW_BYTES) -> None:
        self.label = label
        self._items = items
        #: the time of rows whose item has none (tests pin it)
        self.clock: Callable[[], float] = time.time
        self.tree_window = tree_window
        self.max_raw_bytes = max_raw_bytes
        self._lock = threading.Lock()
        self._n = 0
        self._time = array("d")
        self._len = array("q")
        self._dir = array("b")  # 0 none, 1 client, 2 server
        self._seq = array("h")  # -1 none
        self._semi = array("b")  # 0 none, 1 0xEF no ACK wanted, 2 ACK requested, 3 sent ACK
        self._type = array("H")
        self._kind = array("B")
        self._table = array("i")
        self._log_pos = array("q")  # -1 none
        self._offset = array("q")
        self._conn = array("H")
        self._frame = array("q")  # -1 none
        self._phase = array("b")
        self._stepi = array("i")  # -1 none
        self._file = array("i")  # binlog file at that row, -1 none
        self._fpos = array("q")  # a binlog event's offset in that file, -1 none
        self._gtid = array("i")  # the event's transaction GTID (index into _gtids), -1 none
        # one entry per transaction as the rows go by (a stream's GTIDs are all different:
        # a str and a dict entry each cost ~90 bytes, ~30 MB for 1.6 M events)
        self._gtids = TextColumn()
        self._last_gtid: str | None = None
        self._ctx = array("i")  # decode context id (in _contexts), -1: not a packet
        self._pkind = array("H")  # the session's packet kind (interned in _type_names)
        self._summaries = TextColumn()
        #: the row columns in the order :meth:`_append` gathers them
        self._columns: tuple[array[Any], ...] = (
            self._time, self._len, self._dir, self._seq, self._semi, self._type, self._pkind,
            self._kind, self._table, self._log_pos, self._offset, self._conn, self._frame,
            self._phase, self._stepi, self._file, self._fpos, self._gtid, self._ctx)
        #: rows gathered before they are published together (1: each at once, as a live
        #: stream needs; a capture file's source gathers a few hundred: one store per column)
        self.publish_every = 1
        self._pending: list[tuple[Any, ...]] = []
        self._pending_text: list[str] = []
        self._payload: list[bytes | None] = []  # the packet's payload (re-decoding, hex pane)
        self._errors: set[int] = set()
        self._ack_pos: dict[int, int] = {}
        self._info: dict[int, Node] = {}  # non-packet rows: their (tiny) detail node
        self._recent: OrderedDict[int, PacketDecoded] = OrderedDict()
        self._raw_bytes = 0
        self._raw_dropped = 0  # rows [0, _raw_dropped) may have lost their bytes
        self._type_names: list[str] = []
        #: a binlog event's (type column, colour class) by its type code (events without error)
        self._type_kinds: dict[int, tuple[str, str]] = {}
        self._type_index: dict[str, int] = {}
        self._tables: list[str] = []
        self._table_index: dict[str, int] = {}
        self._files: list[str] = []
        self._file_index: dict[str, int] = {}
        self.steps: list[SetupStep] = []
        #: the decode context of every packet (re-decoding rows without their tree)
        self._contexts = ContextLog()
        # per connection (pcap flows interleave): phase, step and file as the rows went by
        self._conns: dict[int, _Conn] = {}
        self._c = self._conn_state(0)
        self.server_version = ""
        self.checksum = ""
        self.binlog_events = 0
        self._rate: deque[tuple[float, int]] = deque(maxlen=64)
        self._done = False
        self.fatal: str | None = None
        #: called after each row and at the end (the TUI takes rows in on a message)
        self.changed = RowSignal()

    # ------------------------------------------------------------------ producing
    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        """The items to show (subclasses override; the default iterates ``items``)."""
        return self._items or ()

    def run(self, cancelled: Callable[[], bool]) -> None:
        try:
            for item in self.produce(cancelled):
                if cancelled():
                    return
                self.add(item)
        except Exception as exc:  # a producer bug must show, not kill the worker silently
            self.fatal = f"{type(exc).__name__}: {exc}"
        finally:
            self._publish()
            self._done = True
            self.changed()

    def add(self, item: SourceItem) -> None:
        """Take one item in (called by :meth:`run`, from the worker thread)."""
        c = self._conns.get(item.conn)
        self._c = c if c is not None else self._conn_state(item.conn)
        ts = item.time if item.time is not None else self.clock()
        ev = item.event
        if type(ev) is PacketDecoded and item.kind == "packet":  # the common case first
            self._add_packet(ts, item, ev)
            return
        if item.kind == "step" and item.step is not None:
            st = item.step
            self.steps.append(st)
            self._c.step = len(self.steps) - 1
            if st.phase in PHASES:
                self._c.phase = PHASES.index(st.phase)
            self._add_info(ts, item, "STEP", "step", f"[{st.phase}] {st.what}  - {st.why}",
                           info_node("setup_step", st.what, st.why))
            return
        if item.kind == "health":  # live: the lag at one moment, or a state change
            why = ("the connection's state changed (drivers/live/states.py: idle, streaming, "
                   "stalled or half-open, recovered, reconnect)"
                   if item.health is not None and "state" in item.health else
                   "the server's head (SHOW MASTER STATUS or a heartbeat) against what was "
                   "consumed")
            self._add_info(ts, item, "HEALTH", "health", item.text,
                           info_node("health", item.text, why))
            return
        if item.kind in ("note", "error") or ev is None:
            err = item.kind == "error"
            self._add_info(ts, item, "ERROR" if err else "NOTE", "error" if err else "note",
                           item.text, info_node(item.kind, item.text, "",
                                                item.text if err else None), error=err)
            return
        if isinstance(ev, PacketDecoded):
            self._add_packet(ts, item, ev)
        elif isinstance(ev, PhaseChanged):
            self._phase_changed(ev)
            self._add_info(ts, item, "PHASE", "note",
                           f"{ev.old.value} -> {ev.new.value}: {ev.reason}",
                           info_node("phase", f"{ev.old.value} -> {ev.new.value}", ev.reason))
        elif isinstance(ev, DecodeError):
            self._add_info(ts, item, "DECODE_ERROR", "error", ev.message,
                           ev.node or info_node("decode_error", ev.message, "", ev.message),
                           error=True, direction=ev.direction, offset=ev.offset)
        elif isinstance(ev, SequenceMismatch):
            msg = f"sequence id {ev.got}, expected {ev.expected}"
            self._add_info(ts, item, "SEQUENCE_MISMATCH", "error", msg,
                           info_node("sequence_mismatch", msg,
                                     "a packet's sequence id is not the next one: a lost or "
                                     "duplicated packet, or a peer bug", msg),
                           error=True, direction=ev.direction, offset=ev.offset)
        elif isinstance(ev, TlsStarted):
            self._add_info(ts, item, "TLS", "handshake",
                           "terminated by the proxy: the decrypted bytes follow" if ev.terminated
                           else "the rest of the connection is encrypted", ev.node,
                           direction=ev.direction, offset=ev.offset)
        elif isinstance(ev, CompressedFrame):
            f = ev.frame
            how = (f"{f.algorithm} {f.compressed_length} -> {f.uncompressed_length} bytes"
                   if f.uncompressed_length else f"stored, {f.compressed_length} bytes")
            msg = f"frame #{f.sequence_id}: {how} (the packets below it came in it)"
            self._add_info(ts, item, "COMPRESSED_FRAME", "note", msg,
                           ev.node or info_node("compressed_frame", msg,
                                                "a frame of the compressed protocol", msg),
                           direction=ev.direction, offset=ev.offset)
        elif isinstance(ev, ConnectionClosed):
            self._add_info(ts, item, "CLOSED", "note", f"{ev.direction.value} closed the "
                           "connection", info_node("closed", ev.direction.value,
                                                   "end of this direction's byte stream"),
                           direction=ev.direction, offset=ev.offset)

    # ------------------------------------------------------------------ ingest helpers
    def _conn_state(self, conn: int) -> _Conn:
        c = self._conns[conn] = _Conn()
        return c

    @property
    def phase(self) -> int:
        """Where the connection of the latest row is (index into :data:`PHASES`)."""
        return self._c.phase

    def _phase_changed(self, ev: PhaseChanged) -> None:
        new = ev.new
        if new == Phase.AUTH:
            self._c.phase = max(self._c.phase, 1)
        elif new == Phase.COMMAND and ev.old == Phase.AUTH:
            self._c.phase = max(self._c.phase, 2)
        elif new == Phase.BINLOG_STREAM:
            self._c.phase = max(self._c.phase, 4)

    def _intern(self, names: list[str], index: dict[str, int], name: str) -> int:
        i = index.get(name)
        if i is None:
            i = index[name] = len(names)
            names.append(name)
        return i

    def _append(self, ts: float, item: SourceItem, type_name: str, kind: str, summary: str, *,
                length: int = 0, direction: Peer | None = None, seq: int = -1, semi: int = 0,
                table: int = -1, log_pos: int = -1, offset: int = 0, ctx: int = -1,
                payload: bytes | None = None, error: bool = False, pkind: str = "",
                file_pos: int = -1, gtid: int = -1) -> int:
        """Take a new row's columns in; they are published with :meth:`_publish` (at once
        unless ``publish_every`` says to gather rows first)."""
        pending = self._pending
        n = self._n + len(pending)
        ti = self._type_index
        t = ti.get(type_name)
        if t is None:
            t = self._intern(self._type_names, ti, type_name)
        pk = ti.get(pkind)
        if pk is None:
            pk = self._intern(self._type_names, ti, pkind)
        c = self._c
        pending.append((ts, length,
                        0 if direction is None else 1 if direction == Peer.CLIENT else 2,
                        seq, semi, t, pk, _KIND_INDEX.get(kind, _OTHER), table, log_pos, offset,
                        item.conn & 0xFFFF, -1 if item.frame is None else item.frame,
                        c.phase, c.step, c.file, file_pos, gtid, ctx))
        self._pending_text.append(summary)
        payload = self._keep(item, payload)
        self._payload.append(payload)
        if payload is not None:
            self._raw_bytes += len(payload)
            self._trim_raw()
        if error:
            self._errors.add(n)
        if len(pending) >= self.publish_every:
            self._publish()
        return n

    def _publish(self) -> None:
        """Store the gathered rows' columns, then publish them (the length changes last)."""
        rows = self._pending
        if not rows:
            return
        if len(rows) == 1:
            for col, v in zip(self._columns, rows[0], strict=True):
                col.append(v)
        else:
            for col, vals in zip(self._columns, zip(*rows, strict=True), strict=True):
                col.extend(vals)
        self._summaries.extend(self._pending_text)
        self._pending = []
        self._pending_text = []
        self._n += len(rows)
        self.changed()

    def _keep(self, item: SourceItem, payload: bytes | None) -> bytes | None:
        """The payload a new row keeps (a capture file's source leaves it in the file)."""
        return payload

    def _trim_raw(self) -> None:
        # (the row being added counts too: a payload over the cap on its own is not kept)
        while self._raw_bytes > self.max_raw_bytes and self._raw_dropped < len(self._payload):
            old = self._payload[self._raw_dropped]
            if old is not None:
                self._raw_bytes -= len(old)
                self._payload[self._raw_dropped] = None
            self._raw_dropped += 1

    def _add_info(self, ts: float, item: SourceItem, type_name: str, kind: str, summary: str,
                  node: Node, *, error: bool = False, direction: Peer | None = None,
                  offset: int = 0) -> None:
        n = self._append(ts, item, type_name, kind, fit(summary), direction=direction,
                         offset=offset, error=error)
        self._info[n] = node

    def _add_packet(self, ts: float, item: SourceItem, ev: PacketDecoded) -> None:
        v = ev.value
        k = ev.kind
        contexts = self._contexts
        cid = contexts.observe(ev, item.conn)
        if k == "handshake_v10" and v is not None:
            self._c.phase = 0
            self.server_version = self.server_version or v.server_version
        elif k == "com_register_slave":
            self._c.phase = 3
        elif k in ("com_binlog_dump", "com_binlog_dump_gtid"):
            self._c.phase = 4
        elif k == "com_query" and v is not None and item.step is None:
            why = why_for_query(v.query)
            if why is not None and not (self.steps and self.steps[self._c.step].sql == v.query):
                self.steps.append(SetupStep("setup", why[0], why[1], v.query))
                self._c.step = len(self.steps) - 1
        semi = 0
        if ev.semi_sync is not None:
            semi = 2 if ev.semi_sync.ack_requested else 1
        table = log_pos = file_pos = gtid = -1
        bev = ev.binlog_event
        if bev is not None:
            self._c.phase = 5
            self.binlog_events += 1
            h = bev.header
            if h is not None:
                log_pos = h.log_pos
                if h.type_code == _FDE:
                    if contexts.server_version:
                        self.server_version = contexts.server_version
                    if contexts.checksum_alg is not None:
                        self.checksum = _alg_name(contexts.checksum_alg)
            # the coordinates the session's tracker gave the event (docs/coordinates.md)
            if bev.binlog_file is not None:
                self._c.file = self._intern(self._files, self._file_index, bev.binlog_file)
            if bev.file_pos is not None:
                file_pos = bev.file_pos
            trx_gtid = bev.trx_gtid
            if trx_gtid is not None:
                if trx_gtid != self._last_gtid:
                    self._gtids.append(trx_gtid)
                    self._last_gtid = trx_gtid
                gtid = len(self._gtids) - 1
            schema, name = event_table(bev)
            if name is None:
                tm = contexts.table(cid)
                if tm is not None:
                    schema, name = tm.schema, tm.table
            if name is not None:
                table = self._intern(self._tables, self._table_index, f"{schema}.{name}")
            summary = row_summary(bev)
            if ev.error and ev.error != bev.error:
                summary = fit(f"{summary} ERROR {ev.error}")
            if h is not None and not ev.error and not bev.error:  # the common case: by type
                tk = self._type_kinds.get(h.type_code)
                if tk is None:
                    tk = self._type_kinds[h.type_code] = (type_name(ev), packet_kind(ev))
                tname, pk = tk
            else:
                tname, pk = type_name(ev), packet_kind(ev)
        else:
            summary = packet_summary(ev)
            tname, pk = type_name(ev), packet_kind(ev)
        if k == "semi_sync_ack" and v is not None:
            semi = 3
        n = self._append(ts, item, tname, pk, summary,
                         length=ev.payload_length, direction=ev.direction, seq=ev.seq, semi=semi,
                         table=table, log_pos=log_pos, offset=ev.offset, ctx=cid,
                         payload=ev.payload, error=bool(ev.error) or k == "err", pkind=k,
                         file_pos=file_pos, gtid=gtid)
        if semi == 3:
            self._ack_pos[n] = v.binlog_pos
        if ev.node is not None:
            self._recent[n] = ev
            while len(self._recent) > self.tree_window:
                self._recent.popitem(last=False)

    # ------------------------------------------------------------------ RowSource
    def __len__(self) -> int:
        return self._n

    def row(self, index: int) -> Row:
        name = self._type_names[self._type[index]]
        d = self._dir[index]
        semi = self._semi[index]
        t = self._table[index]
        lp = self._log_pos[index]
        ts = self._time[index]
        fp = self._fpos[index]
        f = self._file[index]
        return Row(
            index=index, time=None if math.isnan(ts) else ts, length=self._len[index],
            event_type=name, offset=self._offset[index], summary=self._summaries[index],
            table=self._tables[t] if t >= 0 else None, log_pos=lp if lp >= 0 else None,
            error=index in self._errors, kind=KINDS[self._kind[index]],
            direction=None if d == 0 else "->" if d == 1 else "<-",
            seq=None if self._seq[index] < 0 else self._seq[index],
            semi_sync=self._semi_text(index, semi),
            binlog_file=self._files[f] if f >= 0 and fp >= 0 else None,
            file_pos=fp if fp >= 0 else None,
            frame=None if self._frame[index] < 0 else self._frame[index],
            flow=self._conn[index],
            gtid=self._gtids[g] if (g := self._gtid[index]) >= 0 else None)

    def _semi_text(self, index: int, semi: int) -> str | None:
        if semi == 1:
            return "ef"
        if semi == 2:
            return "ef ACK?"
        if semi == 3:
            return f"ACK {self._ack_pos.get(index, '')}"
        return None

    def search_text(self, index: int) -> str:
        t = self._table[index]
        d = self._dir[index]
        where = "" if d == 0 else "client" if d == 1 else "server"
        return (f"{self._type_names[self._type[index]]} {self._tables[t] if t >= 0 else ''} "
                f"{self._summaries[index]} {where}").lower()

    def position(self, index: int) -> str:
        lp = self._log_pos[index]
        f = self._file[index]
        if lp > 0 and f >= 0:
            where = f"{self._files[f]}:{lp}"
        else:
            d = self._dir[index]
            where = f"{'client' if d == 1 else 'server' if d == 2 else 'session'}" \
                    f"@{self._offset[index]}"
        fr = self._frame[index]
        conn = self._conn[index]
        pre = f"[{conn}] " if conn else ""
        return pre + where + (f" frame {fr}" if fr >= 0 else "")

    def find_offset(self, offset: int) -> int | None:
        """The binlog event whose bytes hold file position ``offset`` (its log_pos is past it)."""
        best = None
        for i in range(len(self)):  # (the rows shown: a paused live capture holds the rest)
            lp = self._log_pos[i]
            if lp <= 0:
                continue
            start = lp - (self._len[i] - 1 - (2 if self._semi[i] in (1, 2) else 0))
            if start <= offset < lp:
                return i
            if best is None and lp > offset:
                best = i
        return best

    def phase_at(self, index: int | None) -> tuple[int, int, SetupStep | None]:
        """(phase of the row's connection now, phase at row ``index``, the setup step behind
        the row); no row: the latest connection's."""
        if index is None or not 0 <= index < self._n:
            return self.phase, self.phase, self.steps[self._c.step] if self._c.step >= 0 else None
        si = self._stepi[index]
        # "now" is where the row's own connection is (captures interleave flows)
        c = self._conns.get(self._conn[index])
        now = c.phase if c is not None else self.phase
        return now, self._phase[index], self.steps[si] if si >= 0 else None

    def info(self) -> SourceInfo:
        extra: dict[str, str] = {}
        if self.live:
            now = time.monotonic()
            rate = self._rate
            rate.append((now, self.binlog_events))
            while len(rate) > 2 and now - rate[0][0] > 5.0:
                rate.popleft()
            t0, n0 = rate[0]
            eps = (self.binlog_events - n0) / (now - t0) if now - t0 > 0.3 else 0.0
            extra["events/s"] = f"{eps:,.0f}"
        if self._raw_dropped:
            # memory bound: the oldest rows gave their bytes back (their rows stay)
            extra["no hex"] = (f"for rows 1-{self._raw_dropped:,} (only the last "
                               f"{self.max_raw_bytes >> 20:,} MiB of packet bytes are kept)")
        return SourceInfo(label=self.label, server_version=self.server_version,
                          checksum=self.checksum, events=self.binlog_events, rows=self._n,
                          errors=len(self._errors),
                          done=self._done, fatal=self.fatal, extra=extra)

    # ------------------------------------------------------------------ details
    def detail(self, index: int) -> Detail:
        """The row's tree and bytes, secrets (scramble, auth response) masked."""
        info = self._info.get(index)
        if info is not None:
            return masked_detail(info, b"", info.offset, info.error)
        ev = self.packet(index)
        if ev is None or ev.node is None:
            msg = ("the packet's bytes were dropped to bound memory (the oldest rows lose "
                   f"theirs first beyond {self.max_raw_bytes >> 20:,} MiB) and this source "
                   "cannot read them again")
            node = Node("packet", self._offset[index], 0, None, "", "(no tree)", msg, (), msg)
            return Detail(node=node, raw=b"", base=self._offset[index], error=msg)
        # the packet as it was on the wire: the framing is rebuilt from the payload; scrambles
        # and auth data masked as on every other surface
        return masked_detail(ev.node, encode_packet(ev.payload, ev.seq), ev.offset, ev.error)

    def packet(self, index: int) -> PacketDecoded | None:
        """The decoded packet of row ``index`` with its tree: the kept one, else re-decoded."""
        ev = self._recent.get(index)
        if ev is not None and ev.node is not None:
            return ev
        return self.redecoded(index) or ev

    def payload(self, index: int) -> bytes | None:
        """The row's packet payload, None when not kept (a capture reads it again)."""
        return self._payload[index]

    def redecoded(self, index: int) -> PacketDecoded | None:
        """Row ``index`` decoded again from its payload, with its tree (None: no bytes kept)."""
        cid = self._ctx[index]
        payload = self.payload(index) if cid >= 0 else None
        if payload is None:
            return None
        return redecode_packet(payload, self._type_names[self._pkind[index]],
                               self._contexts.context(cid),
                               direction=Peer.CLIENT if self._dir[index] == 1 else Peer.SERVER,
                               offset=self._offset[index], seq=self._seq[index])

    # ------------------------------------------------------------------ export
    def row_json(self, index: int, tree: bool = False) -> dict[str, Any]:
        r = self.row(index)
        head: dict[str, Any] = {"row": r.number, "time": r.time}
        if self._conn[index]:
            head["conn"] = self._conn[index]
        if self._frame[index] >= 0:
            head["frame"] = self._frame[index]
        info = self._info.get(index)
        if info is not None:
            si = self._stepi[index]
            if r.event_type == "STEP" and si >= 0:
                st = self.steps[si]
                return {**head, "kind": "step", "phase": st.phase, "what": st.what,
                        "why": st.why, "sql": st.sql}
            return {**head, "kind": r.event_type.lower(), "text": r.summary,
                    "direction": {"->": "client", "<-": "server"}.get(r.direction or "")}
        ev = self.packet(index)
        if tree:
            d = self.detail(index)
            return {**head, **d.node.to_dict()}
        obj = session_event_json(ev) if ev is not None else None
        if obj is None:
            obj = {"kind": r.event_type.lower(), "summary": r.summary}
        return {**head, **obj}

    def export_jsonl(self, indices: Sequence[int], out: TextIO, *, tree: bool = False,
                     cancelled: Callable[[], bool] = lambda: False) -> int:
        n = 0
        for i in indices:
            if cancelled():
                break
            out.write(dumps_line(self.row_json(i, tree)).decode())
            n += 1
        return n


__all__ = ["PHASES", "PHASE_DOCS", "PacketStreamSource", "packet_kind",
           "packet_summary", "why_for_query"]
