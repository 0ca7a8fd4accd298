"""pcap/pcapng captures -> MySQL sessions: frames, TCP reassembly, one :class:`Session` per flow.

::

    for item in read_capture("replica.pcapng", ports={3306}):
        item.flow, item.frame, item.time, item.event   # a SessionEvent or a note

Layers, each as thin as possible (the whole point is to stay fast on big captures), one module
each:

1. **Capture files** (:mod:`~binlogscope.drivers.capture.files`): pcap read directly, pcapng and
   gzip through scapy's raw readers (no dissection); :class:`CaptureError` on damage after every
   good frame.
2. **Link + IP + TCP** (:mod:`~binlogscope.drivers.capture.layers`): :func:`parse_frame` reads the
   headers it needs with ``struct``.
3. **Flows** (:mod:`~binlogscope.drivers.capture.flows`): which connections are MySQL, reassembly
   per direction (:mod:`~binlogscope.drivers.capture.tcp_reassembly`), resynchronisation after a
   gap or a
   mid-connection start (:mod:`~binlogscope.session.resync`), and an OBSERVER
   :class:`~binlogscope.session.Session` per flow.

This module holds the entry points and re-exports the public names of the layers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from binlogscope.drivers.capture.files import CaptureError, Frame, iter_frames, iter_records
from binlogscope.drivers.capture.flows import DEFAULT_PORTS, CaptureReader
from binlogscope.drivers.capture.layers import TcpSegment, format_addr, parse_frame
from binlogscope.drivers.capture.lines import PacketLines
from binlogscope.drivers.items import SourceItem
from binlogscope.session.oversize import DEFAULT_MAX_PACKET
from binlogscope.session.resync import find_packet_start, looks_like_greeting


def read_capture(path: str, ports: Iterable[int] | None = None, *, record: bool = False,
                 data: bytes | None = None, max_packet: int = DEFAULT_MAX_PACKET
                 ) -> Iterator[SourceItem]:
    """Decode every MySQL flow of a capture, in capture order.

    ``ports``: server ports known to carry MySQL (default 3306); ports where a server greeting
    is seen are added. ``record``: build the annotated Node trees (slower). ``max_packet``: as
    :func:`read_capture_batches`. Raises :class:`CaptureError` (after yielding everything
    before the damage) on a bad file.
    """
    for items in read_capture_batches(path, ports, record=record, data=data,
                                      max_packet=max_packet):
        yield from items


def read_capture_batches(path: str, ports: Iterable[int] | None = None, *,
                         record: bool = False, max_packet: int = DEFAULT_MAX_PACKET,
                         stop: Callable[[], bool] | None = None, data: bytes | None = None,
                         tls_keylog: str | None = None, decryption: Any = None,
                         lines: PacketLines | None = None) -> Iterator[list[SourceItem]]:
    """:func:`read_capture` a frame's items at a time (never an empty list): for consumers of
    big captures, one generator step per frame instead of one per item. ``max_packet``: the
    largest packet payload decoded (a longer one is skipped, an error item gives its size).
    ``stop()`` true (asked every 256 frames): the reading ends there, without the flush of
    :meth:`CaptureReader.finish`. ``tls_keylog``: an NSS key log; TLS connections are read
    decrypted (:mod:`~binlogscope.drivers.capture.tls_keylog`; raises its
    :class:`~binlogscope.drivers.capture.tls_keylog.TlsKeylogError` before anything is read;
    ``decryption``: its :class:`~binlogscope.drivers.capture.tls_keylog.Decryption` when the
    caller ran it already). ``lines``: the command's writer of the flows' ``--json`` lines
    (:mod:`.lines`): the server event packets it writes come as
    :class:`~binlogscope.session.events.LinesWritten` items in their place."""
    reader = CaptureReader(ports, record=record, max_packet=max_packet, lines=lines)
    feed = reader.record_frame
    records: Iterable[tuple[int, float, int, bytes]]
    if tls_keylog is not None:
        from binlogscope.drivers.capture.tls_keylog import decrypt, decrypted_records

        records = decrypted_records(path, tls_keylog, decryption if decryption is not None
                                    else decrypt(path, tls_keylog))
        reader.tls_keylog = tls_keylog
    else:
        records = iter_records(path, data)
    try:
        for number, ts, linktype, frame in records:
            if stop is not None and not number & 0xFF and stop():
                return
            items = feed(number, ts, linktype, frame)
            if items:
                yield items
    except CaptureError:
        items = reader.finish()  # everything before the damage
        if items:
            yield items
        raise
    items = reader.finish()
    if items:
        yield items


__all__ = [
    "DEFAULT_PORTS",
    "CaptureError",
    "CaptureReader",
    "Frame",
    "TcpSegment",
    "find_packet_start",
    "format_addr",
    "iter_frames",
    "iter_records",
    "looks_like_greeting",
    "parse_frame",
    "read_capture",
    "read_capture_batches",
]
