"""Mid-stream resync heuristics: where a MySQL packet plausibly starts in bytes that did not
begin on a packet boundary (a capture joined mid-connection, bytes lost in a TCP gap).

The driver buffers the bytes after the gap and asks :func:`find_packet_start`; once found it
tells the session (:meth:`Session.resync`, and :meth:`Session.join_stream` when the server's
side turns out to be a binlog stream) and feeds from that offset on.
:func:`looks_like_greeting` classifies a connection by its first server segment;
:func:`greeting_plausible` is the session's own check of a first packet in CONNECT.
"""

from __future__ import annotations

import struct

from binlogscope.session.events import Peer

_U32LE = struct.Struct("<I")  # packet lengths: 4 bytes read, masked to 3
_YES, _NO, _MAYBE = 1, 0, 2


def _binlog_header_ok(buf: bytes | bytearray, p: int, n: int) -> int:
    """Is there a binlog stream packet (0x00 [+EF xx] + event header) at ``p``?"""
    e = p + 5
    if len(buf) < p + 4 + 1 + 19:
        return _MAYBE
    if buf[p + 4] != 0:
        return _NO
    for skip, delta in ((0, 1), (2, 3)):
        if skip and buf[e] != 0xEF:
            continue
        h = e + skip
        if len(buf) < h + 19:
            return _MAYBE
        size = _U32LE.unpack_from(buf, h + 9)[0]
        code = buf[h + 4]
        if size == n - delta and 0 < code < 0xA5 and size >= 19:
            return _YES
    return _NO


def _generic_ok(buf: bytes | bytearray, p: int, depth: int = 0) -> int:
    if len(buf) < p + 4:
        return _MAYBE
    n = _U32LE.unpack_from(buf, p)[0] & 0xFFFFFF
    if n == 0 or n > 0x1000000:
        return _NO
    q = p + 4 + n
    if q == len(buf):
        return _YES
    if q > len(buf):
        return _MAYBE
    if depth >= 2:
        return _YES
    if len(buf) < q + 4:
        return _MAYBE
    seq, nseq = buf[p + 3], buf[q + 3]
    if nseq != (seq + 1) & 0xFF and nseq != 0:
        return _NO
    return _generic_ok(buf, q, depth + 1)


def find_packet_start(buf: bytes | bytearray, *, binlog: bool, ack: bool = False
                      ) -> tuple[int | None, int | None]:
    """Where the next plausible MySQL packet header starts in ``buf``.

    ``binlog``: the source's side of a binlog stream (``0x00`` + event header whose event_size
    matches the packet length, optionally behind the 2-byte semi-sync header). ``ack``: the
    replica's side of a semi-sync stream (``0xEF`` ACKs with sequence id 0). Otherwise: a chain
    of packet headers whose lengths end exactly at the end of the data or at a header with the
    next sequence id (or 0).

    Returns ``(offset, None)`` when found; ``(None, wait)`` otherwise, where ``wait`` is the
    first position that might still qualify once more bytes arrive (None: no position can).
    """
    wait: int | None = None
    size = len(buf)
    for p in range(max(size - 3, 0)):
        if p + 4 > size:
            v = _MAYBE
        else:
            n = int(_U32LE.unpack_from(buf, p)[0]) & 0xFFFFFF
            if binlog:
                v = _binlog_header_ok(buf, p, n) if n >= 20 else _NO
            elif ack:
                if n < 9 or buf[p + 3] != 0:
                    v = _NO
                elif p + 4 >= size:
                    v = _MAYBE
                elif buf[p + 4] != 0xEF:
                    v = _NO
                else:
                    v = _YES if p + 4 + n <= size else _MAYBE
            else:
                v = _generic_ok(buf, p)
        if v == _YES:
            return p, None
        if v == _MAYBE and wait is None:
            wait = p
    if wait is None and size:
        wait = max(size - 3, 0)
    return None, wait


def looks_like_greeting(payload: bytes) -> bool:
    """A server greeting (HandshakeV10) or a connect-time ERR in one segment."""
    if len(payload) < 5 or payload[3] != 0:
        return False
    n = int(_U32LE.unpack_from(payload, 0)[0]) & 0xFFFFFF
    if n != len(payload) - 4:
        return False
    if payload[4] == 0xFF:
        return n >= 3
    if payload[4] != 0x0A or n < 33:
        return False
    nul = payload.find(b"\0", 5, 5 + 64)
    return nul > 5 and all(32 <= c < 127 for c in payload[5:nul])


def greeting_plausible(peer: Peer, payload: bytes) -> bool:
    """In CONNECT: is this the start of a connection (a server greeting or a refusal)?"""
    if peer == Peer.CLIENT or not payload:
        return False
    return payload[0] in (0x0A, 0xFF)


__all__ = ["find_packet_start", "greeting_plausible", "looks_like_greeting"]
