"""The live capture layer (``binlogscope sniff``) on a busy loopback: what the socket took in
before its filter was attached is neither read nor counted as kernel drops. (An AF_PACKET
socket receives every frame from its creation on; on lo, with 64 KiB frames, its default
buffer overflows in the moment before the filter is on: with scapy's reader, hundreds of drops
were reported - exit 1 - for a capture that had lost nothing.) Needs root or CAP_NET_RAW, as CI
has."""

from __future__ import annotations

import socket
import threading

import pytest

from binlogscope.drivers.capture.sniff import open_capture
from tests.helpers import can_capture

pytestmark = pytest.mark.network


def test_frames_before_the_filter_are_not_the_captures() -> None:
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    srv = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def sink() -> None:
        c, _ = srv.accept()
        with c:
            while c.recv(1 << 20):
                pass

    def flood() -> None:  # unrelated traffic on lo, as fast as it goes
        with socket.create_connection(srv.getsockname()) as s:
            buf = b"x" * (1 << 20)
            while not done.is_set():
                s.sendall(buf)

    threads = [threading.Thread(target=f, daemon=True) for f in (sink, flood)]
    for t in threads:
        t.start()
    try:
        quiet = socket.socket()  # a port nothing talks on: the filter lets nothing through
        quiet.bind(("127.0.0.1", 0))
        for _ in range(3):
            cap = open_capture("lo", f"port {quiet.getsockname()[1]}")
            try:
                # (the capture process reports its counters four times a second)
                assert cap.read_batch(0.6) == []  # nothing of the flood was kept
                st = cap.stats()
                assert (st.frames, st.received, st.dropped, st.buffer_dropped) == (0, 0, 0, 0)
            finally:
                cap.close()
        quiet.close()
    finally:
        done.set()
        srv.close()
