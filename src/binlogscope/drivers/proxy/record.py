"""``proxy --record``: the relay's recording, written in the relay process, lossless.

The recording is taken where the bytes are forwarded (:meth:`~binlogscope.drivers.proxy.process.\
Relay.offer` hands every chunk to :meth:`ProxyRecorder.put` before the decoder's bounded channel
may skip it), so a decoder that falls behind costs the decoded output, never the recording.
A thread of its own (:class:`ProxyRecorder`) writes the frames, with
:class:`~binlogscope.drivers.pcapng.TcpConversation` (the one synthetic-TCP writer, also
``live --record``'s): one frame per :data:`~binlogscope.drivers.pcapng.SEGMENT` bytes of a chunk,
as the decoder numbers them. Its queue is bounded too (:data:`RECORD_QUEUE_BYTES`, so a disk
that cannot keep up does not take the relay's memory): beyond it a chunk is not recorded, the
sequence number jumps over it, the next frame of that direction carries a pcapng comment saying
how many bytes are missing and why, and the decoder is told (an error item, non-zero exit).

Secrets (unless ``raw``, ``--record-raw``): as ``live --record``, the sensitive leaves of each
packet - the server's nonce in the greeting and in an auth switch, the client's auth response
(native, ed25519, caching_sha2, ...; the decrypted one in a TLS-terminated session), auth-switch
data and COM_REGISTER_SLAVE's password - become ``*`` bytes of the same length, and so does all
of a COM_CHANGE_USER after its command byte (wire/ has no reader for it that marks its auth
response). A :class:`_Masker` per connection decodes with an OBSERVER
:class:`~binlogscope.session.Session` (trees on, for the marks) every packet of the login and
every client packet; once logged in, the server's packets are written without decoding (a binlog
dump is all of the volume) until the client sends COM_CHANGE_USER, when the server's side is
decoded again from the next packet (the session is told how much it skipped). After the login
of a compressed session the secrets are inside compressed frames: a
:class:`~binlogscope.drivers.proxy.record_frames.CompressedView` reads them inflated and masks
them there (a deflated frame carrying one is written deflated again, another length). A chunk
is held until the packets it belongs to are whole and masked; frames keep the order the relay
offered them in. A change-user's exchange is masked whatever order its two directions come in
(:func:`~binlogscope.drivers.proxy.record_frames.secret_ranges`): every client packet of it
whole, and a server request the session could not read as one after its plugin name.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.drivers.pcapng import SEGMENT, PcapNgWriter, RecordError, TcpConversation
from binlogscope.drivers.proxy.record_frames import MASK, CompressedView, Walker, secret_ranges
from binlogscope.session import Role, Session
from binlogscope.session.events import PacketDecoded, Peer, Phase
from binlogscope.wire.constants import Command

#: bytes offered to the recorder and not yet written; beyond this chunks are not recorded
#: (a marked gap) rather than held in the relay's memory
RECORD_QUEUE_BYTES = 512 << 20
#: the phases of a login (ENCRYPTED: a terminated TLS handshake, the plaintext login follows)
_LOGIN = (Phase.CONNECT, Phase.AUTH, Phase.ENCRYPTED)
#: why bytes are missing from the recording (the pcapng comment)
FULL = "the recorder's queue was full (the disk did not keep up with the relay)"
BLIND = ("bytes were lost where a secret may be (the login, or the client's side), so the "
         "rest of the connection is left out of the recording")


def frames_of(data: bytes) -> int:
    """How many frames a chunk is recorded as (a close: one)."""
    return max(1, -(-len(data) // SEGMENT))


@dataclass
class _Held:
    peer: Peer
    start: int
    data: bytearray
    ts: float
    #: (lo, hi, new): data[lo:hi] is written as ``new`` (a compressed frame masked and
    #: encoded again: another length), applied when the chunk is released
    edits: list[tuple[int, int, bytes]] = field(default_factory=list)
    #: the length offered (``end`` stays in the relay's offsets after the edits)
    size: int = -1

    def __post_init__(self) -> None:
        self.size = len(self.data)

    @property
    def end(self) -> int:
        return self.start + self.size

    def edited(self) -> _Held:
        for lo, hi, new in sorted(self.edits, reverse=True):
            self.data[lo:hi] = new
        self.edits.clear()
        return self


@dataclass
class _Masker:
    """One connection's secrets: which of its bytes to overwrite before they are written."""

    tls_terminated: bool
    session: Session = field(default_factory=lambda: Session(Role.OBSERVER, record=True))
    fed: dict[Peer, int] = field(default_factory=lambda: {Peer.CLIENT: 0, Peer.SERVER: 0})
    done: dict[Peer, int] = field(default_factory=lambda: {Peer.CLIENT: 0, Peer.SERVER: 0})
    walk: dict[Peer, Walker] = field(
        default_factory=lambda: {Peer.CLIENT: Walker(), Peer.SERVER: Walker()})
    held: collections.deque[_Held] = field(default_factory=collections.deque)
    server_on: bool = True
    server_skipped: int = 0
    opaque: bool = False
    #: the compressed protocol's frames after the login (None: plain packets)
    cz: CompressedView | None = None
    #: where the last packet decoded of each direction ends
    last_end: dict[Peer, int] = field(default_factory=lambda: {Peer.CLIENT: 0, Peer.SERVER: 0})
    #: a COM_CHANGE_USER was read and the server has not yet ended its exchange (OK/ERR)
    changing: bool = False

    def __post_init__(self) -> None:
        self.session.tls_terminated = self.tls_terminated

    def tls(self) -> None:
        """TLS was terminated: what follows is the plaintext."""
        self.session.tls_established(plaintext=True)

    def feed(self, peer: Peer, data: bytes, ts: float) -> list[_Held]:
        """A chunk in; the chunks that may now be written (masked), in order."""
        start = self.fed[peer]
        self.fed[peer] += len(data)
        self.held.append(_Held(peer, start, bytearray(data), ts))
        if self.opaque or (peer is Peer.SERVER and not self.server_on):
            if peer is Peer.SERVER and not self.opaque:
                self.server_skipped += len(data)
            self.done[peer] = self.fed[peer]
            return self._ready()
        if self.cz is not None:
            self.done[peer] = self.cz.feed(peer, data)
            return self._ready()
        last = self.walk[peer].advance(data, start)
        if last is not None:
            self.done[peer] = last
        s = self.session
        s.receive_data(data, peer)
        for ev in s.events():
            if isinstance(ev, PacketDecoded):
                self.last_end[ev.direction] = ev.end
                if ev.node is not None:
                    self._mask(ev)
        phase = s.phase
        if s.state.compression is not None:
            self._compressed(s.state.compression)
        elif phase is Phase.ENCRYPTED and not self.tls_terminated:
            # (TLS relayed opaque, written as relayed: the login's secrets came before; a
            # terminated TLS session goes on in plaintext after the relay's "tls" notice)
            self.opaque = True
            self.done = dict(self.fed)
        elif peer is Peer.CLIENT and phase not in _LOGIN:
            changing = self.changing or s.last_command == Command.COM_CHANGE_USER
            if self.server_on and not changing and self.walk[Peer.SERVER].at_boundary:
                self.server_on = False  # (logged in: the server's answers hold no secret)
            elif not self.server_on and changing:
                self.server_on = True  # (a new login: the server's nonce comes next)
                self.walk[Peer.SERVER] = Walker()
                s.resync(Peer.SERVER, self.server_skipped, "the recorder skipped the server's "
                         "packets after the login")
                self.server_skipped = 0
        return self._ready()

    def _compressed(self, algorithm: str) -> None:
        """The login's OK switched the session to compressed frames: from the end of each
        direction's last packet on, the bytes are read by a :class:`CompressedView`."""
        start = dict(self.last_end)
        cz = self.cz = CompressedView(algorithm, self.session.capabilities, start[Peer.CLIENT],
                                      start[Peer.SERVER], self._overwrite, self._replace)
        for peer in Peer:
            tail = self._held_bytes(peer, start[peer], self.fed[peer])
            self.done[peer] = cz.feed(peer, tail) if tail else start[peer]

    def _held_bytes(self, peer: Peer, lo: int, hi: int) -> bytes:
        out = bytearray()
        for h in self.held:
            if h.peer is peer and h.start < hi and lo < h.end:
                out += h.data[max(lo, h.start) - h.start:min(hi, h.end) - h.start]
        return bytes(out)

    def _replace(self, peer: Peer, lo: int, hi: int, new: bytes) -> None:
        for h in self.held:
            if h.peer is peer and h.start < hi and lo < h.end:
                a, b = max(lo, h.start) - h.start, min(hi, h.end) - h.start
                h.edits.append((a, b, new if h.start <= lo else b""))

    def _mask(self, ev: PacketDecoded) -> None:
        self.changing, ranges = secret_ranges(ev, self.changing, ev.phase not in _LOGIN)
        for lo, hi in ranges:
            self._overwrite(ev.direction, lo, hi)

    def _overwrite(self, peer: Peer, lo: int, hi: int) -> None:
        for h in self.held:
            if h.peer is peer and h.start < hi and lo < h.end:
                a, b = max(lo, h.start) - h.start, min(hi, h.end) - h.start
                h.data[a:b] = bytes([MASK]) * (b - a)

    def _ready(self) -> list[_Held]:
        out = []
        held = self.held
        while held and held[0].end <= self.done[held[0].peer]:
            out.append(held.popleft().edited())
        return out

    def skip_server(self, n: int) -> None:
        """``n`` bytes of the server's (after the login) are not seen: the session is told
        when it next reads the server's side."""
        self.fed[Peer.SERVER] += n
        self.done[Peer.SERVER] = self.fed[Peer.SERVER]
        self.server_on = False
        self.server_skipped += n
        self.walk[Peer.SERVER] = Walker()

    def flush(self, *, everything: bool = False) -> list[_Held]:
        """The connection ended: everything held; the bytes of a packet still incomplete in
        the login (or, ``everything``, anywhere) are masked (a cut auth response is still a
        secret)."""
        out = list(self.held)
        self.held.clear()
        cz = self.cz
        if not self.opaque and (everything or cz is not None or self.session.phase in _LOGIN):
            for h in out:
                cut = max(self.done[h.peer] - h.start, 0)
                if cut < h.size and (everything or cz is None or cz.cut_secret(h.peer)):
                    h.data[cut:h.size] = bytes([MASK]) * (h.size - cut)
        return [h.edited() for h in out]


@dataclass
class _Conn:
    tcp: TcpConversation
    masker: _Masker | None
    #: bytes the queue could not take, per direction, not yet marked in the file
    lost: dict[Peer, int] = field(default_factory=lambda: {Peer.CLIENT: 0, Peer.SERVER: 0})
    #: bytes lost where secrets may be: nothing more of the connection is written
    blind: bool = False
    closed: set[Peer] = field(default_factory=set)


def _hostport(addr: Any) -> tuple[str, int] | None:
    if isinstance(addr, (tuple, list)) and len(addr) >= 2:
        return str(addr[0]), int(addr[1])
    return None


class ProxyRecorder:
    """Frames of every relayed connection, written by a thread of the relay process."""

    def __init__(self, path: str | Path, *, raw: bool = False, tls_terminated: bool = False,
                 queue_bytes: int = RECORD_QUEUE_BYTES,
                 isn: tuple[int, int] = (1000, 5000)) -> None:
        self.w = PcapNgWriter(path)  # (raises RecordError: one line)
        self.raw = raw
        self.tls_terminated = tls_terminated
        self.queue_bytes = queue_bytes
        #: the initial sequence numbers (client, server) of every recorded connection
        self.isn = isn
        #: why the recording stopped (a write failed), or None
        self.failed: str | None = None
        self._cv = threading.Condition()
        self._q: collections.deque[tuple[int, Peer | None, bytes, Any, float]] = \
            collections.deque()
        self._queued = 0
        self._gapped: set[int] = set()
        self._closing = False
        self._conns: dict[int, _Conn] = {}
        self._thread = threading.Thread(target=self._run, name="proxy-record", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the relay's side
    def put(self, cid: int, peer: Peer | None, data: bytes, extra: Any, ts: float) -> bool:
        """Queue one offer (any thread; never blocks on the disk). True when this is the first
        chunk of the connection the queue could not take (the caller tells the decoder)."""
        with self._cv:
            if self.failed is not None or self._closing:
                return False
            first = False
            if data and self._queued + len(data) > self.queue_bytes:
                self._q.append((cid, peer, b"", ("lost", len(data)), ts))
                first = cid not in self._gapped
                self._gapped.add(cid)
            else:
                self._queued += len(data)
                self._q.append((cid, peer, data, extra, ts))
            self._cv.notify()
            return first

    def close(self, timeout: float | None = None) -> None:
        """Write out everything queued, then close the file."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._thread.join(timeout)

    # ------------------------------------------------------------------ the writer thread
    def _run(self) -> None:
        try:
            while True:
                with self._cv:
                    while not self._q and not self._closing:
                        self._cv.wait()
                    if not self._q:
                        break
                    batch = list(self._q)
                    self._q.clear()
                for cid, peer, data, extra, ts in batch:
                    self._one(cid, peer, data, extra, ts)
                    if data:
                        with self._cv:
                            self._queued -= len(data)
            for conn in self._conns.values():  # (the relay ended with them open)
                self._release(conn, conn.masker.flush() if conn.masker else [])
            self.w.close()
        except RecordError as exc:
            with self._cv:
                self.failed = str(exc)
                self._q.clear()
            try:
                self.w.close()
            except RecordError:
                pass

    def _one(self, cid: int, peer: Peer | None, data: bytes, extra: Any, ts: float) -> None:
        if peer is None:
            kind = extra[0] if extra else None
            conn = self._conns.get(cid)
            if kind == "open":
                client, server = _hostport(extra[1]), _hostport(extra[2])
                if client is None or server is None:
                    return
                tcp = TcpConversation(self.w, client, server, isn=self.isn)
                masker = None if self.raw else _Masker(self.tls_terminated)
                conn = self._conns[cid] = _Conn(tcp, masker)
                tcp.handshake(ts)
            elif kind == "tls" and extra[1] and conn is not None and conn.masker is not None:
                conn.masker.tls()
            elif kind == "lost" and conn is not None:
                self._lost(conn, peer, extra[1])
            return
        conn = self._conns.get(cid)
        if conn is None:
            return
        if extra and extra[0] == "lost":
            self._lost(conn, peer, extra[1])
            return
        if not data:  # that side closed
            if conn.masker is not None:
                self._release(conn, conn.masker.flush())
            self._mark(conn)
            conn.tcp.close(peer, ts, reset=extra == ("reset",))
            conn.closed.add(peer)
            if len(conn.closed) == 2:
                del self._conns[cid]
            return
        if conn.blind:
            self._lost(conn, peer, len(data))
            return
        if conn.masker is None:
            self._mark(conn)
            conn.tcp.data(peer, data, ts)
            return
        self._release(conn, conn.masker.feed(peer, data, ts))

    def _lost(self, conn: _Conn, peer: Peer | None, n: int) -> None:
        """``n`` bytes of ``peer`` that the queue could not take."""
        if peer is None:
            return
        m = conn.masker
        if m is not None and not conn.blind and not m.opaque:
            s = m.session
            login = s.phase in _LOGIN or m.cz is not None or (
                m.server_on and s.last_command == Command.COM_CHANGE_USER)
            # (a compressed session: its frames cannot be followed past lost bytes)
            if login or peer is Peer.CLIENT:  # (where a secret may be: nothing more written)
                conn.blind = True
                self._release(conn, m.flush(everything=True))
            else:
                m.skip_server(n)
        conn.lost[peer] += n

    def _mark(self, conn: _Conn) -> None:
        for peer, n in conn.lost.items():
            if n:
                conn.tcp.gap(peer, n, BLIND if conn.blind else FULL)
                conn.lost[peer] = 0

    def _release(self, conn: _Conn, chunks: list[_Held]) -> None:
        if chunks:
            self._mark(conn)
        for h in chunks:
            conn.tcp.data(h.peer, h.data, h.ts)


__all__ = ["RECORD_QUEUE_BYTES", "ProxyRecorder", "frames_of"]
