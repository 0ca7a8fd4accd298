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

This module is the indexer (an item in, a row's columns out); the columns and what a row shows
from them are :class:`~binlogscope.inspector.sources.packet_rows.PacketRows`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.setup import SetupStep
from binlogscope.inspector.packet_text import (
    fit,
    packet_kind,
    packet_summary,
    type_name,
    why_for_query,
)
from binlogscope.inspector.source import (
    KINDS,
    PHASE_DOCS,
    PHASES,
    event_kind,
)
from binlogscope.inspector.sources.binlog_file import (
    _SUMMARY_MAX,
    _alg_name,
    row_summary,
    summary_part,
)
from binlogscope.inspector.sources.packet_index import (
    C_CODE,
    C_ENDS,
    C_ENTRY,
    C_FPOS,
    C_FRAME,
    C_GTID,
    C_LEN,
    C_LOG_POS,
    C_OFFSET,
    C_SEMI,
    C_SEQ,
    C_TIME,
    Run,
)
from binlogscope.inspector.sources.packet_rows import (
    MAX_RAW_BYTES,
    TREE_WINDOW,
    PacketRows,
)
from binlogscope.pipeline.filter import event_table
from binlogscope.session.events import (
    CompressedFrame,
    ConnectionClosed,
    DecodeError,
    LinesWritten,
    PacketDecoded,
    Peer,
    Phase,
    PhaseChanged,
    SequenceMismatch,
    TlsStarted,
)
from binlogscope.wire.binlog.types import EventType, event_type_name
from binlogscope.wire.node import Node

_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
_OTHER = _KIND_INDEX["other"]
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_UNSEEN: Any = object()


def info_node(name: str, value: str, doc: str, error: str | None = None) -> Node:
    """A zero-length node for a row that is not a packet (a setup step, a note, a phase)."""
    return Node(name, 0, 0, value, "", value, doc, (), error)


class PacketStreamSource(PacketRows):
    """Rows from :class:`SourceItem` objects; subclasses (or ``items``) produce them."""

    def __init__(self, items: Iterable[SourceItem] | None = None, *, label: str = "stream",
                 tree_window: int = TREE_WINDOW, max_raw_bytes: int = MAX_RAW_BYTES) -> None:
        super().__init__(label=label, tree_window=tree_window, max_raw_bytes=max_raw_bytes)
        self._items = items
        #: a table's index in ``_tables`` by its (schema, name) (no text built a row)
        self._table_at: dict[tuple[str | None, str], int] = {}
        self._gtid_n = 0  # len(self._gtids)
        self._c_id = 0  # the connection self._c is (the base class starts with 0's)
        self._last_file: str | None = None  # the last binlog file seen and its index
        self._last_file_i = -1
        #: a binlog event body's summary part by its exact type (binlog_file.summary_part)
        self._parts: dict[type, Callable[[Any], str] | None] = {}
        self._quiet = 0  # rows stored since the last notice
        #: the kernel's rows (packet_index.py): each type code's type column and colour class
        self._code_type = [0] * 256
        self._code_kind = bytearray(256)

    # ------------------------------------------------------------------ producing
    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        """The items to show (subclasses override; the default iterates ``items``)."""
        return self._items or ()

    def produce_batches(self, cancelled: Callable[[], bool]) -> Iterable[Sequence[SourceItem]]:
        """:meth:`produce`'s items in batches, taken in between two looks at ``cancelled``
        (a capture file's source gives a frame's items at once; the default: one by one)."""
        for item in self.produce(cancelled):
            yield (item,)

    def run(self, cancelled: Callable[[], bool]) -> None:
        try:
            add = self.add
            for batch in self.produce_batches(cancelled):
                if cancelled():
                    return
                for item in batch:
                    add(item)
        except Exception as exc:  # a producer bug must show, not kill the worker silently
            self.fatal = f"{type(exc).__name__}: {exc}"
        finally:
            self._publish()
            self._done = True
            self.changed()

    def add(self, item: SourceItem) -> None:
        """Take one item in (called by :meth:`run`, from the worker thread)."""
        conn = item.conn
        if conn != self._c_id:  # (a flow's items come in runs)
            c = self._conns.get(conn)
            self._c = c if c is not None else self._conn_state(conn)
            self._c_id = conn
        ts = item.time if item.time is not None else self.clock()
        ev = item.event
        if type(ev) is PacketDecoded and item.kind == "packet":  # the common case first
            self._add_packet(ts, item, ev)
            return
        if type(ev) is LinesWritten:  # (the kernel's rows of event packets: packet_index.py)
            self._add_written(item, cast("Run", ev.data))  # (IndexRows.take()'s, not lines)
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
        self._store()
        self._quiet = 0
        self.changed()

    def _store(self) -> None:
        """Store the gathered rows' columns (the length changes last), without a notice."""
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
        self._quiet += len(rows)
        self._n += len(rows)

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

    def _type_kind(self, ev: PacketDecoded) -> tuple[int, int]:
        """A packet's type column (its index in ``_type_names``) and colour class (in KINDS)."""
        name = type_name(ev)
        t = self._type_index.get(name)
        if t is None:
            t = self._intern(self._type_names, self._type_index, name)
        return t, _KIND_INDEX.get(packet_kind(ev), _OTHER)

    def _add_packet(self, ts: float, item: SourceItem, ev: PacketDecoded) -> None:
        v = ev.value
        k = ev.kind
        contexts = self._contexts
        cid = contexts.observe(ev, item.conn)
        bev = ev.binlog_event
        c = self._c
        semi_sync = ev.semi_sync
        semi = 0 if semi_sync is None else 2 if semi_sync.ack_requested else 1
        err = ev.error
        if bev is not None:  # nearly every row of a capture or a stream: a binlog event
            table = log_pos = file_pos = gtid = -1
            c.phase = 5
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
            bfile = bev.binlog_file
            if bfile is not None:
                if bfile != self._last_file:
                    self._last_file_i = self._intern(self._files, self._file_index, bfile)
                    self._last_file = bfile
                c.file = self._last_file_i
            if bev.file_pos is not None:
                file_pos = bev.file_pos
            trx_gtid = bev.trx_gtid
            if trx_gtid is not None:
                if trx_gtid != self._last_gtid:
                    self._gtids.append(trx_gtid)
                    self._last_gtid = trx_gtid
                    self._gtid_n += 1
                gtid = self._gtid_n - 1
            schema, name = event_table(bev)
            if name is None:
                tm = contexts.table(cid)
                if tm is not None:
                    schema, name = tm.schema, tm.table
            if name is not None:
                table = self._table_at.get((schema, name), -1)
                if table < 0:
                    table = self._table_at[(schema, name)] = self._intern(
                        self._tables, self._table_index, f"{schema}.{name}")
            if h is not None and not err and not bev.error:  # the common case: by type
                # (row_summary's text, its part found by the body's type once)
                body = bev.body
                part = self._parts.get(type(body), _UNSEEN)
                if part is _UNSEEN:
                    part = self._parts[type(body)] = summary_part(type(body))
                if part is None:
                    summary = ""
                else:
                    summary = part(body)
                    if len(summary) > _SUMMARY_MAX:
                        summary = summary[: _SUMMARY_MAX - 3] + "..."
                tk = self._type_kinds.get(h.type_code)
                if tk is None:
                    tk = self._type_kinds[h.type_code] = self._type_kind(ev)
                t, kind = tk
            else:
                summary = row_summary(bev)
                if err and err != bev.error:
                    summary = fit(f"{summary} ERROR {err}")
                t, kind = self._type_kind(ev)
        else:
            table = log_pos = file_pos = gtid = -1
            if k == "handshake_v10" and v is not None:
                c.phase = 0
                self.server_version = self.server_version or v.server_version
            elif k == "com_register_slave":
                c.phase = 3
            elif k in ("com_binlog_dump", "com_binlog_dump_gtid"):
                c.phase = 4
            elif k == "com_query" and v is not None and item.step is None:
                why = why_for_query(v.query)
                if why is not None and not (self.steps and self.steps[c.step].sql == v.query):
                    self.steps.append(SetupStep("setup", why[0], why[1], v.query))
                    c.step = len(self.steps) - 1
            elif k == "semi_sync_ack" and v is not None:
                semi = 3
            summary = packet_summary(ev)
            t, kind = self._type_kind(ev)
        # the row's columns, as _append gathers them (inline: this is the indexer's per-row
        # work for nearly every row of a capture or a live stream)
        pending = self._pending
        n = self._n + len(pending)
        ti = self._type_index
        pk = ti.get(k)
        if pk is None:
            pk = self._intern(self._type_names, ti, k)
        frame = item.frame
        pending.append((ts, ev.payload_length, 1 if ev.direction is Peer.CLIENT else 2, ev.seq,
                        semi, t, pk, kind, table, log_pos, ev.offset, item.conn & 0xFFFF,
                        -1 if frame is None else frame, c.phase, c.step, c.file, file_pos,
                        gtid, cid))
        self._pending_text.append(summary)
        payload = self._keep(item, ev.payload)
        self._payload.append(payload)
        if payload is not None:
            self._raw_bytes += len(payload)
            self._trim_raw()
        if err or k == "err":
            self._errors.add(n)
        if semi == 3:
            self._ack_pos[n] = v.binlog_pos
        if len(pending) >= self.publish_every:
            self._publish()
        if ev.node is not None:
            self._recent[n] = ev
            while len(self._recent) > self.tree_window:
                self._recent.popitem(last=False)

    def _add_written(self, item: SourceItem, run: Run) -> None:
        """A run of the kernel's rows (``packet_index.py``): the columns it wrote, and what
        :meth:`_add_packet` keeps in Python for such an event - the type's and the table's
        interning, the decode context (the run's environment, the table's map: as
        ``ContextLog.observe``), the binlog file, the transaction's GTID."""
        rows, cols, text, entries, gtids, (env, bfile) = run
        if not rows:
            return
        if self._pending:
            self._store()  # (the rows before the run first)
        c = self._c
        c.phase = 5
        self.binlog_events += rows
        if bfile is not None:
            if bfile != self._last_file:
                self._last_file_i = self._intern(self._files, self._file_index, bfile)
                self._last_file = bfile
            c.file = self._last_file_i
        gtid_of = []  # each of the run's transactions' gtid column, as _add_packet finds it
        for gtid in gtids:
            if gtid is None:
                gtid_of.append(-1)
                continue
            if gtid != self._last_gtid:
                self._gtids.append(gtid)
                self._last_gtid = gtid
                self._gtid_n += 1
            gtid_of.append(self._gtid_n - 1)
        codes = cols[C_CODE]
        ti = self._type_index
        for code in dict.fromkeys(codes):  # (new types interned in the order they come)
            if code not in self._type_kinds:
                name = event_type_name(code)
                t = ti.get(name)
                if t is None:
                    t = self._intern(self._type_names, ti, name)
                kind = _KIND_INDEX.get(event_kind(name), _OTHER)
                self._type_kinds[code] = (t, kind)
            self._code_type[code], self._code_kind[code] = self._type_kinds[code]
        pk = ti.get("binlog_event")
        if pk is None:
            pk = self._intern(self._type_names, ti, "binlog_event")
        semi = cols[C_SEMI][0] != 0
        conn = item.conn
        ents = array("i", cols[C_ENTRY])
        cids = self._contexts.run_contexts(conn, env, semi, entries, codes, ents)
        # the table column: each entry's table interned in the order they come
        table_of = [-1]
        for e in entries:
            tm = e[0]
            key = (tm.schema, tm.table)
            table = self._table_at.get(key, -1)
            if table < 0:
                table = self._table_at[key] = self._intern(
                    self._tables, self._table_index, f"{tm.schema}.{tm.table}")
            table_of.append(table)
        n = self._n
        self._time.frombytes(cols[C_TIME])
        self._len.frombytes(cols[C_LEN])
        self._dir.frombytes(b"\x02" * rows)
        self._seq.frombytes(cols[C_SEQ])
        self._semi.frombytes(cols[C_SEMI])
        self._type.extend(map(self._code_type.__getitem__, codes))
        self._pkind.extend(array("H", (pk,)) * rows)
        self._kind.frombytes(codes.translate(self._code_kind))
        self._table.extend(map(table_of.__getitem__, (e + 1 for e in ents))
                           if entries else array("i", (-1,)) * rows)
        self._log_pos.frombytes(cols[C_LOG_POS])
        self._offset.frombytes(cols[C_OFFSET])
        self._conn.extend(array("H", (conn & 0xFFFF,)) * rows)
        self._frame.frombytes(cols[C_FRAME])
        self._phase.extend(array("b", (5,)) * rows)
        self._stepi.extend(array("i", (c.step,)) * rows)
        self._file.extend(array("i", (c.file,)) * rows)
        self._fpos.frombytes(cols[C_FPOS])
        if len(gtid_of) == 1:
            self._gtid.extend(array("i", gtid_of) * rows)
        else:
            self._gtid.extend(map(gtid_of.__getitem__, array("i", cols[C_GTID])))
        self._ctx.extend(cids)
        self._summaries.extend_bytes(text, array("Q", cols[C_ENDS]))
        self._payload.extend([None] * rows)
        self._keep_written(cols)
        self._n = n + rows
        self._quiet += rows
        if self._quiet >= self.publish_every:
            self._publish()

    def _keep_written(self, cols: tuple[bytes, ...]) -> None:
        """The kernel's rows' payload places (a capture file's source: ``pcap.py``)."""


__all__ = ["MAX_RAW_BYTES", "PHASES", "PHASE_DOCS", "TREE_WINDOW", "PacketRows",
           "PacketStreamSource", "packet_kind", "packet_summary", "why_for_query"]
