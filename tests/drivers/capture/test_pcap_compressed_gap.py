"""A TCP gap in the middle of an established compressed session (issue 30, issue 32: nothing
lost silently). The real MariaDB 10.11 zlib catch-up capture (captures/README.md,
make_compressed_catchup.py) is rewritten with a byte range of the server's stream removed -
inside a frame header, inside a frame's compressed payload, exactly at frame boundaries, and
across several frames - by splitting the TCP segment(s) around it (the sequence numbers stay
those of the real stream, so the reader sees a gap). The reader must resynchronise as for a
capture joined mid-way (the next frame header, then the next packet start in its plain
bytes): every event whose packet starts in a frame that begins after the gap is decoded, the
gap is an item and the exit is non-zero. The old session kept the cut frame's bytes in its
frame reader and appended the next frames to them: the frames after the gap did not inflate
and every later event was lost. The same cuts of an uncompressed capture (a gap mid-packet)
are checked too.

No zstd case: MariaDB (the only server here) has no zstd compressed protocol (it offers
CLIENT_COMPRESS, zlib, only), so no real zstd capture can be made on this machine."""

from __future__ import annotations

import bisect
import subprocess
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import CompressedFrame, DecodeError, PacketDecoded, Peer
from tests.conftest import capture
from tests.watch_support import CLI, ENV

Event = tuple[int, int, int, int]  # (plain offset of its packet, log_pos, type, size)


def _read(path: Path, client: int | None = None
          ) -> tuple[list[Event], list[str], list[tuple[int, int]]]:
    """The server's binlog events, the decode errors, and (plain offset, wire offset) of
    every server compressed frame (of the connection from port ``client``: None, all)."""
    events: list[Event] = []
    errors: list[str] = []
    frames: list[tuple[int, int]] = []
    for item in read_capture(str(path)):
        if client is not None and f":{client} -> " not in item.flow.name:
            continue
        e = item.event
        if isinstance(e, PacketDecoded) and e.binlog_event is not None:
            h = e.binlog_event.header
            if h is not None and e.binlog_event.error is None:
                events.append((e.offset, h.log_pos, h.type_code, h.event_size))
        elif isinstance(e, DecodeError):
            errors.append(e.message)
        elif isinstance(e, CompressedFrame) and e.direction is Peer.SERVER:
            frames.append((e.frame.plain_offset, e.offset))
    return events, errors, frames


def _server(frames: list[Any]) -> tuple[int, int, int]:
    """(server port, client port, server's initial sequence number + 1) of the connection
    with the capture's biggest segment (the binlog stream)."""
    from scapy.layers.inet import TCP

    big = max((p for p in frames if TCP in p), key=lambda p: len(bytes(p[TCP].payload)))
    port, client = int(big[TCP].sport), int(big[TCP].dport)
    isn = next(int(p[TCP].seq) for p in frames if TCP in p and p[TCP].sport == port
               and p[TCP].dport == client and p[TCP].flags & 0x02)
    return port, client, isn + 1


def _cut(frames: list[Any], port: int, client: int, base: int, a: int,
         b: int, path: Path) -> None:
    """``frames`` written to ``path`` without the server's stream bytes [a, b)."""
    from scapy.layers.inet import IP, TCP
    from scapy.utils import PcapWriter

    w = PcapWriter(str(path), sync=True)
    for p in frames:
        payload = bytes(p[TCP].payload) if TCP in p else b""
        if not payload or p[TCP].sport != port or p[TCP].dport != client:
            w.write(p)
            continue
        s = (int(p[TCP].seq) - base) & 0xFFFFFFFF
        e = s + len(payload)
        if e <= a or s >= b:
            w.write(p)
            continue
        for lo, hi in ((s, min(e, a)), (max(s, b), e)):
            if hi > lo:
                q = p.copy()
                q[TCP].remove_payload()
                q[TCP].seq = (base + lo) & 0xFFFFFFFF
                q = q / payload[lo - s:hi - s]
                del q[IP].len, q[IP].chksum, q[TCP].chksum
                w.write(q.__class__(bytes(q)))
    w.close()


def _cases(frames: list[tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """Server stream ranges to remove, around a frame in the middle of the stream (wire
    offsets of the compressed frames; of packets for an uncompressed capture)."""
    n = len(frames)
    f, nxt, far = frames[n // 2][1], frames[n // 2 + 1][1], frames[n // 2 + 4][1]
    assert f + 300 < nxt  # (the catch-up frames are KBs long)
    return {"in_header": (f + 3, f + 5), "in_payload": (f + 100, nxt - 100),
            "at_boundaries": (f, nxt), "several_frames": (f + 50, far + 20)}


CATCHUP = capture("pcap-compressed-catchup-zlib.pcapng")
_CASES = ["in_header", "in_payload", "at_boundaries", "several_frames"]


@pytest.fixture(scope="module")
def catchup() -> tuple[list[Any], list[Event], list[tuple[int, int]]]:
    import scapy.layers.inet  # (dissected as IP/TCP, not raw bytes)
    import scapy.layers.l2  # noqa: F401  (Ethernet dissected)
    from scapy.utils import rdpcap

    events, errors, frames = _read(CATCHUP)
    assert len(events) == 650 and not errors and len(frames) > 100
    return list(rdpcap(str(CATCHUP))), events, frames


@pytest.mark.parametrize("case", _CASES)
def test_a_gap_inside_a_compressed_session_resynchronises(
        case: str, catchup: tuple[list[Any], list[Event], list[tuple[int, int]]],
        tmp_path: Path) -> None:
    packets, whole, frames = catchup
    port, client, base = _server(packets)
    a, b = _cases(frames)[case]
    path = tmp_path / f"{case}.pcap"
    _cut(packets, port, client, base, a, b, path)
    events, errors, _ = _read(path)

    starts = [p for p, _ in frames]

    def wire_frame(plain: int) -> int:  # the wire offset of the frame holding a packet start
        return frames[bisect.bisect_right(starts, plain) - 1][1]

    want = {e[1:] for e in whole if wire_frame(e[0]) >= b}
    got = {e[1:] for e in events}
    assert len(want) > 100
    assert not want - got, (case, len(want - got), len(want))
    assert got <= {e[1:] for e in whole}  # nothing mis-framed into an event
    # the gap is one item (no inflate error after it, no frame left over at the end)
    assert len(errors) == 1, errors
    assert f"{b - a} bytes lost in the capture" in errors[0]
    if case in ("in_header", "in_payload", "several_frames"):
        assert "bytes of the compressed frame in progress" in errors[0]
    out = subprocess.run([*CLI, "pcap", "--summary", str(path)], env=ENV,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert "1 gaps" in out.stdout and f"{b - a} bytes lost" in out.stdout


UNCOMPRESSED = capture("pcap-mariadb-replica.pcapng")


def test_a_gap_mid_packet_of_an_uncompressed_session_resynchronises(tmp_path: Path) -> None:
    import scapy.layers.inet  # (dissected as IP/TCP, not raw bytes)
    import scapy.layers.l2  # noqa: F401  (Ethernet dissected)
    from scapy.utils import rdpcap

    packets = list(rdpcap(str(UNCOMPRESSED)))
    port, client, base = _server(packets)
    whole, errors, _ = _read(UNCOMPRESSED, client)
    assert len(whole) > 10 and not errors
    mid = whole[len(whole) // 2]
    nxt = next(e for e in whole if e[0] > mid[0] + 30)
    for a, b in ((mid[0] + 2, mid[0] + 20), (mid[0] + 25, nxt[0] + 7)):
        path = tmp_path / f"cut{a}.pcap"
        _cut(packets, port, client, base, a, b, path)
        events, errs, _ = _read(path, client)
        want = {e[1:] for e in whole if e[0] >= b}
        got = {e[1:] for e in events}
        assert want and not want - got, (a, b, len(want - got))
        assert got <= {e[1:] for e in whole}
        assert len(errs) == 1 and f"{b - a} bytes lost in the capture" in errs[0], errs
