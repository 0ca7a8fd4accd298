"""Capture items that arrive while the TUI runs, as a :class:`RowSource` in follow mode.

One path for every live producer of capture items: :class:`LiveCaptureSource` reads batches of
:class:`~binlogscope.drivers.items.SourceItem` (the rows a capture file gives, through
:func:`~binlogscope.inspector.sources.pcap.stream_item`: flow number, frame, capture time) in the
TUI's worker thread until the TUI closes. ``binlogscope sniff -i IFACE`` feeds it from
:func:`~binlogscope.drivers.capture.sniff.sniff_batches` (:class:`SniffSource`: the drop counters in
the status bar - the kernel's, the capture ring was full, and the decode buffer's, the decoder
fell behind), ``binlogscope proxy`` from
:meth:`~binlogscope.drivers.proxy.relay.ReplicationProxy.batches` (:class:`ProxySource`: where it
listens and how many connections it relayed). Rows carry the flow (connection) and frame
columns, so the ``flow:`` filter and the phase strip work per connection as for a capture file.

When the TUI closes (or the producer stops) the producer is still run to its end without
showing anything: what it already took in is decoded, so a ``--write``/``--record`` file holds
every frame seen. Memory stays bounded over hours as for any packet stream: rows keep compact
columns, trees are decoded when a row is selected, and payload bytes beyond the source's budget
are let go (the status bar says from which row).

Pausing (``p``) freezes the view, not the capture: someone else's session cannot be held back,
and a capture that stopped reading would lose frames (the kernel's ring fills and drops, the
proxy's bounded decoder channel fills and skips). So the producer keeps running and every item
is decoded and indexed as usual (compact columns, the same memory bound), but the source's
length stays where it was when the view froze: the list, filters, search and go-to see only
those rows, and the status bar counts the packets held behind them. Resuming publishes them
all at once, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from binlogscope.drivers.capture.sniff import LiveCapture, PcapNgFile, SniffError, sniff_batches
from binlogscope.drivers.capture.tls_keylog import LiveDecryption, TlsKeylogError
from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ProxyError, ReplicationProxy
from binlogscope.inspector.source import SourceInfo
from binlogscope.inspector.sources.packets import PacketStreamSource
from binlogscope.inspector.sources.pcap import stream_item
from binlogscope.session.events import PacketDecoded
from binlogscope.session.oversize import DEFAULT_MAX_PACKET

#: the producer: batches of capture items until ``stop()`` turns true
Batches = Callable[[Callable[[], bool]], Iterator[list[SourceItem]]]


class _Frozen(NamedTuple):
    """What the view showed when it was paused."""

    rows: int
    packets: int
    events: int
    errors: int


class LiveCaptureSource(PacketStreamSource):
    """Rows from a live producer of capture items (one per connection flow), follow mode;
    pausing freezes the rows shown while the producer goes on (the rest are held)."""

    live = True
    columns = PacketStreamSource.columns | {"frame", "flow"}
    pause_doc = ("the capture goes on; new packets are decoded and held (the status bar "
                 "counts them) and shown in order on resume")

    def __init__(self, label: str, batches: Batches, *,
                 fatal: type[Exception] | tuple[type[Exception], ...] = (),
                 close: Callable[[], None] | None = None) -> None:
        super().__init__(label=label)
        self._batches = batches
        self._fatal = fatal
        self._close = close
        self._stopped = False
        #: set once the producer has run to its end and ``close`` ran
        self.ended = threading.Event()
        self._packets = 0  # decoded packets (rows that are not notes, errors or steps)
        self._frozen: _Frozen | None = None  # set while paused

    # ----- controls (UI thread; never blocks for long: ``add`` holds the lock for one item)
    def set_paused(self, paused: bool) -> None:
        """Freeze the view at the rows it has now (the producer goes on), or publish every
        row held since."""
        with self._lock:
            if paused and self._frozen is None:
                self._frozen = _Frozen(self._n, self._packets, self.binlog_events,
                                       len(self._errors))
            elif not paused:
                self._frozen = None
            self.paused = paused

    def stop(self) -> None:
        self._stopped = True

    def __len__(self) -> int:
        frozen = self._frozen
        return self._n if frozen is None else frozen.rows

    def held(self) -> tuple[int, int]:
        """(rows, packets) taken in since the view was paused; (0, 0) when not paused."""
        frozen = self._frozen
        if frozen is None:
            return 0, 0
        return self._n - frozen.rows, self._packets - frozen.packets

    # ----- producing (worker thread)
    def add(self, item: SourceItem) -> None:
        with self._lock:  # a pause freezes whole rows and the counters that go with them
            super().add(item)
            if isinstance(item.event, PacketDecoded):
                self._packets += 1

    def produce(self, cancelled: Callable[[], bool]) -> Iterable[SourceItem]:
        batches = self._batches(lambda: self._stopped or cancelled())
        try:
            for items in batches:
                for it in items:
                    yield stream_item(it)
        except self._fatal as exc:
            self.fatal = str(exc)
        finally:  # (also when the TUI closes: the rest is decoded, not shown)
            self._stopped = True
            try:
                for _ in batches:
                    pass
            except self._fatal:
                pass
            finally:
                if self._close is not None:
                    self._close()
                self.ended.set()

    # ----- status
    def info(self) -> SourceInfo:
        info = super().info()
        frozen = self._frozen
        if frozen is not None:  # the counts of the rows shown; the held ones apart
            rows, packets = self.held()
            info.rows, info.events, info.errors = frozen.rows, frozen.events, frozen.errors
            info.extra["held"] = f"{packets:,} packet{'s' if packets != 1 else ''}" + (
                f" ({rows:,} rows)" if rows != packets else "")
            info.extra["state"] = "PAUSED"
        else:
            info.extra["state"] = "ended" if info.done else "live"
        return info


class SniffSource(LiveCaptureSource):
    """``binlogscope sniff -i IFACE``: frames of an interface, the kernel's drops shown."""

    def __init__(self, capture: LiveCapture, *, ports: Iterable[int] | None = None,
                 write: PcapNgFile | None = None, count: int | None = None,
                 duration: float | None = None, max_packet: int = DEFAULT_MAX_PACKET,
                 decryption: LiveDecryption | None = None) -> None:
        self.capture = capture
        self.ports = list(ports) if ports else None
        self.write = write
        self.decryption = decryption

        def close() -> None:
            if write is not None:
                write.close()
            capture.close()
            if decryption is not None:
                decryption.close()

        super().__init__(
            f"sniff -i {capture.iface}",
            lambda stop: sniff_batches(capture, self.ports, stop=stop, count=count,
                                       duration=duration, write=write,
                                       max_packet=max_packet, decryption=decryption),
            fatal=(SniffError, TlsKeylogError), close=close)

    def info(self) -> SourceInfo:
        info = super().info()
        st = self.capture.stats()
        text = f"{st.dropped:,} of {st.received:,} frames by the kernel"
        if st.buffer_dropped:
            text += f", {st.buffer_dropped:,} waiting for the decoder (it fell behind)"
        info.extra["lost"] = text
        dec = self.decryption
        if dec is not None and dec.undecrypted:
            info.extra["TLS"] = (f"{dec.undecrypted:,} frames not decrypted (first: frame "
                                 f"{dec.first_undecrypted}; no keys in {dec.keylog})")
        return info


class ProxySource(LiveCaptureSource):
    """``binlogscope proxy``: both directions of every relayed connection, a flow each. The
    relay is started and stopped by the caller; :meth:`stop` ends the decoding (which stops the
    relay and decodes what it relayed)."""

    pause_doc = ("the relay goes on; new packets are decoded and held (the status bar counts "
                 "them) and shown in order on resume")

    def __init__(self, proxy: ReplicationProxy, *, count: int | None = None,
                 close: Callable[[], None] | None = None) -> None:
        self.proxy = proxy
        host, port = proxy.listen[0], proxy.port or proxy.listen[1]
        self.listening = f"{host}:{port} -> {proxy.upstream[0]}:{proxy.upstream[1]}"
        super().__init__(f"proxy {self.listening}",
                         lambda stop: proxy.batches(stop=stop, count=count),
                         fatal=ProxyError, close=close)

    def info(self) -> SourceInfo:
        info = super().info()
        # (the label, at the end of the status bar, says what is relayed where)
        info.extra["connections"] = f"{self.proxy.connections:,}"
        return info


__all__ = ["LiveCaptureSource", "ProxySource", "SniffSource"]
