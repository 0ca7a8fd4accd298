"""A pcap/pcapng capture (``binlogscope pcap FILE``) as a :class:`RowSource`.

A thin adapter: :func:`~binlogscope.drivers.capture.pcap.read_capture` items become
:class:`~binlogscope.drivers.items.SourceItem` objects (flow number, frame,
capture time). The capture is read without trees (a million packets stay fast and small); a
row's tree is decoded from the packet's payload when it is selected.

A capture file's packet payloads are not kept: a row keeps its place (the frame its first byte
arrived in, its length and sequence id, a CRC-32 of its payload) and the payload is read again
from the file when the row is opened, exported or searched in
(:class:`~binlogscope.drivers.capture.place.PlaceReader`: the frame's TCP direction reassembled
from there). Payloads that are not the capture's bytes as they are - packets of the compressed
protocol, a packet of several wire packets (16 MiB and more) - and every payload of a capture
read from a pipe are kept (up to ``max_raw_bytes``); a payload neither kept nor found by its
place (a lost segment inside it) is read by decoding the capture again up to that packet.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from binlogscope.drivers.capture.pcap import CaptureError, read_capture, read_capture_batches
from binlogscope.drivers.capture.place import PlaceReader, payload_crc
from binlogscope.drivers.items import SourceItem
from binlogscope.inspector.sources.packet_index import C_CRC, C_FRAME, index_rows
from binlogscope.inspector.sources.packets import MAX_RAW_BYTES, PacketStreamSource
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.session.oversize import DEFAULT_MAX_PACKET

#: rows of a capture file published together (a pipe's rows are published as they come)
PUBLISH_EVERY = 256
#: rows of a capture file published one by one before that (the first screen waits for none)
FIRST_ROWS = 1000


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
        #: re-reads payloads by their place (None: a pipe, every payload is kept)
        self.places = PlaceReader(str(path)) if PlaceReader.usable(str(path)) else None
        self._placed = array("b")  # 1: the row's payload is read again by its place
        self._crc = array("I")  # the CRC-32 of a placed row's payload
        #: a file: rows published a few hundred at a time once the first page is out (the first
        #: rows one by one, as they come); a pipe: every row as it comes
        self._gather = self.places is not None

    def _publish(self) -> None:
        super()._publish()
        if self._gather and self._n >= FIRST_ROWS:
            self.publish_every = PUBLISH_EVERY
            self._gather = False

    def _keep(self, item: SourceItem, payload: bytes | None) -> bytes | None:
        """A packet's payload is left in the capture file when it can be read from there."""
        ev = item.event
        if (payload is not None and self.places is not None and item.frame
                and type(ev) is PacketDecoded and ev.wire_length == len(payload) + 4
                and not item.flow.compressed):
            self._crc.append(payload_crc(payload))
            self._placed.append(1)
            return None
        self._crc.append(0)
        self._placed.append(0)
        return payload

    def _keep_written(self, cols: tuple[bytes, ...]) -> None:
        """The kernel's rows: payloads left in the file (as :meth:`_keep`; no frame 0)."""
        self._crc.frombytes(cols[C_CRC])
        frames = array("q", cols[C_FRAME])
        n = len(frames)
        self._placed.frombytes(b"\x01" * n if min(frames) > 0 else
                               bytes(1 if f else 0 for f in frames))

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        for items in self.produce_batches(cancelled):
            yield from items

    def produce_batches(self, cancelled: Callable[[], bool]) -> Iterable[Sequence[SourceItem]]:
        """The rows' items a frame at a time, as the reader gives them (one look at
        ``cancelled`` and no generator step per row)."""
        try:
            # (a file: its server event packets' rows by the native kernel, packet_index.py)
            lines = index_rows if self.places is not None else None
            for items in read_capture_batches(str(self.path), self.ports, record=False,
                                              max_packet=self.max_packet, stop=cancelled,
                                              lines=lines):
                if cancelled():
                    return
                for k, it in enumerate(items):  # (the reader's own list, made for this frame)
                    if it.kind == "packet" and it.event is not None:
                        it.conn = it.flow.id  # (the reader's own item: the row's as it is)
                    else:
                        items[k] = stream_item(it)
                yield items
        except CaptureError as exc:
            self.fatal = str(exc)

    def payload(self, index: int) -> bytes | None:
        """The row's packet payload: the kept one, else read again from the capture by its
        place, else by decoding the capture again up to it (the packet of the same flow,
        direction and stream offset)."""
        kept = super().payload(index)
        if kept is not None or self._ctx[index] < 0:
            return kept
        if self.places is not None and self._placed[index]:
            got = self.places.packet(self._frame[index], self._len[index], self._seq[index],
                                     self._crc[index])
            if got is not None:
                return got
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
    return SourceItem(event=it.event, time=it.time, conn=it.flow.id, frame=it.frame,
                      flow=it.flow)


__all__ = ["PcapSource", "stream_item"]
