"""The compressed client/server protocol (CLIENT_COMPRESS, zlib; the MySQL flavour from 8.0.18
also CLIENT_ZSTD_COMPRESSION_ALGORITHM, zstd at the level the client's handshake response names),
as the server's net layer speaks it: sans-IO framing for one connection of the mock master.

After the OK that ends a login with CLIENT_COMPRESS, both directions carry compressed packets:
a 7-byte header (3 bytes payload length, 1 byte compressed sequence id, 3 bytes uncompressed
length - 0 when the payload is stored as is) and a payload holding the plain packet stream (zlib
when that pays, and never below :data:`MIN_COMPRESS_LENGTH` bytes, as the server's
``my_compress``). The compressed sequence id restarts with each client packet: the server's
replies go on from the client's id + 1. A client frame whose length (or uncompressed length)
reaches max_allowed_packet is refused before its body is read, as plain packets are.

The frames are built and inflated by binlogscope's wire layer
(:mod:`binlogscope.wire.compressed`), the one every decoder of the toolkit uses.
"""

from __future__ import annotations

from binlogscope.wire.compressed import (
    FRAME_HEADER_LEN,
    MIN_COMPRESS_LENGTH,
    ZLIB,
    FrameError,
    encode_frames,
    inflate,
)

#: MySQL 8.0.18 added zstd (CLIENT_ZSTD_COMPRESSION_ALGORITHM; the level in the handshake
#: response); MariaDB speaks zlib only
ZSTD_SINCE = (8, 0, 18)

HEADER = FRAME_HEADER_LEN


class FrameTooLargeError(Exception):
    """A client frame reaches max_allowed_packet (``size``; ``seq``: its sequence id)."""

    def __init__(self, size: int, seq: int) -> None:
        super().__init__(f"compressed packet of {size} bytes")
        self.size = size
        self.seq = seq


class BadFrameError(Exception):
    """A client frame that does not inflate to its announced length."""


class Compression:
    """One connection's compressed framing: :meth:`wrap` what the server sends,
    :meth:`feed`/:meth:`take` what the client sends."""

    def __init__(self, limit: int, algorithm: str = ZLIB, level: int | None = None) -> None:
        self.limit = limit  # max_allowed_packet (0: none)
        #: zlib or zstd (:func:`binlogscope.wire.compressed.negotiated`), zstd's level
        self.algorithm = algorithm
        self.level = level
        self.seq = 0  # the next compressed sequence id the server sends
        self._in = bytearray()

    # ---------------------------------------------------------------- server -> client
    def wrap(self, data: bytes | bytearray | memoryview) -> bytes:
        """``data`` (plain packets) as compressed frames."""
        if not len(data):
            return b""
        out, self.seq = encode_frames(data, self.seq, self.algorithm, level=self.level,
                                      min_length=MIN_COMPRESS_LENGTH)
        return out

    # ---------------------------------------------------------------- client -> server
    def feed(self, data: bytes) -> None:
        self._in += data

    def take(self) -> bytes | None:
        """The plain bytes of the next whole client frame, or None until one is complete.
        Raises :class:`FrameTooLargeError` as soon as a too big frame's header is there."""
        if len(self._in) < HEADER:
            return None
        n = int.from_bytes(self._in[0:3], "little")
        seq = self._in[3]
        plain = int.from_bytes(self._in[4:7], "little")
        if self.limit > 0 and max(n, plain) >= self.limit:
            self.seq = (seq + 1) & 0xFF
            raise FrameTooLargeError(max(n, plain), seq)
        if len(self._in) < HEADER + n:
            return None
        body = bytes(self._in[HEADER:HEADER + n])
        del self._in[:HEADER + n]
        self.seq = (seq + 1) & 0xFF
        if not plain:
            return body
        try:
            return inflate(self.algorithm, body, plain)
        except FrameError as exc:
            raise BadFrameError(f"compressed packet: {exc}") from None
