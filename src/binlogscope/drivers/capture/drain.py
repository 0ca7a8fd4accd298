"""A flow's session events as capture items: :func:`drain`, the step of
:class:`~binlogscope.drivers.capture.flows.CaptureReader` after every feed (each packet gets the
capture frame its first byte arrived in and that frame's time; the lines the native kernel
wrote for server event packets, :class:`~binlogscope.session.events.LinesWritten`, are one item
in their place)."""

from __future__ import annotations

from binlogscope.drivers.capture.conns import Connection, Direction
from binlogscope.drivers.items import SourceItem
from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    LinesWritten,
    PacketDecoded,
    Peer,
    Phase,
    TlsStarted,
)


def drain(conn: Connection, d: Direction, out: list[SourceItem],
           now: tuple[int, float] | None = None) -> None:
    """The session's events as items; ``now``: the frame that closed ``d`` (the frame of
    the events that have no offset: the close and the phase change it makes)."""
    s = conn.session
    assert s is not None
    flow = conn.flow
    append = out.append
    for ev in s.events():
        if type(ev) is PacketDecoded:  # the common case first (same as below)
            direction = ev.direction
            dd = d if direction is d.peer else (
                conn.client if direction is Peer.CLIENT else conn.server)
            at = ev.offset
            pm = dd.plain_map
            if pm:  # (compressed: the wire offset of the frame the packet starts in)
                while len(pm) > 1 and pm[1][0] <= at:
                    pm.popleft()
                at = pm[0][1]
            else:
                dd.last_packet_end = at + ev.wire_length
            fr = dd.frames  # dd.frame_at(at)
            while len(fr) > 1 and fr[1][0] <= at:
                fr.popleft()
            if fr:
                _, frame, ts = fr[0]
            else:
                frame, ts = 0, 0.0
            if direction is Peer.SERVER:
                conn.server_packets += 1
            ev.wire_time = ts
            append(SourceItem("packet", ev, "", None, ts, frame, flow))
            continue
        if type(ev) is LinesWritten:  # (the kernel's lines of server event packets)
            dd = conn.server
            dd.last_packet_end = ev.end
            conn.server_packets += ev.count
            frame, ts = dd.frame_at(ev.offset)
            append(SourceItem("packet", ev, "", None, ts, frame, flow))
            continue
        other = getattr(ev, "direction", None)
        dd = d if other is None or other == d.peer else (
            conn.client if other == Peer.CLIENT else conn.server)
        if isinstance(ev, PacketDecoded):
            frame, ts = dd.frame_at(ev.offset)
            dd.last_packet_end = ev.offset + ev.wire_length
            if ev.direction == Peer.SERVER:
                conn.server_packets += 1
            ev.wire_time = ts
        elif isinstance(ev, CompressedFrame):
            frame, ts = dd.frame_at(ev.offset)
            dd.plain_map.append((ev.frame.plain_offset, ev.offset))
            dd.last_packet_end = ev.offset + ev.frame.wire_length
            flow.compressed = True
        elif isinstance(ev, DecodeError | TlsStarted):
            frame, ts = dd.frame_at(ev.offset)
            if isinstance(ev, TlsStarted):
                flow.encrypted = True
                conn.tls_probe = True
        elif now is not None:
            frame, ts = now
        else:
            frame, ts = (dd.frames[-1][1], dd.frames[-1][2]) if dd.frames else (0, 0.0)
        out.append(SourceItem("packet", ev, "", None, ts, frame, flow))
    if s.phase == Phase.COMPRESSED:
        flow.compressed = True


__all__ = ["drain"]
