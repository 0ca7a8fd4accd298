"""A capture with one 512 MiB packet (33 fragments of 0xFFFFFF bytes): ``pcap
--max-packet-size 64M`` reads it in bounded time and memory, reports the packet as an error
with its size, decodes the packet after it, and exits 1. Before the limit the observer joined
the chain without bound, copying the pending packet at every fragment (27.5 s, 1.6 GB, and the
flow showed 0 packets and no error)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from binlogscope.drivers.pcapng import PcapNgWriter, TcpConversation
from binlogscope.session.events import Peer
from binlogscope.wire.constants import DEFAULT_CAPABILITIES, CapabilityFlag
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet
from binlogscope.wire.handshake import (
    HandshakeResponse41,
    HandshakeV10,
    encode_handshake_response41,
    encode_handshake_v10,
)
from binlogscope.wire.responses import OkPacket, encode_ok

CLIENT = ("10.0.0.2", 40000)
SERVER = ("10.0.0.1", 3306)


def write_capture(path: Path, total: int) -> None:
    """A session whose client sends a COM_QUERY of ``total`` bytes, then a COM_PING."""
    w = PcapNgWriter(path)
    c = TcpConversation(w, CLIENT, SERVER)
    t = 1_700_000_000.0
    c.handshake(t)
    caps = int(DEFAULT_CAPABILITIES | CapabilityFlag.CLIENT_PLUGIN_AUTH)
    c.data(Peer.SERVER, encode_packet(encode_handshake_v10(
        HandshakeV10("11.4.2-MariaDB", 5, b"n" * 20, caps)), 0), t)
    c.data(Peer.CLIENT, encode_packet(encode_handshake_response41(
        HandshakeResponse41(caps, "u", b"a" * 20, None, "mysql_native_password")), 1), t)
    c.data(Peer.SERVER, encode_packet(encode_ok(OkPacket()), 2), t)
    frag = b"z" * MAX_PAYLOAD
    left, seq, first = total, 0, True
    while True:
        m = min(left, MAX_PAYLOAD)
        body = (b"\x03" + frag[:m - 1]) if first else frag[:m]
        first = False
        c.data(Peer.CLIENT, m.to_bytes(3, "little") + bytes([seq & 0xFF]) + body, t)
        seq += 1
        left -= m
        if m < MAX_PAYLOAD:
            break
    c.data(Peer.CLIENT, encode_packet(b"\x0e", 0), t + 1)
    c.data(Peer.SERVER, encode_packet(encode_ok(OkPacket()), 1), t + 1)
    c.close(Peer.CLIENT, t + 2)
    c.close(Peer.SERVER, t + 2)
    w.close()


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oversize") / "chain.pcapng"
    write_capture(path, 512 << 20)
    return path


def test_a_512_mib_chain_is_skipped_in_bounded_time_and_memory(big_capture: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "pcap", "--summary",
                             "--max-packet-size", "64M", str(big_capture)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = proc.communicate(timeout=300)
    wall = time.monotonic() - t0
    assert proc.returncode == 1, err
    assert "a packet of 536870912 bytes in 33 fragments, over the packet size limit of " \
        "67108864 bytes" in out, out
    assert "client->server 2, server->client 3" in out  # the login, the COM_PING after it
    assert "1 error(s)" in err
    assert wall < 120, wall  # (2 s on an idle machine; 27.5 s and 1.6 GB before)


def test_peak_memory_stays_bounded(big_capture: Path) -> None:
    """The decoder's peak resident memory stays far below the packet's size (VmHWM of the
    child's own address space, read from /proc until it exits: its ru_maxrss would start from
    this test process's, which fork and exec carry over on Linux)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "pcap", "--json",
                             "--max-packet-size", "64M", str(big_capture)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    status = Path(f"/proc/{proc.pid}/status")
    peak = 0
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            break
        time.sleep(0.02)
    proc.wait(300)
    assert proc.returncode == 1
    assert 0 < peak < 500 * 1024, peak  # KiB: 190 MB measured (1.6 GB before the limit)
