"""The proxy's plain relay (drivers/proxy_threads.py): two threads relay a connection, and the
decoder's copies keep the order the chunks were read in - a reply is never offered before the
request it answers, though the two directions are offered by different threads."""

from __future__ import annotations

import socket
import threading
import time

from binlogscope.drivers.proxy_process import RelayConfig, RelayProcess
from binlogscope.events import Peer


def _echo_server() -> tuple[socket.socket, threading.Thread]:
    """A TCP server that answers each chunk at once with the same bytes."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        c, _ = srv.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with c:
            while data := c.recv(1 << 16):
                c.sendall(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, t


def test_offers_keep_request_reply_order() -> None:
    srv, t = _echo_server()
    relay = RelayProcess(RelayConfig(("127.0.0.1", 0), srv.getsockname()[:2]))
    port = relay.start()
    assert isinstance(port, int), port
    rounds = 3000
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for i in range(rounds):
                msg = b"%08d" % i
                c.sendall(msg)
                got = b""
                while len(got) < len(msg):
                    got += c.recv(64)
                assert got == msg
            c.shutdown(socket.SHUT_WR)
            assert c.recv(64) == b""  # the echo server's FIN, passed on
        seen: list[tuple[Peer | None, bytes]] = []
        end = time.monotonic() + 30
        while time.monotonic() < end and sum(1 for p, d in seen if not d and p) < 2:
            msg = relay.next(1.0)
            if msg is not None and msg[0] == 1:
                seen.append((msg[1], msg[2]))
        data = [(p, d) for p, d in seen if p is not None and d]
        assert len(data) == 2 * rounds
        for i in range(rounds):  # request, then its reply
            assert data[2 * i] == (Peer.CLIENT, b"%08d" % i), i
            assert data[2 * i + 1] == (Peer.SERVER, b"%08d" % i), i
        closes = [p for p, d in seen if p is not None and not d]
        assert closes == [Peer.CLIENT, Peer.SERVER]  # the client's FIN came first
    finally:
        relay.close()
        srv.close()
        t.join(5)
