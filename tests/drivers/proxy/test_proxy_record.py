"""The proxy's recorder (drivers/proxy/record.py) on synthetic sessions: login secrets masked
(native, ed25519, a TLS-terminated login, COM_REGISTER_SLAVE, COM_CHANGE_USER), chunks cut
anywhere, ``raw`` keeping them, TCP sequence numbers wrapped past 2^32 (a direction past 4 GiB
of sequence space stays readable by ``binlogscope pcap`` and tshark), and a full queue
recorded as a marked gap. The relay itself is exercised in test_proxy_record_relay.py."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.drivers.proxy.record import ProxyRecorder
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.commands import ComBinlogDump, ComRegisterSlave, encode_com_binlog_dump
from binlogscope.wire.commands import encode_com_register_slave as enc_register
from binlogscope.wire.constants import DEFAULT_CAPABILITIES, CapabilityFlag
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    AuthSwitchRequest,
    AuthSwitchResponse,
    HandshakeResponse41,
    HandshakeV10,
    SslRequest,
    encode_auth_switch_request,
    encode_auth_switch_response,
    encode_handshake_response41,
    encode_handshake_v10,
    encode_ssl_request,
)
from binlogscope.wire.responses import OkPacket, encode_ok

CAPS = DEFAULT_CAPABILITIES | CapabilityFlag.CLIENT_PLUGIN_AUTH
NONCE = bytes(range(0x41, 0x55))  # 20 bytes
AUTH = bytes(range(0xA0, 0xB4))
ED_NONCE = bytes(range(0x60, 0x80))  # 32 bytes
ED_SIG = bytes(range(0x80, 0xC0))  # 64 bytes
PASSWORD = "replica-Secret-42"
CLIENT = ("10.1.2.3", 40001)
SERVER = ("10.1.2.4", 3306)


def _event(i: int, size: int) -> bytes:
    """A binlog stream packet payload: 0x00, then an event-sized body (not decoded here)."""
    return b"\x00" + bytes([i % 251]) * size


def session(*, ed25519: bool = False, tls: bool = False, events: int = 20,
            size: int = 3000) -> list[tuple[Peer | None, bytes]]:
    """A replica's session, packet by packet: (peer, wire bytes); (None, b"") marks where TLS
    is terminated (what follows is the plaintext)."""
    caps = CAPS | (CapabilityFlag.CLIENT_SSL if tls else 0)
    out: list[tuple[Peer | None, bytes]] = []
    greet = HandshakeV10("11.4.2-MariaDB", 7, NONCE, int(caps))
    out.append((Peer.SERVER, encode_packet(encode_handshake_v10(greet), 0)))
    seq = 1
    if tls:
        out.append((Peer.CLIENT, encode_packet(encode_ssl_request(SslRequest(int(caps))), 1)))
        out.append((None, b""))
        seq = 2
    resp = HandshakeResponse41(int(caps), "repl", AUTH, None,
                               "client_ed25519" if ed25519 else "mysql_native_password")
    out.append((Peer.CLIENT, encode_packet(encode_handshake_response41(resp), seq)))
    seq += 1
    if ed25519:
        out.append((Peer.SERVER, encode_packet(encode_auth_switch_request(
            AuthSwitchRequest("client_ed25519", ED_NONCE)), seq)))
        out.append((Peer.CLIENT, encode_packet(encode_auth_switch_response(
            AuthSwitchResponse(ED_SIG)), seq + 1)))
        seq += 2
    out.append((Peer.SERVER, encode_packet(encode_ok(OkPacket()), seq)))
    out.append((Peer.CLIENT, encode_packet(enc_register(
        ComRegisterSlave(99, "replica-host", "repl", PASSWORD, 3307)), 0)))
    out.append((Peer.SERVER, encode_packet(encode_ok(OkPacket()), 1)))
    out.append((Peer.CLIENT, encode_packet(encode_com_binlog_dump(
        ComBinlogDump(4, 99, "bin.000001")), 0)))
    for i in range(events):
        out.append((Peer.SERVER, encode_packet(_event(i, size), (i + 1) % 256)))
    return out


def record(path: Path, packets: list[tuple[Peer | None, bytes]], *, raw: bool = False,
           cut: int = 0, **kw: Any) -> None:
    """Feed ``packets`` to a recorder as one connection; ``cut`` > 0 splits every small packet
    (the login's) into chunks of that many bytes (a secret cut across reads)."""
    rec = ProxyRecorder(path, raw=raw, tls_terminated=any(p is None for p, _ in packets), **kw)
    rec.put(1, None, b"", ("open", CLIENT, SERVER), 1.0)
    t = 1.0
    for peer, data in packets:
        t += 0.001
        if peer is None:
            rec.put(1, None, b"", ("tls", True, "TLS terminated"), t)
            continue
        step = cut if cut and len(data) < 500 else len(data)  # (the login's packets)
        for i in range(0, len(data), step):
            rec.put(1, peer, data[i:i + step], None, t)
    rec.put(1, Peer.CLIENT, b"", None, t + 0.01)
    rec.put(1, Peer.SERVER, b"", None, t + 0.01)
    rec.close()
    assert rec.failed is None


def streams(path: Path) -> dict[Peer, bytes]:
    """Each direction's bytes as the recording holds them (by sequence number)."""
    from scapy.layers.inet import TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import RawPcapNgReader

    got: dict[Peer, bytearray] = {Peer.CLIENT: bytearray(), Peer.SERVER: bytearray()}
    for frame, _ in RawPcapNgReader(str(path)):
        tcp = Ether(frame)[TCP]
        payload = bytes(tcp.payload)
        if payload:
            got[Peer.CLIENT if tcp.sport == CLIENT[1] else Peer.SERVER] += payload
    return {k: bytes(v) for k, v in got.items()}


def wire(packets: list[tuple[Peer | None, bytes]], peer: Peer) -> bytes:
    return b"".join(d for p, d in packets if p is peer)


SECRETS = [NONCE[:8], NONCE[8:], AUTH, ED_NONCE, ED_SIG, PASSWORD.encode()]


@pytest.mark.parametrize("kind", ["native", "ed25519", "tls"])
@pytest.mark.parametrize("cut", [0, 7], ids=["whole", "cut"])
def test_login_secrets_are_masked(tmp_path: Path, kind: str, cut: int) -> None:
    packets = session(ed25519=kind == "ed25519", tls=kind == "tls")
    rec = tmp_path / "rec.pcapng"
    record(rec, packets, cut=cut)
    blob = rec.read_bytes()
    got = streams(rec)
    for peer in Peer:
        sent = wire(packets, peer)
        assert len(got[peer]) == len(sent)  # framing kept: same length
        diff = [i for i, (a, b) in enumerate(zip(got[peer], sent, strict=True)) if a != b]
        assert all(got[peer][i] == 0x2A for i in diff)  # only '*' where it differs
    present = [s for s in SECRETS if s in blob or any(s in got[p] for p in Peer)]
    assert not present, present
    # the server's events are recorded as they were
    assert wire(packets, Peer.SERVER)[-3000:] == got[Peer.SERVER][-3000:]
    # and `pcap` reads the masked login back: the dump request and the events follow
    kinds = [it.event.kind for it in read_capture(str(rec), {SERVER[1]})
             if isinstance(it.event, PacketDecoded)]
    assert "com_binlog_dump" in kinds and kinds.count("binlog_event") == 20, kinds


def test_record_raw_keeps_everything(tmp_path: Path) -> None:
    packets = session(ed25519=True)
    rec = tmp_path / "rec.pcapng"
    record(rec, packets, raw=True, cut=5)
    got = streams(rec)
    assert got[Peer.CLIENT] == wire(packets, Peer.CLIENT)
    assert got[Peer.SERVER] == wire(packets, Peer.SERVER)
    assert all(any(s in got[p] for p in Peer) for s in SECRETS)


def test_sequence_numbers_wrap_past_4_gib(tmp_path: Path) -> None:
    """Both directions start just below 2^32: the server's crosses it within its events (as a
    direction does after 4 GiB); the recording is still one readable stream."""
    packets = session(events=40, size=5000)
    rec = tmp_path / "wrap.pcapng"
    record(rec, packets, isn=(2**32 - 300, 2**32 - 70_000))
    items = list(read_capture(str(rec), {SERVER[1]}))
    kinds = [it.event.kind for it in items if isinstance(it.event, PacketDecoded)]
    assert kinds.count("binlog_event") == 40
    assert not [it.text for it in items if it.kind == "error"]
    assert streams(rec)[Peer.SERVER][-5000:] == wire(packets, Peer.SERVER)[-5000:]
    tshark = shutil.which("tshark")
    if tshark:  # Wireshark's dissector agrees: no lost segment, valid checksums
        res = subprocess.run(
            [tshark, "-r", str(rec), "-o", "tcp.check_checksum:TRUE", "-T", "fields",
             "-e", "tcp.seq_raw", "-e", "tcp.checksum.status", "-e", "_ws.expert.message"],
            capture_output=True, text=True, timeout=60)
        rows = [line.split("\t") for line in res.stdout.splitlines()]
        seqs = [int(r[0]) for r in rows]
        assert max(seqs) > 2**32 - 70_000 and min(seqs) < 70_000  # it wrapped
        assert all(r[1] == "1" for r in rows), rows  # checksums good
        assert "not captured" not in res.stdout


def test_a_full_queue_is_a_marked_gap(tmp_path: Path) -> None:
    """The writer is stalled (a slow disk) and the queue fills: what does not fit is not
    recorded, the sequence number jumps over it and the next frame says so; the first loss
    of the connection is reported to the caller once."""
    rec_path = tmp_path / "gap.pcapng"
    rec = ProxyRecorder(rec_path, queue_bytes=20_000)
    gate = threading.Event()
    frame = rec.w.frame

    def slow(*a: Any, **kw: Any) -> None:
        gate.wait(10)
        frame(*a, **kw)

    rec.w.frame = slow  # type: ignore[method-assign]
    packets = session(events=30, size=3000)
    rec.put(1, None, b"", ("open", CLIENT, SERVER), 1.0)
    firsts = [rec.put(1, peer, data, None, 2.0) for peer, data in packets if peer is not None]
    gate.set()
    while rec._queued:  # (the writer catches up; then the stream goes on after the gap)
        time.sleep(0.01)
    after = encode_packet(_event(7, 3000), 77)
    assert not rec.put(1, Peer.SERVER, after, None, 2.5)  # (told once per connection)
    rec.put(1, Peer.SERVER, b"", None, 3.0)
    rec.put(1, Peer.CLIENT, b"", None, 3.0)
    rec.close()
    assert firsts.count(True) == 1
    got = streams(rec_path)
    sent = wire(packets, Peer.SERVER)
    assert 0 < len(got[Peer.SERVER]) < len(sent)
    text = rec_path.read_bytes()
    assert b"bytes of the server's stream before this segment are not recorded" in text
    assert got[Peer.SERVER].endswith(after)
    items = list(read_capture(str(rec_path), {SERVER[1]}))
    lost = [it.text or getattr(it.event, "message", "") for it in items]
    assert any("lost in the capture (TCP gap" in (t or "") for t in lost), lost  # a reader sees it
    assert not [s for s in SECRETS if s in text]
