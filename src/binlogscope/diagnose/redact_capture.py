"""``binlogscope redact CAPTURE --capture``: a shareable reproducer from a capture (pcap/pcapng)
of a replication session - the binlog events its dump carried, scrubbed as ``redact`` scrubs
binlog files (:func:`.redact.redact_event`: row values, statements and names; types, lengths,
metadata, headers and ``log_pos`` kept, CRC32 recomputed), written back as the binlog files
they came from (a file per ROTATE), plus the mock-master scenario that serves them.

The stream's own events only: the dump thread's made-up ones (the fake ROTATE, heartbeats) are
in no file and are left out. A dump that began at position 4 gives each file as the server had
it (every offset equals the source's); one that began later gives the FORMAT_DESCRIPTION and
the events from there (their ``log_pos`` as the server wrote them, their offsets in the bundle's
file not: said in :attr:`CaptureBundle.partial`); so does a stream the server left events out
of (MariaDB sends ANNOTATE_ROWS only to replicas that ask for them). Secrets of the login
never reach the bundle (only binlog events are written).

A session with the compressed protocol (zlib or zstd frames, CLIENT_COMPRESS): the capture
reader inflates the frames, the events are scrubbed as any others, and the bundle's
``capture.pcapng`` carries the scrubbed packets in frames of the same algorithm again (one
packet per frame, compressed sequence ids counted per direction from the dump request on), so
a reader meets the compression it met in the original; nothing of the original frames' bytes
is copied. A TLS session is not decrypted here: its events are not in the capture's
cleartext, and the command refuses it (no binlog event of a dump).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.diagnose.redact import Bundle, RedactError, Redactor, redact_event, write_scenario
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.drivers.pcapng import CLIENT_IP, SERVER_IP, PcapNgWriter, TcpConversation
from binlogscope.session.events import CompressedFrame, PacketDecoded, Peer
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.header import BINLOG_MAGIC, is_artificial
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.types import is_heartbeat
from binlogscope.wire.commands import ComQuery, encode_com_query
from binlogscope.wire.compressed import encode_frames
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.handshake import (
    HandshakeResponse41,
    HandshakeV10,
    encode_handshake_response41,
    encode_handshake_v10,
)
from binlogscope.wire.responses import OkPacket, encode_ok

#: the made-up login's scramble (the original one is a secret's input: never copied)
_SCRAMBLE = b"redacted-scramble-00"
#: setup queries of a replica the made-up login repeats: how the stream is framed (semi-sync
#: headers), checksums, heartbeats, MariaDB's capability - values that are no one's data
_REPLICA_SETUP = re.compile(
    r"\s*SET\s+@(?:rpl_semi_sync_(?:slave|replica)|master_binlog_checksum|"
    r"source_binlog_checksum|master_heartbeat_period|source_heartbeat_period|"
    r"mariadb_slave_capability)\s*=\s*[\w@.]+\s*$", re.I)
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_ROTATE = int(E.ROTATE_EVENT)


@dataclass
class CaptureBundle(Bundle):
    #: ``capture.pcapng``: the dump itself, scrubbed (see :func:`redact_capture`)
    capture: Path | None = None
    #: the compressed protocol's algorithm of the session ("zlib"/"zstd"; None: plain)
    compression: str | None = None
    #: files whose events are not all in the stream (the dump began inside the file, or the
    #: server left events out for this client: MariaDB's ANNOTATE_ROWS to a replica that did
    #: not ask for them): their events' offsets differ from their log_pos
    partial: list[str] = field(default_factory=list)


def redact_capture(path: Path, out: Path, *, ports: set[int] | None = None,
                   flow: int | None = None, redactor: Redactor | None = None,
                   until: tuple[str, int] | None = None) -> CaptureBundle:
    """Scrub the binlog events of ``path``'s dump (the first flow that carries one, or flow
    ``flow``) into ``out/binlog/`` and write ``out/scenario.toml``. ``until`` (file, position):
    end the slice with the event of that file whose ``log_pos`` is at or after the position
    (the failing event an error names).

    ``out/capture.pcapng`` is the dump as it crossed the wire, scrubbed: from the client's dump
    request on, each packet with its sequence id, semi-sync header, length and time, the
    events' bytes the bundle's (the made-up ones - fake ROTATE, heartbeats - as they were),
    the client's ACKs; the login and setup are left out (the connection starts mid-way, as a
    capture joined late: readers resynchronise on it), addresses replaced by 10.0.0.x."""
    r = redactor or Redactor()
    bdir = out / "binlog"
    bdir.mkdir(parents=True, exist_ok=True)
    bundle = CaptureBundle(out, [])
    ctx = DecodeContext()
    version = ""
    chosen: int | None = flow
    name: str | None = None
    buf = bytearray()
    bundle.capture = out / "capture.pcapng"
    wire = PcapNgWriter(bundle.capture)
    tcp: _Framed | None = None
    algorithms: dict[int, str] = {}  # flow id -> its compressed protocol's algorithm
    logins: dict[int, list[Any]] = {}  # flow id -> [its greeting, the client's response]
    try:
        for item in read_capture(str(path), ports):
            ev = item.event
            if isinstance(ev, CompressedFrame):
                algorithms.setdefault(item.flow.id, ev.frame.algorithm)
                continue
            if not isinstance(ev, PacketDecoded):
                continue
            if ev.kind in ("handshake_v10", "handshake_response41") and ev.value is not None:
                logins.setdefault(item.flow.id, []).append(ev.value)
                continue
            if ev.kind == "com_query" and isinstance(ev.value, ComQuery) \
                    and _REPLICA_SETUP.match(ev.value.query) and tcp is None:
                logins.setdefault(item.flow.id, []).append(ev.value.query)
                continue
            if ev.binlog_event is None:
                if tcp is not None and item.flow.id == chosen and ev.direction is Peer.CLIENT \
                        and ev.kind == "semi_sync_ack":
                    tcp.data(Peer.CLIENT, encode_packet(ev.payload or b"", ev.seq or 0),
                             item.time or 0.0)
                elif ev.direction is Peer.CLIENT and ev.kind in (
                        "com_binlog_dump", "com_binlog_dump_gtid") and (
                        chosen is None or item.flow.id == chosen) and tcp is None:
                    chosen = item.flow.id
                    port = int(item.flow.server.rsplit(":", 1)[1])
                    bundle.compression = algorithms.get(chosen)
                    tcp = _Framed(TcpConversation(wire, (CLIENT_IP, 50000), (SERVER_IP, port)),
                                  bundle.compression)
                    if bundle.compression is not None:  # (a reader must see it negotiated)
                        tcp.login(logins.get(chosen, []), item.time or 0.0)
                    tcp.data(Peer.CLIENT, encode_packet(ev.payload or b"", ev.seq or 0),
                             item.time or 0.0)
                continue
            if chosen is None:
                chosen = item.flow.id
            if item.flow.id != chosen:
                continue
            src = ev.binlog_event
            h = src.header
            if h is None or src.raw is None:
                raise RedactError(f"frame {item.frame}: a damaged event ({src.error}); the "
                                  "bundle is not written")
            prefix = (ev.payload or b"")[: len(ev.payload or b"") - len(src.raw)]
            if is_heartbeat(h.type_code) or is_artificial(h):  # (as they were: no data)
                _wire(tcp, ev, prefix + src.raw, item.time)
            if is_heartbeat(h.type_code):
                continue
            if h.type_code == _ROTATE and is_artificial(h):
                # (the session's reading: it knows the checksum before the FDE, from the
                # replica's @master_binlog_checksum)
                nxt = getattr(src.body, "next_log_name", None)
                if nxt and nxt != name:
                    _flush(bundle, bdir, name, buf)
                    name, buf = str(nxt), bytearray(BINLOG_MAGIC)
                continue
            if name is None:
                name, buf = src.binlog_file or "binlog.000001", bytearray(BINLOG_MAGIC)
            dec = decode_event(src.raw, ctx, base=len(buf), record=True)
            if h.type_code == _FDE:
                body = dec.body
                version = version or (body.server_version
                                      if isinstance(body, FormatDescriptionEvent) else "")
                if len(buf) > 4:  # (a dump's FDE of a file already begun: not twice)
                    continue
            elif h.log_pos and h.log_pos - h.event_size != len(buf) \
                    and name not in bundle.partial:
                bundle.partial.append(name)  # (events of the file are not in the stream)
            scrubbed = redact_event(r, dec, ctx)
            buf += scrubbed
            bundle.events += 1
            _wire(tcp, ev, prefix + scrubbed, item.time)
            if until is not None and name == until[0] and h.log_pos >= until[1]:
                break
            if h.type_code == _ROTATE:  # a real ROTATE ends the file
                _flush(bundle, bdir, name, buf)
                name = getattr(src.body, "next_log_name", None)
                buf = bytearray(BINLOG_MAGIC)
        _flush(bundle, bdir, name, buf)
    except BaseException:
        wire.close()
        for f in [*bundle.files, bundle.capture]:
            f.unlink(missing_ok=True)  # nothing half-scrubbed is left behind
        raise
    wire.close()
    if not bundle.files:
        bundle.capture.unlink(missing_ok=True)  # (nothing of a capture without a dump)
        raise RedactError(f"{path}: no binlog event of a dump in the capture (a TLS session "
                          "is not decrypted here; a capture without the dump has nothing to "
                          "redact)")
    bundle.counts = dict(r.counts)
    write_scenario(bundle, version)
    return bundle


class _Framed:
    """The scrubbed capture's conversation: packets as they are, or each in a compressed
    frame of the session's algorithm (its own compressed sequence ids per direction)."""

    def __init__(self, tcp: TcpConversation, algorithm: str | None) -> None:
        self.tcp = tcp
        self.algorithm = algorithm
        self._seq = 0  # the compressed sequence id: 0 at each client packet (a command)

    def login(self, seen: list[Any], when: float) -> None:
        """A made-up login in front of the dump, so that a reader knows the connection from
        its start (and the compression it negotiated): the original greeting's version and
        capabilities with a constant scramble, a response from user ``redacted`` with no
        password proof, no database and no attributes, and an OK. Nothing of the original
        login's secrets. Without the original greeting and response (a capture joined late),
        none: the bundle's capture then starts at the dump request, as a capture joined late."""
        greet = next((v for v in seen if isinstance(v, HandshakeV10)), None)
        resp = next((v for v in seen if isinstance(v, HandshakeResponse41)), None)
        if greet is None or resp is None:
            return
        drop = (CapabilityFlag.CLIENT_SSL | CapabilityFlag.CLIENT_CONNECT_ATTRS
                | CapabilityFlag.CLIENT_CONNECT_WITH_DB)
        g = HandshakeV10(greet.server_version, 1, _SCRAMBLE, greet.capability_flags & ~drop,
                         greet.character_set, greet.status_flags, "mysql_native_password",
                         greet.mariadb_capabilities)
        caps = resp.capability_flags & ~drop
        r = HandshakeResponse41(caps, "redacted", b"", None, "mysql_native_password", None,
                                resp.max_packet_size, resp.character_set,
                                resp.mariadb_capabilities, resp.zstd_compression_level)
        self.tcp.handshake(when)  # (SYN, SYN-ACK, ACK: the connection's start is there)
        self.tcp.data(Peer.SERVER, encode_packet(encode_handshake_v10(g), 0), when)
        self.tcp.data(Peer.CLIENT, encode_packet(encode_handshake_response41(r), 1), when)
        self.tcp.data(Peer.SERVER, encode_packet(encode_ok(OkPacket(), caps), 2), when)
        for q in seen:  # the replica's session variables a reader needs (semi-sync...)
            if isinstance(q, str):
                self.data(Peer.CLIENT, encode_packet(encode_com_query(ComQuery(q), caps), 0), when)
                self.data(Peer.SERVER, encode_packet(encode_ok(OkPacket(), caps), 1), when)

    def data(self, side: Peer, packet: bytes, when: float) -> None:
        if self.algorithm is not None:
            if side is Peer.CLIENT:
                self._seq = 0
            packet, self._seq = encode_frames(packet, self._seq, self.algorithm)
        self.tcp.data(side, packet, when)


def _wire(tcp: _Framed | None, ev: PacketDecoded, payload: bytes,
          when: float | None) -> None:
    """A server packet of the dump into the scrubbed capture (its sequence id kept)."""
    if tcp is not None:
        tcp.data(Peer.SERVER, encode_packet(payload, ev.seq or 0), when or 0.0)


def _flush(bundle: CaptureBundle, bdir: Path, name: str | None, buf: bytearray) -> None:
    if name is None or len(buf) <= 4:
        return
    target = bdir / Path(name).name
    target.write_bytes(bytes(buf))
    if target not in bundle.files:
        bundle.files.append(target)


__all__ = ["CaptureBundle", "redact_capture"]
