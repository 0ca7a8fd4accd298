"""The compressed client/server protocol: a second framing layer under the packets.

Negotiated in the handshake (``CLIENT_COMPRESS``: zlib; ``CLIENT_ZSTD_COMPRESSION_ALGORITHM``:
zstd, MySQL 8.0.18+, its level in the handshake response), it starts with the first packet
after the OK that ends the login, in both directions. Each compressed frame is a 7-byte header
- 3 bytes compressed length, 1 byte compressed sequence id, 3 bytes uncompressed length - then
the payload: the compressed bytes of a piece of the plain packet stream, or (uncompressed
length 0) that piece stored as is. A frame carries any number of whole or partial packets; the
packets inside keep their own 4-byte headers and sequence ids. Senders store payloads under
:data:`MIN_COMPRESS_LENGTH` bytes (the server's ``MIN_COMPRESS_LENGTH``) and any payload that
does not shrink. The compressed sequence id restarts at 0 with each client command, the
server's replies go on from the client's id + 1 (MySQL ``net_clear`` resets
``compress_pkt_nr``; MariaDB the same).

Facts followed: MySQL ``sql-common/net_serv.cc`` (``compress_packet``, ``net_read_packet``
with ``COMP_HEADER_SIZE`` 3), ``mysys/my_compress.cc`` (``my_compress``: zlib, or zstd with
``ZSTD_compress``; ``MIN_COMPRESS_LENGTH`` 50). zlib is the standard library's; zstd is the
``zstandard`` package (a binding of the reference library, already used for TRANSACTION_PAYLOAD).

Sans-IO: :class:`FrameReader` splits one direction's bytes into frames and inflates them;
:func:`encode_frames` builds frames; :func:`frame_node` is the frame's annotated Node (wire
offsets), the parent of the packets it carries in the views.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import zstandard

from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

#: bytes of a compressed frame's header
FRAME_HEADER_LEN = 7
#: payloads shorter than this are stored, not compressed (MySQL/MariaDB MIN_COMPRESS_LENGTH)
MIN_COMPRESS_LENGTH = 50
#: the largest payload of one frame (as for plain packets: 3 length bytes)
MAX_FRAME = 0xFFFFFF
#: zstd's level when the handshake response does not name one (MySQL's default)
DEFAULT_ZSTD_LEVEL = 3

ZLIB = "zlib"
ZSTD = "zstd"


class FrameError(Exception):
    """A frame whose payload does not inflate to its announced length."""


def negotiated(capabilities: int) -> str | None:
    """The algorithm ``capabilities`` (both sides' flags in force) switch on, or None.

    As MySQL's server (``sql/auth/sql_authentication.cc``, ``server_mpvio_update_thd`` /
    the compression check after login): CLIENT_COMPRESS (zlib) wins over
    CLIENT_ZSTD_COMPRESSION_ALGORITHM."""
    if capabilities & CapabilityFlag.CLIENT_COMPRESS:
        return ZLIB
    if capabilities & CapabilityFlag.CLIENT_ZSTD_COMPRESSION_ALGORITHM:
        return ZSTD
    return None


@dataclass(frozen=True, slots=True)
class Frame:
    """One compressed frame: where its header is (wire offset), its lengths and sequence id,
    and the plain bytes it carries (``plain``; ``plain_offset``: where they start in the
    direction's plain packet stream)."""

    offset: int
    compressed_length: int
    sequence_id: int
    uncompressed_length: int  # 0: stored as is
    plain: bytes
    plain_offset: int
    algorithm: str

    @property
    def wire_length(self) -> int:
        return FRAME_HEADER_LEN + self.compressed_length

    @property
    def end(self) -> int:
        return self.offset + self.wire_length


def inflate(algorithm: str, body: bytes, size: int) -> bytes:
    """``body`` inflated, which must give exactly ``size`` bytes (:class:`FrameError`)."""
    try:
        if algorithm == ZSTD:
            out = zstandard.ZstdDecompressor().decompress(body, max_output_size=size)
            if len(out) != size:
                raise FrameError(f"zstd payload inflates to {len(out)} bytes, not {size}")
            return out
        d = zlib.decompressobj()
        out = d.decompress(body, size)
    except (zlib.error, zstandard.ZstdError) as exc:
        raise FrameError(f"{algorithm} payload does not inflate: {exc}") from None
    if len(out) != size or d.unconsumed_tail or not d.eof:
        raise FrameError(f"zlib payload inflates to more or less than {size} bytes")
    return out


def deflate(algorithm: str, data: bytes, level: int | None = None) -> bytes:
    if algorithm == ZSTD:
        return zstandard.ZstdCompressor(level=level or DEFAULT_ZSTD_LEVEL).compress(data)
    return zlib.compress(data) if level is None else zlib.compress(data, level)


def encode_frames(data: bytes | bytearray | memoryview, sequence_id: int, algorithm: str,
                  *, level: int | None = None,
                  min_length: int = MIN_COMPRESS_LENGTH) -> tuple[bytes, int]:
    """``data`` (plain packets) as compressed frames from ``sequence_id`` on; returns the
    bytes and the next compressed sequence id. A piece under ``min_length`` bytes, or one that
    does not shrink, is stored as is (uncompressed length 0)."""
    view = memoryview(data)
    out = bytearray()
    seq = sequence_id & 0xFF
    i = 0
    while True:
        chunk = bytes(view[i:i + MAX_FRAME])
        z = deflate(algorithm, chunk, level) if len(chunk) >= min_length else b""
        if z and len(z) < len(chunk):
            out += len(z).to_bytes(3, "little") + bytes((seq,)) \
                + len(chunk).to_bytes(3, "little") + z
        else:
            out += len(chunk).to_bytes(3, "little") + bytes((seq,)) + b"\0\0\0" + chunk
        seq = (seq + 1) & 0xFF
        i += len(chunk)
        if i >= len(view):
            break
    return bytes(out), seq


class FrameReader:
    """One direction's compressed frames (sans-IO): :meth:`feed` bytes, :meth:`next_frame`
    until None. ``offset``: the wire offset of the next unread byte; ``plain_offset``: where
    the next frame's plain bytes go in the direction's plain stream."""

    def __init__(self, algorithm: str, offset: int, plain_offset: int) -> None:
        self.algorithm = algorithm
        self.offset = offset
        self.plain_offset = plain_offset
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def next_frame(self) -> Frame | None:
        """The next whole frame, or None until one is complete; :class:`FrameError` (the
        frame is consumed) when its payload does not inflate."""
        b = self._buf
        if len(b) < FRAME_HEADER_LEN:
            return None
        n = b[0] | b[1] << 8 | b[2] << 16
        if len(b) < FRAME_HEADER_LEN + n:
            return None
        seq = b[3]
        size = b[4] | b[5] << 8 | b[6] << 16
        body = bytes(b[FRAME_HEADER_LEN:FRAME_HEADER_LEN + n])
        del b[:FRAME_HEADER_LEN + n]
        at = self.offset
        self.offset += FRAME_HEADER_LEN + n
        plain = inflate(self.algorithm, body, size) if size else body
        frame = Frame(at, n, seq, size, plain, self.plain_offset, self.algorithm)
        self.plain_offset += len(plain)
        return frame

    def drain(self) -> tuple[int, bytes]:
        """Every buffered byte (a frame cut by the end of the connection)."""
        off, data = self.offset, bytes(self._buf)
        self.offset += len(data)
        self._buf.clear()
        return off, data


def decode_frame_header(r: ByteReader) -> tuple[int, int, int]:
    """Read one 7-byte frame header (a ``compressed_header`` group): (compressed length,
    sequence id, uncompressed length)."""
    r.begin("compressed_header",
            doc="7-byte header of a compressed-protocol frame")
    n = r.u24("compressed_length", doc="length of the frame's payload as sent")
    seq = r.u8("compressed_sequence_id",
               doc="frame counter: 0 for a client command, +1 per frame in either direction")
    size = r.u24("uncompressed_length",
                 doc="length of the payload once inflated (0: the payload is stored as is)")
    r.end_group()
    return n, seq, size


def frame_node(frame: Frame) -> Node:
    """The annotated Node of a frame (wire offsets): its header, and its payload as one span
    (its bytes are the packets the frame carries, each with a tree of its own)."""
    header = (frame.compressed_length.to_bytes(3, "little") + bytes((frame.sequence_id,))
              + frame.uncompressed_length.to_bytes(3, "little"))
    r = ByteReader(header, base=frame.offset)
    decode_frame_header(r)
    stored = frame.uncompressed_length == 0
    payload = Node(
        "compressed_payload", frame.offset + FRAME_HEADER_LEN, frame.compressed_length, None,
        "",
        f"{frame.compressed_length} bytes stored as is" if stored else
        f"{frame.compressed_length} bytes of {frame.algorithm}, "
        f"{frame.uncompressed_length} bytes inflated",
        "the plain packet bytes this frame carries, starting at plain-stream offset "
        f"{frame.plain_offset}")
    what = "stored" if stored else frame.algorithm
    return Node("compressed_frame", frame.offset, frame.wire_length, None, "",
                f"compressed frame #{frame.sequence_id} ({what}, {len(frame.plain)} plain bytes)",
                "a frame of the compressed protocol: carries a piece of the plain packet "
                "stream", (*r.children(), payload))


__all__ = [
    "DEFAULT_ZSTD_LEVEL", "FRAME_HEADER_LEN", "MIN_COMPRESS_LENGTH", "ZLIB", "ZSTD", "Frame",
    "FrameError", "FrameReader", "decode_frame_header", "deflate", "encode_frames",
    "frame_node", "frame_start_verdict", "inflate", "negotiated",
]


#: zstd's frame magic (RFC 8878)
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _deflated_frame_at(buf: bytes | bytearray, i: int) -> tuple[str, int] | None:
    """(algorithm, frame length) when a *deflated* compressed frame starts at ``i`` and is
    whole in ``buf``: a 7-byte header whose payload inflates to exactly the uncompressed
    length it announces (zlib: a valid CMF/FLG pair; zstd: its magic)."""
    if len(buf) - i < FRAME_HEADER_LEN + 2:
        return None
    n = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16
    size = buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16
    if not size or n < 2 or n >= size + 64 or len(buf) - i < FRAME_HEADER_LEN + n:
        return None
    body = bytes(buf[i + FRAME_HEADER_LEN:i + FRAME_HEADER_LEN + n])
    if body[:4] == _ZSTD_MAGIC:
        algorithm = ZSTD
    elif body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0:
        algorithm = ZLIB
    else:
        return None
    try:
        inflate(algorithm, body, size)
    except FrameError:
        return None
    return algorithm, FRAME_HEADER_LEN + n


def frame_start_verdict(buf: bytes | bytearray, i: int) -> tuple[bool | None, int, str]:
    """:func:`find_frame_start`'s verdict on position ``i``: (True, 0, algorithm) a frame
    starts there; (False, 0, "") none can, whatever bytes follow; (None, length, "") not
    before the buffer is ``length`` bytes long (the frame or its next header not whole yet).
    A True can become False once the next frame's header arrives."""
    if len(buf) - i < FRAME_HEADER_LEN + 2:
        return None, i + FRAME_HEADER_LEN + 2, ""
    n = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16
    size = buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16
    if not size or n < 2 or n >= size + 64:
        return False, 0, ""
    if len(buf) - i < FRAME_HEADER_LEN + n:
        return None, i + FRAME_HEADER_LEN + n, ""
    got = _deflated_frame_at(buf, i)
    if got is None:
        return False, 0, ""
    j = i + got[1]
    if len(buf) - j >= FRAME_HEADER_LEN:
        n2 = buf[j] | buf[j + 1] << 8 | buf[j + 2] << 16
        if n2 == 0 or n2 > MAX_FRAME:
            return False, 0, ""
    return True, 0, got[0]


def find_frame_start(buf: bytes | bytearray, limit: int = 1 << 16) -> tuple[int, str] | None:
    """Where compressed frames start in a byte stream joined mid-connection (a capture that
    starts inside a compressed session): (offset, algorithm) of the first deflated frame
    (:func:`_deflated_frame_at`: its payload inflates to exactly its announced length, which
    plain packets do not do by chance) whose next frame header, when the buffer holds it, is
    plausible too; None when none is found in the first ``limit`` bytes. Frames stored as is
    (uncompressed length 0) cannot be told from plain bytes: the first deflated one is
    where decoding resumes."""
    end = min(len(buf), limit)
    for i in range(end):
        got = _deflated_frame_at(buf, i)
        if got is None:
            continue
        algorithm, length = got
        j = i + length
        if len(buf) - j >= FRAME_HEADER_LEN:
            n2 = buf[j] | buf[j + 1] << 8 | buf[j + 2] << 16
            if n2 == 0 or n2 > MAX_FRAME:
                continue
        return i, algorithm
    return None
