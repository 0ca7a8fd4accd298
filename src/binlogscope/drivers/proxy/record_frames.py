"""The proxy recorder's view of a compressed session: secrets masked inside the frames.

After the login of a session that negotiated the compressed protocol, both directions are
compressed frames (:mod:`binlogscope.wire.compressed`): a COM_CHANGE_USER, the server's nonce in
its AuthSwitchRequest and the client's auth response after it are inside frames, most of them
deflated, where a byte mask on the wire cannot reach them. :class:`CompressedView` follows the
frames of each direction from their 7-byte headers and reads what they carry as plain packets
with an OBSERVER :class:`~binlogscope.session.Session` of its own (in COMMAND, the login's
capabilities, trees on for the marks), fed the inflated bytes:

- a secret inside a *stored* frame (uncompressed length 0: the payload is the plain bytes) is
  overwritten on the wire, ``*`` bytes of the same length, as on a plain session;
- a *deflated* frame that carries one is inflated, masked and deflated again
  (:func:`~binlogscope.wire.compressed.encode_frames`, same sequence id and plain length;
  stored when masking made it incompressible): the recording holds a valid frame of another
  length in its place, so the TCP stream of that direction is shorter or longer from there on
  than the one relayed (the recording is a synthetic TCP conversation; its readers follow the
  frames, not the original sequence numbers).

The client's frames are always inflated (commands are small); the server's only from a
COM_CHANGE_USER until the client's next command: a binlog dump (all of the volume) is followed
from its frame headers alone, never inflated. A frame that does not inflate is masked whole
(its header kept): nothing in it can be read, by the recorder or by a later reader. A chunk is
written once the frames it belongs to are whole and the packets they carry are whole and
masked.

:class:`Walker` (a direction's packet boundaries from the 4-byte headers alone) is shared with
the plain path of :mod:`.record`.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass

from binlogscope.session import Role, Session
from binlogscope.session.events import PacketDecoded, Peer, Phase
from binlogscope.wire.compressed import FRAME_HEADER_LEN, FrameError, encode_frames, inflate
from binlogscope.wire.constants import CapabilityFlag, Command
from binlogscope.wire.fields import is_sensitive

MASK = 0x2A
_NO_COMPRESSION = ~int(CapabilityFlag.CLIENT_COMPRESS
                       | CapabilityFlag.CLIENT_ZSTD_COMPRESSION_ALGORITHM)

#: overwrite(peer, lo, hi): mask wire bytes [lo, hi) of ``peer`` in place
Overwrite = Callable[[Peer, int, int], None]
#: replace(peer, lo, hi, new): wire bytes [lo, hi) of ``peer`` are written as ``new``
Replace = Callable[[Peer, int, int, bytes], None]


#: the server's packets of an auth exchange as a session reads them in order
AUTH_REPLIES = frozenset(("auth_switch_request", "auth_more_data"))


def secret_ranges(ev: PacketDecoded, changing: bool, change_user: bool
                  ) -> tuple[bool, list[tuple[int, int]]]:
    """What of a decoded packet (with its tree) the recorder masks, in its direction's stream
    offsets, and whether a COM_CHANGE_USER's auth exchange goes on after it (``changing``:
    it was going on before; ``change_user``: a client COM_CHANGE_USER may start one here, the
    phase allowing). The one definition for the plain recorder (``record._Masker``) and
    :class:`CompressedView`.

    - its secret leaves (``is_sensitive``), as the session marked them;
    - a COM_CHANGE_USER: all after the command byte (wire/ has no reader for it that marks
      its auth response), and its exchange begins;
    - in that exchange, whatever order the recorder gets its two directions in (two relay
      threads hand them over; a session that took the client's answer before the request it
      answers would read the answer as a command, nothing marked, and the request as a reply
      to that command): every client packet whole (an auth switch response, a cleartext or
      encrypted password, a one-byte public key request); a server packet the session did not
      read as an auth reply, from after the plugin name of an auth switch request (0xFE) or
      after the status byte of auth more data (0x01); the server's OK or ERR ends it."""
    node = ev.node
    assert node is not None
    payload = ev.payload
    if ev.direction is Peer.CLIENT:
        if changing:
            return True, [(ev.offset + 4, ev.end)]
        if change_user and payload[:1] == bytes([Command.COM_CHANGE_USER]):
            return True, [(ev.offset + 5, ev.end)]
    out = [(lo, lo + n.length) for _, n in node.walk()
           if n.length and not n.children and is_sensitive(n)
           for lo in (ev.offset + n.offset - node.offset,)]
    if ev.direction is Peer.SERVER and changing:
        first = payload[:1]
        if first in (b"\x00", b"\xff"):  # OK / ERR: the exchange is over
            return False, out
        if ev.kind not in AUTH_REPLIES:  # (read in order, its secret leaves are marked)
            if first == b"\xfe":  # the plugin name (NUL-terminated) stays readable
                end = payload.find(b"\x00", 1)
                out.append((ev.offset + 4 + (end + 1 if end >= 0 else 1), ev.end))
            else:
                out.append((ev.offset + 5, ev.end))
    return changing, out


class Walker:
    """Packet boundaries of one direction, from the 4-byte headers alone."""

    __slots__ = ("cont", "hdr", "rest")

    def __init__(self) -> None:
        self.hdr = b""
        self.rest = 0
        self.cont = False

    def advance(self, data: bytes, base: int) -> int | None:
        """Walk ``data`` (whose first byte is at ``base``): the offset just after the last
        whole logical packet in it, or None."""
        i, n, last = 0, len(data), None
        while i < n:
            if self.rest:
                take = min(self.rest, n - i)
                i += take
                self.rest -= take
                if not self.rest and not self.cont:
                    last = base + i
                continue
            need = 4 - len(self.hdr)
            self.hdr += data[i:i + need]
            i += min(need, n - i)
            if len(self.hdr) == 4:
                self.rest = int.from_bytes(self.hdr[:3], "little")
                self.cont = self.rest == 0xFFFFFF
                self.hdr = b""
                if not self.rest and not self.cont:
                    last = base + i
        return last

    @property
    def at_boundary(self) -> bool:
        return not self.rest and not self.hdr and not self.cont


@dataclass(slots=True)
class Frame:
    """One whole frame of a direction: where it is on the wire and in the plain stream."""

    wire: int
    end: int
    plain: int
    size: int  # plain bytes it carries
    seq: int
    #: the plain bytes of a deflated frame that was read (masked in place), else None
    body: bytearray | None
    #: read (inflated and decoded), or only walked over
    read: bool
    masked: bool = False

    @property
    def plain_end(self) -> int:
        return self.plain + self.size


class _Frames:
    """One direction's frames from their headers; a frame's payload is kept (and inflated)
    only when ``keep`` says so at its header."""

    __slots__ = ("algorithm", "body", "cur", "hdr", "plain", "rest", "wire")

    def __init__(self, algorithm: str, wire: int) -> None:
        self.algorithm = algorithm
        self.wire = wire
        self.plain = 0
        self.hdr = bytearray()
        self.body = bytearray()
        self.rest = 0
        #: the frame being read: (compressed length, sequence id, uncompressed length, keep)
        self.cur: tuple[int, int, int, bool] | None = None

    @property
    def at_boundary(self) -> bool:
        return self.cur is None and not self.hdr

    def feed(self, data: bytes, keep: Callable[[], bool]
             ) -> list[tuple[Frame, bytes | None]]:
        """The frames ``data`` completes, each with its plain bytes (None: not kept, or it
        did not inflate - then its payload is to be masked whole: ``body`` is None and
        ``read`` True)."""
        out: list[tuple[Frame, bytes | None]] = []
        i, n = 0, len(data)
        while True:
            cur = self.cur
            if cur is None:
                if i >= n:
                    break
                take = min(FRAME_HEADER_LEN - len(self.hdr), n - i)
                self.hdr += data[i:i + take]
                i += take
                if len(self.hdr) < FRAME_HEADER_LEN:
                    break
                h = self.hdr
                cur = self.cur = (h[0] | h[1] << 8 | h[2] << 16, h[3],
                                  h[4] | h[5] << 8 | h[6] << 16, keep())
                self.rest = cur[0]
                self.hdr = bytearray()
                self.body = bytearray()
            take = min(self.rest, n - i)
            if cur[3] and take:
                self.body += data[i:i + take]
            i += take
            self.rest -= take
            if self.rest:
                break
            out.append(self._complete(*cur))
            self.cur = None
        return out

    def _complete(self, clen: int, seq: int, size: int, kept: bool
                  ) -> tuple[Frame, bytes | None]:
        plain_len = size or clen
        wire = self.wire
        self.wire += FRAME_HEADER_LEN + clen
        frame = Frame(wire, self.wire, self.plain, plain_len, seq, None, kept)
        self.plain += plain_len
        if not kept:
            return frame, None
        body, self.body = bytes(self.body), bytearray()
        if not size:
            return frame, body
        try:
            plain = inflate(self.algorithm, body, size)
        except FrameError:
            return frame, None
        frame.body = bytearray(plain)
        return frame, plain


class CompressedView:
    """The frames of one compressed session after its login, read to mask its secrets (see
    the module docstring). ``client``/``server``: the wire offsets where each direction's
    frames begin; ``overwrite``/``replace`` change the held bytes of the recorder."""

    def __init__(self, algorithm: str, capabilities: int, client: int, server: int,
                 overwrite: Overwrite, replace: Replace) -> None:
        self.algorithm = algorithm
        self.frames = {Peer.CLIENT: _Frames(algorithm, client),
                       Peer.SERVER: _Frames(algorithm, server)}
        #: frames read or walked over and not yet written, per direction
        self.pending: dict[Peer, collections.deque[Frame]] = {
            Peer.CLIENT: collections.deque(), Peer.SERVER: collections.deque()}
        self.session = Session(Role.OBSERVER, start_phase=Phase.COMMAND,
                               capabilities=capabilities & _NO_COMPRESSION, record=True)
        #: plain bytes fed to the session, per direction
        self.fed = {Peer.CLIENT: 0, Peer.SERVER: 0}
        self.walk = {Peer.CLIENT: Walker(), Peer.SERVER: Walker()}
        #: where the last whole plain packet of each direction ends
        self.whole = {Peer.CLIENT: 0, Peer.SERVER: 0}
        #: the server's frames are read (a COM_CHANGE_USER's exchange), else only walked
        self.server_on = False
        #: a COM_CHANGE_USER was read and the server has not yet ended its exchange (OK/ERR)
        self.changing = False
        self._overwrite = overwrite
        self._replace = replace

    def feed(self, peer: Peer, data: bytes) -> int:
        """Wire bytes of ``peer`` in; the wire offset up to which its bytes may be written
        (masked)."""
        keep = (lambda: True) if peer is Peer.CLIENT else \
            (lambda: self.server_on or self.changing)
        for frame, plain in self.frames[peer].feed(data, keep):
            self.pending[peer].append(frame)
            if not frame.read:
                continue
            if plain is None:  # (it does not inflate: nothing in it is readable)
                self._overwrite(peer, frame.wire + FRAME_HEADER_LEN, frame.end)
                self.fed[peer] = frame.plain_end
                self.session.resync(peer, frame.size, "a compressed frame that does not "
                                    "inflate")
                self.walk[peer] = Walker()
                self.whole[peer] = frame.plain_end
                continue
            gap = frame.plain - self.fed[peer]
            if gap:  # (the server's frames walked over since its last frame read)
                self.session.resync(peer, gap, "the recorder walked over the server's frames")
                self.walk[peer] = Walker()
                self.whole[peer] = frame.plain
            self.fed[peer] = frame.plain_end
            last = self.walk[peer].advance(plain, frame.plain)
            if last is not None:
                self.whole[peer] = last
            self.session.receive_data(plain, peer)
        for ev in self.session.events():
            if isinstance(ev, PacketDecoded) and ev.node is not None:
                self._mask(ev)
        if peer is Peer.CLIENT:
            changing = self.changing or self.session.last_command == Command.COM_CHANGE_USER
            if changing:
                self.server_on = True  # (a new login: the server's nonce comes next)
            elif self.server_on and self.frames[Peer.SERVER].at_boundary and \
                    self.walk[Peer.SERVER].at_boundary:
                self.server_on = False  # (logged in again: its answers hold no secret)
        return self._done(peer)

    def _done(self, peer: Peer) -> int:
        """The end of the frames of ``peer`` that may be written: whole, and the packets of
        those that were read whole too (and masked); the deflated frames masked are replaced
        by their masked encoding."""
        q = self.pending[peer]
        done = q[0].wire if q else self.frames[peer].wire
        while q:
            f = q[0]
            if f.read and f.plain_end > self.whole[peer]:
                break  # (a packet it carries goes on in a later frame: not masked yet)
            self._write(peer, q.popleft())
            done = f.end
        return done

    def _write(self, peer: Peer, f: Frame) -> None:
        if f.masked and f.body is not None:
            new, _ = encode_frames(f.body, f.seq, self.algorithm, min_length=0)
            self._replace(peer, f.wire, f.end, new)

    def flush(self) -> None:
        """The connection ended: the masked deflated frames still pending are replaced."""
        for peer, q in self.pending.items():
            while q:
                self._write(peer, q.popleft())

    def cut_secret(self, peer: Peer) -> bool:
        """May the bytes of ``peer`` not yet written (a frame or packet cut by the end of the
        connection) hold a secret? The client's always may; the server's while read."""
        return peer is Peer.CLIENT or self.server_on

    # ------------------------------------------------------------------ masks
    def _mask(self, ev: PacketDecoded) -> None:
        self.changing, ranges = secret_ranges(
            ev, self.changing, ev.phase in (Phase.COMMAND, Phase.BINLOG_STREAM))
        for lo, hi in ranges:
            self._mask_plain(ev.direction, lo, hi)

    def _mask_plain(self, peer: Peer, lo: int, hi: int) -> None:
        """Plain bytes [lo, hi) of ``peer``: masked in the frames that carry them."""
        for f in self.pending[peer]:
            if f.plain >= hi or f.plain_end <= lo:
                continue
            a, b = max(lo, f.plain) - f.plain, min(hi, f.plain_end) - f.plain
            if f.body is None:  # stored: the plain bytes are on the wire as they are
                at = f.wire + FRAME_HEADER_LEN
                self._overwrite(peer, at + a, at + b)
            else:
                f.body[a:b] = bytes([MASK]) * (b - a)
                f.masked = True


__all__ = ["AUTH_REPLIES", "MASK", "CompressedView", "Frame", "Walker", "secret_ranges"]
