"""TRANSACTION_PAYLOAD_EVENT (40): a whole transaction, compressed, inside one event (MySQL 8.0.20+,
``binlog_transaction_compression=ON``).

Layout: a type-length-value header (``compression_type``, ``payload_size``,
``uncompressed_size``, then the end mark; see :mod:`_tlv`) followed by ``payload_size`` bytes of
payload: the transaction's events (GTID excluded) back to back, each with its 19-byte header and
*no* checksum, compressed with zstd (type 0) or stored as is (type 255 NONE).

Design of the tree (leaves must tile the *outer* event, and the inner events live in another
coordinate space):

* the compressed bytes are ONE leaf, ``payload``, in the outer tree;
* its ``value`` is the list of inner :class:`~binlogscope.wire.binlog.decode.DecodedEvent`
  (each with its own ``node`` tree) and its ``display`` summarises them;
* the typed value :class:`TransactionPayloadEvent` exposes the same list as ``events``.

Inner node offsets are relative to the **decompressed** payload (byte 0 = first byte of the
first inner event), not to the file: a viewer shows them against the decompressed buffer
(``TransactionPayloadEvent.uncompressed``). Inner events are decoded with the same
:class:`DecodeContext` as the outer stream (checksums switched off while they are read), so a
TABLE_MAP inside the payload feeds the row events after it.
"""

from __future__ import annotations

from typing import Any

from binlogscope.wire.binlog._tlv import read_tlv
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decoded import COMPRESSION_NAMES as COMPRESSION_NAMES
from binlogscope.wire.binlog.decoded import COMPRESSION_NONE as COMPRESSION_NONE
from binlogscope.wire.binlog.decoded import COMPRESSION_ZSTD as COMPRESSION_ZSTD
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.decoded import TransactionPayloadEvent as TransactionPayloadEvent
from binlogscope.wire.binlog.header import HEADER_LEN, EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import ChecksumAlg, EventType
from binlogscope.wire.reader import ByteReader, DecodeError

#: refuse to inflate a payload beyond this (a corrupt size must not exhaust memory)
MAX_UNCOMPRESSED = 1 << 30

_FIELDS = {
    1: ("payload_size", "int", "size in bytes of the (compressed) payload after the header"),
    2: ("compression_type", "int", "0 ZSTD, 255 NONE"),
    3: ("uncompressed_size", "int", "size of the payload once decompressed"),
}


def _decompress(data: bytes, ctype: int, usize: int) -> bytes:
    if ctype == COMPRESSION_NONE:
        return data
    if ctype != COMPRESSION_ZSTD:
        raise ValueError(f"compression_type {ctype} is not ZSTD (0) or NONE (255)")
    import zstandard

    limit = min(usize, MAX_UNCOMPRESSED) if usize else MAX_UNCOMPRESSED
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    parts: list[bytes] = []
    total = 0
    while True:  # read in chunks: a corrupt size must not make us allocate it up front
        chunk: bytes = reader.read(1 << 16)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise ValueError(f"payload inflates beyond uncompressed_size {usize}")
        parts.append(chunk)
    return b"".join(parts)


def decode_inner_events(buf: bytes, ctx: DecodeContext, *, record: bool) -> list[DecodedEvent]:
    """Decode the back-to-back, checksum-less events of a decompressed payload."""
    from binlogscope.wire.binlog.decode import decode_event  # lazy: decode imports us

    saved = (ctx.checksum_alg, ctx.checksum_source)
    ctx.checksum_alg = ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF
    events: list[DecodedEvent] = []
    try:
        pos = 0
        while pos < len(buf):
            ev = decode_event(buf, ctx, start=pos, base=0, record=record)
            events.append(ev)
            if ev.size <= 0 or (ev.header is not None and ev.header.event_size < HEADER_LEN):
                break
            pos += ev.size
    finally:
        ctx.checksum_alg, ctx.checksum_source = saved
    return events


@decodes(EventType.TRANSACTION_PAYLOAD_EVENT,
         doc="TRANSACTION_PAYLOAD: a whole transaction's events, zstd-compressed in one event "
         "(binlog_transaction_compression=ON)")
def decode_transaction_payload(
    r: ByteReader, ctx: DecodeContext, h: EventHeader
) -> TransactionPayloadEvent:
    r.begin("payload_header", doc="type-length-value fields describing the payload")
    fields, _ = read_tlv(r, _FIELDS, end_mark_doc="end of the header: the payload follows")
    r.end_group()
    size = fields.get("payload_size")
    ctype = fields.get("compression_type", COMPRESSION_ZSTD)
    usize = fields.get("uncompressed_size", 0)
    if not isinstance(ctype, int) or not isinstance(usize, int):
        raise DecodeError(r.offset, "payload header fields are not integers")
    if not isinstance(size, int):
        size = r.remaining
    if size > r.remaining:
        raise DecodeError(r.offset, f"payload_size {size} but only {r.remaining} bytes remain")
    p = r.pos
    data = r.take(size, "payload")
    try:
        plain = _decompress(data, ctype, usize)
    except Exception as exc:
        r.pos = p
        raise DecodeError(r.base + p, f"cannot decompress the payload: {exc}") from exc
    if usize and len(plain) != usize:
        r.pos = p
        raise DecodeError(r.base + p, f"payload inflated to {len(plain)} bytes, header says "
                          f"{usize}")
    events = decode_inner_events(plain, ctx, record=r.record)
    if r.record:
        names = ", ".join(e.type_name for e in events)
        bad = sum(1 for e in events if e.error)
        r.leaf("payload", p, events, wire=f"string<{size}>",
               doc="the compressed transaction; its value is the list of inner events, whose "
               "node offsets are relative to the decompressed payload",
               display=f"{COMPRESSION_NAMES.get(ctype, ctype)} {size} -> {len(plain)} bytes, "
               f"{len(events)} events: {names}" + (f" ({bad} with errors)" if bad else ""))
    return TransactionPayloadEvent(ctype, size, usize, events, plain)


def inner_nodes(ev: TransactionPayloadEvent) -> list[Any]:
    """The inner events' Nodes (None entries dropped), for viewers."""
    return [e.node for e in ev.events if e.node is not None]
