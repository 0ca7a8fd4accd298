"""Capture files: every frame of a pcap or pcapng file (gzip-compressed too), as raw bytes.

The first layer of the pcap driver (:mod:`binlogscope.drivers.pcap`). An uncompressed classic pcap
file is read here directly, a block at a time, the records cut out with ``struct``. pcapng
(several interfaces, comments, per-interface link types and timestamp resolutions) and gzip
files go through scapy's ``RawPcapReader``/``RawPcapNgReader``: scapy stays the capture layer for
those formats because it already parses every pcapng block type and its options correctly, and a
second pcapng parser here would only duplicate it. Only scapy's raw readers are used: scapy never
dissects a packet (its full dissection costs tens of microseconds a frame); the link, IP and TCP
headers are read by :mod:`binlogscope.drivers.pcap_layers`.

Damage (a truncated record, a bad block) ends the iteration with :class:`CaptureError` after
every good frame before it has been yielded.
"""

from __future__ import annotations

import gzip
import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class CaptureError(Exception):
    """The capture file is missing, not a capture, truncated or corrupt (one clear line)."""



@dataclass(slots=True)
class Frame:
    number: int  # 1-based, as Wireshark counts
    timestamp: float
    linktype: int
    data: bytes


def _silence_scapy() -> None:
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    logging.getLogger("scapy").setLevel(logging.ERROR)


def iter_frames(path: str) -> Iterator[Frame]:
    """Every frame of a pcap/pcapng file (gzip-compressed too).

    Raises :class:`CaptureError` on a file that is not a capture, and - after yielding every
    good frame - on a truncated or corrupt one.
    """
    for number, ts, lt, data in iter_records(path):
        yield Frame(number, ts, lt, data)


#: pcap (not pcapng) file magics: (byte order, nanosecond timestamps)
_PCAP_MAGIC = {b"\xa1\xb2\xc3\xd4": (">", False), b"\xd4\xc3\xb2\xa1": ("<", False),
               b"\xa1\xb2\x3c\x4d": (">", True), b"\x4d\x3c\xb2\xa1": ("<", True)}
#: scapy's RawPcapReader reads at most this much of one record (4 * its MTU)
_MAX_RECORD_READ = 4 * 65535
_READ_BLOCK = 1 << 20


def iter_records(path: str) -> Iterator[tuple[int, float, int, bytes]]:
    """:func:`iter_frames` as plain ``(number, timestamp, linktype, data)`` tuples.

    An uncompressed classic pcap file is read here directly, a block at a time (the records are
    cut out with ``struct``: the same values and the same errors as scapy's reader, about ten
    times faster); pcapng and gzip-compressed files go through scapy.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    fmt = _PCAP_MAGIC.get(head[:4])
    if fmt is None or len(head) < 24:
        return _iter_records_scapy(path)
    linktype = int(struct.unpack_from(fmt[0] + "I", head, 20)[0])
    return _iter_records_pcap(path, fmt[0], fmt[1], linktype)


def _iter_records_pcap(path: str, endian: str, nano: bool, linktype: int
                       ) -> Iterator[tuple[int, float, int, bytes]]:
    rec = struct.Struct(endian + "IIII").unpack_from
    div = 1e9 if nano else 1e6
    size = os.path.getsize(path)
    number = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed in the finally below)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        fh.seek(24)
        buf = b""
        base = 24  # file offset of buf[0]
        while True:
            more = fh.read(_READ_BLOCK)
            buf = buf + more if buf else more
            n = len(buf)
            pos = 0
            while pos + 16 <= n:
                sec, usec, caplen, _ = rec(buf, pos)
                if caplen > _MAX_RECORD_READ:  # scapy reads the first 4 x MTU bytes only
                    got = min(_MAX_RECORD_READ, size - (base + pos + 16))
                    raise CaptureError(
                        f"{path}: truncated capture: frame {number + 1} at byte {base + pos} "
                        f"has {got} of its {caplen} bytes")
                end = pos + 16 + caplen
                if end > n:
                    break
                number += 1
                yield number, sec + usec / div, linktype, buf[pos + 16 : end]
                pos = end
            buf = buf[pos:]
            base += pos
            if not more:
                break
        if buf:
            if len(buf) < 16:
                raise CaptureError(
                    f"{path}: damaged capture at byte {base} (after frame {number}): truncated "
                    f"record; the {size - base} bytes after it were not read")
            caplen = rec(buf, 0)[2]
            raise CaptureError(
                f"{path}: truncated capture: frame {number + 1} at byte {base} has "
                f"{min(len(buf) - 16, _MAX_RECORD_READ)} of its {caplen} bytes")
    finally:
        fh.close()


def _iter_records_scapy(path: str) -> Iterator[tuple[int, float, int, bytes]]:
    _silence_scapy()
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapNgReader, RawPcapReader

    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    if not magic:
        raise CaptureError(f"{path} is empty")
    compressed = magic[:2] == b"\x1f\x8b"
    size = None if compressed else os.path.getsize(path)
    try:
        reader: Any = RawPcapReader(path)
    except (Scapy_Exception, OSError, EOFError, struct.error, gzip.BadGzipFile) as exc:
        raise CaptureError(f"{path} is not a pcap or pcapng capture ({exc})") from None
    ng = isinstance(reader, RawPcapNgReader)
    nano = bool(getattr(reader, "nano", False))
    linktype = getattr(reader, "linktype", None)
    big = 1 << 30
    number = 0
    try:
        while True:
            before = reader.f.tell()
            try:
                if ng:  # block by block, so damage is located at its block
                    res = reader._read_block(size=big)
                    if res is None:
                        continue  # not a packet block (interface, statistics, ...)
                    data, meta = res
                else:
                    data, meta = reader._read_packet(size=big)
            except EOFError:
                if size is not None and before < size:
                    raise CaptureError(
                        f"{path}: damaged capture at byte {before} (after frame {number}): "
                        f"{'bad or truncated block' if ng else 'truncated record'}; the "
                        f"{size - before} bytes after it were not read") from None
                return
            except (struct.error, OSError, OverflowError, ValueError, Scapy_Exception) as exc:
                raise CaptureError(f"{path}: damaged capture at byte {before} (after frame "
                                   f"{number}): {exc}") from None
            number += 1
            if ng:
                ts = ((meta.tshigh << 32) | meta.tslow) / (meta.tsresol or 1_000_000)
                lt = meta.linktype
            else:
                if len(data) < meta.caplen:
                    raise CaptureError(
                        f"{path}: truncated capture: frame {number} at byte {before} has "
                        f"{len(data)} of its {meta.caplen} bytes")
                ts = meta.sec + meta.usec / (1e9 if nano else 1e6)
                lt = linktype
            yield number, ts, lt, data
    finally:
        reader.close()


__all__ = ["CaptureError", "Frame", "iter_frames", "iter_records"]
