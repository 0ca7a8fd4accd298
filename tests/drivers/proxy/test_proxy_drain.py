"""The first stop of the proxy (Ctrl-C) is bounded: with a decoder far behind the relay, what was
relayed is decoded for at most ``drain`` seconds, then each connection still open gets an error
item saying its decoding was cut, and the decoder ends (the relay finished forwarding, and its
recording, long before). Before, the first Ctrl-C waited for the whole backlog (60-120 s in the
audit)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.wire.framing import encode_packet

BLOB = b"".join(encode_packet(b"\x00" + bytes([i % 251]) * 200, i % 256) for i in range(5000))


def _upstream(total: int) -> tuple[socket.socket, threading.Thread]:
    """A server that sends ``total`` bytes of small packets to whoever connects, then closes."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        c, _ = lsock.accept()
        sent = 0
        while sent < total:
            c.sendall(BLOB)
            sent += len(BLOB)
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return lsock, t


def test_the_first_stop_drains_for_a_bounded_time(tmp_path: Path) -> None:
    lsock, served = _upstream(60 << 20)
    rec = tmp_path / "rec.pcapng"
    proxy = ReplicationProxy(("127.0.0.1", 0), lsock.getsockname(), record=rec, record_raw=True)
    port = proxy.start()
    items: list[SourceItem] = []
    stop = threading.Event()
    ended = threading.Event()

    def decode() -> None:
        for batch in proxy.batches(stop=stop.is_set, drain=1.0):
            items.extend(batch)
            time.sleep(0.002)  # a slow decoder
        ended.set()

    t = threading.Thread(target=decode, daemon=True)
    t.start()
    got = 0
    with socket.create_connection(("127.0.0.1", port)) as c:
        while True:
            data = c.recv(1 << 20)
            if not data:
                break
            got += len(data)
    assert got >= 60 << 20
    time.sleep(0.5)
    stop.set()
    t0 = time.monotonic()
    assert ended.wait(90), "the decoder did not end after the stop"
    took = time.monotonic() - t0
    proxy.stop()
    served.join(10)
    assert took < 70, took  # (1 s of drain, then the relay's recording is written)
    cut = [i for i in items if i.kind == "error" and "had not caught up" in (i.text or "")]
    assert len(cut) == 1, [i.text for i in items if i.kind == "error"][:5]
    assert rec.stat().st_size > 60 << 20  # the recording is whole all the same


def test_a_connection_the_decoder_never_reached_is_reported_at_the_cut() -> None:
    """The decoder had not taken even the opening of a connection when the drain was cut (an
    idle-class decoder on a busy machine): the connection is still in the output, its flow and
    the cut - before, the output was empty and said nothing."""
    lsock, served = _upstream(1 << 20)
    proxy = ReplicationProxy(("127.0.0.1", 0), lsock.getsockname())
    port = proxy.start()
    got = 0
    with socket.create_connection(("127.0.0.1", port)) as c:  # relayed, not yet decoded
        while data := c.recv(1 << 20):
            got += len(data)
    assert got >= 1 << 20
    items = [i for b in proxy.batches(stop=lambda: True, drain=0.0) for i in b]
    proxy.stop()
    served.join(10)
    flows = [i for i in items if i.kind == "flow"]
    cut = [i for i in items if i.kind == "error" and "had not caught up" in i.text]
    assert len(flows) == 1 and len(cut) == 1, [(i.kind, i.text) for i in items]
    assert cut[0].flow is flows[0].flow
