"""What one whole packet becomes: :class:`PacketDecoder`, the per-packet half of the
:class:`~binlogscope.session.machine.Session` (which cuts each direction's bytes into packets
and hands every packet here).

For each packet: its sequence ids checked against the counter (and the counter moved on), the
reader of the phase and direction (:mod:`.readers`, over the connection's
:class:`~.state.ConnState`), the binlog event's coordinates (the stream's
:class:`~binlogscope.wire.binlog.coords.CoordTracker`), then the :class:`PacketDecoded` and,
where the payload is damaged, a :class:`DecodeError`. :meth:`PacketDecoder.stream_event` is
the no-tree path of an event packet of the stream (the event decoder straight on the payload),
:meth:`PacketDecoder.stream_run` the same for a read's consecutive event packets in one call.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Any, Protocol

from binlogscope.session import readers
from binlogscope.session.events import (
    DecodeError,
    LinesWritten,
    PacketDecoded,
    Peer,
    Phase,
    SequenceMismatch,
    SessionEvent,
)
from binlogscope.session.resync import greeting_plausible
from binlogscope.session.state import ConnState
from binlogscope.wire import replication
from binlogscope.wire.binlog.coords import CoordTracker
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event, decode_plain
from binlogscope.wire.binlog.header import HEADER_LEN as EVENT_HEADER_LEN
from binlogscope.wire.binlog.rows import NO_TABLE_MAP, unknown_context
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.constants import SEMI_SYNC_INDICATOR
from binlogscope.wire.framing import HEADER_LEN, MAX_PAYLOAD, Packet
from binlogscope.wire.node import Node
from binlogscope.wire.packet import DecodedPayload, packet_tree
from binlogscope.wire.reader import ByteReader

#: the two usual semi-sync headers (immutable, shared by every event that carries them)
_SEMI_HEADERS = (replication.SemiSyncHeader(0), replication.SemiSyncHeader(1))
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_U32 = struct.Struct("<I")
#: the shortest event :func:`decode_plain` takes: a header and a checksum's four bytes
_WHOLE = EVENT_HEADER_LEN + 4


class StreamLines(Protocol):
    """What a driver gives :class:`PacketDecoder` (``lines``) for the native kernel to write
    the ``--json`` lines of the stream's event packets (``drivers/capture/lines.py``): the
    writer ``line`` (``render/line_layout.py`` ``packet_lines``: called with the bytes, the
    packet's index and the offset of the bytes' first byte, it writes the packet's line and
    returns (type code, log_pos, gtid, flags2, query), or None: the Python path's packet).
    The state stays here; the writer is told it: :meth:`sync` before each run of packets
    (False: none of them by the kernel), :meth:`seen` after every packet the Python path
    decoded, :meth:`where` for the packet at ``at`` once ``at >= until`` (the values the
    driver knows of it: its capture frame and time)."""

    line: Any
    until: int
    #: list each written packet's event in its :class:`LinesWritten` (``events``)
    keep: bool

    def sync(self, state: ConnState, coords: CoordTracker) -> bool: ...

    def seen(self, ev: DecodedEvent, state: ConnState, coords: CoordTracker) -> None: ...

    def where(self, at: int) -> None: ...


class CoordLines:
    """What the drivers' :class:`StreamLines` share (``drivers/capture/lines.py``,
    ``drivers/live/lines.py``): :meth:`seen` tells the writer's context each event the Python
    path decoded, and :meth:`_coords` tells the writer the session's coordinates - the open
    transaction's GTID, where the file's next event starts, the file's name as JSON text
    (``_texts[2]``, set again only when the file changes)."""

    line: Any
    context: Any
    _texts: list[bytes]
    _file: Any

    def seen(self, ev: DecodedEvent, state: ConnState, coords: CoordTracker) -> None:
        self.context.seen(ev, state.ctx)
        self._coords(coords)

    def _coords(self, coords: CoordTracker) -> None:
        line = self.line
        line.gtid = coords.open_gtid
        end = coords.end
        line.at = -1 if end is None else end
        if coords.file is not self._file:
            self._file = coords.file
            self._texts[2] = self.context.text(coords.file)
            line.texts = tuple(self._texts)


class PacketDecoder:
    """The per-packet state of a connection - the sequence-id counter (``seq``: None while
    it is not known, after a join or a gap), whether the last packet was a semi-sync ACK,
    the time the bytes arrived (``now``) - and what turns a packet into session events,
    appended to ``out``."""

    def __init__(self, state: ConnState, coords: CoordTracker, out: deque[SessionEvent],
                 seq: int | None) -> None:
        self.state = state
        self.coords = coords
        self.out = out
        self.seq = seq
        #: the last packet was a semi-sync ACK (MariaDB restarts the ids after one)
        self.after_ack = False
        #: ``wire_time`` of the packets being decoded (None: the driver sets it)
        self.now: float | None = None
        #: after a sequence mismatch: the id the peer's next packet has if only the
        #: mismatched packet's id was wrong (then not a second item)
        self._alt: dict[Peer, int] = {}
        #: the event decoder's reader of the no-tree path, reset for every event
        self._reader = ByteReader(b"", record=False)
        #: the native kernel's writer of the event packets' --json lines (a driver's; None:
        #: every packet is a :class:`PacketDecoded`)
        self.lines: StreamLines | None = None

    def check_seq(self, peer: Peer, pkt: Packet, expected: int | None) -> None:
        """A :class:`SequenceMismatch` item for the first fragment of ``pkt`` whose id is
        not the one expected (the client libraries stop there: MariaDB's net_serv.cc
        "Packets out of order", ER_NET_PACKETS_OUT_OF_ORDER 1156); the counter then follows
        the id received. One wrong id is one item: the packet after it may continue either
        the wrong id or the counter as it was (a peer that mangled one id and went on)."""
        if expected is None:
            self._alt.pop(peer, None)
            return
        n = len(pkt.fragments)
        alt = self._alt.pop(peer, None)
        if alt is not None and pkt.sequence_id == alt and expected != alt:
            expected = alt
        for i, frag in enumerate(pkt.fragments):
            want = (expected + i) & 0xFF
            if frag.sequence_id != want:
                self.out.append(SequenceMismatch(peer, frag.offset, want, frag.sequence_id))
                self._alt[peer] = (expected + n) & 0xFF
                break

    def check_one(self, peer: Peer, offset: int, got: int, expected: int | None) -> None:
        """:meth:`check_seq` of a one-fragment packet (the stream's fast path)."""
        if expected is None:
            self._alt.pop(peer, None)
            return
        alt = self._alt.pop(peer, None)
        if got in (expected, alt):
            return
        self.out.append(SequenceMismatch(peer, offset, expected, got))
        self._alt[peer] = (expected + 1) & 0xFF

    def packet(self, peer: Peer, pkt: Packet) -> None:
        """One packet by the general path (trees when ``record``): sequence ids, then the
        reader of the phase and direction."""
        payload = pkt.payload
        st = self.state
        phase = st.phase
        ack = (peer == Peer.CLIENT and phase == Phase.BINLOG_STREAM
               and replication.is_semi_sync_ack(payload))
        if phase == Phase.CONNECT and not greeting_plausible(peer, payload):
            st.set_phase(Phase.COMMAND, "no server greeting: joined mid-connection?")
            self.seq = None
            st.response_seen = True
            phase = st.phase
        is_command = (peer == Peer.CLIENT and not ack and not st.auth_data_next
                      and phase in (Phase.COMMAND, Phase.BINLOG_STREAM, Phase.CLOSED))
        if peer == Peer.CLIENT:
            st.auth_data_next = False
        if ack or (is_command and (self.seq is not None or pkt.sequence_id == 0)):
            expected: int | None = 0
        else:
            expected = self.seq  # None right after joining mid-way: learn it
            if (peer == Peer.SERVER and self.after_ack and phase == Phase.BINLOG_STREAM
                    and pkt.sequence_id == 1):
                # MariaDB reads the ACK on the dump thread's own NET, which resets its packet
                # counter: the next event goes out with sequence id 1 (MySQL carries on)
                expected = 1
        if peer == Peer.SERVER or ack:
            self.after_ack = ack
        self.check_seq(peer, pkt, expected)
        if not ack:
            self.seq = (pkt.last_sequence_id + 1) & 0xFF
        if peer == Peer.CLIENT:
            if ack:
                d = st.decode(pkt, "semi_sync_ack")
            elif is_command:
                d = readers.client_command(st, pkt)
            elif phase != Phase.AUTH:  # auth data during COM_CHANGE_USER
                d = st.decode(pkt, "auth_switch_response")
            else:
                d = readers.client_connection_phase(st, pkt)
        else:
            d = readers.server_packet(st, pkt)
        self._finish(peer, pkt, d, phase)

    def stream_event(self, offset: int, seq: int, payload: bytes, pkt: Packet | None) -> bool:
        """An event packet of the stream without a tree (header at ``offset``, sequence id
        ``seq``; ``pkt`` for a multi-fragment one): the event decoder straight on the payload.
        False, with no state changed: the general path takes it (semi-sync header to detect
        or missing, no FORMAT_DESCRIPTION seen yet)."""
        st = self.state
        semi = st.semi_sync
        off = 1
        header: replication.SemiSyncHeader | None = None
        if semi is None:
            return False  # detection mode (captures): the general path decides
        if semi:
            if len(payload) < 3 or payload[1] != SEMI_SYNC_INDICATOR:
                return False  # the general path reports the missing magic
            flag = payload[2]
            header = _SEMI_HEADERS[flag] if flag < 2 else replication.SemiSyncHeader(flag)
            off = 3
        ctx = st.ctx
        if not ctx.fde_seen:
            return False
        expected = self.seq
        if self.after_ack and seq == 1:
            expected = 1
        self.after_ack = False
        if pkt is None:
            self.check_one(Peer.SERVER, offset, seq, expected)
            self.seq = (seq + 1) & 0xFF
            wire_length = len(payload) + HEADER_LEN
        else:
            self.check_seq(Peer.SERVER, pkt, expected)
            self.seq = (pkt.last_sequence_id + 1) & 0xFF
            wire_length = pkt.wire_length
        ev = decode_event(payload, ctx, start=off, base=offset + HEADER_LEN, record=False,
                          reader=self._reader)
        self.coords.stamp(ev)
        unknown = self.context(ev)
        error = ev.error
        h = ev.header
        if h is not None and h.type_code == _FDE:
            st.env_now = None  # a new FORMAT_DESCRIPTION: a new decode environment
        self.out.append(PacketDecoded(
            Peer.SERVER, offset, seq, len(payload), "binlog_event",
            replication.BinlogPacket(ev, header, None), None, Phase.BINLOG_STREAM, header, ev,
            error, wire_length, payload, self.now, st.env_now or st.env))
        if error is not None and not unknown:
            self.out.append(DecodeError(Peer.SERVER, offset, error, None))
        if self.coords.disorder is not None:  # (delivered, and reported: sent twice/swapped)
            self.out.append(DecodeError(Peer.SERVER, offset, self.coords.disorder, None))
        return True

    def stream_run(self, data: bytes, i: int, end: int, offset: int, limit: int) -> int:
        """:meth:`stream_event` of the server's event packets one after the other from
        ``data[i]`` (``data[0]`` at ``offset``; ``limit``: the largest payload), in one call:
        the same steps and events, without a call per packet. Returns the index of the first
        packet not taken - incomplete, over ``limit``, continued over several fragments, not an
        event (an EOF, an ERR), without its semi-sync header, or before any FORMAT_DESCRIPTION:
        the session's packet loop takes it.

        With ``lines``, each packet whose sequence id is the one expected is offered to the
        kernel's line writer first: what it writes becomes :class:`LinesWritten` events in
        the packets' place, the coordinates and sequence id moved on as for the packet it
        replaces; what it declines goes on below as always."""
        st = self.state
        semi = st.semi_sync
        ctx = st.ctx
        if semi is None or not ctx.fde_seen:  # (once seen, the context keeps it)
            return i
        coords = self.coords
        lines = self.lines
        if lines is not None and not lines.sync(st, coords):
            lines = None
        line: Any = None if lines is None else lines.line
        written = 0  # packets of the kernel's lines not handed over yet, from ``first``
        first = 0
        keep = lines is not None and lines.keep
        kept: list[tuple[int, int, int, str | None]] | None = [] if keep else None
        stamp = coords.stamp
        append = self.out.append
        reader = self._reader
        alt = self._alt  # (a mismatch's alternative: check_one decides while it is set)
        now = self.now
        server = Peer.SERVER
        phase = Phase.BINLOG_STREAM
        off = 3 if semi else 1
        header: replication.SemiSyncHeader | None = None
        size_at = _U32.unpack_from
        env = st.env_now or st.env
        while i + HEADER_LEN <= end:
            n = data[i] | data[i + 1] << 8 | data[i + 2] << 16
            j = i + HEADER_LEN + n
            if j > end or n > limit or n >= MAX_PAYLOAD or not n or data[i + HEADER_LEN]:
                break
            if semi:
                if n < 3 or data[i + 5] != SEMI_SYNC_INDICATOR:
                    break
                flag = data[i + 6]
                header = _SEMI_HEADERS[flag] if flag < 2 else replication.SemiSyncHeader(flag)
            seq = data[i + 3]
            expected = self.seq
            if self.after_ack:
                if seq == 1:
                    expected = 1
                self.after_ack = False
            at = offset + i
            if lines is not None and expected == seq and not alt:
                if at >= lines.until:
                    lines.where(at)
                got = line(data, i, offset)
                if got is not None:  # (written: the state moves as for the packet)
                    if keep:
                        kept.append((got[0], line.at, got[1], got[2]))  # type: ignore[union-attr]
                    self.seq = (seq + 1) & 0xFF
                    coords.written(got[0], got[2], got[3], got[1])
                    line.gtid = coords.open_gtid
                    line.at = got[1]
                    if not written:
                        first = at
                    written += 1
                    i = j
                    continue
            if written:  # (the kernel's lines first, in their place)
                append(LinesWritten(server, first, at, written, line.take(), now, kept))
                written = 0
                kept = [] if keep else None
            if expected != seq or alt:
                self.check_one(server, at, seq, expected)
            self.seq = (seq + 1) & 0xFF
            payload = data[i + HEADER_LEN : j]
            avail = n - off
            if avail >= _WHOLE and _WHOLE <= size_at(payload, off + 9)[0] <= avail:
                ev = decode_plain(payload, ctx, off, at + HEADER_LEN, reader)  # (the usual)
            else:  # (too short, or its size field says more than the packet holds: damage)
                ev = decode_event(payload, ctx, start=off, base=at + HEADER_LEN, record=False,
                                  reader=reader)
            stamp(ev)
            error = ev.error
            unknown = False
            if error is not None:
                unknown = self.context(ev)
                error = ev.error
            h = ev.header
            if h is not None and h.type_code == _FDE:
                st.env_now = None  # a new FORMAT_DESCRIPTION: a new decode environment
                env = st.env
            append(PacketDecoded(
                server, at, seq, n, "binlog_event", replication.BinlogPacket(ev, header, None),
                None, phase, header, ev, error, j - i, payload, now, env))
            if error is not None and not unknown:
                append(DecodeError(server, at, error, None))
            if coords.disorder is not None:  # (delivered, and reported: sent twice/swapped)
                append(DecodeError(server, at, coords.disorder, None))
            if lines is not None:
                lines.seen(ev, st, coords)
            i = j
        if written:
            append(LinesWritten(server, first, offset + i, written, line.take(), now, kept))
        return i

    def context(self, ev: DecodedEvent) -> bool:
        """Whether the event lacks context this stream never had: a row event whose
        transaction began before the stream (no GTID/BEGIN seen for it), without its
        TABLE_MAP; its error then says "unknown context" (an item, no DecodeError: not
        damage)."""
        error = ev.error
        if error is not None and NO_TABLE_MAP in error and not self.coords.in_transaction:
            ev.error = unknown_context(error)
            return True
        return False

    def _finish(self, peer: Peer, pkt: Packet, d: DecodedPayload, phase: Phase) -> None:
        node: Node | None = None
        semi: replication.SemiSyncHeader | None = None
        bev = None
        error = d.error
        unknown = False
        if isinstance(d.value, replication.BinlogPacket):
            semi = d.value.semi_sync
            bev = d.value.event
            if peer is Peer.SERVER:
                self.coords.stamp(bev)
                unknown = self.context(bev)
            if bev.header is not None and bev.header.type_code == _FDE:
                self.state.env_now = None
            error = error or d.value.error or bev.error
        elif (type(d.value) is replication.SemiSyncAck and self.coords.file is None
              and d.value.binlog_filename):
            # joined mid-stream: the replica's ACK names the file the stream is in
            self.coords.file = d.value.binlog_filename
        if self.state.record:
            node = packet_tree(pkt, d, error)
        self.out.append(PacketDecoded(peer, pkt.offset, pkt.sequence_id, len(pkt.payload),
                                       d.kind, d.value, node, phase, semi, bev, error,
                                       pkt.wire_length, pkt.payload, self.now, self.state.env))
        if error is not None and not (unknown and bev is not None and error == bev.error):
            at = d.error_offset if d.error_offset is not None else pkt.offset
            self.out.append(DecodeError(peer, at, error, node))
        if bev is not None and peer is Peer.SERVER and self.coords.disorder is not None:
            self.out.append(DecodeError(peer, pkt.offset, self.coords.disorder, None))


__all__ = ["CoordLines", "PacketDecoder", "StreamLines"]
