"""The proxy recorder masks a COM_CHANGE_USER's auth exchange whatever order its two directions
reach it in (drivers/proxy/record.py, record_frames.secret_ranges).

The recorder is handed each direction by its own relay thread. A session reading the exchange
takes the client's answer for auth data only after the server's request it answers, so a
recorder that met the answer first used to read it as a command and write it (the scramble
answer) and the server's new nonce unmasked. Here the synthetic sessions are fed in order and in
that racing order (the answer put before the request), plain and compressed (zlib, zstd;
deflated and stored frames), whole and cut into small chunks: no secret is in the recording,
the client's answer is all '*', and the plugin name of the request is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from binlogscope.wire.compressed import ZLIB, ZSTD
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    AuthSwitchRequest,
    AuthSwitchResponse,
    HandshakeResponse41,
    HandshakeV10,
    encode_auth_switch_request,
    encode_auth_switch_response,
    encode_handshake_response41,
    encode_handshake_v10,
)
from binlogscope.wire.responses import OkPacket, encode_ok
from tests.drivers.proxy.test_proxy_record import AUTH, CAPS, NONCE, SERVER, _event, record, streams
from tests.drivers.proxy.test_proxy_record_compressed import (
    CHANGE_AUTH,
    NEW_NONCE,
    SWITCH_AUTH,
    change_user,
    compressed_session,
    plain_packets,
)

SECRETS = [NONCE, AUTH, CHANGE_AUTH, NEW_NONCE, SWITCH_AUTH]
PLUGIN = b"mysql_native_password"


def plain_session() -> list[tuple[Peer | None, bytes]]:
    """A login, a query and its OK, a COM_CHANGE_USER with an auth switch and its answer, the
    OK, and a binlog dump: plain packets."""
    out: list[tuple[Peer | None, bytes]] = [
        (Peer.SERVER, encode_packet(encode_handshake_v10(
            HandshakeV10("11.4.2-MariaDB", 7, NONCE, int(CAPS))), 0)),
        (Peer.CLIENT, encode_packet(encode_handshake_response41(
            HandshakeResponse41(int(CAPS), "repl", AUTH, None, "mysql_native_password")), 1)),
        (Peer.SERVER, encode_packet(encode_ok(OkPacket()), 2)),
        (Peer.CLIENT, encode_packet(b"\x03SELECT 1", 0)),
        (Peer.SERVER, encode_packet(encode_ok(OkPacket()), 1)),
        (Peer.CLIENT, encode_packet(change_user(), 0)),
        (Peer.SERVER, encode_packet(encode_auth_switch_request(
            AuthSwitchRequest("mysql_native_password", NEW_NONCE)), 1)),
        (Peer.CLIENT, encode_packet(encode_auth_switch_response(
            AuthSwitchResponse(SWITCH_AUTH)), 2)),
        (Peer.SERVER, encode_packet(encode_ok(OkPacket()), 3)),
        (Peer.CLIENT, encode_packet(encode_com_binlog_dump(
            ComBinlogDump(4, 99, "bin.000001")), 0)),
    ]
    out += [(Peer.SERVER, encode_packet(_event(i, 2000), (i + 1) % 256)) for i in range(12)]
    return out


def _racing(packets: list[tuple[Peer | None, bytes]]) -> list[tuple[Peer | None, bytes]]:
    """The client's auth switch response put to the recorder before the server's request
    (entries 6 and 7 of both sessions)."""
    out = list(packets)
    assert out[6][0] is Peer.SERVER and out[7][0] is Peer.CLIENT
    out[6], out[7] = out[7], out[6]
    return out


def _check(rec: Path, client: list[bytes], server: list[bytes]) -> None:
    blob = rec.read_bytes()
    inflated = b"".join(client + server)
    present = [s.hex() for s in SECRETS if s in blob or s in inflated]
    assert not present, present
    assert client[1] == b"\x03SELECT 1"
    change = change_user()
    assert len(client[2]) == len(change) and set(client[2][1:]) == {0x2A}
    assert client[3] == b"*" * len(SWITCH_AUTH)  # the answer, whole
    switch = encode_auth_switch_request(AuthSwitchRequest("mysql_native_password", NEW_NONCE))
    at = len(switch) - len(NEW_NONCE)
    assert server[3][:at] == switch[:at] and PLUGIN in server[3]  # (the plugin name stays)
    assert server[3][at:at + len(NEW_NONCE)] == b"*" * len(NEW_NONCE)
    assert server[5:] == [_event(i, 2000) for i in range(12)]  # the dump as relayed


def _plain(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 3], "little")
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


@pytest.mark.parametrize("racing", [False, True], ids=["in-order", "answer-first"])
@pytest.mark.parametrize("cut", [0, 5], ids=["whole", "cut"])
def test_plain_change_user_exchange_is_masked_in_either_order(tmp_path: Path, racing: bool,
                                                              cut: int) -> None:
    packets = plain_session()
    rec = tmp_path / "rec.pcapng"
    record(rec, _racing(packets) if racing else packets, cut=cut)
    got = streams(rec)
    client, server = _plain(got[Peer.CLIENT]), _plain(got[Peer.SERVER])
    # (plain packets: masked in place, so the lengths are as sent)
    for peer in Peer:
        assert len(got[peer]) == sum(len(d) for p, d in packets if p is peer)
    _check(rec, client, server)
    kinds = [it.event.kind for it in read_capture(str(rec), {SERVER[1]})
             if isinstance(it.event, PacketDecoded)]
    assert "com_binlog_dump" in kinds and kinds.count("binlog_event") == 12, kinds
    if not racing:  # (in the racing order a reader meets the answer first too)
        assert "auth_switch_request" in kinds, kinds


@pytest.mark.parametrize("algorithm", [ZLIB, ZSTD])
@pytest.mark.parametrize("store", [False, True], ids=["deflated", "stored"])
@pytest.mark.parametrize("cut", [0, 5], ids=["whole", "cut"])
def test_compressed_change_user_answer_first_is_masked(tmp_path: Path, algorithm: str,
                                                       store: bool, cut: int) -> None:
    """The racing order inside compressed frames: the client's answer frame before the
    server's request frame (the in-order case: test_proxy_record_compressed.py)."""
    rec = tmp_path / "rec.pcapng"
    record(rec, _racing(compressed_session(algorithm, store=store)), cut=cut)
    got = streams(rec)
    _check(rec, plain_packets(got[Peer.CLIENT], algorithm, 1),
           plain_packets(got[Peer.SERVER], algorithm, 2))
