"""The TUI index's rows of a capture's server event packets by the native kernel (issue 26).

``session/packets.py`` ``stream_run`` offers each server event packet of a flow to the
kernel's :class:`~binlogscope._native._kernel.IndexRows` (``_native/_pktindex.c``) as it
offers them to ``pcap --json``'s line writer: a TABLE_MAP of the bytes the decoder holds, a
rows event whose table and bitmaps Python declared, a GTID, an ANNOTATE_ROWS, an XID - in
order, with a good CRC32 - becomes a row's numeric columns and summary in the kernel's buffers, and
a run of them one :class:`~binlogscope.session.events.LinesWritten` item in the packets'
place (its ``data``: :data:`Run`); every other packet (a QUERY, FDE, ROTATE, a changed
TABLE_MAP, damage, anything unusual) is declined and decoded by the Python path as before.
The body layouts and the tables' entries are ``render/line_layout.py``'s
(:class:`~binlogscope.render.line_layout.LineContext`, the ones the ``--json`` lines use);
:class:`IndexLines` keeps the kernel told what the session knows (the decoder's context, the
open transaction, where the file's next event starts, each packet's capture frame and time).
The indexer (``packets.py`` ``_add_written``) keeps the interning in Python: the type names,
the tables, the GTIDs, the binlog files, the decode contexts.

``BINLOGSCOPE_PURE_PYTHON=1`` (or no kernel) leaves every packet to the Python path;
``tests/inspector/test_packet_index.py`` holds the two indexes equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlogscope import _native
from binlogscope.drivers.capture.lines import CaptureLines, frame_at
from binlogscope.render.line_layout import LineContext
from binlogscope.session.state import ConnState
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent

if TYPE_CHECKING:
    from binlogscope.drivers.items import Flow

#: what ``IndexRows.take()`` gives (``LinesWritten.data`` of a run): (rows, the columns'
#: bytes - time d, frame q, payload length q, seq h, semi-sync b, type code B, log_pos q,
#: file position q, packet offset q, payload CRC-32 I, table entry i, transaction i, summary
#: ends Q -, the summaries' UTF-8 text, the table entries, the transactions' GTIDs (the one
#: open at the run's first row first, then each GTID event's), (decode env, binlog file))
Run = tuple[int, tuple[bytes, ...], bytes, list[tuple[Any, ...]], list[str | None],
            tuple[Any, str | None]]
C_TIME, C_FRAME, C_LEN, C_SEQ, C_SEMI, C_CODE, C_LOG_POS, C_FPOS, C_OFFSET, C_CRC, C_ENTRY, \
    C_GTID, C_ENDS = range(13)


class IndexLines(CaptureLines):
    """The :class:`~binlogscope.session.packets.StreamLines` of one flow's server direction
    for the index: as ``pcap --json``'s, plus the open transaction (``trx``: the kernel takes
    events inside one only) and the state a run is indexed with (its decode environment and
    binlog file); the frame and time of the packets given as numbers."""

    def sync(self, state: ConnState, coords: CoordTracker) -> bool:
        if not super().sync(state, coords):
            return False
        self._state(state, coords)
        return True

    def seen(self, ev: DecodedEvent, state: ConnState, coords: CoordTracker) -> None:
        self.context.seen(ev, state.ctx)
        self._coords(coords)
        self._state(state, coords)

    def _coords(self, coords: CoordTracker) -> None:
        line = self.line
        line.gtid = coords.open_gtid
        end = coords.end
        line.at = -1 if end is None else end

    def _state(self, state: ConnState, coords: CoordTracker) -> None:
        line = self.line
        line.trx = coords.in_transaction
        env = state.env_now or state.env
        st = line.state
        if st is None or st[0] is not env or st[1] != coords.file:
            line.state = (env, coords.file)

    def where(self, at: int) -> None:
        """The frame and time of the packet at ``at`` (``CaptureLines.where``'s frame)."""
        frame, ts, self.until = frame_at(self.server.frames, at)
        line = self.line
        line.frame = frame
        line.time = ts


def index_rows(flow: Flow) -> tuple[Any, LineContext, type[IndexLines]] | None:
    """The kernel's index writer of ``flow``'s server event packets, its context and the
    :class:`IndexLines` that keeps it told (``read_capture_batches``'s ``lines``), or None
    (no kernel)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    line = kernel.IndexRows()
    return line, LineContext(line), IndexLines


__all__ = ["C_CODE", "C_CRC", "C_ENDS", "C_ENTRY", "C_FPOS", "C_FRAME", "C_GTID", "C_LEN",
           "C_LOG_POS",
           "C_OFFSET", "C_SEMI", "C_SEQ", "C_TIME", "IndexLines", "Run", "index_rows"]
