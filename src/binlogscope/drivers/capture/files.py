"""Capture files: every frame of a pcap or pcapng file (gzip-compressed too), as raw bytes.

The first layer of the pcap driver (:mod:`binlogscope.drivers.capture.pcap`). An uncompressed
classic pcap
file is read here directly, a block at a time, the records cut out with ``struct``. pcapng
(several interfaces, comments, per-interface link types and timestamp resolutions) and gzip
files go through scapy's ``RawPcapReader``/``RawPcapNgReader``: scapy stays the capture layer for
those formats because it already parses every pcapng block type and its options correctly, and a
second pcapng parser here would only duplicate it. Only scapy's raw readers are used: scapy never
dissects a packet (its full dissection costs tens of microseconds a frame); the link, IP and TCP
headers are read by :mod:`binlogscope.drivers.capture.layers`.

Damage (a truncated record, a bad block) ends the iteration with :class:`CaptureError` after
every good frame before it has been yielded. Reads go through :class:`_Guarded`: forward only
(``-`` reads standard input, a pipe: ``tcpdump -w - | binlogscope pcap -``), in bounded chunks,
and a block or record longer than :data:`MAX_BLOCK` is damage, never a huge allocation.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import struct
import sys
import zlib
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
#: the longest pcapng block (or gzip'd pcap record) read: a longer one is damage
MAX_BLOCK = 64 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: what error messages call standard input
STDIN_NAME = "<stdin>"


class _TooLongError(Exception):
    """A read of more than :data:`MAX_BLOCK` bytes: the length field is damaged."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.n = n


class _Guarded:
    """A byte stream read forward only (a pipe is fine): bounded reads, the position counted.

    ``read(n)`` fetches ``n`` bytes in chunks (a truncated stream never allocates what a damaged
    length field claims) and refuses ``n`` over :data:`MAX_BLOCK`; ``prefix`` is bytes already
    taken from ``raw`` (the magic) served first.
    """

    def __init__(self, raw: Any, pos: int = 0, prefix: bytes = b"") -> None:
        self.raw = raw
        self.pos = pos
        self.prefix = prefix
        self.eof = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:  # everything left, within the limit
            n = MAX_BLOCK
        elif n > MAX_BLOCK:
            raise _TooLongError(n)
        parts = []
        need = n
        if self.prefix:
            parts.append(self.prefix[:need])
            self.prefix = self.prefix[need:]
            need -= len(parts[0])
        while need > 0:
            got = self.raw.read(min(need, _READ_BLOCK))
            if not got:
                self.eof = True
                break
            parts.append(got)
            need -= len(got)
        out = b"".join(parts)
        self.pos += len(out)
        return out

    def read1(self, n: int) -> bytes:
        """What is available now (at least one byte unless at the end), at most ``n`` bytes."""
        if self.prefix:
            return self.read(min(n, len(self.prefix)))
        read1 = getattr(self.raw, "read1", None)
        out = read1(n) if read1 is not None else self.raw.read(n)
        if not out:
            self.eof = True
        self.pos += len(out)
        return bytes(out)

    def tell(self) -> int:
        return self.pos

    def close(self) -> None:
        if self.raw is not sys.stdin.buffer:
            self.raw.close()


def iter_records(path: str, data: bytes | None = None
                 ) -> Iterator[tuple[int, float, int, bytes]]:
    """:func:`iter_frames` as plain ``(number, timestamp, linktype, data)`` tuples.

    An uncompressed classic pcap file is read here directly, a block at a time (the records are
    cut out with ``struct``: the same values and the same errors as scapy's reader, about ten
    times faster); pcapng and gzip-compressed files go through scapy. ``-`` reads standard input
    as a stream (pcap, pcapng, gzip'd too; never seeks, memory stays flat). ``data``: the
    capture's bytes, already in memory (``path`` then only names them), read as a stream.
    """
    if data is not None:
        return _iter_stream(io.BytesIO(data), path)
    if path == "-":
        return _iter_stream(sys.stdin.buffer, STDIN_NAME)
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed below, or by the stream's reader)
        if not fh.seekable():  # a named pipe, /dev/stdin, a process substitution
            return _iter_stream(fh, path)
        with fh:
            head = fh.read(24)
    except OSError as exc:
        raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
    fmt = _PCAP_MAGIC.get(head[:4])
    if fmt is None or len(head) < 24:
        return _iter_records_scapy(path)
    linktype = int(struct.unpack_from(fmt[0] + "I", head, 20)[0])
    return _iter_records_pcap(path, fmt[0], fmt[1], linktype)


def _iter_stream(raw: Any, name: str) -> Iterator[tuple[int, float, int, bytes]]:
    """Records of a capture read forward only from ``raw`` (standard input, a pipe)."""
    try:
        return _open_stream(raw, name)
    except CaptureError:
        if raw is not sys.stdin.buffer and hasattr(raw, "close"):
            raw.close()
        raise


def _open_stream(raw: Any, name: str) -> Iterator[tuple[int, float, int, bytes]]:
    if raw.isatty():
        raise CaptureError("standard input is a terminal: pipe a capture into it, e.g. "
                           "tcpdump -w - | binlogscope pcap -")
    g = _Guarded(raw)
    try:
        magic = g.read(4)
        if magic[:2] == _GZIP_MAGIC:
            gz: Any = _Guarded(raw, prefix=magic)
            g = _Guarded(gzip.GzipFile(fileobj=gz, mode="rb"))
            magic = g.read(4)
    except (OSError, EOFError, zlib.error) as exc:
        raise CaptureError(f"{name} is not a pcap or pcapng capture ({exc})") from None
    if not magic:
        raise CaptureError(f"{name} is empty")
    fmt = _PCAP_MAGIC.get(magic)
    if fmt is not None:
        try:
            head = magic + g.read(20)
        except (OSError, EOFError, zlib.error) as exc:
            raise CaptureError(f"{name}: damaged capture header ({exc})") from None
        if len(head) < 24:
            raise CaptureError(f"{name} is not a pcap or pcapng capture (too short)")
        linktype = int(struct.unpack_from(fmt[0] + "I", head, 20)[0])
        return _iter_records_pcap(name, fmt[0], fmt[1], linktype, stream=g)
    if magic == _PCAPNG_MAGIC:
        return _iter_records_scapy(name, stream=g, magic=magic)
    raise CaptureError(f"{name} is not a pcap or pcapng capture (bad magic: {magic!r})")


def _iter_records_pcap(path: str, endian: str, nano: bool, linktype: int,
                       stream: _Guarded | None = None
                       ) -> Iterator[tuple[int, float, int, bytes]]:
    """Records of a classic pcap file (``stream``: read forward from a stream instead, the
    24-byte file header already taken)."""
    rec = struct.Struct(endian + "IIII").unpack_from
    div = 1e9 if nano else 1e6
    number = 0
    if stream is None:
        size: int | None = os.path.getsize(path)
        try:
            fh: Any = open(path, "rb")  # noqa: SIM115  (closed in the finally below)
        except OSError as exc:
            raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
        fh.seek(24)
        read = fh.read
    else:
        size, fh = None, stream
        read = stream.read1  # what the pipe has now: frames come out as they arrive
    try:
        buf = b""
        base = 24  # file offset of buf[0]
        while True:
            try:
                more = read(_READ_BLOCK)
            except (OSError, EOFError, zlib.error) as exc:
                raise CaptureError(f"{path}: damaged capture at byte {base + len(buf)} (after "
                                   f"frame {number}): {exc}") from None
            buf = buf + more if buf else more
            n = len(buf)
            pos = 0
            while pos + 16 <= n:
                sec, usec, caplen, _ = rec(buf, pos)
                if caplen > _MAX_RECORD_READ:  # scapy reads the first 4 x MTU bytes only
                    left = n if size is None else size - base
                    got = min(_MAX_RECORD_READ, left - (pos + 16))
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
                rest = "the rest" if size is None else f"the {size - base} bytes after it"
                raise CaptureError(
                    f"{path}: damaged capture at byte {base} (after frame {number}): truncated "
                    f"record; {rest} were not read")
            caplen = rec(buf, 0)[2]
            raise CaptureError(
                f"{path}: truncated capture: frame {number + 1} at byte {base} has "
                f"{min(len(buf) - 16, _MAX_RECORD_READ)} of its {caplen} bytes")
    finally:
        fh.close()


def _iter_records_scapy(path: str, stream: _Guarded | None = None, magic: bytes = b""
                        ) -> Iterator[tuple[int, float, int, bytes]]:
    """Records of a pcapng (or gzip'd) file through scapy's raw readers; ``stream``: a pcapng
    stream read forward (its ``magic`` already taken)."""
    _silence_scapy()
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapNgReader, RawPcapReader

    bad = (Scapy_Exception, OSError, EOFError, struct.error, zlib.error, _TooLongError)
    size: int | None = None
    try:
        if stream is not None:
            reader: Any = object.__new__(RawPcapNgReader)
            reader.__init__(path, stream, magic)
        else:
            try:
                with open(path, "rb") as fh:
                    magic = fh.read(4)
            except OSError as exc:
                raise CaptureError(f"cannot open {path}: {exc.strerror or exc}") from None
            if not magic:
                raise CaptureError(f"{path} is empty")
            size = None if magic[:2] == _GZIP_MAGIC else os.path.getsize(path)
            reader = RawPcapReader(path)
            reader.f = _Guarded(reader.f, reader.f.tell())  # bounded reads from here on
    except bad as exc:
        if stream is not None:
            stream.close()
        raise CaptureError(f"{path} is not a pcap or pcapng capture ({exc})") from None
    ng = isinstance(reader, RawPcapNgReader)
    nano = bool(getattr(reader, "nano", False))
    linktype = getattr(reader, "linktype", None)
    big = 1 << 30
    number = 0
    what = "bad or truncated block" if ng else "truncated record"
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
                        f"{what}; the {size - before} bytes after it were not read") from None
                if size is None and reader.f.tell() > before:  # a stream ended mid-block
                    raise CaptureError(
                        f"{path}: damaged capture at byte {before} (after frame {number}): "
                        f"{what}; the rest was not read") from None
                return
            except _TooLongError as exc:
                rest = "the rest" if size is None else f"the {size - before} bytes after it"
                raise CaptureError(
                    f"{path}: damaged capture at byte {before} (after frame {number}): a "
                    f"{'block' if ng else 'record'} length of {exc.n:,} bytes (over "
                    f"{MAX_BLOCK >> 20} MiB); {rest} were not read") from None
            except (struct.error, OSError, OverflowError, ValueError, Scapy_Exception,
                    zlib.error) as exc:
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


__all__ = ["MAX_BLOCK", "STDIN_NAME", "CaptureError", "Frame", "iter_frames", "iter_records"]
