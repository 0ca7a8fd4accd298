"""The capture process of ``binlogscope sniff``: a TPACKET_V3 ring drained at the line rate.

Why a process of its own, and why the socket is read here rather than through scapy: reading
one frame per ``select`` + ``recvmsg`` (scapy's ``L2ListenSocket._recv_raw``) in the process that
also decodes lost 40-60 % of the frames of a full-rate binlog dump on loopback (bench/README.md):
the decoder holds the CPU (and the GIL) for far longer than the kernel's socket buffer lasts at
~170 MB/s. scapy has no memory-mapped (PACKET_MMAP) reader of its own; libpcap (scapy's
``conf.use_pcap``) reads such a ring, but through one ctypes call per frame in the decoding
process, and its ring - locked kernel memory, allocated whole - would have to hold the entire
backlog. So this module sets up the kernel's TPACKET_V3 ring on the AF_PACKET socket that scapy
opened, bound and filtered
(:class:`binlogscope.drivers.capture.sniff.LiveCapture`), and a small child process (``python -m
binlogscope.drivers.capture.sniff_ring``, the socket passed as a file descriptor) does nothing but:

* wait for the kernel to retire a ring block (up to :data:`BLOCK_SIZE` bytes of frames, or
  whatever arrived within :data:`RETIRE_MS` ms), copy it out in one slice and hand the block
  back to the kernel - no per-frame Python work, so the ring is emptied as fast as it fills;
* queue the copies for the decoder (the parent, through a pipe), up to ``limit`` bytes: that is
  the bounded buffer between capture and decode. When it is full, whole blocks are dropped and
  their frames counted as *buffer drops*, distinct from the *kernel drops* (frames the kernel
  had no ring room for, its PACKET_STATISTICS counter);
* every :data:`STATS_EVERY` seconds and at the end, send those counters in-band - ahead of the
  queued blocks, so the decoder knows the drops and its backlog now, not when it reaches them.

The parent closes the child's standard input to stop the capture: the child then takes what
the ring still holds (the kernel retires the partly filled block within :data:`RETIRE_MS`),
sends its whole queue, its final counters and an end record, and exits.

The records on the pipe (native byte order, both ends are this machine): a 5-byte header (kind,
length) and the payload: ``B`` a ring block as the kernel wrote it (parsed by
:func:`block_frames`), ``S`` the counters (:class:`RingStats`), ``E`` the end, ``X`` an error
that ended the capture (its text).
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import select
import signal
import socket
import struct
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

#: linux/if_packet.h
SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
TPACKET_V3 = 2
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
PACKET_OUTGOING = 4
#: the ring: BLOCK_COUNT blocks of BLOCK_SIZE bytes (a 64 KiB loopback frame fits in a block)
BLOCK_SIZE = 1 << 20
BLOCK_COUNT = 64
#: the kernel hands over a block that is not full after this long (follow mode's latency)
RETIRE_MS = 10
#: the default bound of the queue between the capture and the decoder
BUFFER_BYTES = 1 << 30
#: how often the counters are sent (seconds)
STATS_EVERY = 0.25
#: after the stop: how long partly filled blocks are waited for
STOP_WAIT = 0.1
F_SETPIPE_SZ = 1031

_REQ3 = struct.Struct("=7I")  # struct tpacket_req3
_BLOCK_HDR = struct.Struct("=III")  # num_pkts, offset_to_first_pkt, blk_len (at 12)
_STATUS = struct.Struct("=I")  # block_status (at 8)
_FRAME = struct.Struct("=IIIIIIH")  # tpacket3_hdr: next, sec, nsec, snaplen, len, status, mac
#: sll_pkttype's offset in a frame: TPACKET_ALIGN(sizeof(tpacket3_hdr)) + 10
_PKTTYPE_AT = 48 + 10
RECORD = struct.Struct("=cI")
_STATS = struct.Struct("=QQQQQQ")


@dataclass(slots=True)
class RingStats:
    """What the capture process counted so far."""

    #: frames the kernel passed to the ring, dropped ones included (after the filter)
    kernel_seen: int = 0
    #: frames the kernel dropped: the ring was full (the capture process fell behind)
    kernel_dropped: int = 0
    #: frames dropped because the queue to the decoder was full (the decoder fell behind)
    buffer_dropped: int = 0
    #: the queue's fullest, in bytes
    buffer_peak: int = 0
    #: the queue's bound
    buffer_limit: int = 0
    #: counts up with each report (they jump the queue: a newer one may arrive first)
    serial: int = 0

    def pack(self) -> bytes:
        return _STATS.pack(self.kernel_seen, self.kernel_dropped, self.buffer_dropped,
                           self.buffer_peak, self.buffer_limit, self.serial)

    @classmethod
    def unpack(cls, data: bytes) -> RingStats:
        return cls(*_STATS.unpack(data))


def setup_ring(sock: socket.socket, block_size: int = BLOCK_SIZE,
               block_count: int = BLOCK_COUNT) -> int:
    """Turn ``sock`` (AF_PACKET) into a TPACKET_V3 ring reader; the blocks it got (fewer when
    the kernel has not the memory for ``block_count``: down to 8; OSError if it says no)."""
    sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
    # frame size/count only matter to the kernel's checks for V3 (frames pack into blocks)
    frame = 1 << 11
    while True:
        try:
            sock.setsockopt(SOL_PACKET, PACKET_RX_RING, _REQ3.pack(
                block_size, block_count, frame, block_count * (block_size // frame), RETIRE_MS,
                0, 0))
            return block_count
        except OSError as exc:
            if exc.errno != errno.ENOMEM or block_count <= 8:
                raise
            block_count //= 2


def block_frames(block: bytes, skip_outgoing: bool) -> list[tuple[bytes, float]]:
    """The frames of a ring block and their kernel times (``skip_outgoing``: not the copies
    of packets leaving the host, which loopback shows a second time as arriving)."""
    num, off, _ = _BLOCK_HDR.unpack_from(block, 12)
    out: list[tuple[bytes, float]] = []
    append = out.append
    unpack = _FRAME.unpack_from
    for _ in range(num):
        nxt, sec, nsec, snaplen, _len, _st, mac = unpack(block, off)
        if not (skip_outgoing and block[off + _PKTTYPE_AT] == PACKET_OUTGOING):
            start = off + mac
            append((block[start : start + snaplen], sec + nsec * 1e-9))
        off += nxt
    return out


def _incoming(ring: mmap.mmap, base: int, skip_outgoing: bool) -> int:
    num, off, _ = _BLOCK_HDR.unpack_from(ring, base + 12)
    if not skip_outgoing:
        return int(num)
    n = 0
    at = base + off
    for _ in range(num):
        if ring[at + _PKTTYPE_AT] != PACKET_OUTGOING:
            n += 1
        at += _FRAME.unpack_from(ring, at)[0]
    return n


def kernel_counters(sock: socket.socket) -> tuple[int, int]:
    """(frames seen, frames dropped) since the last call (the kernel resets them on read)."""
    try:
        seen, dropped, _freeze = struct.unpack(
            "=III", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12))
    except OSError:
        return 0, 0
    return seen, dropped


def run(fd: int, out_fd: int, ctl_fd: int, *, limit: int = BUFFER_BYTES,
        block_size: int = BLOCK_SIZE, block_count: int = BLOCK_COUNT,
        skip_outgoing: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
    """The capture process's loop (see the module doc); returns when the stream has ended."""
    sock = socket.socket(fileno=fd)
    ring = mmap.mmap(fd, block_size * block_count)
    try:
        fcntl.fcntl(out_fd, F_SETPIPE_SZ, 1 << 20)
    except OSError:
        pass
    os.set_blocking(out_fd, False)
    stats = RingStats(buffer_limit=limit)
    queue: deque[memoryview] = deque()
    queued = 0
    head_sent = False  # the queue's first record is partly written
    index = 0
    stop_at: float | None = None
    next_stats = clock()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(ctl_fd, select.POLLIN)
    empty = b"\0\0\0\0"
    while True:
        while True:  # every block the kernel has handed over
            base = index * block_size
            if not _STATUS.unpack_from(ring, base + 8)[0] & TP_STATUS_USER:
                break
            length = _BLOCK_HDR.unpack_from(ring, base + 12)[2]
            if queued + length > limit:
                stats.buffer_dropped += _incoming(ring, base, skip_outgoing)
            else:
                rec = memoryview(RECORD.pack(b"B", length) + ring[base : base + length])
                queue.append(rec)
                queued += len(rec)
                stats.buffer_peak = max(stats.buffer_peak, queued)
            ring[base + 8 : base + 12] = empty  # TP_STATUS_KERNEL: the kernel's again
            index = (index + 1) % block_count
        now = clock()
        ending = stop_at is not None and now >= stop_at
        if now >= next_stats or ending:
            seen, dropped = kernel_counters(sock)
            stats.kernel_seen += seen
            stats.kernel_dropped += dropped
            stats.serial += 1
            payload = stats.pack()
            rec = memoryview(RECORD.pack(b"S", len(payload)) + payload)
            if ending:
                queue.append(rec)
            else:  # next on the pipe (after a record it has begun)
                queue.insert(1 if head_sent else 0, rec)
            queued += len(rec)
            next_stats = now + STATS_EVERY
        if ending:
            queue.append(memoryview(RECORD.pack(b"E", 0)))
            os.set_blocking(out_fd, True)
            for rec in queue:
                _write_all(out_fd, rec)
            return
        while queue:  # as much as the pipe takes now
            rec = queue[0]
            try:
                n = os.write(out_fd, rec)
            except BlockingIOError:
                break
            queued -= n
            if n == len(rec):
                queue.popleft()
                head_sent = False
            else:
                queue[0] = rec[n:]
                head_sent = True
                break
        if queue:
            poller.register(out_fd, select.POLLOUT)
        else:
            try:
                poller.unregister(out_fd)
            except KeyError:
                pass
        wait = max(0.0, min(next_stats, stop_at or next_stats) - clock())
        for got_fd, _ev in poller.poll(wait * 1000):
            if got_fd == ctl_fd and stop_at is None:  # the parent closed it: stop
                poller.unregister(ctl_fd)
                stop_at = clock() + STOP_WAIT


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        n = os.write(fd, data)
        data = data[n:]


def main(argv: list[str]) -> int:
    """``python -m binlogscope.drivers.capture.sniff_ring FD LIMIT BLOCK_SIZE BLOCK_COUNT
    SKIP_OUT``:
    the socket is FD, the records go to standard output, standard input's end stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the capture ends
    fd, limit, block_size, block_count, skip = (int(a) for a in argv)
    out = sys.stdout.fileno()
    try:
        run(fd, out, sys.stdin.fileno(), limit=limit, block_size=block_size,
            block_count=block_count, skip_outgoing=bool(skip))
    except (BrokenPipeError, KeyboardInterrupt):  # the parent is gone
        return 1
    except OSError as exc:  # (the ring could not be mapped...): the parent says it in words
        text = f"capture process: {exc.strerror or exc}".encode()
        try:
            os.set_blocking(out, True)
            _write_all(out, memoryview(RECORD.pack(b"X", len(text)) + text))
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["BLOCK_COUNT", "BLOCK_SIZE", "BUFFER_BYTES", "RECORD", "RingStats", "block_frames",
           "kernel_counters", "run", "setup_ring"]
