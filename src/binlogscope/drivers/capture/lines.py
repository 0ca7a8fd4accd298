"""A flow's server event packets written as ``pcap --json`` lines by the native kernel:
:class:`CaptureLines`, the :class:`~binlogscope.session.packets.StreamLines` a capture gives
its flow's session when the output is ``--json`` lines of every item (``cli/pcap.py``).

The writer and its context come from ``render/line_layout.py`` (``packet_lines``: the template
derived from ``render/shapes.py``'s capture item, passed in by the command, as drivers do not
import render); this keeps them told what the session and the capture know: the decoder's
context, the open transaction's GTID, where the next event of the file starts and the file's
name (from the session's coordinates), and each packet's capture frame and time (the frame its
first byte arrived in, as :func:`~binlogscope.drivers.capture.drain.drain` finds it for the
packets the Python path decodes). A compressed flow's packets are not written by the kernel
(their offsets are in the inflated bytes: the frame map is the frames').
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from binlogscope.drivers.capture.conns import Direction
from binlogscope.session.packets import CoordLines
from binlogscope.session.state import ConnState
from binlogscope.wire.binlog.coords import CoordTracker

if TYPE_CHECKING:
    from binlogscope.drivers.items import Flow

#: what the command gives: a flow -> (the kernel's line writer, the context it is told:
#: ``render/line_layout.LineContext``[, the CaptureLines class that keeps them told]), or None
#: (no kernel, a shape it cannot write)
PacketLines = Callable[["Flow"], "tuple[Any, Any] | tuple[Any, Any, Any] | None"]
_NEVER = 1 << 62


def frame_at(frames: Sequence[tuple[int, int, float]], at: int) -> tuple[int, float, int]:
    """(frame, time, where the next frame starts) of the bytes at ``at`` in a direction's
    frames map (``(offset, frame, time)`` in order): the last frame that starts at or before
    it (``Direction.frame_at`` without consuming the map, which the items' drain still
    reads); frame 0 at time 0 in an empty map."""
    n = len(frames)
    k = 0
    while k + 1 < n and frames[k + 1][0] <= at:
        k += 1
    frame, ts = (frames[k][1], frames[k][2]) if n else (0, 0.0)
    return frame, ts, frames[k + 1][0] if k + 1 < n else _NEVER


class CaptureLines(CoordLines):
    """The :class:`~binlogscope.session.packets.StreamLines` of one flow's server direction."""

    def __init__(self, line: Any, context: Any, server: Direction) -> None:
        self.line = line
        self.context = context
        self.server = server
        #: packets from this offset on are in a frame not looked up yet
        self.until = -1
        self.keep = False
        self._texts: list[bytes] = [b"0", b"0.0", b"null"]
        self._file: Any = self  # (the binlog file the text is of: none yet)

    def sync(self, state: ConnState, coords: CoordTracker) -> bool:
        if self.server.plain_map:  # (compressed: not the kernel's)
            return False
        self.context.sync(state.ctx)
        line = self.line
        line.packet = 3 if state.semi_sync else 1
        self.until = -1
        self._coords(coords)
        return True

    def where(self, at: int) -> None:
        """The frame and time of the packet at ``at`` (the last frame that starts at or
        before it: ``Direction.frame_at`` without consuming the map, which the items' drain
        still reads)."""
        frame, ts, self.until = frame_at(self.server.frames, at)
        texts = self._texts
        text = self.context.text
        texts[0] = text(frame)
        texts[1] = text(round(ts, 6))
        self.line.texts = tuple(texts)


__all__ = ["CaptureLines", "PacketLines"]
