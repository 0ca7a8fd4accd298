"""The replica's server event packets written as ``live --json`` (or ``--brief``) lines by the
native kernel:
:class:`LiveLines`, the :class:`~binlogscope.session.packets.StreamLines` the stream gives its
session when the command's output is every item as a ``--json`` line (``cli/live.py``: no
``--count``, ``--state``, table filter or ``--lag-every``, which read each event; ``--brief``
the same, with ``brief_lines``' text template).

The writer and its context come from ``render/line_layout.py`` (``packet_lines(None)``: the
template derived from ``render/shapes.py``'s ``live_item_json``, handed in by the command as
drivers do not import render); this keeps them told what the session knows: the decoder's
context, the open transaction's GTID, where the next event of the file starts and the file's
name (the session's coordinates), and the time the read's bytes arrived (the packets'
``wire_time``). The written packets' events are kept in their
:class:`~binlogscope.session.events.LinesWritten` (``keep``): the stream moves the replica's
restart point over them (``PositionTracker.written``). A packet asking for a semi-sync ACK is
declined (its template has no text for that flag): the stream acknowledges it as always.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from binlogscope.session.packets import CoordLines, PacketDecoder
from binlogscope.session.state import ConnState
from binlogscope.wire.binlog.coords import CoordTracker

#: what the command gives: () -> (the kernel's line writer, the context it is told:
#: ``render/line_layout.LineContext``), or None (no kernel, a shape it cannot write)
ReplicaLines = Callable[[], "tuple[Any, Any] | None"]
_NEVER = 1 << 62


class LiveLines(CoordLines):
    """The :class:`~binlogscope.session.packets.StreamLines` of the replica's stream."""

    def __init__(self, line: Any, context: Any, packets: PacketDecoder) -> None:
        self.line = line
        self.context = context
        self.packets = packets
        self.until = _NEVER  # (one arrival time per read: nothing to look up per packet)
        self.keep = True
        self._texts: list[bytes] = [b"null", b"null", b"null"]
        self._file: Any = self  # (the binlog file the text is of: none yet)
        self._now: Any = self

    def sync(self, state: ConnState, coords: CoordTracker) -> bool:
        self.context.sync(state.ctx)
        line = self.line
        line.packet = 3 if state.semi_sync else 1
        now = self.packets.now
        if now is not self._now:
            self._now = now
            self._texts[1] = self.context.text(None if now is None else round(now, 6))
            self._file = self  # (the texts are set again below)
        self._coords(coords)
        return True

    def where(self, at: int) -> None:
        return None


__all__ = ["LiveLines", "ReplicaLines"]
