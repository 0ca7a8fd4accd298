"""pcap driver: link/IP/TCP header parsing, resync, flows, TLS, damaged files, the CLI."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from binlogscope.drivers.capture.pcap import (
    CaptureError,
    find_packet_start,
    iter_frames,
    looks_like_greeting,
    parse_frame,
    read_capture,
)
from binlogscope.session.events import PacketDecoded, Phase, TlsStarted
from tests.conftest import hexbytes

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
SEMI = CAPTURES / "pcap-semisync.pcap"
REPLICA = CAPTURES / "pcap-mariadb-replica.pcapng"

IPV4_TCP = hexbytes("""
    45 00 002d           # version 4, IHL 5, tos, total length 45
    0000 4000            # id, DF
    40 06 0000           # ttl, protocol 6 (TCP), checksum
    0a000001 0a000002    # 10.0.0.1 -> 10.0.0.2
    d431 0cea            # sport 54321, dport 3306
    00000064             # seq 100
    00000000             # ack
    50 18 ffff 0000 0000 # data offset 5, PSH|ACK, window, checksum, urgent
    01000000 0e          # payload: a MySQL packet (length 1, seq 0, COM_PING)
    000000               # Ethernet padding after the IP datagram: must be cut off
""")


def test_parse_ethernet_with_vlan_tag() -> None:
    frame = hexbytes("""
        020000000002 020000000001   # dst, src MAC
        8100 0064                   # 802.1Q tag, VLAN 100
        0800                        # IPv4
    """) + IPV4_TCP
    seg = parse_frame(1, frame)
    assert seg is not None
    assert (seg.src, seg.sport, seg.dst, seg.dport) == (b"\n\0\0\1", 54321, b"\n\0\0\2", 3306)
    assert seg.seq == 100 and seg.flags == 0x18
    assert seg.payload == bytes.fromhex("010000000e")  # padding trimmed by the IP length


def test_parse_linux_cooked_sll_and_sll2_null_raw() -> None:
    sll = hexbytes("0000 0304 0006 000000000000 0000  0800")  # type, ARPHRD, addr len, addr, proto
    sll2 = hexbytes("0800 0000 00000001 0304 00 06 000000000000 0000")  # proto first
    null = hexbytes("02000000")  # AF_INET in host (little-endian) order
    for lt, head in ((113, sll), (276, sll2), (0, null), (101, b"")):
        seg = parse_frame(lt, head + IPV4_TCP)
        assert seg is not None and seg.dport == 3306 and seg.payload[-1] == 0x0E, lt


def test_parse_ipv6_with_extension_header() -> None:
    tcp = IPV4_TCP[20:-3]
    frame = hexbytes("""
        60000000             # version 6
        0021 00 40           # payload length 33 (8 ext + 25 tcp), next header 0 (hop-by-hop)
    """) + bytes(15) + b"\x01" + bytes(15) + b"\x02" + hexbytes("""
        06 00 000000000000   # hop-by-hop: next header TCP, length 0 (8 bytes)
    """) + tcp
    seg = parse_frame(101, frame)
    assert seg is not None and len(seg.src) == 16 and seg.src[-1] == 1 and seg.dport == 3306
    assert seg.payload == bytes.fromhex("010000000e")


def test_non_tcp_and_fragments_are_skipped() -> None:
    udp = bytearray(IPV4_TCP)
    udp[9] = 17
    assert parse_frame(101, bytes(udp)) is None
    frag = bytearray(IPV4_TCP)
    frag[6] = 0x20  # more fragments
    assert parse_frame(101, bytes(frag)) is None
    assert parse_frame(101, b"\x45") is None  # too short: no exception
    assert parse_frame(147, IPV4_TCP) is None  # unknown link type


def test_greeting_detection() -> None:
    greeting = bytes.fromhex("4a000000" "0a") + b"10.11.19-MariaDB\0" + bytes(56)
    greeting = (len(greeting) - 4).to_bytes(3, "little") + b"\0" + greeting[4:]
    assert looks_like_greeting(greeting)
    assert not looks_like_greeting(greeting[:-1])  # length does not match
    assert not looks_like_greeting(b"\x05\x00\x00\x00\x0ahello")


def test_find_packet_start_binlog_and_generic() -> None:
    # real bytes: the first stream packet of the semi-sync capture, preceded by junk
    items = list(read_capture(str(SEMI), record=True))
    ev = next(i.event for i in items if isinstance(i.event, PacketDecoded)
              and i.event.kind == "binlog_event")
    assert isinstance(ev, PacketDecoded) and ev.binlog_event is not None
    hdr = ev.payload_length.to_bytes(3, "little") + bytes((ev.seq,))
    raw = hdr + b"\x00" + b"\xef\x00" * (ev.semi_sync is not None) + bytes(ev.binlog_event.raw
                                                                           or b"")
    assert find_packet_start(b"\x07\x00\x13" + raw, binlog=True) == (3, None)
    assert find_packet_start(b"\x07\x00\x13" + raw[:10], binlog=True)[0] is None
    # generic: two chained packets (seq 1, 2) after 2 bytes of an unknown packet's tail
    two = hexbytes("""
        ab cd                      # tail of a packet we missed
        03 00 00 01  01 02 03      # length 3, seq 1
        02 00 00 02  04 05         # length 2, seq 2, ends exactly at the end
    """)
    assert find_packet_start(two, binlog=False) == (2, None)
    # 8 bytes: "ab cd 03" could still be the header of a 249 KB packet: wait at 0
    assert find_packet_start(two[:8], binlog=False) == (None, 0)


def _pcap(frames: list[bytes], linktype: int = 101) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(f), len(f)) + f
    return out


def _ip_tcp(src: int, sport: int, dst: int, dport: int, seq: int, flags: int,
            payload: bytes) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 0x50, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0,
                     bytes((10, 0, 0, src)), bytes((10, 0, 0, dst)))
    return ip + tcp + payload


def _conversation(server_port: int, parts: list[tuple[bool, bytes]], syn: bool = True
                  ) -> list[bytes]:
    """Frames of one connection: (from_client, payload) in order, with a handshake."""
    frames = []
    cseq, sseq = 1000, 5000
    if syn:
        frames.append(_ip_tcp(1, 40000, 2, server_port, cseq - 1, 0x02, b""))
        frames.append(_ip_tcp(2, server_port, 1, 40000, sseq - 1, 0x12, b""))
    for from_client, data in parts:
        if from_client:
            frames.append(_ip_tcp(1, 40000, 2, server_port, cseq, 0x18, data))
            cseq += len(data)
        else:
            frames.append(_ip_tcp(2, server_port, 1, 40000, sseq, 0x18, data))
            sseq += len(data)
    return frames


def _greeting() -> bytes:
    payload = (b"\x0a" + b"10.11.19-MariaDB\0" + struct.pack("<I", 7) + b"abcdefgh\0"
               + struct.pack("<H", 0xF7FE) + b"\x2d" + struct.pack("<H", 2)
               + struct.pack("<H", 0x81BF) + b"\x15" + bytes(10) + b"ijklmnopqrst\0"
               + b"mysql_native_password\0")
    return len(payload).to_bytes(3, "little") + b"\0" + payload


SSL_REQUEST = hexbytes("""
    20 00 00 01          # length 32, seq 1
    0a aa 0f 00          # capability flags incl. CLIENT_SSL (0x800) and CLIENT_PROTOCOL_41
    00 00 00 01          # max packet size
    2d                   # character set
""") + bytes(23)


def test_tls_flow_is_reported_encrypted_not_decoded(tmp_path: Path) -> None:
    tls_hello = bytes.fromhex("16030100a5010000a10303") + bytes(160)
    frames = _conversation(4406, [(False, _greeting()), (True, SSL_REQUEST),
                                  (True, tls_hello), (False, b"\x16\x03\x03" + bytes(90))])
    cap = tmp_path / "tls.pcap"
    cap.write_bytes(_pcap(frames))
    items = list(read_capture(str(cap)))  # port 4406: found by its greeting
    kinds = [i.event.kind for i in items if isinstance(i.event, PacketDecoded)]
    assert kinds == ["handshake_v10", "ssl_request"]
    tls = [i for i in items if isinstance(i.event, TlsStarted)]
    assert len(tls) == 1 and tls[0].frame == 4  # the SSLRequest's frame
    flow = items[0].flow
    assert flow.encrypted and flow.opaque_bytes == len(tls_hello) + 93
    assert not any(getattr(i.event, "error", None) for i in items)


def test_decrypted_connection_after_the_ssl_request_is_decoded(tmp_path: Path) -> None:
    """A capture holding plaintext after the SSLRequest (a binlogscope proxy recording of a
    session whose TLS it terminated) decodes on, with a note; TLS records after it (also
    change_cipher_spec/application data, e.g. when the ClientHello came in the SSLRequest's
    segment) stay opaque."""
    from binlogscope.wire import handshake as hs

    response = hs.encode_handshake_response41(hs.HandshakeResponse41(
        0x000FAA0A, username="u", auth_response=b"r" * 20, client_plugin_name=""))
    response = len(response).to_bytes(3, "little") + b"\x02" + response
    ok = hexbytes("07 00 00 03  00 00 00 02 00 00 00")
    frames = _conversation(4406, [(False, _greeting()), (True, SSL_REQUEST), (True, response),
                                  (False, ok)])
    cap = tmp_path / "plain.pcap"
    cap.write_bytes(_pcap(frames))
    items = list(read_capture(str(cap)))
    kinds = [i.event.kind for i in items if isinstance(i.event, PacketDecoded)]
    assert kinds == ["handshake_v10", "ssl_request", "handshake_response41", "ok"]
    assert [i.text for i in items if i.kind == "note" and "decrypted" in (i.text or "")]
    assert not items[0].flow.encrypted
    assert not any(getattr(i.event, "error", None) for i in items)
    # the ClientHello in the SSLRequest's segment, then a TLS 1.3 change_cipher_spec record
    hello = bytes.fromhex("16030100a5010000a10303") + bytes(160)
    ccs = bytes.fromhex("140303000101") + bytes.fromhex("1703030035") + bytes(53)
    frames = _conversation(4406, [(False, _greeting()), (True, SSL_REQUEST + hello),
                                  (False, b"\x16\x03\x03" + bytes(90)), (True, ccs)])
    cap.write_bytes(_pcap(frames))
    items = list(read_capture(str(cap)))
    kinds = [i.event.kind for i in items if isinstance(i.event, PacketDecoded)]
    assert kinds == ["handshake_v10", "ssl_request"] and items[0].flow.encrypted
    assert not [i for i in items if i.kind == "note" and "decrypted" in (i.text or "")]


def test_mid_stream_join_finds_packet_boundaries(tmp_path: Path) -> None:
    # a query/response exchange on a non-default port, joined in the middle of a packet
    query = hexbytes("0a 00 00 00  03") + b"SELECT 1;"
    ok = hexbytes("07 00 00 01  00 00 00 02 00 00 00")
    frames = _conversation(13306, [(True, query[6:]), (False, ok), (True, query),
                                   (False, ok)], syn=False)
    cap = tmp_path / "mid.pcap"
    cap.write_bytes(_pcap(frames))
    assert [i for i in read_capture(str(cap)) if i.event is not None] == []  # not port 3306
    items = list(read_capture(str(cap), ports=[13306]))
    assert items[0].kind == "flow" and items[0].flow.mid_stream
    pk = [(i.frame, i.event.direction.value, i.event.kind, i.event.offset)
          for i in items if isinstance(i.event, PacketDecoded)]
    # the torn first query is skipped (8 bytes); everything after it decodes
    assert pk == [(2, "server", "ok", 0), (3, "client", "com_query", 8),
                  (4, "server", "ok", 11)]


def _pcap_records(path: Path) -> tuple[bytes, list[bytes]]:
    """A classic little-endian pcap file split into its global header and records."""
    data = path.read_bytes()
    out, pos = [], 24
    while pos < len(data):
        n = struct.unpack_from("<I", data, pos + 8)[0]
        out.append(data[pos : pos + 16 + n])
        pos += 16 + n
    return data[:24], out


def test_mid_stream_binlog_join_and_checksum_inferred(tmp_path: Path) -> None:
    """Drop the start of the semi-sync capture: the stream is joined without its FDE."""
    head, recs = _pcap_records(SEMI)
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(head + b"".join(recs[70:]))  # after the dump started: no handshake, no FDE
    items = list(read_capture(str(cut), ports=[39041]))
    evs = [i for i in items if isinstance(i.event, PacketDecoded)
           and i.event.binlog_event is not None]
    assert len(evs) == 32
    flow = evs[0].flow
    assert flow.mid_stream and flow.client.endswith(":56084")
    for i in evs:
        assert isinstance(i.event, PacketDecoded) and i.event.binlog_event is not None
        assert i.event.phase == Phase.BINLOG_STREAM and i.event.error is None
        # no FORMAT_DESCRIPTION seen: CRC32 was recognised from the trailers
        assert i.event.binlog_event.checksum_ok is True
    wanted = [i for i in evs if isinstance(i.event, PacketDecoded)
              and i.event.semi_sync is not None and i.event.semi_sync.ack_requested]
    assert len(wanted) == 6
    acks = [i for i in items if isinstance(i.event, PacketDecoded)
            and i.event.kind == "semi_sync_ack"]
    assert len(acks) == 6


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", "pcap", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("cut", [24 + 16 + 5, -7, -40])
def test_truncated_capture_one_line_and_everything_before(tmp_path: Path, cut: int) -> None:
    data = SEMI.read_bytes()
    bad = tmp_path / "trunc.pcap"
    bad.write_bytes(data[:cut])
    p = run("--json", str(bad))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "truncated" in p.stderr or "damaged" in p.stderr
    if cut < 0:  # everything up to the damage is there
        good = run("--json", str(SEMI)).stdout.splitlines()
        shown = p.stdout.splitlines()
        kinds = [json.loads(x)["kind"] for x in shown]
        assert kinds.count("binlog_event") == 42 and len(shown) >= len(good) - 3


def test_corrupt_pcapng_block(tmp_path: Path) -> None:
    data = bytearray(REPLICA.read_bytes())
    pos = 0
    for _ in range(40):  # walk 40 blocks (type, total length, ..., total length)
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    data[pos + 4 : pos + 8] = b"\xff\xff\xff\x7f"  # block 41: an impossible length
    bad = tmp_path / "corrupt.pcapng"
    bad.write_bytes(bytes(data))
    p = run("--summary", str(bad))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "damaged capture at byte" in p.stderr
    assert p.stdout.startswith("flow 1: ")  # the frames before the damage are summarised


@pytest.mark.parametrize("content", [b"", b"not a capture at all", b"\xd4\xc3\xb2"])
def test_not_a_capture(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "x.pcap"
    f.write_bytes(content)
    with pytest.raises(CaptureError):
        list(iter_frames(str(f)))
    p = run(str(f))
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_missing_file() -> None:
    p = run("/nonexistent/x.pcap")
    assert p.returncode == 1 and "cannot open" in p.stderr and "Traceback" not in p.stderr


def test_json_fields_and_filters() -> None:
    p = run("--json", "--type", "write_rows_event_v1", str(SEMI))
    assert p.returncode == 0, p.stderr
    objs = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(objs) == 4 and {o["event_type"] for o in objs} == {"WRITE_ROWS_EVENT_V1"}
    o = objs[0]
    for k in ("flow", "direction", "frame", "wire_time", "timestamp", "seq", "payload_length",
              "semi_sync", "binlog_file", "offset", "log_pos", "gtid", "rows", "table",
              "schema"):
        assert k in o, k
    assert o["flow"].endswith("-> 127.0.0.1:39041") and o["direction"] == "server"
    assert o["semi_sync"] == {"ack_requested": False} and o["table"] == "orders_semi"
    assert o["rows"][0]["after"]["customer"] == "cust0"
    # "wire_time" is the frame's capture time (seconds, with the µs the capture keeps); the
    # event header's own second is "timestamp", as from every source
    from scapy.utils import rdpcap

    assert o["wire_time"] == pytest.approx(float(rdpcap(str(SEMI))[o["frame"] - 1].time),
                                           abs=1e-6)
    assert isinstance(o["timestamp"], int) and o["timestamp"] > 1_600_000_000
    assert abs(o["wire_time"] - o["timestamp"]) < 3600
    assert o["wire_time"] != o["timestamp"]
    assert o["binlog_file"] == "mysql-bin.000004" and o["offset"] + o["event_size"] == \
        o["log_pos"] and o["gtid"] == "0-1-13"
    p2 = run("--json", "--table", r"shop\.orders_semi", "--flow", "1", str(SEMI))
    types = {json.loads(x)["event_type"] for x in p2.stdout.splitlines()}
    assert types == {"TABLE_MAP_EVENT", "WRITE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT_V1",
                     "DELETE_ROWS_EVENT_V1"}
    p3 = run("--json", "--flow", "2", "--type", "com_query", str(SEMI))
    objs3 = [json.loads(x) for x in p3.stdout.splitlines()]
    assert len(objs3) == 1 and objs3[0]["flow_id"] == 2 and objs3[0]["direction"] == "client"
    assert run("--table", "(", str(SEMI)).returncode == 2


def test_summary_semi_sync_acks_and_latency() -> None:
    p = run("--summary", "--json", str(SEMI))
    assert p.returncode == 0, p.stderr
    flows = [json.loads(x) for x in p.stdout.splitlines()]
    f1 = flows[0]
    assert f1["semi_sync_acks"] == 8 and f1["semi_sync_acks_requested"] == 8
    lat = f1["ack_latency"]
    assert 0 < lat["min_ms"] <= lat["median_ms"] <= lat["p99_ms"] < 1000
    assert f1["heartbeats"] == 3 and f1["errors"] == 0
    assert f1["events"]["XID_EVENT"] == 6 and f1["packets"]["client"] == 22
    text = run("--summary", str(SEMI)).stdout
    assert "semi-sync 8 ACKs (8 requested), latency min" in text


def test_plain_output_shows_frames_and_fields() -> None:
    p = run("--plain", "--flow", "1", str(SEMI))
    assert p.returncode == 0
    assert "== flow 1: 127.0.0.1:" in p.stdout
    assert "<- server binlog_event WRITE_ROWS_EVENT_V1" in p.stdout
    assert "semi_sync_indicator" in p.stdout  # the field dump
    line = next(x for x in p.stdout.splitlines() if "-> client semi_sync_ack" in x)
    assert line.startswith("[1] #49 ")
