"""The proxy's plain relay (drivers/proxy/threads.py): two threads relay a connection, and the
decoder's copies keep the order the chunks were read in - a reply is never offered before the
request it answers, though the two directions are offered by different threads - and their times
keep cause before effect: a reply is read after its request began to be forwarded (the
``proxy --summary`` ACK leg latencies subtract one from the other)."""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time

from binlogscope.drivers.proxy.process import RelayConfig, RelayProcess
from binlogscope.session.events import Peer


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
        times: list[tuple[float, float]] = []  # (forwarded, read) of each data chunk
        end = time.monotonic() + 30
        while time.monotonic() < end and sum(1 for p, d in seen if not d and p) < 2:
            nxt = relay.next(1.0)
            if nxt is not None and nxt[0] == 1:
                seen.append((nxt[1], nxt[2]))
                if nxt[1] is not None and nxt[2]:
                    times.append((nxt[3], nxt[5]))
        data = [(p, d) for p, d in seen if p is not None and d]
        assert len(data) == 2 * rounds
        for i in range(rounds):  # request, then its reply
            assert data[2 * i] == (Peer.CLIENT, b"%08d" % i), i
            assert data[2 * i + 1] == (Peer.SERVER, b"%08d" % i), i
            (req_sent, req_read), (rep_sent, rep_read) = times[2 * i], times[2 * i + 1]
            assert 0 < req_read <= req_sent < rep_read <= rep_sent, i
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(times))  # forwarded in read order
        closes = [p for p, d in seen if p is not None and not d]
        assert closes == [Peer.CLIENT, Peer.SERVER]  # the client's FIN came first
    finally:
        relay.close()
        srv.close()
        t.join(5)


def _server_sees(via_proxy: bool, client_resets: bool) -> tuple[str, list[tuple[Peer | None, str]]]:
    """A client connects (directly or through the relay), sends a line and closes its socket
    (with an RST if ``client_resets``); then the server writes to it twice. What the server's
    reads and writes saw, and (through the relay) the close notices offered."""
    srv = socket.create_server(("127.0.0.1", 0))
    relay = None
    port = srv.getsockname()[1]
    if via_proxy:
        relay = RelayProcess(RelayConfig(("127.0.0.1", 0), srv.getsockname()[:2]))
        p = relay.start()
        assert isinstance(p, int), p
        port = p
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        s, _ = srv.accept()
        s.settimeout(10)
        c.sendall(b"bye\n")
        assert s.recv(64) == b"bye\n"
        if client_resets:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        try:
            seen = "eof" if s.recv(64) == b"" else "data"
        except ConnectionResetError:
            seen = "reset"
        if seen == "eof":  # the client's FIN: now the server writes to it
            try:
                s.sendall(b"x" * 100)
                time.sleep(0.5)  # (the answer to it comes back)
                s.sendall(b"y" * 100)
                time.sleep(0.5)
                s.sendall(b"z" * 100)
                seen += ", writes accepted"
            except (BrokenPipeError, ConnectionResetError) as exc:
                seen += f", write refused ({type(exc).__name__})"
        s.close()
        closes: list[tuple[Peer | None, str]] = []
        if relay is not None:
            end = time.monotonic() + 10
            while time.monotonic() < end and len(closes) < 2:
                msg = relay.next(0.5)
                if msg is not None and msg[0] == 1 and msg[1] is not None and not msg[2]:
                    closes.append((msg[1], "RST" if msg[4] == ("reset",) else "FIN"))
        return seen, closes
    finally:
        if relay is not None:
            relay.close()
        srv.close()


def test_a_reset_is_passed_on_as_a_reset() -> None:
    """A client that resets its connection: the server sees a reset through the relay as it
    does directly (not a FIN), and the decoder's close notice says RST."""
    direct, _ = _server_sees(False, client_resets=True)
    proxied, closes = _server_sees(True, client_resets=True)
    assert direct == proxied == "reset"
    assert closes[0] == (Peer.CLIENT, "RST")


def test_a_closed_peer_answers_the_next_write_as_without_the_relay() -> None:
    """A client that closed its socket (FIN) and is then written to: directly its kernel
    answers with a reset and the server's next write fails; through the relay the server's
    writes fail as well (the relay passes the reset on) instead of going into a half-closed
    relay for ever."""
    direct, _ = _server_sees(False, client_resets=False)
    proxied, closes = _server_sees(True, client_resets=False)
    assert direct.startswith("eof, write refused"), direct
    assert proxied.startswith("eof, write refused"), proxied
    assert closes[0] == (Peer.CLIENT, "FIN")
