"""The proxy's forwarding path for a TLS-terminated connection: two asyncio protocols.

A connection comes here from the plain relay's threads (:mod:`.proxy_threads`) when the
client's first packet is an SSLRequest; both sockets are adopted by the relay process's loop.

Each chunk the kernel hands one side (``data_received``) is written to the other side's
transport at once - no StreamReader buffer in between, so a byte is not copied by Python on its
way through - and the same ``bytes`` object is then offered to the decoder. Flow control is
the transports': when a side's write buffer passes its high-water mark, reading from the other
side pauses until it drains. A FIN is passed on as a FIN (half-close); a reset or error on one
side closes the other.

TLS termination (:mod:`.proxy_tls`) hooks in through two attributes of a leg: ``intercept``
turns what the leg receives into what it relays (the TLS handshakes, then the plaintext), and
``tls`` encrypts what the leg sends; without them a chunk goes through untouched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from binlogscope.session.events import Peer


class Offer(Protocol):
    """offer(peer, data, read, sent): data=b"" when that peer closed its direction; read: when
    the bytes were read (time.time()), sent: just before they were forwarded (0.0: not known)."""

    def __call__(self, peer: Peer, data: bytes, read: float = 0.0, sent: float = 0.0) -> None:
        ...



class Leg(asyncio.Protocol):
    """One TCP connection of a relayed pair: what it receives goes to ``other``."""

    def __init__(self, peer: Peer, offer: Offer, transports: set[asyncio.BaseTransport]
                 ) -> None:
        self.peer = peer  # who sends on this connection
        self.offer = offer
        self.transports = transports
        self.transport: asyncio.Transport | None = None
        self.other: Leg | None = None
        self.pending: list[tuple[bytes, float]] = []  # (before the other side is connected)
        self.eof = False
        self.lost = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: called once connected (the client's leg starts its relay here)
        self.on_made: Callable[[Leg], None] | None = None
        #: received bytes -> the bytes to relay (b"": nothing now); called with b"" at EOF to
        #: hand over what it still holds; None: relayed as received
        self.intercept: Callable[[bytes], bytes] | None = None
        #: encrypts what this leg sends (a proxy_tls.TlsEnd once TLS is established)
        self.tls: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.transports.add(transport)
        transport.set_write_buffer_limits(high=4 << 20)
        if self.on_made is not None:
            self.on_made(self)

    def link(self, other: Leg) -> None:
        self.other = other
        for data, read in self.pending:
            self.relay(data, read)
        self.pending.clear()
        if self.eof:
            self._pass_eof()

    def data_received(self, data: bytes) -> None:
        read = time.time()
        if self.intercept is not None:
            data = self.intercept(data)
            if not data:
                return
        self.relay(data, read)

    def relay(self, data: bytes, read: float = 0.0) -> None:
        """Send what this leg received (plaintext; read at ``read``) to the other side, then
        offer it."""
        other = self.other
        if other is None or other.transport is None:
            self.pending.append((data, read or time.time()))
            return
        sent = time.time()
        if other.tls is not None:
            other.transport.write(other.tls.encrypt(data))
        else:
            other.transport.write(data)  # forwarding first ...
        self.offer(self.peer, data, read or sent, sent)  # ... then the decoder's copy

    def eof_received(self) -> bool:
        if self.intercept is not None:  # (e.g. an incomplete first packet: still forwarded)
            rest = self.intercept(b"")
            if rest:
                self.relay(rest)
        self.eof = True
        if self.other is not None:
            self._pass_eof()
        return True  # keep the other direction open

    def _pass_eof(self) -> None:
        self.offer(self.peer, b"")
        other = self.other
        assert other is not None
        t = other.transport
        if t is not None and not t.is_closing():
            if other.eof:  # both directions ended
                t.close()
                if self.transport is not None:
                    self.transport.close()
            elif t.can_write_eof():
                t.write_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.transport is not None:
            self.transports.discard(self.transport)
        if not self.eof:
            self.eof = True
            self.offer(self.peer, b"")
        other = self.other
        if other is not None and other.transport is not None and \
                not other.transport.is_closing():
            if other.eof:
                other.transport.close()
            elif other.transport.can_write_eof() and exc is None:
                other.transport.write_eof()
            else:
                other.transport.close()
        if not self.done.done():
            self.done.set_result(None)

    # the other side's writes back up: stop reading here until they drain
    def pause_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.resume_reading()


__all__ = ["Leg"]
