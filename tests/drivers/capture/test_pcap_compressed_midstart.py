"""A capture that starts inside a compressed session (the compressed client/server protocol):
no handshake says that frames follow, so the reader finds them - a 7-byte frame header whose
payload inflates to exactly the length it announces (wire.compressed.find_frame_start) - and
decodes on from the first such frame, the other direction of the flow read as frames too.

Made from the real MariaDB 10.11 zlib session of captures/pcap-compressed-zlib.pcap: its
binlog events all come in one 1789-byte server frame (frame 32), so the server's plain bytes
of that frame are framed again in smaller frames (zlib; some start at a packet header, some
inside a packet, as a net layer flushing at event groups and when its buffer is full writes
them; wire.compressed.encode_frames) and the capture is rewritten from
frame 13 on (after the login: no greeting, no handshake) with the server's side starting at
byte N of those frames - inside a frame for most N. The old reader resynchronised on plain
packet headers and decoded no event at all."""

from __future__ import annotations

import itertools
import json
import struct
import subprocess
from pathlib import Path

import pytest

from binlogscope.drivers.capture.files import iter_records
from binlogscope.drivers.capture.layers import parse_frame
from binlogscope.drivers.capture.tls_keylog import _raw_packet
from binlogscope.wire.compressed import ZLIB, FrameReader, encode_frames
from tests.conftest import capture
from tests.watch_support import CLI, ENV

SOURCE = capture("pcap-compressed-zlib.pcap")
SERVER_PORT = 45003


def _reframed(frames: bytes) -> bytes:
    """The plain bytes of ``frames`` framed again: every 4 packets a frame ends (a flush), and
    every other such frame is also cut inside its third packet (a full net buffer): frames that
    start at a packet header and frames that start inside a packet, as a server writes them."""
    reader = FrameReader(ZLIB, 0, 0)
    reader.feed(frames)
    plain = b""
    while (f := reader.next_frame()) is not None:
        plain += f.plain
    cuts, i, k = [0], 0, 0
    while i < len(plain):
        i += 4 + int.from_bytes(plain[i:i + 3], "little")
        k += 1
        if k % 4 == 2 and k % 8 == 2:
            cuts.append(i + 5)  # inside the next packet
        if k % 4 == 0:
            cuts.append(i)
    cuts = [*sorted({c for c in cuts if c < len(plain)}), len(plain)]
    out, seq = b"", 1
    for a, b in itertools.pairwise(cuts):
        chunk, seq = encode_frames(plain[a:b], seq, ZLIB, min_length=0)
        out += chunk
    return out


def _write_cut(path: Path, first_frame: int, server_skip: int) -> None:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))
    for number, ts, linktype, frame in iter_records(str(SOURCE)):
        if number < first_frame:
            continue
        seg = parse_frame(linktype, frame)
        assert seg is not None
        payload, seq = seg.payload, seg.seq
        if seg.sport == SERVER_PORT:
            if len(payload) < 1000 and payload:
                continue  # the server's replies before the binlog: left out
            if payload:
                payload = _reframed(payload)[server_skip:]
                seq = seq + server_skip
        pkt = _raw_packet(seg, seq, seg.ack, payload)
        sec = int(ts)
        out += struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(pkt), len(pkt)) + pkt
    path.write_bytes(bytes(out))


def _events(path: Path) -> tuple[list[tuple[str, int]], list[dict[str, object]]]:
    r = subprocess.run([*CLI, "pcap", str(path), "--json", "--port", str(SERVER_PORT)],
                       capture_output=True, text=True, timeout=120, env=ENV)
    items = [json.loads(line) for line in r.stdout.splitlines()]
    return ([(str(d["event_type"]), int(d["log_pos"])) for d in items if d.get("event_type")],
            [d for d in items if d.get("kind") == "decode_error" or d.get("error")])


@pytest.mark.parametrize("server_skip", [0, 3, 100, 700, 2500])
def test_decoding_resumes_at_the_first_whole_frame(tmp_path: Path, server_skip: int) -> None:
    full, _ = _events(SOURCE)
    assert len(full) == 65
    cut = tmp_path / "cut.pcap"
    _write_cut(cut, 13, server_skip)
    got, errors = _events(cut)
    assert got, "no event decoded after the cut"
    assert got == full[len(full) - len(got):]  # the events after the resumption point, intact
    if server_skip == 0:
        assert got == full
    else:
        assert len(got) < len(full)  # (what was cut is not invented)
    # the only damage reported: where the capture starts (and rows whose TABLE_MAP was cut
    # off with it: missing context, said so), never a broken packet
    assert all("starts mid-connection" in json.dumps(e)
               or "came before this stream began" in json.dumps(e) for e in errors), errors
    summary = subprocess.run([*CLI, "pcap", str(cut), "--summary", "--port", str(SERVER_PORT)],
                             capture_output=True, text=True, timeout=120, env=ENV).stdout
    assert "compressed" in summary.splitlines()[0]


CATCHUP = capture("pcap-compressed-catchup-zlib.pcapng")


def _catchup_stream() -> tuple[int, list[tuple[int, int, int]], bytes]:
    """The catch-up capture's server port, its server segments (frame number, stream offset,
    length) and the server's byte stream (one connection, loopback: in order, nothing lost)."""
    port = 0
    segs: list[tuple[int, int, int]] = []
    stream = b""
    base = None
    for number, _, linktype, frame in iter_records(str(CATCHUP)):
        seg = parse_frame(linktype, frame)
        assert seg is not None
        if seg.flags & 0x12 == 0x02:  # the client's SYN
            port = seg.dport
        if seg.sport != port or not seg.payload:
            continue
        if base is None:
            base = seg.seq
        at = (seg.seq - base) & 0xFFFFFFFF
        assert at == len(stream), "the capture is in order with nothing lost"
        segs.append((number, at, len(seg.payload)))
        stream += seg.payload
    return port, segs, stream


def _write_from(path: Path, first_frame: int) -> None:
    """The capture from ``first_frame`` on (what ``editcap -r IN OUT N-M`` keeps), as pcap."""
    out = bytearray()
    for number, ts, linktype, frame in iter_records(str(CATCHUP)):
        if not out:
            out += struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype)
        if number < first_frame:
            continue
        sec = int(ts)
        out += struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(frame), len(frame)) + frame
    path.write_bytes(bytes(out))


def _json(path: Path, port: int) -> list[dict[str, object]]:
    r = subprocess.run([*CLI, "pcap", str(path), "--json", "--port", str(port)],
                       capture_output=True, text=True, timeout=120, env=ENV)
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_a_cut_where_every_frame_starts_inside_a_packet(tmp_path: Path) -> None:
    """A real zlib dump that catches up (captures/make_compressed_catchup.py: MariaDB writes
    its 16 KiB net buffer as a frame whenever it is full, the rest of the cut packet begins
    the next frame), cut at TCP segments (one frame each) inside a run of frames that all
    start inside a packet: every binlog event whose packet starts after the cut is decoded
    (type, position, rows as the whole capture decodes them), and the bytes skipped before
    the first packet header - the rest of the packet the first frame began inside - are one
    item saying how many. The old reader waited for a frame starting on a packet boundary
    and lost every event up to the next one (hundreds here)."""
    port, segs, stream = _catchup_stream()
    full = _json(CATCHUP, port)
    events = [(d["event_type"], d["log_pos"], json.dumps(d.get("rows"))) for d in full
              if d.get("kind") == "binlog_event"]
    first = next(int(str(d["packet_offset"])) for d in full
                 if d.get("kind") == "compressed_frame" and d.get("direction") == "server")
    # the truth, from the bytes: each frame's plain offset, and where packets start
    reader = FrameReader(ZLIB, first, 0)
    reader.feed(stream[first:])
    plain_at: dict[int, int] = {}
    plain = b""
    while (f := reader.next_frame()) is not None:
        plain_at[f.offset] = len(plain)
        plain += f.plain
    starts, i = [], 0
    while i < len(plain):
        n = int.from_bytes(plain[i:i + 3], "little")
        starts.append((i, n >= 20 and plain[i + 4] == 0))  # (a binlog event packet)
        i += 4 + n
    assert i == len(plain)
    packet_starts = {p for p, _ in starts}
    inside = {number for number, at, _ in segs
              if at in plain_at and plain_at[at] not in packet_starts}
    # (the capture is what it is meant to be: 98 of its 116 server frames start inside a
    # packet; 36 TCP segments begin with one)
    assert sum(p not in packet_starts for p in plain_at.values()) > 80 and len(inside) > 30
    # segments that begin a frame starting inside a packet, as do the next three frames
    run = [(number, at) for k, (number, at, _) in enumerate(segs[:-3])
           if all(x[0] in inside for x in segs[k:k + 4])]
    cuts = [run[k] for k in (0, len(run) // 3, 2 * len(run) // 3, len(run) - 1)]
    for number, at in cuts:
        p0 = plain_at[at]
        later = [p for p, is_event in starts if p >= p0 and is_event]
        skip = min(p for p in packet_starts if p >= p0) - p0
        assert skip > 0
        cut = tmp_path / f"cut{number}.pcap"
        _write_from(cut, number)
        items = _json(cut, port)
        decoded = [d for d in items if d.get("kind") == "binlog_event"]
        assert len(decoded) == len(later), number
        want = events[len(events) - len(decoded):]
        assert [(d["event_type"], d["log_pos"]) for d in decoded] == [w[:2] for w in want]
        for d, w in zip(decoded, want, strict=True):
            if d.get("rows") is None and w[2] != "null":  # its TABLE_MAP was cut off: said so
                assert "no TABLE_MAP" in str(d.get("error")), d
            else:
                assert json.dumps(d.get("rows")) == w[2]
        said = [d for d in items if d.get("kind") == "decode_error"]
        assert len(said) == 1 and f"the first {skip} bytes of its plain data" in \
            str(said[0]["error"]), said


def test_a_packet_longer_than_the_plain_scan_is_skipped_not_decoded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Joined inside a binlog packet longer than what the plain-bytes scan holds (lowered to
    64 KiB here; 4 MiB by default): the scanned bytes are skipped and counted, the search goes
    on after them, and decoding resumes at the first event after that packet - nothing of the
    long packet is decoded as packets. (Frames built by the encoders: no server sends a
    packet this long inside a short test.)"""
    import random

    from binlogscope.drivers.capture.layers import TcpSegment
    from binlogscope.drivers.capture.pcap import read_capture
    from binlogscope.session import resync
    from binlogscope.session.events import DecodeError, PacketDecoded
    from binlogscope.wire.binlog.encode_events import encode_event

    monkeypatch.setattr(resync, "PLAIN_SCAN_LIMIT", 1 << 16)
    rng = random.Random(7)
    pattern = bytes(rng.randrange(32, 127) for _ in range(24))
    plain = bytearray()
    seq = 1
    for size in (3000, 400_000, 120, 300, 5000, 80, 9000):  # ANNOTATE_ROWS: any text
        event = encode_event(160, (pattern * (size // 24 + 1))[:size])
        plain += (len(event) + 1).to_bytes(3, "little") + bytes((seq,)) + b"\0" + event
        seq += 1
    wire = bytearray()
    cseq = 0
    for at in range(0, len(plain), 16384):
        chunk, cseq = encode_frames(plain[at:at + 16384], cseq, ZLIB, min_length=0)
        wire += chunk
    data = bytes(wire[40:])  # joined inside the first frame, inside the first packet
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
    for k, at in enumerate(range(0, len(data), 1460)):
        seg = TcpSegment(b"\x7f\0\0\1", SERVER_PORT, b"\x7f\0\0\1", 50000, 1000 + at, 0x18,
                         data[at:at + 1460])
        pkt = _raw_packet(seg, seg.seq, 1, seg.payload)
        out += struct.pack("<IIII", 1000, k, len(pkt), len(pkt)) + pkt
    items = list(read_capture("-", ports={SERVER_PORT}, data=bytes(out)))
    decoded = [it.event for it in items if isinstance(it.event, PacketDecoded)]
    # the events after the long one (payload: 0x00, header, text, CRC32), nothing else
    assert [(p.kind, p.payload_length - 24, p.error) for p in decoded] == [
        ("binlog_event", n, None) for n in (120, 300, 5000, 80, 9000)]
    said = [it.event.message for it in items if isinstance(it.event, DecodeError)]
    assert len(said) == 1 and "skipped" in said[0], said
