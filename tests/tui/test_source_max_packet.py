"""``--max-packet-size`` reaches the TUI of ``pcap`` and ``sniff`` (issue 32): the sources the
TUI reads (:class:`PcapSource`, :class:`SniffSource`) skip a packet over the limit with an error
row that gives its size, as the printing outputs do; before, the TUI sources read with the
default limit whatever the command line said.

The command lines are run in-process with the terminal check answered yes and the TUI replaced
by a stand-in that runs the source it is given (what is checked is that source's rows); the
sniff one captures on ``lo`` while a loopback "server" sends a packet over the limit."""

from __future__ import annotations

import io
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.inspector.sources.sniff import SniffSource
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    HandshakeResponse41,
    HandshakeV10,
    encode_handshake_response41,
    encode_handshake_v10,
)
from binlogscope.wire.responses import OkPacket, encode_ok
from tests.helpers import CAPTURES, can_capture

pytestmark = pytest.mark.timeout(120)

SEMISYNC = CAPTURES / "pcap-semisync.pcap"
PORTS = [39041]
LIMIT_TEXT = "over the packet size limit of {} bytes (--max-packet-size)"


def conversation(size: int) -> list[tuple[bool, bytes]]:
    """A login and a COM_QUERY of ``size`` payload bytes, answered: (from the server?, wire
    bytes) in order."""
    caps = (0xF7FF & ~0x20) | 0x80000  # (no CLIENT_COMPRESS; CLIENT_PLUGIN_AUTH)
    greet = HandshakeV10("11.4.2-MariaDB", 9, bytes(range(65, 85)), caps)
    resp = HandshakeResponse41(caps, "u", bytes(20), None, "mysql_native_password")
    ok = encode_ok(OkPacket())
    return [(True, encode_packet(encode_handshake_v10(greet), 0)),
            (False, encode_packet(encode_handshake_response41(resp), 1)),
            (True, encode_packet(ok, 2)),
            (False, encode_packet(b"\x03SELECT '" + b"x" * (size - 10) + b"'", 0)),
            (True, encode_packet(ok, 1)),
            (False, encode_packet(b"\x03SELECT 1", 0)),
            (True, encode_packet(ok, 1))]


def _error_texts(src: Any) -> list[str]:
    return [src.row_json(i).get("message") or src.row_json(i).get("text") or ""
            for i in range(len(src)) if src.row(i).error]


def _largest(path: Path) -> int:
    """The largest packet payload of the capture."""
    from binlogscope.drivers.capture.pcap import read_capture
    from binlogscope.session.events import PacketDecoded

    return max(it.event.payload_length for it in read_capture(str(path), PORTS)
               if isinstance(it.event, PacketDecoded))


def test_pcap_source_takes_the_limit() -> None:
    whole = PcapSource(SEMISYNC, ports=PORTS)
    whole.run(lambda: False)
    assert whole.fatal is None and not _error_texts(whole)
    big = _largest(SEMISYNC)
    limit = big - 100  # (the largest packet's payload is over it; most are not)
    src = PcapSource(SEMISYNC, ports=PORTS, max_packet=limit)
    src.run(lambda: False)
    errors = [e for e in _error_texts(src) if "(--max-packet-size)" in e]
    assert errors and all(LIMIT_TEXT.format(limit) in e for e in errors), errors
    assert any(f"a packet of {big} bytes" in e for e in errors), errors
    assert 0 < len(src) < len(whole) + len(errors)  # (the rest is decoded as before)
    # a row's bytes read again from the capture (payload dropped to bound memory) use the
    # same limit: the packets under it still decode on demand
    small = PcapSource(SEMISYNC, ports=PORTS, max_packet=limit, max_raw_bytes=1)
    small.run(lambda: False)
    kept = [i for i in range(len(small)) if small.row(i).direction and not small.row(i).error]
    assert kept and all(small.detail(i).error is None for i in kept[-5:])


def _with_tui_stand_in(monkeypatch: pytest.MonkeyPatch, module: str,
                       run: Any) -> list[Any]:
    """Make ``module``'s terminal check say yes and ``run_tui`` call ``run(source)``."""
    import binlogscope.tui

    seen: list[Any] = []

    def fake_run_tui(source: Any, **kw: Any) -> int:
        seen.append(source)
        run(source)
        return 0

    monkeypatch.setattr(f"binlogscope.cli.{module}.wants_tui", lambda *a, **k: True)
    monkeypatch.setattr(binlogscope.tui, "run_tui", fake_run_tui)
    return seen


def _big_packet_capture(path: Path, size: int) -> None:
    """A pcapng (the project's writer) of :func:`conversation`."""
    from binlogscope.drivers.pcapng import PcapNgWriter, TcpConversation
    from binlogscope.session.events import Peer

    w = PcapNgWriter(path)
    tcp = TcpConversation(w, ("10.0.0.1", 40000), ("10.0.0.2", 3306))
    tcp.handshake(1.0)
    for i, (server, data) in enumerate(conversation(size)):
        tcp.data(Peer.SERVER if server else Peer.CLIENT, data, 1.1 + i / 100)
    tcp.close(Peer.CLIENT, 2.0)
    tcp.close(Peer.SERVER, 2.1)
    w.close()


def test_pcap_command_line_gives_the_tui_its_limit(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    from binlogscope.cli.main import main

    cap = tmp_path / "big.pcapng"
    _big_packet_capture(cap, 20_000)
    seen = _with_tui_stand_in(monkeypatch, "pcap", lambda s: s.run(lambda: False))
    rc = main(["pcap", "--max-packet-size", "4K", str(cap)], io.StringIO(), io.StringIO())
    assert rc == 0
    (src,) = seen
    assert isinstance(src, PcapSource) and src.max_packet == 4096
    errors = _error_texts(src)
    assert len(errors) == 1 and LIMIT_TEXT.format(4096) in errors[0], errors
    assert "a packet of 20000 bytes" in errors[0], errors
    # and without the option: no error, the packet is a row of its own
    seen.clear()
    assert main(["pcap", str(cap)], io.StringIO(), io.StringIO()) == 0
    assert not _error_texts(seen[0])
    assert any(seen[0].row(i).length >= 20_000 for i in range(len(seen[0])))


def _server(port_box: list[int], ready: threading.Event, done: threading.Event,
            size: int) -> None:
    """A loopback "server": the server's side of :func:`conversation` to the client that
    connects, each packet once the client's before it has come."""
    lsock = socket.create_server(("127.0.0.1", 0))
    port_box.append(lsock.getsockname()[1])
    ready.set()
    lsock.settimeout(30)
    conn, _ = lsock.accept()
    with conn, lsock:
        conn.settimeout(30)
        for server, data in conversation(size):
            if server:
                conn.sendall(data)
            else:
                _recv_exactly(conn, len(data))
        done.wait(30)


def _recv_exactly(s: socket.socket, n: int) -> None:
    while n:
        chunk = s.recv(min(n, 1 << 16))
        assert chunk
        n -= len(chunk)


def test_sniff_command_line_gives_the_tui_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    from binlogscope.cli.main import main

    port: list[int] = []
    ready, done = threading.Event(), threading.Event()
    size = 300_000
    threading.Thread(target=_server, args=(port, ready, done, size), daemon=True).start()
    assert ready.wait(10)

    def run(src: SniffSource) -> None:
        worker = threading.Thread(target=src.run, args=(lambda: False,), daemon=True)
        worker.start()
        time.sleep(0.5)  # (the capture is open before the traffic)
        with socket.create_connection(("127.0.0.1", port[0])) as c:
            c.settimeout(30)
            for server, data in conversation(size):
                if server:
                    _recv_exactly(c, len(data))
                else:
                    c.sendall(data)
        deadline = time.monotonic() + 30
        while not _error_texts(src) and time.monotonic() < deadline:
            time.sleep(0.1)
        done.set()
        src.stop()
        assert src.ended.wait(30)

    seen = _with_tui_stand_in(monkeypatch, "sniff", run)
    rc = main(["sniff", "-i", "lo", "--bpf", f"port {port[0]}", "--port", str(port[0]),
               "--max-packet-size", "64K"], io.StringIO(), io.StringIO())
    assert rc == 0
    (src,) = seen
    assert isinstance(src, SniffSource)
    errors = _error_texts(src)
    assert len(errors) == 1 and LIMIT_TEXT.format(65536) in errors[0], errors
    assert f"a packet of {size} bytes" in errors[0], errors
    # the packets after it are decoded: the next query and both answers
    queries = [src.row(i).summary for i in range(len(src)) if src.row(i).direction == "->"]
    assert any("SELECT 1" in q for q in queries), queries


def test_default_is_the_commands_default() -> None:
    """Without the option the TUI sources use the default the printing outputs use."""
    from binlogscope.session.oversize import DEFAULT_MAX_PACKET

    assert PcapSource(Path(SEMISYNC)).max_packet == DEFAULT_MAX_PACKET
