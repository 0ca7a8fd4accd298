"""The proxy's TLS termination at the byte level (drivers/proxy/tls.py): what a client sends
that is not a whole first packet is still forwarded unchanged."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.drivers.proxy.tls import TlsSettings, generate_certificate


def test_tls_termination_forwards_a_first_packet_cut_by_eof(tmp_path: Path) -> None:
    """With TLS termination on, the relay holds the client's first packet until it is whole
    (an SSLRequest?); a client that sends part of one and closes still has those bytes
    forwarded, then its FIN."""
    got: list[bytes] = []
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        c, _ = srv.accept()
        with c:
            c.sendall(b"\x05\x00\x00\x00\x0a5.5\x00")  # something greeting-shaped
            while True:
                data = c.recv(1 << 16)
                if not data:
                    break
                got.append(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    cert, key, _ = generate_certificate(str(tmp_path))
    proxy = ReplicationProxy(("127.0.0.1", 0), srv.getsockname()[:2],
                             tls=TlsSettings(str(cert), str(key)))
    port = proxy.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            assert c.recv(64)
            c.sendall(b"\x20\x00\x00\x01abc")  # 7 of a 36-byte packet
            c.shutdown(socket.SHUT_WR)
            t.join(10)
        assert b"".join(got) == b"\x20\x00\x00\x01abc"
    finally:
        proxy.stop()
        srv.close()
