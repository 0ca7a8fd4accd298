"""The proxy's forwarding path without fault actions: blocking sockets, two threads a connection.

Why threads and not the relay process's asyncio loop: a semi-sync commit crosses the proxy four
times (the event to the replica, its ACK back, and the client's statement and OK), each a small
packet whose time through the relay adds to the commit's latency. A thread blocked in
``recv_into`` wakes straight into ``sendall`` - two system calls and no event-loop round
(selector wake-up, callback dispatch, transport buffering) in between; measured on the same
machine in the same run (bench/proxy.py, issue 18), that halves what the proxy adds to a
packet's round trip. The standard library's blocking sockets and :mod:`threading` are enough;
nothing here parses beyond the first client packet.

Per connection (:class:`Pair`): a thread connects upstream (the "open" or "refused" notice),
then runs the client-to-server pump while a second thread runs the server-to-client one. Each
pump reads a chunk, forwards it with ``sendall`` (flow control is the kernel's: a full send
buffer blocks that pump, and so reading from its source stops), and only then offers the
decoder a copy. Offers keep the order in which the chunks were read even though two threads
make them: a chunk takes a number when it is read, and one that is offered before an earlier
number of the other direction waits for it (:meth:`Pair._deliver`) - a reply is never decoded
before the request it answers. A FIN is passed on as a FIN (``shutdown(SHUT_WR)``). A reset is
passed on as a reset (the other socket closed with SO_LINGER 0), and so is a send its peer
refused (the sender is reset, as that peer's kernel would have answered it). A client that
closed its socket leaves with a FIN; when the server next writes to it, the client's kernel
answers the proxy with a reset, which the proxy learns at once (it watches the half-closed
socket) and passes on, so the server's following write fails as it would without the proxy
(tests/drivers/proxy/test_proxy_threads.py compares both). The sockets are closed when both pumps
are done.

TLS termination (``RelayConfig.tls``) needs to see the start of the session: until the client's
first packet is whole, one thread relays the server's bytes (the greeting: does it offer TLS?)
and holds the client's (:meth:`Pair._prelude`). A first packet that is an SSLRequest hands both
sockets to the relay loop's TLS path (:class:`~binlogscope.drivers.proxy.tls.TlsSwitch` on the
protocol legs of :mod:`binlogscope.drivers.proxy.tls_legs`), which starts from that packet; any
other goes on here in plaintext, so a plain session costs the same whether or not the proxy
could terminate TLS.
"""

from __future__ import annotations

import asyncio
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from binlogscope.drivers.proxy.tls import (
    Contexts,
    TlsSwitch,
    first_packet_length,
    greeting_offers_ssl,
)
from binlogscope.drivers.proxy.tls_legs import Leg
from binlogscope.session.events import Peer
from binlogscope.wire.handshake import is_ssl_request

#: the most bytes one read takes (the asyncio transports' read size)
READ = 256 << 10

#: offer(cid, peer, data, extra, read, sent): the relay's copy for the decoder (thread-safe;
#: read: time.time() when the chunk was read, sent: just before it was forwarded - so an answer
#: to it is always read later -, both 0.0 for a notice)
Offer = Callable[[int, "Peer | None", bytes, Any, float, float], None]
#: hand_tls(pair, held client bytes, the greeting offers TLS): the TLS path takes the sockets
HandTls = Callable[["Pair", bytes, "bool | None"], None]


def listen_sockets(host: str, port: int, backlog: int = 100) -> list[socket.socket]:
    """Listening sockets for ``host:port`` as asyncio's ``create_server`` binds them: every
    address the name resolves to (all interfaces for ""), SO_REUSEADDR, IPv6 sockets IPv6-only.
    Raises OSError (nothing left open) when one cannot be bound."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    socks: list[socket.socket] = []
    seen: set[tuple[int, Any]] = set()
    try:
        for family, kind, proto, _, addr in infos:
            if (family, addr) in seen:
                continue
            seen.add((family, addr))
            s = socket.socket(family, kind, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind(addr)
            s.listen(backlog)
            s.setblocking(False)
    except OSError:
        for s in socks:
            s.close()
        raise
    return socks


def _nodelay(s: socket.socket) -> None:
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


def _wake(s: socket.socket) -> None:
    """End what a thread is blocked on with this socket (recv returns b"", send fails) without
    closing the descriptor under it."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Pair:
    """One relayed connection: its two sockets and the order of its offers."""

    def __init__(self, cid: int, client: socket.socket, offer: Offer,
                 ended: Callable[[Pair], None]) -> None:
        self.cid = cid
        self.client = client
        self.server: socket.socket | None = None
        self._offer = offer
        self._ended = ended
        self._lock = threading.Lock()
        self._taken = 0  # numbers given to chunks read
        self._next = 0  # the next number to offer
        self._held: dict[int, tuple[Peer, bytes, Any, float, float]] = {}
        self._done = 0  # pumps finished (2: close)
        self.handed = False  # the TLS path owns the sockets now
        self.stopping = False
        self.aborted = False  # a reset ended the connection (passed on as one)
        #: the sides whose reset the TLS prelude read (the pumps pass it on: a socket reports
        #: its reset once, and reads an EOF after it)
        self._reset_in_prelude: set[Peer] = set()

    # ------------------------------------------------------------------ the connection's thread
    def run(self, upstream: tuple[str, int], tls: bool, hand_tls: HandTls) -> None:
        """Connect upstream and relay until both directions end (the thread's target)."""
        client = self.client
        try:
            client_addr = client.getpeername()
        except OSError:
            client_addr = None
        try:
            server = socket.create_connection(upstream)
        except OSError as exc:
            self._offer(self.cid, None, b"", (
                "refused", client_addr,
                f"upstream {upstream[0]}:{upstream[1]}: {exc.strerror or exc}"), 0.0, 0.0)
            client.close()
            self._ended(self)
            return
        self.server = server
        if self.stopping:  # (the proxy stopped while this connected)
            server.close()
            client.close()
            self._ended(self)
            return
        _nodelay(client)
        _nodelay(server)
        try:
            server_addr = server.getpeername()
        except OSError:  # (the server reset the connection at once: the pumps pass it on)
            server_addr = upstream
        self._offer(self.cid, None, b"", ("open", client_addr, server_addr), 0.0, 0.0)
        if tls:
            held = self._prelude(client, server)
            if held is not None:
                self.handed = True
                hand_tls(self, held[0], held[1])
                self._ended(self)
                return
        other = threading.Thread(target=self._pump, args=(server, client, Peer.SERVER),
                                 name=f"proxy-{self.cid}-server", daemon=True)
        other.start()
        self._pump(client, server, Peer.CLIENT)

    def _prelude(self, client: socket.socket, server: socket.socket
                 ) -> tuple[bytes, bool | None] | None:
        """Until the client's first packet is whole: relay what the server sends, hold what the
        client sends. An SSLRequest: (the client's bytes, does the greeting offer TLS) for the
        TLS path; otherwise None (what was held is forwarded, the pumps take over; an EOF or
        error seen here is seen again by them)."""
        head = bytearray()
        head_read = 0.0  # (when its first bytes were read)
        greeting = bytearray()
        offers: bool | None = None
        poll = select.poll()
        poll.register(client, select.POLLIN)
        poll.register(server, select.POLLIN)
        cfd = client.fileno()
        while True:
            ready = poll.poll()
            if any(fd != cfd for fd, _ in ready):
                try:
                    data = server.recv(READ)
                except OSError:  # (the server reset the connection)
                    self._reset_in_prelude.add(Peer.SERVER)
                    break
                read = sent = time.time()
                try:
                    if data:
                        client.sendall(data)
                except OSError:
                    break
                if not data:
                    break
                self._offer(self.cid, Peer.SERVER, data, None, read, sent)
                if offers is None and len(greeting) < 4096:
                    greeting += data[:4096]
                    if first_packet_length(greeting):
                        offers = bool(greeting_offers_ssl(bytes(greeting)))
            if any(fd == cfd for fd, _ in ready):
                try:
                    data = client.recv(READ)
                    read = time.time()
                except OSError:  # (the client reset the connection)
                    self._reset_in_prelude.add(Peer.CLIENT)
                    break
                if not data:
                    break
                head += data
                head_read = head_read or read
                n = first_packet_length(head)
                if n:
                    if is_ssl_request(bytes(head[4:n])):
                        return bytes(head), offers
                    break
        if head:
            sent = time.time()
            try:
                server.sendall(head)
            except OSError:
                pass
            self._offer(self.cid, Peer.CLIENT, bytes(head), None, head_read, sent)
        return None

    # ------------------------------------------------------------------ handed to TLS
    async def terminate_tls(self, ctxs: Contexts, held: bytes, offers_ssl: bool | None,
                            transports: set[asyncio.BaseTransport]) -> None:
        """Terminate TLS on this connection, whose first client packet is the SSLRequest in
        ``held`` (on the relay process's loop, after :meth:`run` handed it over): the protocol
        legs of :mod:`.proxy_relay` with a TlsSwitch, starting there."""
        loop = asyncio.get_running_loop()
        assert self.server is not None
        cid = self.cid

        def offer(peer: Peer, data: bytes, read: float = 0.0, sent: float = 0.0) -> None:
            self._offer(cid, peer, data, None, read, sent)

        leg = Leg(Peer.CLIENT, offer, transports)
        server_leg = Leg(Peer.SERVER, offer, transports)
        switch = TlsSwitch(ctxs, leg, server_leg,
                           lambda extra: self._offer(cid, None, b"", extra, 0.0, 0.0))
        switch.offers_ssl = offers_ssl

        def made(c: Leg) -> None:  # (before the client's leg reads anything)
            server_leg.link(c)
            c.link(server_leg)
            c.data_received(held)

        leg.on_made = made
        for s in (self.client, self.server):
            s.setblocking(False)
        try:
            if self.stopping:
                raise ConnectionError("stopping")
            await loop.create_connection(lambda: server_leg, sock=self.server)
            await loop.connect_accepted_socket(lambda: leg, self.client)
        except (OSError, ConnectionError):
            for s in (self.client, self.server):
                s.close()
            for lg in (leg, server_leg):
                if lg.transport is not None:
                    lg.transport.close()
            for peer in (Peer.CLIENT, Peer.SERVER):
                offer(peer, b"")
            return
        await asyncio.gather(leg.done, server_leg.done)

    # ------------------------------------------------------------------ the pumps
    def _pump(self, src: socket.socket, dst: socket.socket, peer: Peer) -> None:
        """Relay ``src`` to ``dst`` until ``src`` ends: a FIN is passed on as a FIN (and ``src``
        watched for a reset that may follow); a reset, or a send its peer refused, is passed on
        as a reset (:meth:`_abort`)."""
        buf = bytearray(READ)
        view = memoryview(buf)
        reset: socket.socket | None = None  # the socket to reset: the other side's
        if peer in self._reset_in_prelude:
            reset = dst
        try:
            while reset is None:
                try:
                    n = src.recv_into(buf)
                except OSError:  # (a reset from src's peer)
                    reset = dst
                    break
                if not n:
                    break
                read = time.time()
                data = view[:n].tobytes()
                with self._lock:  # (numbered and timed together: times rise with numbers)
                    seq = self._taken
                    self._taken += 1
                    sent = time.time()  # (before the send: an answer to it is read after)
                try:
                    dst.sendall(data)  # forwarding first ...
                except OSError:  # (dst's peer is gone: src's peer would have had a reset)
                    reset = src
                self._deliver(seq, peer, data, None, read, sent)  # ... then the decoder's copy
                if reset is not None:
                    break
        finally:
            with self._lock:
                seq = self._taken
                self._taken += 1
            self._deliver(seq, peer, b"", ("reset",) if reset is not None or self.aborted
                          else None)
            if reset is not None:
                self._abort(reset)
            elif not self.aborted:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self._watch(src, dst)
            self._finish()

    def _watch(self, src: socket.socket, dst: socket.socket) -> None:
        """``src``'s peer sent its FIN: until the connection ends, wait for a reset from it (a
        peer that closed its socket answers what it is sent with one) and pass that on - a
        server writing to a replica that went away learns it as it would without the proxy."""
        poll = select.poll()
        poll.register(src, select.POLLERR | select.POLLHUP)
        while not self.aborted and self._done == 0:
            try:
                if not poll.poll(1000):
                    continue
                err = src.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            except OSError:
                return
            if err and not self.aborted:
                self._abort(dst)
            return

    def _abort(self, reset: socket.socket) -> None:
        """End both directions; ``reset`` is closed with an RST (SO_LINGER 0) rather than a
        FIN, as its peer would have been answered without the proxy."""
        with self._lock:
            if self.aborted:
                return
            self.aborted = True
        try:
            reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        for s in (self.client, self.server):
            if s is not None:
                try:  # (wakes a pump blocked reading it, sends nothing)
                    s.shutdown(socket.SHUT_RD)
                except OSError:
                    pass

    def _deliver(self, seq: int, peer: Peer, data: bytes, extra: Any = None,
                 read: float = 0.0, sent: float = 0.0) -> None:
        """Offer chunk number ``seq`` once every earlier number has been offered."""
        with self._lock:
            if seq != self._next:
                self._held[seq] = (peer, data, extra, read, sent)
                return
            self._offer(self.cid, peer, data, extra, read, sent)
            self._next += 1
            held = self._held
            while self._next in held:
                p, d, x, r, t = held.pop(self._next)
                self._offer(self.cid, p, d, x, r, t)
                self._next += 1

    def _finish(self) -> None:
        with self._lock:
            self._done += 1
            last = self._done == 2
        if last:
            for s in (self.client, self.server):
                if s is not None:
                    s.close()
            self._ended(self)

    def wake(self) -> None:
        """Stop: both directions end as if the peers had closed (the pumps pass it on)."""
        self.stopping = True
        if not self.handed:
            _wake(self.client)
            if self.server is not None:
                _wake(self.server)


__all__ = ["READ", "Pair", "listen_sockets"]
