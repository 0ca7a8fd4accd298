"""A packet's bytes read again from a capture file by their place (frame, length, checksum).

The inspector indexes a big capture without keeping every packet's payload (a 333 MB capture
holds ~1.6 M packets: their bytes alone would be ~320 MB of memory). A row keeps where its
packet is instead: the capture frame its first byte arrived in, its payload length, its sequence
id and a CRC-32 of its payload. :class:`PlaceReader` gets the payload back:

1. the frame is found by its number - an uncompressed classic pcap file through an index of
   record offsets (built on first use by walking the 16-byte record headers), any other capture
   file (pcapng, gzip) by reading its records forward (:func:`~binlogscope.drivers.capture.files.
   iter_records`) up to that frame;
2. that frame's TCP direction (its addresses and ports) is reassembled from there: later
   segments of the same direction are placed by their TCP sequence number relative to the
   frame's (retransmitted bytes skipped, reordered segments held until the hole is filled);
3. the packet header (3-byte length, sequence id) is looked for where a packet may start - in
   the first frame's payload - and a candidate counts only when the CRC-32 of the payload after
   it is the one recorded while indexing.

Anything else (a lost segment inside the packet, a header not found, a packet of several wire
packets, the compressed protocol) gives None: the caller reads the capture through the flow's
session again (slow, always right). Recently read bytes stay in one window per direction, so
rows read in order (an export, paging through the list) read each frame about once.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.capture.files import CaptureError, iter_records
from binlogscope.drivers.capture.layers import TCP_SYN, parse_frame

_PCAP_MAGIC = {b"\xa1\xb2\xc3\xd4": ">", b"\xd4\xc3\xb2\xa1": "<",
               b"\xa1\xb2\x3c\x4d": ">", b"\x4d\x3c\xb2\xa1": "<"}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: the most bytes one window holds (then the next read starts a new one)
WINDOW_BYTES = 8 << 20
#: frames of other connections (or directions) read past before giving up on a packet
MAX_OTHER_FRAMES = 4096


#: the checksum a row keeps of its packet's payload (CRC-32; zlib's function itself: the
#: indexer calls it once a row)
payload_crc: Callable[[bytes], int] = zlib.crc32


@dataclass(slots=True)
class _Window:
    """A direction's TCP bytes from one frame on: ``buf[0]`` is the first payload byte of
    ``first``; ``starts`` gives each frame read its (start, end) in ``buf``."""

    first: int
    key: tuple[bytes, int, bytes, int]
    seq0: int
    buf: bytearray
    frames: Iterator[tuple[int, int, bytes]]
    starts: dict[int, tuple[int, int]] = field(default_factory=dict)
    held: dict[int, bytes] = field(default_factory=dict)
    others: int = 0
    ended: bool = False


class PlaceReader:
    """Reads packets of a capture file again by place (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._endian: str | None = None  # classic pcap: the record headers' byte order
        self._offsets: array[int] | None = None  # classic pcap: file offset of frame n + 1
        self._checked = False
        self._ng: tuple[Any, array[int]] | None = None  # pcapng: its reader, block offsets
        self._windows: dict[tuple[bytes, int, bytes, int], _Window] = {}
        #: what the reads cost: frames read, windows opened (tests and benchmarks)
        self.frames_read = 0
        self.windows_opened = 0

    @staticmethod
    def usable(path: str) -> bool:
        """True when ``path`` is a regular file (a pipe cannot be read twice)."""
        try:
            return os.path.isfile(path)
        except (OSError, ValueError):
            return False

    # ------------------------------------------------------------------ frames
    def _check_format(self) -> None:
        if self._checked:
            return
        self._checked = True
        with open(self.path, "rb") as fh:
            head = fh.read(24)
        endian = _PCAP_MAGIC.get(head[:4])
        if endian is not None and len(head) == 24:
            self._endian = endian
        elif head[:4] == _PCAPNG_MAGIC:
            self._ng = self._ng_index()

    def _ng_index(self) -> tuple[Any, array[int]] | None:
        """A pcapng file's packet blocks: (scapy's raw reader, every packet block's offset),
        walked once; None for a file of several sections (each restarts the interface list:
        read forward instead)."""
        logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
        from scapy.utils import RawPcapNgReader

        reader = RawPcapNgReader(self.path)
        offsets = array("q")
        fh = reader.f
        while True:
            before = fh.tell()
            if fh.read(4) == _PCAPNG_MAGIC:
                reader.close()
                return None
            fh.seek(before)
            try:
                res = reader._read_block(size=1 << 30)
            except Exception:  # the end, or damage: the frames before it are indexed
                break
            if res is not None:
                offsets.append(before)
        return reader, offsets

    def _ng_frames(self, number: int) -> Iterator[tuple[int, int, bytes]]:
        assert self._ng is not None
        reader, offsets = self._ng
        if not 1 <= number <= len(offsets):
            return
        pos, n = offsets[number - 1], number
        while True:
            reader.f.seek(pos)  # (windows share the reader: each keeps its own place)
            try:
                res = reader._read_block(size=1 << 30)
            except Exception:
                return
            pos = reader.f.tell()
            if res is None:
                continue
            data, meta = res
            yield n, meta.linktype, data
            n += 1

    def _index(self) -> array[int]:
        """File offsets of every record of a classic pcap file (walking the record headers)."""
        if self._offsets is not None:
            return self._offsets
        assert self._endian is not None
        rec = struct.Struct(self._endian + "IIII")
        offsets = array("q")
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as fh:
            pos = 24
            while pos + 16 <= size:
                fh.seek(pos)
                caplen = rec.unpack(fh.read(16))[2]
                offsets.append(pos)
                pos += 16 + caplen
        self._offsets = offsets
        return offsets

    def frames_from(self, number: int) -> Iterator[tuple[int, int, bytes]]:
        """(number, linktype, data) of frame ``number`` and every frame after it."""
        self._check_format()
        if self._ng is not None:
            yield from self._ng_frames(number)
            return
        if self._endian is None:
            for n, _ts, lt, data in iter_records(self.path):
                if n >= number:
                    yield n, lt, data
            return
        offsets = self._index()
        if not 1 <= number <= len(offsets):
            return
        rec = struct.Struct(self._endian + "IIII")
        with open(self.path, "rb") as fh:
            fh.seek(20)
            linktype = struct.unpack(self._endian + "I", fh.read(4))[0]
            fh.seek(offsets[number - 1])
            n = number
            while True:
                head = fh.read(16)
                if len(head) < 16:
                    return
                caplen = rec.unpack(head)[2]
                data = fh.read(caplen)
                if len(data) < caplen:
                    return
                yield n, linktype, data
                n += 1

    # ------------------------------------------------------------------ packets
    def packet(self, frame: int, length: int, seq: int, crc: int) -> bytes | None:
        """The payload of the packet whose first byte arrived in ``frame`` (``length`` bytes,
        sequence id ``seq``, CRC-32 ``crc``), or None when it cannot be found that way."""
        if frame <= 0 or not 0 <= length < 0xFFFFFF:
            return None
        try:
            with self._lock:
                return self._packet(frame, length, seq & 0xFF, crc)
        except (OSError, CaptureError, struct.error):
            return None

    def _packet(self, frame: int, length: int, seq: int, crc: int) -> bytes | None:
        w = next((w for w in self._windows.values() if frame in w.starts), None)
        if w is not None and w.first != frame and w.starts[frame][1] + 4 + length > WINDOW_BYTES:
            w = None  # a window stays about WINDOW_BYTES: a new one from this frame
        if w is None:
            w = self._open(frame)
            if w is None:
                return None
        lo, hi = w.starts[frame]
        need = hi + 4 + length
        while len(w.buf) < need and self._more(w):
            pass
        head = length.to_bytes(3, "little") + bytes((seq,))
        buf = w.buf
        at = buf.find(head, lo, hi + 3)
        while 0 <= at < hi:
            end = at + 4 + length
            if end <= len(buf) and zlib.crc32(memoryview(buf)[at + 4 : end]) == crc:
                return bytes(buf[at + 4 : end])
            at = buf.find(head, at + 1, hi + 3)
        return None

    def _open(self, frame: int) -> _Window | None:
        frames = self.frames_from(frame)
        for n, lt, data in frames:
            self.frames_read += 1
            seg = parse_frame(lt, data)
            if seg is None or n != frame:
                return None
            key = (seg.src, seg.sport, seg.dst, seg.dport)
            seq0 = (seg.seq + 1) & 0xFFFFFFFF if seg.flags & TCP_SYN else seg.seq
            w = _Window(frame, key, seq0, bytearray(seg.payload), frames)
            w.starts[frame] = (0, len(seg.payload))
            self._windows[key] = w  # (one window per direction: the older one goes)
            self.windows_opened += 1
            return w
        return None

    def _more(self, w: _Window) -> bool:
        """Read the window's next segment of its direction; False at the end (or give up)."""
        if w.ended:
            return False
        for n, lt, data in w.frames:
            self.frames_read += 1
            seg = parse_frame(lt, data)
            if seg is None or (seg.src, seg.sport, seg.dst, seg.dport) != w.key:
                w.others += 1
                if w.others > MAX_OTHER_FRAMES:
                    break
                continue
            w.others = 0
            rel = (seg.seq - w.seq0) & 0xFFFFFFFF
            got = seg.payload
            if not got or rel >= 1 << 31:  # a pure ACK, or bytes before the window
                continue
            end = len(w.buf)
            if rel > end:  # reordered (or lost before it): held until the hole is filled
                w.held.setdefault(rel, got)
                continue
            if rel + len(got) <= end:
                continue  # a retransmission of bytes already here
            w.buf += got[end - rel :]
            w.starts.setdefault(n, (rel, rel + len(got)))
            while w.held:  # held segments the new bytes reach
                nxt = min(w.held)
                if nxt > len(w.buf):
                    break
                data2 = w.held.pop(nxt)
                if nxt + len(data2) > len(w.buf):
                    w.buf += data2[len(w.buf) - nxt :]
            return True
        w.ended = True
        return False


__all__ = ["MAX_OTHER_FRAMES", "WINDOW_BYTES", "PlaceReader", "payload_crc"]
