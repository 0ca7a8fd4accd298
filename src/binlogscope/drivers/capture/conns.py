"""The state of one TCP connection of a capture, as :mod:`.flows` reassembles and decodes it:
each direction's reassembly, its mid-stream resynchronisation and its offset -> frame map
(:class:`Direction`), the flow, its session and keys (:class:`Connection`); and where a
direction joined inside a compressed session resumes (:func:`compressed_resume`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from binlogscope.drivers.capture.tcp_reassembly import StreamReassembler
from binlogscope.drivers.items import Flow
from binlogscope.session import Session
from binlogscope.session.events import Peer
from binlogscope.session.resync import FrameScan, PacketScan, PlainPacketScan

#: a connection's key: (source address, source port, destination address, destination port)
Key = tuple[bytes, int, bytes, int]
#: IPv4 only: (source + destination address, source port << 16 | destination port)
FastKey = tuple[bytes, int]


@dataclass(slots=True)
class Direction:
    """Per direction: reassembly, resync state and the offset -> frame map."""

    peer: Peer
    tcp: StreamReassembler
    frames: deque[tuple[int, int, float]] = field(default_factory=deque)  # offset, frame, ts
    syncing: bool = False
    sync_buf: bytearray = field(default_factory=bytearray)
    sync_base: int = 0  # stream offset of sync_buf[0]
    #: the incremental scans of sync_buf, per (binlog, ack) mode, "frames" (compressed) and
    #: "plain" (the packets in the frames' plain bytes): each byte judged once, not again on
    #: every segment (fresh ones when sync_buf starts over)
    scans: dict[tuple[bool, bool] | str, PacketScan | PlainPacketScan] = field(
        default_factory=dict)
    skip: int = 0  # bytes to report as missing/skipped when sync is found
    reason: str = ""
    fin_pending: bool = False
    gap_offset: int = 0  # where the gap being resynchronised after starts
    gap_frame: int = 0
    fed_end: int = 0  # stream offset after the last byte given to the session
    #: compressed protocol: (plain-stream offset, wire offset) of the frames not yet passed
    plain_map: deque[tuple[int, int]] = field(default_factory=deque)
    last_packet_end: int = 0

    def drop(self, n: int, flow: Flow) -> None:
        """Skip the first ``n`` bytes of the resync buffer (counted as skipped)."""
        flow.skipped_bytes += n
        self.skip += n
        self.sync_base += n
        del self.sync_buf[:n]

    def frame_at(self, offset: int) -> tuple[int, float]:
        fr = self.frames
        while len(fr) > 1 and fr[1][0] <= offset:
            fr.popleft()
        if not fr:
            return 0, 0.0
        return fr[0][1], fr[0][2]


class Connection:
    def __init__(self, flow: Flow, record: bool, max_pending: int) -> None:
        self.flow = flow
        self.record = record
        self.session: Session | None = None
        self.client = Direction(Peer.CLIENT, StreamReassembler(max_pending=max_pending))
        self.server = Direction(Peer.SERVER, StreamReassembler(max_pending=max_pending))
        #: the session the command's line writer was asked for (flows.py, once per session)
        self.lines_tried: Session | None = None
        flow.client_stats = self.client.tcp.stats
        flow.server_stats = self.server.tcp.stats
        self.server_packets = 0
        self.keys: tuple[Key, ...] = ()
        self.fast_keys: set[FastKey] = set()  # CaptureReader._fast entries of this connection
        #: an SSLRequest was seen: the client's next bytes say whether they are TLS
        self.tls_probe = False


def compressed_resume(d: Direction, flow: Flow, compressed: str | None,
                      modes: list[tuple[bool, bool]]) -> tuple[int, str, int, bool] | bool:
    """Where a direction joined inside a compressed session resumes: the first packet header
    in the plain bytes of the frames from the first frame found in its resync buffer (a frame
    may start inside a packet: the net layer writes its buffer when full, and while a dump
    catches up nearly every frame does). (buffer position of the frame holding it, algorithm,
    the plain bytes of that frame before it, whether a binlog-stream/ACK scan found it); True:
    nothing to do yet (waiting for more, or bytes skipped); False: no frame found."""
    buf = d.sync_buf
    scan = d.scans.get("frames")
    if not isinstance(scan, FrameScan):
        scan = d.scans["frames"] = FrameScan()
    frame = scan.find_frame(buf, d.sync_base)
    if frame is None or compressed not in (None, frame[1]):
        return False
    start = d.sync_base + frame[0]
    plain = d.scans.get("plain")
    if not isinstance(plain, PlainPacketScan) or plain.start != start \
            or plain.algorithm != frame[1]:
        plain = d.scans["plain"] = PlainPacketScan(start, frame[1], modes)
    got = plain.find(buf, d.sync_base)
    if got is not None:
        return got[0] - d.sync_base, frame[1], got[1], got[2]
    if not (plain.failed or plain.exhausted) and len(buf) - frame[0] < (1 << 20):
        return True  # (no packet header in the plain bytes so far: wait for more)
    # no packet header in the plain bytes of 1 MiB of frames (or 4 MiB of plain bytes: inside
    # a longer packet), or the chain from that frame breaks (it was none): those bytes are
    # skipped - counted, never decoded as packets - and the search goes on after them
    d.drop(frame[0] + 1 if plain.failed else len(buf) - 3, flow)
    d.scans.pop("plain", None)
    return True


__all__ = ["Connection", "Direction", "FastKey", "Key", "compressed_resume"]
