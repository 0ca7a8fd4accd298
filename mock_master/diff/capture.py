"""A recording TCP relay for the differential harness: no privilege, no tshark.

:class:`Relay` listens on a free loopback port and forwards every connection to a target
(a real MariaDB, or the mock master). Each connection is recorded as a :class:`Conversation`:
the bytes of both directions as chunks in arrival order, each with the monotonic time it was
read. The client under test is pointed at the relay instead of the server; nothing else
changes for it.

::

    with Relay("127.0.0.1", 3306) as relay:
        run_client(relay.host, relay.port)
    for conv in relay.conversations: ...
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

#: who sent a chunk
CLIENT = "client"
SERVER = "server"


@dataclass
class Conversation:
    """One relayed TCP connection: ``chunks`` are ``(sender, bytes, monotonic time)``."""

    index: int
    chunks: list[tuple[str, bytes, float]] = field(default_factory=list)
    closed_by: str | None = None  # who closed first: "client", "server" or None (relay stop)

    def data(self, sender: str) -> bytes:
        """Every byte ``sender`` sent, joined."""
        return b"".join(c for who, c, _ in self.chunks if who == sender)


class Relay:
    """Forward connections on ``host:port`` (a free loopback port) to ``target``."""

    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.host = host
        self._listener = socket.create_server((host, 0))
        self.port = int(self._listener.getsockname()[1])
        self.conversations: list[Conversation] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept_thread = threading.Thread(target=self._accept_loop, daemon=True,
                                               name=f"relay:{self.port}")

    def start(self) -> Relay:
        self._accept_thread.start()
        return self

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until every relayed connection has ended (or ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, end the open connections after ``timeout`` s, keep the records."""
        self.wait_idle(timeout)
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self._accept_thread.join(2)
        for t in list(self._threads):
            t.join(2)

    def _accept_loop(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                conv = Conversation(len(self.conversations))
                self.conversations.append(conv)
            t = threading.Thread(target=self._pump, args=(client, conv), daemon=True,
                                 name=f"relay:{self.port}:{conv.index}")
            self._threads.append(t)
            t.start()

    def _pump(self, client: socket.socket, conv: Conversation) -> None:
        try:
            server = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            conv.closed_by = SERVER
            return
        server.settimeout(None)
        client.settimeout(None)
        peer = {client: server, server: client}
        who = {client: CLIENT, server: SERVER}
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ)
        sel.register(server, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(0.1):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        conv.closed_by = who[sock]
                        return
                    conv.chunks.append((who[sock], data, time.monotonic()))
                    try:
                        peer[sock].sendall(data)
                    except OSError:
                        conv.closed_by = who[peer[sock]]
                        return
        finally:
            sel.close()
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
