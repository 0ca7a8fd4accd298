"""A live capture (``binlogscope sniff -i IFACE``) as a :class:`RowSource`, in follow mode.

The same rows as a capture file (:func:`~binlogscope.inspector.sources.pcap.stream_item`), read
from :func:`~binlogscope.drivers.sniff.sniff_batches` in the TUI's worker thread until the TUI
closes. Memory stays bounded over hours as for any packet stream: rows keep compact columns,
trees are decoded when a row is selected, and payload bytes beyond the source's budget are let
go (the status bar says from which row). The kernel's drop counter is in the status bar.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from binlogscope.drivers.sniff import LiveCapture, PcapNgFile, SniffError, sniff_batches
from binlogscope.inspector.source import SourceInfo
from binlogscope.inspector.sources.packets import PacketStreamSource, StreamItem
from binlogscope.inspector.sources.pcap import stream_item


class SniffSource(PacketStreamSource):
    live = True

    def __init__(self, capture: LiveCapture, *, ports: Iterable[int] | None = None,
                 write: PcapNgFile | None = None, count: int | None = None,
                 duration: float | None = None) -> None:
        super().__init__(label=f"sniff -i {capture.iface}")
        self.capture = capture
        self.ports = list(ports) if ports else None
        self.write = write
        self.count = count
        self.duration = duration
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[StreamItem]:
        try:
            for items in sniff_batches(self.capture, self.ports,
                                       stop=lambda: self._stopped or cancelled(),
                                       count=self.count, duration=self.duration,
                                       write=self.write):
                for it in items:
                    yield stream_item(it)
        except SniffError as exc:
            self.fatal = str(exc)
        finally:
            if self.write is not None:
                self.write.close()
            self.capture.close()

    def info(self) -> SourceInfo:
        info = super().info()
        st = self.capture.stats()
        info.extra["kernel drops"] = f"{st.dropped:,} of {st.received:,} frames"
        return info


__all__ = ["SniffSource"]
