"""A server that resets the connection before the client's first packet: the client gets a
reset through the proxy too. Before, a reset right after the connect made the connection's
thread die on ``getpeername`` (ENOTCONN) and the client waited forever, and with TLS
termination on, a reset read while watching for the client's first packet (the prelude) was
passed on as a FIN (the pumps that took over read only the EOF after it)."""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.drivers.proxy.tls import TlsSettings, generate_certificate


def _resetting_server(greeting: bytes) -> socket.socket:
    """Accepts one client, sends ``greeting`` (maybe nothing), then resets the connection."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        c, _ = lsock.accept()
        if greeting:
            c.sendall(greeting)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()

    threading.Thread(target=serve, daemon=True).start()
    return lsock


@pytest.mark.parametrize("tls", [True, False], ids=["tls-terminating", "plain"])
@pytest.mark.parametrize("greeting", [b"", b"\x05\x00\x00\x00\x0a5.5.5"], ids=["silent", "hi"])
def test_a_reset_before_the_first_client_packet_is_passed_on(tmp_path: Path, tls: bool,
                                                             greeting: bytes) -> None:
    up = _resetting_server(greeting)
    settings = None
    if tls:
        cert, key, _ = generate_certificate(str(tmp_path))
        settings = TlsSettings(str(cert), str(key))
    proxy = ReplicationProxy(("127.0.0.1", 0), up.getsockname(), tls=settings)
    port = proxy.start()
    items: list[SourceItem] = []
    stop = threading.Event()

    def decode() -> None:
        for batch in proxy.batches(stop=stop.is_set):
            items.extend(batch)

    t = threading.Thread(target=decode, daemon=True)
    t.start()
    got = b""
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.settimeout(20)
        with pytest.raises(ConnectionResetError):
            while True:
                data = c.recv(4096)
                if not data:
                    break  # a FIN: the reset was not passed on
                got += data
    assert got == greeting
    stop.set()
    t.join(30)
    proxy.stop()
    notes = [i.text for i in items if i.kind == "note"]
    assert "server closed the connection (RST)" in notes, notes
