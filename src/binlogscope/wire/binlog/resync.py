"""Where a binlog file's events go on after damage: is there a plausible event header here?

The binlog stream decoder (:mod:`.stream`) trusts an event when its CRC32 verifies, or (no
checksums) when it decodes and its ``log_pos`` continues the chain of the events before it.
After an event it cannot trust it asks :func:`candidate` at the event's end (was only the body
damaged?) and, failing that, at each following offset once, in one forward pass: a position
qualifies when

- the type code is one the flavour writes (:func:`known_types`), the size fits between a bare
  header (plus the checksum when checksums are on) and :data:`MAX_EVENT_SIZE`;
- the ``log_pos`` chain agrees: it continues the last trusted event's chain, or equals the
  event's end offset (a v4 file before any damage), or the header right after the candidate
  continues the candidate's own chain (``log_pos`` + its size) - true after inserted or deleted
  bytes, when every offset has moved but the chain has not;
- with checksums on, the candidate's CRC32 verifies (checked last: it costs a pass over the
  event), and the chain test is relaxed to "a header of a known type and size follows".

Each check reads a fixed number of bytes except the CRC, which is computed only for the rare
positions that passed the chain test, so the scan stays linear in the bytes scanned.
"""

from __future__ import annotations

import re
import struct
import zlib

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import HEADER, HEADER_LEN
from binlogscope.wire.binlog.types import MYSQL_GTIDS, EventType, is_mariadb_only

#: largest event accepted (max_allowed_packet's ceiling is 1 GiB)
MAX_EVENT_SIZE = 1 << 30
#: :func:`candidate`'s answers; any other (non-negative) answer means "maybe: the bytes up to
#: this index are needed to tell"
YES, NO = -1, -2
_U32 = struct.Struct("<I")
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_ALL = frozenset(int(t) for t in EventType) - {0}
#: MariaDB never writes MySQL's own types from GTID_LOG_EVENT (33) to 159
_MARIADB = frozenset(t for t in _ALL if t < EventType.GTID_LOG_EVENT or is_mariadb_only(t))
#: MySQL never writes MariaDB's (160 and up)
_MYSQL = frozenset(t for t in _ALL if not is_mariadb_only(t))


def known_types(ctx: DecodeContext) -> frozenset[int]:
    """The event type codes the stream's flavour writes (every known one before an FDE)."""
    v = ctx.server_version
    if not v:
        return _ALL
    return _MARIADB if "mariadb" in v.lower() else _MYSQL


def chain_ok(log_pos: int, size: int, end_offset: int, prev_log_pos: int) -> bool:
    """Does an event's ``log_pos`` fit: artificial (0), nothing to chain to yet, the end offset
    of the event in its file, or the previous event's ``log_pos`` plus this event's size."""
    return (log_pos == 0 or prev_log_pos == 0 or log_pos == end_offset
            or log_pos - size == prev_log_pos)


def candidate(buf: bytes, q: int, *, eof: bool, ctx: DecodeContext, known: frozenset[int],
              crc: bool, chain_from: int, base: int) -> int:
    """:data:`YES` when a plausible event starts at ``buf[q]`` (and is complete in ``buf``),
    :data:`NO` when not; otherwise more bytes are needed to tell (never once ``eof``) and the
    answer is the index up to which ``buf`` must reach.

    ``crc``: checksums are on (the candidate's CRC32 must verify); ``chain_from``: the last
    trusted event's ``log_pos`` (0: none); ``base``: the absolute offset of ``buf[0]``.

    Without checksums the event after the candidate vouches for it: it continues the
    candidate's chain, or the candidate continues the chain before it and the next event
    starts a chain of its own (a FORMAT_DESCRIPTION, an artificial event) or the data ends
    there."""
    end = len(buf)
    if q + HEADER_LEN > end:
        return NO if eof else q + HEADER_LEN
    _, code, _, size, log_pos, flags = HEADER.unpack_from(buf, q)
    if ctx.type_map:
        code = ctx.type_map.get(code, code)
    if code not in known or size < HEADER_LEN + (4 if crc else 0) or size > MAX_EVENT_SIZE:
        return NO
    e: int = q + size
    linked = log_pos != 0 and (log_pos - size == chain_from or log_pos == base + e)
    # ----- the header after it
    at_end = e == end and eof
    next_chained = next_reset = next_fits = False
    if not at_end:
        if e + HEADER_LEN > end:
            if eof:
                return NO
            if not (crc and linked):
                return e + HEADER_LEN
        else:
            _, code2, _, size2, log_pos2, _ = HEADER.unpack_from(buf, e)
            if ctx.type_map:
                code2 = ctx.type_map.get(code2, code2)
            if code2 in known and HEADER_LEN <= size2 <= MAX_EVENT_SIZE:
                next_fits = True
                next_chained = log_pos != 0 and log_pos2 - size2 == log_pos
                next_reset = log_pos2 == 0 or log_pos2 == size2 or code2 == _FDE
    if not crc:
        resets = log_pos == 0 or log_pos == size or code == _FDE
        ok = next_chained or ((linked or resets) and (at_end or next_reset))
        return YES if ok else NO
    if not (linked or at_end or next_fits):  # the cheap tests first: the CRC costs a pass
        return NO
    if e > end:
        return e
    view = memoryview(buf)[q : e - 4]
    stored = _U32.unpack_from(buf, e - 4)[0]
    computed = zlib.crc32(view)
    if computed != stored and code == _FDE and flags & 1:
        patched = bytearray(view)
        patched[17] &= 0xFE  # an FDE's CRC is computed with BINLOG_IN_USE clear
        computed = zlib.crc32(patched)
    return YES if computed == stored else NO


#: the events that start a transaction: MariaDB's GTID, MySQL's GTID, ANONYMOUS_GTID and
#: GTID_TAGGED (``export --jobs`` cuts a file into units at them)
_MARIADB_GTID = int(EventType.GTID_EVENT)
_STARTS_MARIADB = re.compile(re.escape(bytes([_MARIADB_GTID])))
_STARTS_MYSQL = re.compile(b"[" + b"".join(re.escape(bytes([t])) for t in sorted(MYSQL_GTIDS))
                           + b"]")
#: how many events (the transaction start's own included) must chain from a start found
#: without the events before it: with checksums each one's CRC32 verifies as well
CHAIN_CRC, CHAIN_PLAIN = 3, 16


def transaction_start(buf: bytes, base: int, ctx: DecodeContext, *, eof: bool) -> int | None:
    """The absolute offset of the first event in ``buf`` (the file's bytes from ``base`` on)
    that starts a transaction (a GTID event of the file's flavour), found without the events
    before it (where ``export --jobs`` may cut a file); None when there is none that can be
    trusted in ``buf`` (``eof``: ``buf`` reaches the file's end).

    A position qualifies when the event there and the ones after it chain like the events of
    a binlog *file*: a type the flavour writes, a size that fits, ``log_pos`` the event's own
    end offset (0 too with checksums: MariaDB 11.4 inside a transaction), and with checksums
    a verified CRC32 - :data:`CHAIN_CRC` events, without checksums :data:`CHAIN_PLAIN` (or
    up to the file's end). Relay logs (their source's positions), pre-GA renumbered files and
    files without an FDE never qualify. The cut is only a guess: the reader of the range
    before it checks that an event starts exactly there (:mod:`binlogscope.export.split`)."""
    if not ctx.fde_seen or ctx.type_map:
        return None
    crc = ctx.has_checksum
    known = known_types(ctx)
    finder = _STARTS_MARIADB if ctx.is_mariadb else _STARTS_MYSQL
    need = CHAIN_CRC if crc else CHAIN_PLAIN
    for m in finder.finditer(buf, 4):
        p = m.start() - 4
        if _chains(buf, p, base, known, crc, need, eof):
            return base + p
    return None


def _chains(buf: bytes, p: int, base: int, known: frozenset[int], crc: bool, need: int,
            eof: bool) -> bool:
    n = len(buf)
    for _ in range(need):
        if p == n and eof:
            return True  # (the file ends after a chain shorter than asked: it is whole)
        if p + HEADER_LEN > n:
            return False
        _, code, _, size, log_pos, _ = HEADER.unpack_from(buf, p)
        if code not in known or size < HEADER_LEN + (4 if crc else 0) or p + size > n:
            return False
        e = p + size
        if log_pos != base + e and not (crc and log_pos == 0):
            return False
        if crc and zlib.crc32(memoryview(buf)[p : e - 4]) != _U32.unpack_from(buf, e - 4)[0]:
            return False
        p = e
    return True


__all__ = ["CHAIN_CRC", "CHAIN_PLAIN", "MAX_EVENT_SIZE", "NO", "YES", "candidate", "chain_ok",
           "known_types", "transaction_start"]
