"""A pcap/pcapng capture (``binlogscope pcap FILE``) as a :class:`RowSource`.

A thin adapter: :func:`~binlogscope.drivers.capture.pcap.read_capture` items become
:class:`~binlogscope.drivers.items.SourceItem` objects (flow number, frame,
capture time). The capture is read without trees (a million packets stay fast and small); a
row's tree is decoded from the packet's payload when it is selected. A row whose payload was
dropped to bound memory (``max_raw_bytes``: big captures, events over 16 MiB) is decoded on
demand from its place in the capture: the capture is read again up to that packet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from binlogscope.drivers.capture.pcap import CaptureError, read_capture
from binlogscope.drivers.items import SourceItem
from binlogscope.inspector.sources.packets import MAX_RAW_BYTES, PacketStreamSource
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.session.oversize import DEFAULT_MAX_PACKET


class PcapSource(PacketStreamSource):
    live = False
    columns = PacketStreamSource.columns | {"frame", "flow"}

    def __init__(self, path: str | Path, *, ports: Iterable[int] | None = None,
                 max_raw_bytes: int = MAX_RAW_BYTES,
                 max_packet: int = DEFAULT_MAX_PACKET) -> None:
        super().__init__(label=str(path), max_raw_bytes=max_raw_bytes)
        self.path = Path(path)
        self.ports = list(ports) if ports else None
        #: ``--max-packet-size``: a longer packet is skipped with an error row (its size)
        self.max_packet = max_packet

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        try:
            for it in read_capture(str(self.path), self.ports, record=False,
                                   max_packet=self.max_packet):
                if cancelled():
                    return
                yield stream_item(it)
        except CaptureError as exc:
            self.fatal = str(exc)

    def payload(self, index: int) -> bytes | None:
        """The row's packet payload: the kept one, else read again from the capture (the
        packet of the same flow, direction and stream offset)."""
        kept = super().payload(index)
        if kept is not None or self._ctx[index] < 0:
            return kept
        flow = self._conn[index]
        offset = self._offset[index]
        direction = Peer.CLIENT if self._dir[index] == 1 else Peer.SERVER
        try:
            for it in read_capture(str(self.path), self.ports, record=False,
                                   max_packet=self.max_packet):
                ev = it.event
                if (isinstance(ev, PacketDecoded) and (it.flow.id & 0xFFFF) == flow
                        and ev.offset == offset and ev.direction == direction):
                    return ev.payload
        except CaptureError:
            return None
        return None


def stream_item(it: SourceItem) -> SourceItem:
    """A capture item (file or live capture) as a row's item: flow number, frame, time."""
    if it.kind == "flow":
        return SourceItem(kind="note", text=f"flow {it.flow.id}: {it.flow.name} ({it.text})",
                          time=it.time, conn=it.flow.id, frame=it.frame)
    if it.kind in ("note", "error"):
        return SourceItem(kind=it.kind, text=it.text, time=it.time, conn=it.flow.id,
                          frame=it.frame)
    return SourceItem(event=it.event, time=it.time, conn=it.flow.id, frame=it.frame)


__all__ = ["PcapSource", "stream_item"]
