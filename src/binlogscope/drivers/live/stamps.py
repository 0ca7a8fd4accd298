"""When the live replica's bytes crossed its socket: the kernel's own timestamps.

A replica measured in user space is late on both ends: a read returns after the thread was woken
(and got the GIL), a send is stamped before or after the thread ran its Python code - each off by
up to a scheduler slice on a busy machine, so a semi-sync XID -> ACK interval read from the
program disagreed with a capture of the same connection. With ``SO_TIMESTAMPING``
(Linux, socket(7), Documentation/networking/timestamping.rst) the kernel stamps every received
segment (``SOF_TIMESTAMPING_RX_SOFTWARE``: the stamp of the last segment a read returns comes
with it as ancillary data) and every send (``SOF_TIMESTAMPING_TX_SOFTWARE``: when the segment
went to the device, queued on the socket's error queue with ``SOF_TIMESTAMPING_OPT_TSONLY``,
read back right after the send) - the times a capture of the interface shows.

Elsewhere (another system, a TLS socket whose reads hide the segments, a Unix socket) the clock
falls back to the time the read returned or the send was made.
"""

from __future__ import annotations

import socket
import ssl
import struct
import sys
import time

#: linux/net_tstamp.h and asm-generic/socket.h (not in Python's socket module)
SO_TIMESTAMPING = 37  # = SCM_TIMESTAMPING
_TX_SOFTWARE = 1 << 1
_RX_SOFTWARE = 1 << 3
_SOFTWARE = 1 << 4
_OPT_TSONLY = 1 << 11
_FLAGS = _TX_SOFTWARE | _RX_SOFTWARE | _SOFTWARE | _OPT_TSONLY
#: struct scm_timestamping: three timespecs, [0] the software one
_TIMESPEC = struct.Struct("@qq")
_CMSG_SPACE = socket.CMSG_SPACE(3 * _TIMESPEC.size)
_ERR_SPACE = _CMSG_SPACE + socket.CMSG_SPACE(64)  # (+ the IP_RECVERR sock_extended_err)
_ERRQUEUE = getattr(socket, "MSG_ERRQUEUE", 0x2000) | socket.MSG_DONTWAIT


class SocketClock:
    """Reads and sends of one socket with the time their bytes crossed it."""

    def __init__(self, sock: socket.socket) -> None:
        self.kernel = False
        #: a send whose kernel timestamp was not read yet (read before the next recv: a
        #: pending error queue would make a read with a timeout spin)
        self._tx_pending = False
        self.attach(sock)

    def attach(self, sock: socket.socket) -> None:
        """Use ``sock`` from now on (after TLS starts: no kernel times)."""
        self.kernel = False
        self._tx_pending = False
        # (a socket-like object - a replay, a test double - reads with plain times)
        if not sys.platform.startswith("linux") or isinstance(sock, ssl.SSLSocket) \
                or not isinstance(sock, socket.socket) \
                or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, _FLAGS)
        except OSError:
            return
        self.kernel = True

    def stop(self, sock: socket.socket) -> None:
        """No kernel times on ``sock`` any more (before TLS wraps it: the TLS layer's reads and
        writes would leave send timestamps queued, unread)."""
        if self.kernel:
            self.sent(sock, 0.0)  # (drained)
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, 0)
            except OSError:
                pass
        self.kernel = False
        self._tx_pending = False

    def recv_into(self, sock: socket.socket, buf: memoryview) -> tuple[int, float]:
        """One read into ``buf``: (bytes read, when the last of them arrived)."""
        if not self.kernel:
            n = sock.recv_into(buf)
            return n, time.time()
        if self._tx_pending:
            self.sent(sock, time.time())
        n, anc, _, _ = sock.recvmsg_into([buf], _CMSG_SPACE)
        stamp = _software_time(anc)
        return n, time.time() if stamp is None else stamp

    def sent(self, sock: socket.socket, fallback: float) -> float:
        """When the last send left (its kernel timestamp; ``fallback`` without one)."""
        if not self.kernel:
            return fallback
        stamp = None
        # (a socket with a timeout waits out an empty queue, MSG_DONTWAIT or not: the
        # queue is read with the socket non-blocking for the while)
        timeout = sock.gettimeout()
        sock.settimeout(0.0)
        try:
            while True:  # (every stamp queued; the last is the last send's)
                try:
                    _, anc, _, _ = sock.recvmsg(0, _ERR_SPACE, _ERRQUEUE)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    self.kernel = False  # (not what this socket supports: user-space times)
                    break
                got = _software_time(anc)
                stamp = got if got is not None else stamp
        finally:
            sock.settimeout(timeout)
        self._tx_pending = stamp is None and self.kernel
        return fallback if stamp is None else stamp

    def sending(self) -> None:
        """A send was just written (its timestamp is on the error queue)."""
        self._tx_pending = self.kernel


def _software_time(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPING \
                and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            if sec or nsec:
                return float(sec + nsec / 1e9)
    return None


__all__ = ["SO_TIMESTAMPING", "SocketClock"]
