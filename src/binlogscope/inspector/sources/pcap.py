"""A pcap/pcapng capture (``binlogscope pcap FILE``) as a :class:`RowSource`.

A thin adapter: :func:`~binlogscope.drivers.pcap.read_capture` items become
:class:`~binlogscope.inspector.sources.packets.StreamItem` objects (flow number, frame,
capture time).
Capture items carry no packet bytes, so the hex pane shows a binlog event's own bytes (the packet
header and the semi-sync bytes have a tree but no hex) and other packets' trees without hex.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from binlogscope.drivers.pcap import CaptureError, read_capture
from binlogscope.events import PacketDecoded
from binlogscope.inspector.sources.packets import PacketStreamSource, StreamItem


def _wire(ev: object) -> bytes | None:
    """The packet's bytes on the wire (header + payload) when it came in one fragment."""
    if not isinstance(ev, PacketDecoded) or ev.wire_length != len(ev.payload) + 4:
        return None
    return len(ev.payload).to_bytes(3, "little") + bytes([ev.seq & 0xFF]) + ev.payload


class PcapSource(PacketStreamSource):
    live = False

    def __init__(self, path: str | Path, *, ports: Iterable[int] | None = None) -> None:
        super().__init__(label=str(path))
        self.path = Path(path)
        self.ports = list(ports) if ports else None

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[StreamItem]:
        try:
            # no trees while reading (a million packets stay fast and small); a row's tree is
            # decoded from its wire bytes when it is selected
            for it in read_capture(str(self.path), self.ports, record=False):
                if cancelled():
                    return
                if it.kind == "flow":
                    yield StreamItem(kind="note", text=f"flow {it.flow.id}: {it.flow.name} "
                                     f"({it.text})", time=it.timestamp, conn=it.flow.id,
                                     frame=it.frame)
                elif it.kind in ("note", "error"):
                    yield StreamItem(kind=it.kind, text=it.text, time=it.timestamp,
                                     conn=it.flow.id, frame=it.frame)
                else:
                    yield StreamItem(event=it.event, time=it.timestamp, conn=it.flow.id,
                                     frame=it.frame, raw=_wire(it.event))
        except CaptureError as exc:
            self.fatal = str(exc)


__all__ = ["PcapSource"]
