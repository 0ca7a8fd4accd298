"""``pcap --tls-keylog``'s decryption keeps every decrypted byte, whatever it looks like.

tshark hands TLS application data to the heuristic dissectors registered on TLS before the
``data`` field; in a real 20,012-event TLS dump one 16 KiB record began with an XID event
(``02 6d 0a 6b 10 01 ...``: timestamp, type 16) and the RDP multitransport heuristic took it,
so its plaintext was missing and counted as not decrypted (a TCP gap, most of the dump lost).
Here a TLS 1.2 and a TLS 1.3 session between Python's ``ssl`` sockets (the key log written
by Python, an SSLKEYLOGFILE client) send records that begin with those bytes, captured by
Wireshark's dumpcap on loopback: every record's plaintext comes back.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from binlogscope.drivers.capture.tls_keylog import decrypt
from tests.mariadb_server import write_ca_and_cert
from tests.watch_support import LoopbackCapture

pytestmark = pytest.mark.network

#: the start of the record the RDP heuristic took: an XID event's header and body
RECORD = bytes.fromhex("026d0a6b10010000001f000000ab1e6500000000f003000000000000006b8383052b"
                       "0000760002")


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_records_a_heuristic_would_claim_are_decrypted(tmp_path: Path,
                                                        version: ssl.TLSVersion) -> None:
    ca, cert, key = write_ca_and_cert(tmp_path, "plain")
    keys = tmp_path / "keys.log"
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(ca))
    client_ctx.check_hostname = False
    client_ctx.minimum_version = client_ctx.maximum_version = version
    client_ctx.keylog_filename = str(keys)
    payload = (RECORD + bytes(range(256)) * 64)[:16384]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        cap = LoopbackCapture(tmp_path / "tls.pcapng", [port])
        try:
            time.sleep(0.5)

            def serve() -> None:
                conn, _ = listener.accept()
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    for _ in range(3):
                        tls.sendall(payload)  # (one write, one record: it starts with RECORD)
                    tls.recv(1)

            t = threading.Thread(target=serve)
            t.start()
            with socket.create_connection(("127.0.0.1", port)) as raw, \
                    client_ctx.wrap_socket(raw) as tls:
                got = b""
                while len(got) < 3 * len(payload):
                    got += tls.recv(65536)
                tls.sendall(b"x")
            t.join(30)
        finally:
            cap.stop()
    assert got == 3 * payload
    dec = decrypt(str(tmp_path / "tls.pcapng"), str(keys))
    assert not dec.undecrypted
    plain = b"".join(dec.payloads[n] for n in sorted(dec.payloads))
    assert plain.count(payload) == 3
