"""decode_event: one binlog event (header + body + checksum) from bytes to value and Node.

Pure: takes a buffer and a :class:`DecodeContext`, returns a :class:`DecodedEvent`. Never raises
on bad input: any failure becomes ``DecodedEvent.error`` plus an ``error`` node at the offset
where decoding stopped, with every field before it still present.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
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
from binlogscope.wire.binlog._cfast import fast_event_c
from binlogscope.wire.binlog._rowcode import c_module
from binlogscope.wire.binlog.context import DecodeContext, fde_has_checksum_alg
from binlogscope.wire.binlog.decoded import DecodedEvent as DecodedEvent
from binlogscope.wire.binlog.header import (
    FIELD_DOCS,
    FLAGS_DISPLAY,
    HEADER_DOC,
    HEADER_LEN,
    TYPE_DISPLAY,
    EventHeader,
    decode_header,
    flags_display,
    type_display,
)
from binlogscope.wire.binlog.registry import EVENT_DECODERS, EVENT_DOCS
from binlogscope.wire.binlog.types import ChecksumAlg, EventType, event_type_name
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

_U32 = struct.Struct("<I")
_HEADER = struct.Struct("<IBIIIH")
_FDE = EventType.FORMAT_DESCRIPTION_EVENT
_crc32 = zlib.crc32

_crows = c_module() if fast_event_c is not None else None
_record_header: Any = None
#: DecodedEvent(offset, header, body, node, checksum_ok, stored, computed, error, size, raw)
_make_event: Callable[..., DecodedEvent] = DecodedEvent
_c_crc32: Any = None
if _crows is not None:
    _make_event = _crows.make_event  # the same object, without the dataclass __init__
    _c_crc32 = _crows.crc32
    _crows.configure_header((HEADER_DOC, *FIELD_DOCS), TYPE_DISPLAY, FLAGS_DISPLAY)
    _record_header = _crows.record_header


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
_record_event: Callable[..., DecodedEvent | None] | None = None  # set at the end


def decode_event(
    buf: bytes | bytearray | memoryview,
    ctx: DecodeContext,
    *,
    start: int = 0,
    base: int = 0,
    record: bool = True,
) -> DecodedEvent:
    """Decode the event that starts at ``buf[start]``.

    ``base`` is the absolute offset of ``buf[0]`` in the source, so node offsets are absolute.
    The buffer must hold the whole event (``event_size`` bytes from ``start``); if it does not,
    the result carries a truncation error and ``size`` is what was available.
    """
    avail = len(buf) - start
    if not record and avail >= HEADER_LEN:
        if fast_event_c is not None and type(buf) is bytes:
            ev = fast_event_c(buf, start, base, ctx)
            if ev is not None:
                return ev
        h0 = EventHeader(*_HEADER.unpack_from(buf, start))
        if HEADER_LEN + 4 <= h0.event_size <= avail:
            return decode_event_fast(buf, None, ctx, start, base, h0, None)
    if record and _record_event is not None and type(buf) is bytes:
        ev = _record_event(buf, start, base, ctx)  # the hot event types, tree and all, in C
        if ev is not None:
            return ev
    r = ByteReader(buf, base=base, record=record, start=start)
    abs_off = base + start
    got = None
    if record and _record_header is not None and type(buf) is bytes and not ctx.type_map:
        got = _record_header(buf, start, base)  # the header Nodes built in C
        if got is None and avail >= HEADER_LEN:  # a type or flags not displayed yet
            type_display(buf[start + 4])
            flags_display(buf[start + 17] | buf[start + 18] << 8)
            got = _record_header(buf, start, base)
    try:
        if got is not None:
            r.add_node(got[0])
            r.pos = start + HEADER_LEN
            h = got[1]
        else:
            h = decode_header(r, ctx.type_map)
    except Exception as exc:  # truncated header
        node = r.partial("event", exc, doc="an incomplete event header") if record else None
        return DecodedEvent(abs_off, None, None, node, None, error=_err(exc, r), size=avail,
                            raw=bytes(buf[start:]) if record else None)

    type_name = event_type_name(h.type_code)
    display = type_display(h.type_code)
    doc = EVENT_DOCS.get(h.type_code, "an event type binlogscope has no decoder for")
    size = h.event_size
    if size < HEADER_LEN:
        bad = ValueError(f"event_size {size} is smaller than the 19-byte header")
        node = r.partial("event", bad, doc=doc, display=display) if record else None
        return DecodedEvent(abs_off, h, None, node, None, error=_err(bad, r), size=avail,
                            raw=bytes(buf[start:]) if record else None)
    truncated = size > avail
    end = start + min(size, avail)
    r.end = end

    # ----- where the checksum is
    is_fde = h.type_code == _FDE
    if is_fde and not truncated:
        trailer, alg = _fde_checksum_layout(buf, start, size)
    else:
        alg = ctx.checksum_alg
        trailer = ctx.has_checksum
    body_end = start + size - 4 if trailer and not truncated else start + size
    body_end = min(body_end, end)
    if body_end < r.pos:
        body_end = r.pos

    # ----- the body
    body: Any = None
    error: str | None = None
    decoder = EVENT_DECODERS.get(h.type_code)
    if r.record:
        r.begin("body", doc=_BODY_DOC)
    r.end = body_end
    try:
        if truncated:
            raise ValueError(
                f"event is truncated: event_size says {size} bytes, only {avail} are there"
            )
        if decoder is None:
            r.rest("raw_body", doc="body of an event type binlogscope does not decode")
        else:
            body = decoder(r, ctx, h)
            if r.pos < r.end:
                r.rest("unparsed", doc=_UNPARSED_DOC)
    except Exception as exc:
        error = _err(exc, r)
        if r.record:
            _close_groups_to(r, 2)
            r.add_node(_error_node(r, error))
        r.pos = r.end
    if r.record:
        r.end_group()

    # ----- the checksum
    r.end = end
    checksum_ok: bool | None = None
    stored = computed = None
    if trailer and not truncated:
        stored = _U32.unpack_from(buf, body_end)[0]
        if alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32 and ctx.verify_checksums:
            computed = _event_crc(buf, None, start, body_end, stored, is_fde and h.flags & 0x1)
            checksum_ok = computed == stored
        if r.record:
            if computed is None:
                r.u32("checksum", doc="checksum field; not verified: the algorithm in force is OFF")
            else:
                verdict = "ok" if checksum_ok else f"MISMATCH (computed 0x{computed:08x})"
                source = (-1 if is_fde else -2 if ctx.checksum_source is None
                          else ctx.checksum_source)
                r.u32("checksum", doc=_crc_doc(source),
                      display=f"0x{stored:08x} {verdict}")
        else:
            r.pos = end
        if checksum_ok is False and error is None and computed is not None:
            error = _mismatch(base + body_end, stored, computed)

    node = None
    raw = None
    if record:
        node = r.finish("event", doc=doc, display=display, value=type_name, start=start,
                        error=error)
        raw = bytes(buf[start:end])
    return _make_event(abs_off, h, body, node, checksum_ok, stored, computed, error,
                       min(size, avail), raw)


@functools.lru_cache(maxsize=256)
def _crc_doc(source: int) -> str:
    """Doc of a CRC32 checksum field. ``source``: the offset of the FORMAT_DESCRIPTION that
    set the algorithm; -1 this event is that FORMAT_DESCRIPTION; -2 the stream settings."""
    where = ("this FORMAT_DESCRIPTION" if source == -1 else "the stream settings"
             if source == -2 else f"the FORMAT_DESCRIPTION at offset {source}")
    return f"CRC32 of header+body; algorithm CRC32 from {where}"


def decode_event_fast(
    buf: bytes | bytearray | memoryview,
    view: memoryview | None,
    ctx: DecodeContext,
    start: int,
    base: int,
    h: EventHeader,
    r: ByteReader | None,
) -> DecodedEvent:
    """Decode a complete event (``h`` already unpacked, ``event_size >= 23``) without a tree.

    The stream decoder's hot path: ``view`` (a memoryview of ``buf``, for a copy-free CRC32)
    and ``r`` (a ``record=False`` reader to reuse) may be None.
    """
    size = h.event_size
    code = h.type_code
    if ctx.type_map:
        code = h.type_code = ctx.type_map.get(code, code)
    if code == _FDE:
        trailer, alg = _fde_checksum_layout(buf, start, size)
    else:
        alg = ctx.checksum_alg
        trailer = alg == 1
    body_end = start + size - 4 if trailer else start + size
    if r is None:
        r = ByteReader(buf, base=base, record=False, start=start + HEADER_LEN, end=body_end)
    else:
        r.buf = buf
        r.base = base
        r.pos = start + HEADER_LEN
        r.end = body_end
    body: Any = None
    error: str | None = None
    decoder = EVENT_DECODERS.get(code)
    if decoder is not None:
        try:
            body = decoder(r, ctx, h)
        except Exception as exc:
            error = _err(exc, r)
    if not trailer:
        return DecodedEvent(base + start, h, body, None, None, None, None, error, size)
    stored: int = _U32.unpack_from(buf, body_end)[0]
    computed = None
    checksum_ok = None
    if alg == 1 and ctx.verify_checksums:
        computed = _event_crc(buf, view, start, body_end, stored,
                              code == _FDE and h.flags & 0x1)
        checksum_ok = computed == stored
        if not checksum_ok and error is None:
            error = _mismatch(base + body_end, stored, computed)
    return DecodedEvent(base + start, h, body, None, checksum_ok, stored, computed, error, size)


def _event_crc(buf: bytes | bytearray | memoryview, view: memoryview | None, start: int,
               body_end: int, stored: int, in_use_fde: int | bool) -> int:
    """CRC32 of header + body. A FORMAT_DESCRIPTION of a file still being written has
    LOG_EVENT_BINLOG_IN_USE_F set, but its CRC was computed with that flag clear: when the
    plain CRC does not match, verify with the flag cleared (as the server does)."""
    if view is not None:
        computed: int = _crc32(view[start:body_end])
    elif _c_crc32 is not None and type(buf) is bytes:
        computed = _c_crc32(buf, start, body_end)  # no copy of the event
    else:
        computed = _crc32(buf[start:body_end])
    if computed != stored and in_use_fde:
        patched = bytearray(buf[start:body_end])
        patched[17] &= 0xFE
        computed = _crc32(patched)
    return computed


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


# ----- the C tree builder of the hot events (``_crows.record_event``), with the Python docs
if _crows is not None:
    _codes = (EventType.XID_EVENT, EventType.ANNOTATE_ROWS_EVENT, EventType.GTID_EVENT,
              EventType.TABLE_MAP_EVENT, *(23, 24, 25, 30, 31, 32))
    _crows.configure_record_event(
        {int(c): (event_type_name(c), type_display(c),
                  EVENT_DOCS.get(c, "an event type binlogscope has no decoder for"))
         for c in _codes},
        _BODY_DOC, _crc_doc, control_events.XID_DOC, control_events.ANNOTATE_QUERY_DOC,
        gtid_events.GTID_DOCS,
        tuple(gtid_events._bits(i, gtid_events.MARIADB_FLAGS2) for i in range(256)),
        rows.ROWS_DOCS, rows._flags_text,
        tuple(rows._IMAGE_NAMES[k] for k in (rows.INSERT, rows.UPDATE, rows.DELETE)),
        _UNPARSED_DOC)
    _record_event = _crows.record_event
