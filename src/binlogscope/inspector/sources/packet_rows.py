"""The rows of a stream of session events: their columns, and what a row shows.

:class:`PacketRows` holds the compact per-row columns a :class:`~binlogscope.inspector.sources.
packets.PacketStreamSource` fills as it takes items in (the indexer, in ``packets.py``) and
answers the :class:`~binlogscope.inspector.source.RowSource` questions from them: a row, its
search text and position, its tree and bytes (the kept tree of the last :data:`TREE_WINDOW`
rows, else re-decoded from the payload), its JSON for an export.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from binlogscope.drivers.live.setup import SetupStep
from binlogscope.inspector.redecode import ContextLog, redecode_packet
from binlogscope.inspector.source import (
    KINDS,
    Detail,
    Row,
    RowSignal,
    SourceInfo,
    masked_detail,
)
from binlogscope.inspector.text_column import TextColumn
from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import session_event_json
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.node import Node

#: rows whose session-built tree is kept; older rows are re-decoded from their bytes
TREE_WINDOW = 2000
#: default cap on the packet bytes kept (the oldest rows lose theirs first)
MAX_RAW_BYTES = 256 << 20


@dataclass(slots=True)
class _Conn:
    """What one connection's rows show besides the packet (phase, setup step, binlog file)."""

    phase: int = 0
    step: int = -1  # index into steps
    file: int = -1  # current binlog file (index into _files)


class PacketRows:
    """The rows' columns and the :class:`RowSource` answers over them (the indexer fills
    them: :class:`~binlogscope.inspector.sources.packets.PacketStreamSource`)."""

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

    def __init__(self, *, label: str = "stream", tree_window: int = TREE_WINDOW,
                 max_raw_bytes: int = MAX_RAW_BYTES) -> None:
        self.label = label
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
        #: a binlog event's (type column, colour class) by its type code (events without error),
        #: as indexes (into ``_type_names`` and KINDS)
        self._type_kinds: dict[int, tuple[int, int]] = {}
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


    # ------------------------------------------------------------------ ingest helpers
    def _conn_state(self, conn: int) -> _Conn:
        c = self._conns[conn] = _Conn()
        return c

    @property
    def phase(self) -> int:
        """Where the connection of the latest row is (index into :data:`PHASES`)."""
        return self._c.phase


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


__all__ = ["MAX_RAW_BYTES", "TREE_WINDOW", "PacketRows"]
