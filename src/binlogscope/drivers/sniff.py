"""Live capture from a network interface (``binlogscope sniff -i IFACE``): frames as they pass.

The capture layer is scapy's Linux ``L2ListenSocket`` (an AF_PACKET socket): scapy compiles and
attaches the BPF filter, binds the interface, sizes the receive buffer and turns on kernel
timestamps, which is the part worth not writing again. Frames then go through exactly the same
layers as a capture file (:class:`~binlogscope.drivers.pcap_flows.CaptureReader`: TCP
reassembly, one OBSERVER session per MySQL connection), so ``sniff`` shows what ``pcap`` would
show of the same traffic.

What is added here:

* on the loopback interface every packet is seen twice by AF_PACKET (once leaving, once
  arriving); as libpcap does, the outgoing copy is skipped there;
* the kernel's drop counter (``PACKET_STATISTICS``: frames the socket buffer had no room for)
  is read with :meth:`LiveCapture.stats`; drops are reported beside the TCP gaps they cause;
* ``write``: every captured frame also goes to a pcapng file (scapy's writer) that
  ``binlogscope pcap`` and Wireshark open;
* without the privilege to capture, one :class:`SniffError` line says what is needed.

Memory stays flat: a frame is handed on as soon as it is read.
"""

from __future__ import annotations

import logging
import select
import socket
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from binlogscope.drivers.pcap_flows import CaptureItem, CaptureReader
from binlogscope.drivers.pcap_layers import LINKTYPE_ETHERNET, LINKTYPE_RAW
from binlogscope.events import PacketDecoded

#: linux/if_packet.h
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4
#: net/if_arp.h hardware types -> pcap link types
_LINKTYPES = {1: LINKTYPE_ETHERNET, 772: LINKTYPE_ETHERNET, 65534: LINKTYPE_RAW}
SO_RCVBUFFORCE = 33
#: the socket's receive buffer: frames wait there while the decoder is busy
RCVBUF = 64 << 20
#: on a stop, frames already in the socket buffer are still read for at most this long
DRAIN_SECONDS = 3.0
#: the longest frame read (tcpdump's default snap length)
SNAPLEN = 262_144


class SniffError(Exception):
    """The capture cannot start or go on (one clear line)."""


@dataclass(slots=True)
class CaptureStats:
    """Frames the kernel handed to the socket and the ones it dropped (buffer full)."""

    received: int = 0
    dropped: int = 0


def bpf_for(extra: str | None) -> str:
    """The capture filter: TCP (every port: a server greeting on any port makes it a MySQL
    connection, as in ``pcap``), ANDed with the user's ``--bpf``."""
    return f"tcp and ({extra})" if extra else "tcp"


class LiveCapture:
    """An open AF_PACKET capture on one interface."""

    def __init__(self, iface: str, bpf: str | None) -> None:
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
            self._sock: Any = L2ListenSocket(iface=iface, filter=bpf)
        except PermissionError:
            raise SniffError(f"capturing on {iface} needs root or the CAP_NET_RAW capability "
                             "(e.g. sudo setcap cap_net_raw+ep on the python binary)") from None
        except OSError as exc:
            if exc.errno == 19:  # ENODEV
                raise SniffError(f"no such interface: {iface}") from None
            raise SniffError(f"cannot capture on {iface}: {exc.strerror or exc}") from None
        except (Scapy_Exception, ValueError) as exc:  # a bad filter; scapy: no such interface
            raise SniffError(f"cannot capture on {iface}: {exc}") from None
        ins = self._sock.ins
        try:  # room for bursts while the decoder is busy (root may go past rmem_max)
            ins.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
        except OSError:
            ins.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        hatype = ins.getsockname()[3]
        self.linktype = _LINKTYPES.get(hatype, LINKTYPE_ETHERNET)
        self.loopback = hatype == 772
        self._stats = CaptureStats()

    def read(self, timeout: float) -> tuple[bytes, float] | None:
        """The next frame and its kernel time, or None when ``timeout`` passes without one."""
        ins = self._sock.ins
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([ins], [], [], left)
            if not ready:
                return None
            # (scapy's reader of one frame with its auxdata and SO_TIMESTAMPNS time)
            data, sa_ll, ts = self._sock._recv_raw(ins, SNAPLEN)
            if data is None:
                continue
            if self.loopback and sa_ll[2] == PACKET_OUTGOING:
                continue  # lo shows every packet leaving and arriving: keep one copy
            return data, (ts if ts is not None else time.time())

    def stats(self) -> CaptureStats:
        """The kernel's counters so far (reading them resets the kernel's; they add up here)."""
        try:
            raw = self._sock.ins.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
            packets, drops = struct.unpack("II", raw)
            self._stats.received += packets
            self._stats.dropped += drops
        except OSError:
            pass
        return self._stats

    def close(self) -> None:
        self._sock.close()


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
                  poll: float = 0.2) -> Iterator[list[CaptureItem]]:
    """What :func:`~binlogscope.drivers.pcap.read_capture_batches` yields, live: a frame's items
    at a time, until ``stop()`` (then what the socket buffer already holds is still read, for
    at most :data:`DRAIN_SECONDS`), ``count`` packets decoded, or ``duration`` seconds."""
    reader = CaptureReader(ports, record=record)
    feed = reader.record_frame
    end = time.monotonic() + duration if duration is not None else None
    number = 0
    packets = 0
    drain_until: float | None = None
    while True:
        if drain_until is None and stop():
            # what the kernel already holds was seen before the stop: decode it too
            drain_until = time.monotonic() + DRAIN_SECONDS
        if drain_until is not None:
            if time.monotonic() > drain_until:
                break
            got = capture.read(0.05)
            if got is None:
                break
        else:
            wait = poll if end is None else min(poll, end - time.monotonic())
            if wait <= 0:
                break
            got = capture.read(wait)
            if got is None:
                continue
        data, ts = got
        number += 1
        if write is not None:
            write.write(data, ts)
        items = feed(number, ts, capture.linktype, data)
        if items:
            if count is not None:
                kept = []
                for it in items:
                    kept.append(it)
                    if it.kind == "event" and isinstance(it.event, PacketDecoded):
                        packets += 1
                        if packets >= count:
                            break
                yield kept
                if packets >= count:
                    break
            else:
                yield items
    items = reader.finish()
    if items:
        yield items


def open_capture(iface: str, bpf: str | None) -> LiveCapture:
    """A capture of TCP on ``iface``, narrowed by the user's ``bpf``."""
    return LiveCapture(iface, bpf_for(bpf))


__all__ = ["CaptureStats", "LiveCapture", "PcapNgFile", "SniffError", "bpf_for",
           "open_capture", "sniff_batches"]
