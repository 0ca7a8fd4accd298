"""Live capture from a network interface (``binlogscope sniff -i IFACE``): frames as they pass.

The socket is scapy's Linux ``L2ListenSocket`` (an AF_PACKET socket): scapy compiles and
attaches the BPF filter, binds the interface and says what went wrong in words, which is the part
worth not writing again. scapy reads one frame per system call, which cannot follow a full-rate
binlog dump while the same process decodes (bench/sniff.py: ~40 % of the frames lost), and it
has no memory-mapped reader; so the frames are read here from a TPACKET_V3 ring on that socket
by a capture process of their own (:mod:`binlogscope.drivers.capture.sniff_ring`), which hands whole
ring blocks over through a bounded queue. Frames then go through exactly the same layers as a
capture file (:class:`~binlogscope.drivers.capture.flows.CaptureReader`: TCP reassembly, one
OBSERVER session per MySQL connection), so ``sniff`` shows what ``pcap`` would show of the same
traffic.

What is added here:

* on the loopback interface every packet is seen twice by AF_PACKET (once leaving, once
  arriving); as libpcap does, the outgoing copy is skipped there - in the kernel (the filter
  starts with a packet-type test), so the copies take no ring room;
* two drop counters (:meth:`LiveCapture.stats`): the kernel's (frames the ring had no room
  for: the capture process fell behind) and the queue's (frames the capture process had no
  room for: the decoder fell behind, ``buffer_bytes``); both are reported beside the TCP gaps
  they cause;
* ``write``: every decoded frame also goes to a pcapng file (scapy's writer) that
  ``binlogscope pcap`` and Wireshark open;
* without the privilege to capture, one :class:`SniffError` line says what is needed.

Memory stays bounded: the ring (:data:`~binlogscope.drivers.capture.sniff_ring.BLOCK_COUNT` blocks
of
:data:`~binlogscope.drivers.capture.sniff_ring.BLOCK_SIZE`), the queue (``buffer_bytes``), and a
frame
is handed on to the decoder as soon as it is read.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from binlogscope.drivers.capture import sniff_ring
from binlogscope.drivers.capture.flows import CaptureReader
from binlogscope.drivers.capture.layers import LINKTYPE_ETHERNET, LINKTYPE_RAW
from binlogscope.drivers.capture.sniff_ring import RECORD, RingStats, block_frames
from binlogscope.drivers.capture.tls_keylog import LiveDecryption
from binlogscope.drivers.items import SourceItem
from binlogscope.session.events import PacketDecoded
from binlogscope.session.oversize import DEFAULT_MAX_PACKET

#: net/if_arp.h hardware types -> pcap link types
_LINKTYPES = {1: LINKTYPE_ETHERNET, 772: LINKTYPE_ETHERNET, 65534: LINKTYPE_RAW}
#: on a stop from the TUI, frames captured before it are still decoded for at most this long
DRAIN_SECONDS = 3.0
SO_ATTACH_FILTER = 26
_INSN = struct.Struct("=HBBI")  # struct sock_filter
_BPF_RET_K = 0x06
#: the longest frame kept (tcpdump's default snap length)
SNAPLEN = 262_144
#: classic BPF: A = the packet type (SKF_AD_OFF + SKF_AD_PKTTYPE); if A == PACKET_OUTGOING
#: return 0 (drop), else go on with the user's program
_SKIP_OUTGOING = struct.pack("=HBBIHBBIHBBI", 0x30, 0, 0, (-0x1000 + 4) & 0xFFFFFFFF,
                             0x15, 0, 1, sniff_ring.PACKET_OUTGOING, 0x06, 0, 0, 0)


class SniffError(Exception):
    """The capture cannot start or go on (one clear line)."""


@dataclass(slots=True)
class CaptureStats:
    """What the capture counted: frames decoded and the frames lost before decoding."""

    #: frames handed to the decoder
    frames: int = 0
    #: frames the kernel passed the filter (dropped ones included)
    received: int = 0
    #: frames the kernel dropped (the ring was full)
    dropped: int = 0
    #: frames dropped because the queue to the decoder was full
    buffer_dropped: int = 0
    buffer_peak: int = 0
    buffer_limit: int = 0
    #: frames captured but not (yet) decoded: the backlog while the capture runs; after it,
    #: what the capture ended without decoding (``--count``, a second Ctrl-C, the TUI closed)
    undecoded: int = 0

    @property
    def lost(self) -> int:
        return self.dropped + self.buffer_dropped


def bpf_for(extra: str | None) -> str:
    """The capture filter: TCP (every port: a server greeting on any port makes it a MySQL
    connection, as in ``pcap``), ANDed with the user's ``--bpf``."""
    return f"tcp and ({extra})" if extra else "tcp"


def _attach_filter(sock: Any, bpf: str, iface: str, skip_outgoing: bool) -> None:
    """``bpf`` compiled by scapy (libpcap) on ``sock``, taking whole frames, and with
    ``skip_outgoing`` the packet-type test in front of it.

    libpcap's program returns the snap length scapy compiled it with (65,535 bytes), and the
    kernel cuts each frame to what the filter returns: a 64 KiB loopback segment (65,549 bytes
    with its Ethernet header) lost its last 14 bytes, a TCP gap per big segment. The accepting
    returns are raised to :data:`SNAPLEN`."""
    from scapy.arch.common import compile_filter

    prog = compile_filter(bpf, iface)
    raw = ctypes.string_at(prog.bf_insns, prog.bf_len * 8)
    code = bytearray(_SKIP_OUTGOING if skip_outgoing else b"")
    for at in range(0, len(raw), 8):
        op, jt, jf, k = _INSN.unpack_from(raw, at)
        if op == _BPF_RET_K and k:
            k = SNAPLEN
        code += _INSN.pack(op, jt, jf, k)
    insns = ctypes.create_string_buffer(bytes(code), len(code))
    fprog = struct.pack("@HP", len(code) // 8, ctypes.addressof(insns))
    sock.setsockopt(1, SO_ATTACH_FILTER, fprog)  # (SOL_SOCKET; the kernel copies the program)


class LiveCapture:
    """An open AF_PACKET capture on one interface, read by its capture process."""

    def __init__(self, iface: str, bpf: str, *,
                 buffer_bytes: int = sniff_ring.BUFFER_BYTES) -> None:
        logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # (its "guess type" line)
        logging.getLogger("scapy").setLevel(logging.ERROR)
        try:
            from scapy.arch.linux import L2ListenSocket
            from scapy.error import Scapy_Exception
        except ImportError as exc:  # not Linux, or scapy missing
            raise SniffError(f"live capture needs Linux and scapy: {exc}") from None
        self.iface = iface
        self.bpf = bpf
        try:
            sock: Any = L2ListenSocket(iface=iface, filter=bpf)
        except PermissionError:
            raise SniffError(f"capturing on {iface} needs root or the CAP_NET_RAW capability "
                             "(e.g. sudo setcap cap_net_raw+ep on the python binary)") from None
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                raise SniffError(f"no such interface: {iface}") from None
            raise SniffError(f"cannot capture on {iface}: {exc.strerror or exc}") from None
        except (Scapy_Exception, ValueError) as exc:  # a bad filter; scapy: no such interface
            raise SniffError(f"cannot capture on {iface}: {exc}") from None
        ins = sock.ins
        try:
            hatype = ins.getsockname()[3]
            self.linktype = _LINKTYPES.get(hatype, LINKTYPE_ETHERNET)
            self.loopback = hatype == 772
            _attach_filter(ins, bpf, iface, self.loopback)
            blocks = sniff_ring.setup_ring(ins)
            # the socket took every frame between its creation and the filter (on a busy
            # interface, and counted them, drops too): the capture starts here
            sniff_ring.kernel_counters(ins)
            self._proc = self._spawn(ins.fileno(), buffer_bytes, blocks)
        except (OSError, Scapy_Exception) as exc:
            sock.close()
            raise SniffError(f"cannot set up the capture ring on {iface}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        sock.close()  # (the capture process has the socket now)
        assert self._proc.stdout is not None
        self._fd = self._proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._buf = bytearray()
        self._ring = RingStats(buffer_limit=buffer_bytes)
        self._ended = False
        self._stopped = False
        self.frames = 0
        self._not_decoded = 0

    def _spawn(self, fd: int, buffer_bytes: int, blocks: int) -> subprocess.Popen[bytes]:
        import binlogscope

        root = os.path.dirname(os.path.dirname(os.path.abspath(binlogscope.__file__)))
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
        return subprocess.Popen(
            [sys.executable, "-m", "binlogscope.drivers.capture.sniff_ring", str(fd),
             str(buffer_bytes), str(sniff_ring.BLOCK_SIZE), str(blocks), str(int(self.loopback))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(fd,), env=env,
            start_new_session=True)  # (a terminal's Ctrl-C is the parent's to handle)

    def read_batch(self, timeout: float) -> list[tuple[bytes, float]] | None:
        """The frames (and their kernel times) that the capture process has handed over; []
        when ``timeout`` passes without any, None when the capture has ended (after
        :meth:`stop`: everything captured before it has been read)."""
        deadline = time.monotonic() + timeout
        while True:
            frames = self._records()
            if frames:
                self.frames += len(frames)
                return frames
            if self._ended:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                return []
            try:
                data = os.read(self._fd, 4 << 20)
            except BlockingIOError:
                continue
            if not data:
                self._proc.wait()
                raise SniffError(f"the capture process ended unexpectedly (status "
                                 f"{self._proc.returncode})")
            self._buf += data

    def _records(self) -> list[tuple[bytes, float]]:
        buf = self._buf
        pos = 0
        frames: list[tuple[bytes, float]] = []
        head = RECORD.size
        while len(buf) - pos >= head:
            kind, length = RECORD.unpack_from(buf, pos)
            end = pos + head + length
            if len(buf) < end:
                break
            if kind == b"B":
                frames += block_frames(bytes(buf[pos + head : end]), self.loopback)
            elif kind == b"S":
                st = RingStats.unpack(bytes(buf[pos + head : end]))
                if st.serial > self._ring.serial:
                    self._ring = st
            elif kind == b"X":
                raise SniffError(bytes(buf[pos + head : end]).decode(errors="replace"))
            else:  # b"E"
                self._ended = True
            pos = end
        if pos:
            del buf[:pos]
        return frames

    def stop(self) -> None:
        """End the capture: what was captured before is still read (:meth:`read_batch`)."""
        if not self._stopped:
            self._stopped = True
            if self._proc.stdin is not None:
                self._proc.stdin.close()

    def not_decoded(self, n: int) -> None:
        """``n`` frames read (:meth:`read_batch`) that the caller ends without decoding (a
        drain cut short): counted as captured but not decoded, not as decoded."""
        self.frames -= n
        self._not_decoded += n

    def stats(self) -> CaptureStats:
        """The counters so far (the capture process sends them four times a second)."""
        r = self._ring
        left = self._not_decoded if self._ended else max(
            0, r.kernel_seen - r.kernel_dropped - r.buffer_dropped - self.frames)
        return CaptureStats(self.frames, r.kernel_seen, r.kernel_dropped, r.buffer_dropped,
                            r.buffer_peak, r.buffer_limit, left)

    def close(self) -> None:
        self.stop()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


class PcapNgFile:
    """Frames written to a pcapng file as they are captured (scapy's raw pcapng writer)."""

    def __init__(self, path: str, linktype: int) -> None:
        from scapy.utils import RawPcapNgWriter

        try:
            self._w: Any = RawPcapNgWriter(path)
        except OSError as exc:
            raise SniffError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._w.linktype = linktype
        self._w.write_header(None)

    def write(self, data: bytes, ts: float) -> None:
        self._w.write_packet(data, sec=ts)  # (the pcapng writer keeps µs of a float time)

    def close(self) -> None:
        self._w.close()


def sniff_batches(capture: LiveCapture, ports: Iterable[int] | None, *, record: bool = False,
                  stop: Callable[[], bool] = lambda: False, count: int | None = None,
                  duration: float | None = None, write: PcapNgFile | None = None,
                  poll: float = 0.2, drain: float | None = DRAIN_SECONDS,
                  max_packet: int = DEFAULT_MAX_PACKET,
                  abort: Callable[[], bool] = lambda: False,
                  decryption: LiveDecryption | None = None) -> Iterator[list[SourceItem]]:
    """What :func:`~binlogscope.drivers.capture.pcap.read_capture_batches` yields, live: a frame's
    items
    at a time, until ``stop()`` or ``duration`` seconds (then the capture ends and what it
    caught before is still decoded, for at most ``drain`` seconds; None: all of it) or
    ``count`` packets decoded. ``abort()`` (asked between batches once stopping): end now,
    without the rest of the drain (what is left is counted as not decoded). ``decryption``
    (``--tls-keylog``): TLS connections are read decrypted, as ``pcap --tls-keylog`` reads them
    (:class:`~binlogscope.drivers.capture.tls_keylog.LiveDecryption`; ``write`` keeps the
    frames as captured)."""
    reader = CaptureReader(ports, record=record, max_packet=max_packet)
    if decryption is not None:
        reader.tls_keylog = decryption.keylog
    feed = reader.record_frame
    linktype = capture.linktype
    end = time.monotonic() + duration if duration is not None else None
    number = 0
    packets = 0
    drain_until: float | None = None
    stopping = False
    done = False
    while not done:
        now = time.monotonic()
        if not stopping and (stop() or (end is not None and now >= end)):
            capture.stop()  # what was caught before the stop is still decoded
            stopping = True
            drain_until = None if drain is None else now + drain
        if (drain_until is not None and now > drain_until) or (stopping and abort()):
            break
        wait = poll if end is None or stopping else max(0.0, min(poll, end - now))
        batch = capture.read_batch(wait)
        if batch is None:
            break
        plain = None if decryption is None or not batch else decryption.records(
            [(number + 1 + k, ts, linktype, data) for k, (data, ts) in enumerate(batch)])
        for k, (data, ts) in enumerate(batch):
            if stopping and k and (
                    (drain_until is not None and time.monotonic() > drain_until) or abort()):
                # (the drain's bound holds inside a batch too: one frame after a TCP gap can
                # take a long time - the resync scan - and a batch holds many)
                capture.not_decoded(len(batch) - k)
                done = True
                break
            number += 1
            if write is not None:
                write.write(data, ts)
            if plain is not None:
                items = []
                for rec in plain[k]:
                    items += feed(number, ts, rec[2], rec[3])
            else:
                items = feed(number, ts, linktype, data)
            if not items:
                continue
            if count is not None:
                kept = []
                for it in items:
                    kept.append(it)
                    if it.kind == "packet" and isinstance(it.event, PacketDecoded):
                        packets += 1
                        if packets >= count:
                            break
                yield kept
                if packets >= count:
                    done = True
                    break
            else:
                yield items
    items = reader.finish()
    if items:
        yield items


def open_capture(iface: str, bpf: str | None, *,
                 buffer_bytes: int = sniff_ring.BUFFER_BYTES) -> LiveCapture:
    """A capture of TCP on ``iface``, narrowed by the user's ``bpf``."""
    return LiveCapture(iface, bpf_for(bpf), buffer_bytes=buffer_bytes)


__all__ = ["CaptureStats", "LiveCapture", "PcapNgFile", "SniffError", "bpf_for",
           "open_capture", "sniff_batches"]
