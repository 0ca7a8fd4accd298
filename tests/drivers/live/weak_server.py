"""A minimal scripted MySQL server for the authentication downgrade and packet-size tests.

One connection, one script: the script sends packets with the project's own encoders (a
:class:`~binlogscope.session.Session` in the SOURCE role) and reads the client's packets, and
every byte the client sent is kept (``received``) so a test can search it for the password in
any form. Offers only what the script offers: no TLS unless asked, the plugins it names.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Peer, Role
from binlogscope.wire.constants import CapabilityFlag, StatusFlag
from binlogscope.wire.handshake import HandshakeV10

CAP = CapabilityFlag
#: a MySQL 8-like capability set without CLIENT_SSL (the flag a man in the middle hides)
CAPS_NO_TLS = (0xFFFFFFFF & ~int(CAP.CLIENT_COMPRESS) & ~int(CAP.CLIENT_SSL)
               & ~int(CAP.CLIENT_DEPRECATE_EOF))


class ClientClosedError(Exception):
    """The client closed the connection."""


class WeakConnection:
    """The server side of one accepted connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.session = Session(Role.SOURCE)
        self.received = bytearray()
        self.packets: list[PacketDecoded] = []
        self.nonce = os.urandom(20).replace(b"\0", b"\x01")
        self.sent = 0

    def send(self, value: Any) -> None:
        data = self.session.send(value)
        self.sock.sendall(data)
        self.sent += len(data)

    def greet(self, plugin: str, caps: int = CAPS_NO_TLS,
              version: str = "8.0.36-weak") -> None:
        self.send(HandshakeV10(version, 7, self.nonce, caps, 45,
                               int(StatusFlag.SERVER_STATUS_AUTOCOMMIT), plugin))

    def recv_packet(self) -> PacketDecoded:
        """The client's next packet; :class:`ClientClosedError` when it closed the connection."""
        while True:
            for ev in self.session.events():
                if isinstance(ev, PacketDecoded) and ev.direction == Peer.CLIENT:
                    self.packets.append(ev)
                    return ev
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                raise ClientClosedError
            self.received += data
            self.session.receive_data(data, Peer.CLIENT)

    def rest(self) -> None:
        """Read (and keep) whatever else the client sends until it closes."""
        try:
            while True:
                self.recv_packet()
        except ClientClosedError:
            pass


class WeakServer:
    """Listens on 127.0.0.1, runs ``script`` on the first connection, then stops."""

    def __init__(self, script: Callable[[WeakConnection], None]) -> None:
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.conn: WeakConnection | None = None
        self.error: BaseException | None = None
        self.notes: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> WeakServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        self._thread.join(10)

    def _serve(self) -> None:
        self.listener.settimeout(20)
        try:
            sock, _ = self.listener.accept()
        except OSError as exc:
            self.error = exc
            return
        sock.settimeout(20)
        self.conn = WeakConnection(sock)
        try:
            self.script(self.conn)
            self.conn.rest()
        except ClientClosedError:
            pass
        except BaseException as exc:  # reported by the test (join)
            self.error = exc
        finally:
            sock.close()

    def join(self) -> WeakConnection:
        self._thread.join(20)
        assert self.error is None, repr(self.error)
        assert self.conn is not None
        return self.conn
