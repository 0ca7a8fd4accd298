"""The state of one TCP connection of a capture, as :mod:`.flows` reassembles and decodes it:
each direction's reassembly, its mid-stream resynchronisation and its offset -> frame map
(:class:`Direction`), the flow, its session and keys (:class:`Connection`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from binlogscope.drivers.capture.tcp_reassembly import StreamReassembler
from binlogscope.drivers.items import Flow
from binlogscope.session import Session
from binlogscope.session.events import Peer
from binlogscope.session.resync import PacketScan, PlainPacketScan

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
        flow.client_stats = self.client.tcp.stats
        flow.server_stats = self.server.tcp.stats
        self.server_packets = 0
        self.keys: tuple[Key, ...] = ()
        self.fast_keys: set[FastKey] = set()  # CaptureReader._fast entries of this connection
        #: an SSLRequest was seen: the client's next bytes say whether they are TLS
        self.tls_probe = False


__all__ = ["Connection", "Direction", "FastKey", "Key"]
