"""decode_event: one binlog event (header + body + checksum) from bytes to value and Node.

One decoder for every use: with ``record=True`` each field read becomes a Node of the event's
tree; with ``record=False`` (``--json``, ``--summary``, exports, the live stream) the very same
decoders run over a non-recording :class:`ByteReader`. The event's bytes are copied once into
``DecodedEvent.raw`` and decoded from there, so a rows event can keep them and read its row
values only when asked (see ``rows.py``).

Pure: takes a buffer and a :class:`DecodeContext`, returns a :class:`DecodedEvent`. Never raises
on bad input: any failure becomes ``DecodedEvent.error`` plus an ``error`` node at the offset
where decoding stopped, with every field before it still present.
"""

from __future__ import annotations

import functools
import struct
import zlib
from typing import Any

from binlogscope.wire.binlog import (  # noqa: F401  (imported to fill the registry)
    control_events,
    gtid_events,
    load_events,
    payload_events,
    query_event,
    rows,
    table_map,
)
from binlogscope.wire.binlog.context import DecodeContext, fde_has_checksum_alg
from binlogscope.wire.binlog.decoded import DecodedEvent as DecodedEvent
from binlogscope.wire.binlog.decoded import EventBody
from binlogscope.wire.binlog.header import (
    HEADER,
    HEADER_LEN,
    EventHeader,
    decode_header,
    type_display,
)
from binlogscope.wire.binlog.registry import EVENT_DECODERS, EVENT_DOCS
from binlogscope.wire.binlog.types import (
    ChecksumAlg,
    EventType,
    event_type_name,
    unknown_not_ignorable,
)
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

_U32 = struct.Struct("<I")
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_CRC32 = int(ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32)
_crc32 = zlib.crc32
#: the CRC32 of any bytes followed by their own CRC32 (little-endian): an event whose whole
#: bytes give it has a matching checksum, checked without slicing the trailer off
_CRC32_RESIDUE = 0x2144DF1C


def _fde_checksum_layout(buf: Any, start: int, size: int) -> tuple[bool, int]:
    """For a FORMAT_DESCRIPTION at ``start``: (has alg byte + trailer, alg)."""
    body = start + HEADER_LEN
    if size < HEADER_LEN + 2 + 50:
        return False, ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF
    version = bytes(buf[body + 2 : body + 52]).split(b"\0", 1)[0].decode("ascii", "replace")
    if not fde_has_checksum_alg(version):
        return False, ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF
    return True, buf[start + size - 5]


_UNPARSED_DOC = "bytes after the last field binlogscope knows"
_BODY_DOC = "post-header and payload of the event"


def decode_event(
    buf: bytes | bytearray | memoryview,
    ctx: DecodeContext,
    *,
    start: int = 0,
    base: int = 0,
    record: bool = True,
    reader: ByteReader | None = None,
) -> DecodedEvent:
    """Decode the event that starts at ``buf[start]``.

    ``base`` is the absolute offset of ``buf[0]`` in the source, so node offsets are absolute.
    The buffer must hold the whole event (``event_size`` bytes from ``start``); if it does not,
    the result carries a truncation error and ``size`` is what was available. ``reader``: a
    non-recording :class:`ByteReader` to reuse (a stream decoder's; ignored with ``record``).
    """
    avail = len(buf) - start
    abs_off = base + start
    if avail >= HEADER_LEN:
        fields = HEADER.unpack_from(buf, start)
        size = fields[3]
    else:
        fields = None
        size = 0
    n = size if HEADER_LEN <= size <= avail else avail
    if type(buf) is not bytes:
        raw = bytes(buf[start : start + n])
    elif start == 0 and n == len(buf):
        raw = buf
    else:
        raw = buf[start : start + n]
    if (reader is not None and not record and HEADER_LEN + 4 <= size <= avail
            and fields is not None and fields[1] != _FDE and not ctx.type_map):
        return _decode_plain(raw, abs_off, size, fields, ctx, reader)
    if reader is None or record:
        r = ByteReader(raw, base=abs_off, record=record)
    else:  # the caller's non-recording reader, reset to this event
        r = reader
        r.buf = raw
        r.base = abs_off
        r.pos = 0
        r.end = n
    if record or fields is None:
        try:
            h = decode_header(r, ctx.type_map)
        except Exception as exc:  # truncated header
            node = r.partial("event", exc, doc="an incomplete event header") if record else None
            return DecodedEvent(abs_off, None, None, node, None, error=_err(exc, r),
                                size=avail, raw=raw)
    else:  # the six fields as unpacked (what decode_header reads without Nodes)
        h = EventHeader(*fields)
        if ctx.type_map:
            h.type_code = ctx.type_map.get(h.type_code, h.type_code)
        r.pos = HEADER_LEN

    code = h.type_code
    if size < HEADER_LEN:
        bad = ValueError(f"event_size {size} is smaller than the 19-byte header")
        message = _err(bad, r)  # at the end of the header, with or without a tree
        node = (r.partial("event", bad, doc=_event_doc(code), display=type_display(code))
                if record else None)
        return DecodedEvent(abs_off, h, None, node, None, error=message, size=avail, raw=raw)
    truncated = size > avail

    # ----- where the checksum is
    is_fde = code == _FDE
    if is_fde and not truncated:
        trailer, alg = _fde_checksum_layout(raw, 0, size)
    else:
        alg = ctx.checksum_alg
        trailer = alg == _CRC32
    no_room = trailer and not truncated and size < HEADER_LEN + 4
    if no_room:  # a checksum is in force, but the event has no 4 bytes for it
        trailer = False
    body_end = size - 4 if trailer and not truncated else n
    if body_end < HEADER_LEN:
        body_end = HEADER_LEN

    # ----- the body
    body: EventBody | None = None
    error: str | None = None
    decoder = EVENT_DECODERS.get(code)
    if record:
        r.begin("body", doc=_BODY_DOC)
    r.end = body_end
    try:
        if truncated:
            raise ValueError(
                f"event is truncated: event_size says {size} bytes, only {avail} are there"
            )
        if no_room:
            raise ValueError(f"event_size {size} leaves no room for the 4-byte checksum")
        if decoder is None:
            r.rest("raw_body", doc="body of an event type binlogscope does not decode")
        else:
            body = decoder(r, ctx, h)
            if r.pos < r.end:
                r.rest("unparsed", doc=_UNPARSED_DOC)
    except Exception as exc:
        error = _err(exc, r)
        if record:
            _close_groups_to(r, 2)
            r.add_node(_error_node(r, error))
        r.pos = r.end
    if record:
        r.end_group()

    # ----- the checksum
    checksum_ok: bool | None = None
    stored = computed = None
    if trailer and not truncated:
        stored = _U32.unpack_from(raw, body_end)[0]
        if alg == _CRC32 and ctx.verify_checksums:
            if body_end + 4 == len(raw) and _crc32(raw) == _CRC32_RESIDUE:
                computed = stored  # (the CRC of header+body is the stored one: no slice)
            else:
                # a short event is cheaper to slice than to view; a long one is not copied
                computed = _crc32(raw[:body_end] if body_end <= 4096 else
                                  memoryview(raw)[:body_end])
                if computed != stored and is_fde and h.flags & 0x1:
                    computed = _in_use_crc(raw, body_end)
            checksum_ok = computed == stored
        if record:
            r.end = n
            if computed is None:
                r.u32("checksum", doc="checksum field; not verified: the algorithm in force is OFF")
            else:
                verdict = "ok" if checksum_ok else f"MISMATCH (computed 0x{computed:08x})"
                source = (-1 if is_fde else -2 if ctx.checksum_source is None
                          else ctx.checksum_source)
                r.u32("checksum", doc=_crc_doc(source),
                      display=f"0x{stored:08x} {verdict}")
        if checksum_ok is False and error is None and computed is not None:
            error = _mismatch(abs_off + body_end, stored, computed)
    if decoder is None and error is None:
        # an unknown type a replica may not skip (damage shows first: a bad CRC may be why
        # the type byte is unknown)
        error = unknown_not_ignorable(code, h.flags)

    node = None
    if record:
        node = r.finish("event", doc=_event_doc(code), display=type_display(code),
                        value=event_type_name(code), start=0, error=error)
    return DecodedEvent(abs_off, h, body, node, checksum_ok, stored, computed, error, n, raw)


def decode_plain(buf: bytes, ctx: DecodeContext, start: int, base: int, reader: ByteReader
                 ) -> DecodedEvent:
    """:func:`decode_event` without a tree, with ``reader`` (a stream's hot loop: ``buf`` is
    ``bytes`` and holds the whole event, which is at least 23 bytes long)."""
    fields = HEADER.unpack_from(buf, start)
    size = fields[3]
    if fields[1] == _FDE or ctx.type_map:
        return decode_event(buf, ctx, start=start, base=base, record=False, reader=reader)
    raw = buf if start == 0 and size == len(buf) else buf[start : start + size]
    return _decode_plain(raw, base + start, size, fields, ctx, reader)


def _decode_plain(raw: bytes, abs_off: int, size: int, fields: tuple[int, ...],
                  ctx: DecodeContext, r: ByteReader) -> DecodedEvent:
    """:func:`decode_event`'s common case, the same steps without the branches it cannot
    take: a whole event (the 4 checksum bytes fit), no tree (``r`` the caller's
    non-recording reader), not a FORMAT_DESCRIPTION, no type renumbering."""
    h = EventHeader(*fields)
    code = fields[1]
    r.buf = raw
    r.base = abs_off
    r.pos = HEADER_LEN
    trailer = ctx.checksum_alg == _CRC32
    body_end = size - 4 if trailer else size
    r.end = body_end
    body: EventBody | None = None
    error: str | None = None
    decoder = EVENT_DECODERS.get(code)
    try:
        if decoder is None:
            r.rest("raw_body")
        else:
            body = decoder(r, ctx, h)
            if r.pos < r.end:
                r.rest("unparsed")
    except Exception as exc:
        error = _err(exc, r)
        r.pos = r.end
    checksum_ok: bool | None = None
    stored = computed = None
    if trailer:
        stored = _U32.unpack_from(raw, body_end)[0]
        if ctx.verify_checksums:
            if _crc32(raw) == _CRC32_RESIDUE:
                computed = stored
                checksum_ok = True
            else:
                computed = _crc32(raw[:body_end] if body_end <= 4096 else
                                  memoryview(raw)[:body_end])
                checksum_ok = computed == stored
                if not checksum_ok and error is None:
                    error = _mismatch(abs_off + body_end, stored, computed)
    if decoder is None and error is None:
        error = unknown_not_ignorable(code, h.flags)
    return DecodedEvent(abs_off, h, body, None, checksum_ok, stored, computed, error, size, raw)


@functools.lru_cache(maxsize=256)
def _crc_doc(source: int) -> str:
    """Doc of a CRC32 checksum field. ``source``: the offset of the FORMAT_DESCRIPTION that
    set the algorithm; -1 this event is that FORMAT_DESCRIPTION; -2 the stream settings."""
    where = ("this FORMAT_DESCRIPTION" if source == -1 else "the stream settings"
             if source == -2 else f"the FORMAT_DESCRIPTION at offset {source}")
    return f"CRC32 of header+body; algorithm CRC32 from {where}"


def _in_use_crc(raw: bytes, body_end: int) -> int:
    """A FORMAT_DESCRIPTION of a file still being written has LOG_EVENT_BINLOG_IN_USE_F set,
    but its CRC was computed with that flag clear: the CRC with the flag cleared (as the
    server verifies it)."""
    patched = bytearray(raw[:body_end])
    patched[17] &= 0xFE
    return _crc32(patched)


def _event_doc(code: int) -> str:
    return EVENT_DOCS.get(code, "an event type binlogscope has no decoder for")


def _mismatch(offset: int, stored: int, computed: int) -> str:
    return (f"at offset {offset}: checksum mismatch: stored 0x{stored:08x}, "
            f"computed 0x{computed:08x}")


def _err(exc: BaseException, r: ByteReader) -> str:
    msg = str(exc)
    if msg.startswith("at offset "):
        return msg
    return f"at offset {r.offset}: {msg or type(exc).__name__}"


def _error_node(r: ByteReader, message: str) -> Node:
    n = max(r.end - r.pos, 0)
    return Node("error", r.offset, n, bytes(r.buf[r.pos : r.pos + n]), "", "",
                "bytes that could not be decoded", (), message)


def _close_groups_to(r: ByteReader, depth: int) -> None:
    while len(r._stack) > depth:
        r.end_group()
