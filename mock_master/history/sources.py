"""Where the mock master's events come from: binlog files, captures, recordings, the builder.

Everything ends up as an :class:`EventStream`: an ordered list of :class:`BinlogFile` (a name and
its events, each the exact bytes the file holds, ``log_pos`` consistent with the file offsets).
The stream is prepared once per scenario and shared by every client connection; per-client
changes (checksum stripping, semi-sync headers, faults) happen while sending.

The loaders (binlog files, captures, recordings) are in :mod:`mock_master.history.loaders`; events
built
in Python come from :class:`~mock_master.history.builder.EventBuilder`. Events are read only through
binlogscope's decoder (:func:`decode_stored`) and headers rewritten through its encoder
(:func:`rewrite_header`).

Stream-level transforms (:func:`rebase`, :func:`split_file`, :func:`insert_event`) re-number
``log_pos`` and recompute CRC32 checksums so the result is again a consistent binlog.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent, RotateEvent, UserVarEvent
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.dump_frames import index_events
from binlogscope.wire.binlog.encode_events import (
    add_crc32,
    encode_event,
    encode_header,
    encode_rotate,
    encode_user_var,
)
from binlogscope.wire.binlog.encode_query import encode_query
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN, peek_header
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.types import ChecksumAlg, EventType
from mock_master.history.framing import event_types, max_event_size

FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
ROTATE = int(EventType.ROTATE_EVENT)
XID = int(EventType.XID_EVENT)
QUERY = int(EventType.QUERY_EVENT)
MARIA_GTID = int(EventType.GTID_EVENT)
MYSQL_GTID = int(EventType.GTID_LOG_EVENT)
#: MySQL 8.3+ GTID_TAGGED (uuid:tag:gno)
MYSQL_GTID_TAGGED = int(EventType.GTID_TAGGED_LOG_EVENT)
ANONYMOUS_GTID = int(EventType.ANONYMOUS_GTID_LOG_EVENT)
FLAG_IN_USE = 0x1


class SourceError(Exception):
    """A source cannot be loaded (missing file, not a binlog, reader unavailable)."""


# ------------------------------------------------------------------------------- event helpers
def decode_stored(ev: bytes, checksum: bool) -> DecodedEvent:
    """One stored event through binlogscope's decoder (no tree; a TABLE_MAP or FDE in its own
    context): the mock master reads events only this way."""
    ctx = DecodeContext(checksum_alg=ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32 if checksum
                        else ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF, fde_seen=True,
                        verify_checksums=False)
    return decode_event(ev, ctx, record=False)


def event_type(ev: bytes) -> int:
    return ev[4]


def event_log_pos(ev: bytes) -> int:
    return peek_header(ev).log_pos


def fde_checksum(fde: bytes) -> bool:
    """Does this FORMAT_DESCRIPTION announce CRC32?"""
    body = decode_stored(fde, False).body
    return (isinstance(body, FormatDescriptionEvent)
            and body.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32)


def with_checksum(body_and_header: bytes | bytearray) -> bytes:
    """Append the CRC32 of ``body_and_header`` (whose event_size must already count it)."""
    return add_crc32(body_and_header)


def rewrite_header(ev: bytes, checksum: bool, *, log_pos: int | None = None,
                   flags: int | None = None, strip: bool = False) -> bytes:
    """A copy of a stored event with another header ``log_pos``/``flags`` (the header
    re-encoded, the CRC32 recomputed when there is one); ``strip``: without the CRC32."""
    h = peek_header(ev)
    body = ev[HEADER_LEN:len(ev) - 4 if checksum else len(ev)]
    if log_pos is not None:
        h.log_pos = log_pos
    if flags is not None:
        h.flags = flags
    if strip:
        checksum = False
        if h.type_code == FDE:
            body = body[:-1] + b"\0"  # checksum alg byte: OFF
    h.event_size = HEADER_LEN + len(body) + (4 if checksum else 0)
    out = encode_header(h) + body
    return add_crc32(out) if checksum else out


def set_log_pos(ev: bytes, log_pos: int, checksum: bool, *, flags: int | None = None) -> bytes:
    """A copy with another ``log_pos`` (and flags), the CRC32 recomputed when there is one."""
    return rewrite_header(ev, checksum, log_pos=log_pos, flags=flags)


def strip_checksum(ev: bytes) -> bytes:
    """The event without its 4-byte CRC32 (event_size adjusted; an FDE says OFF)."""
    return rewrite_header(ev, True, strip=True)


def recompute_checksum(ev: bytes | bytearray) -> bytes:
    return add_crc32(bytes(ev[:-4]))


def corrupt_checksum(ev: bytes) -> bytes:
    b = bytearray(ev)
    b[-1] ^= 0xFF
    return bytes(b)


DUMMY_TEXT = "# Dummy event replacing event type {} that slave cannot handle."
LOG_EVENT_THREAD_SPECIFIC_F = 0x4
LOG_EVENT_SUPPRESS_USE_F = 0x8
#: 19-byte header + name length (4) + one name byte + the is-null byte
_MIN_USER_VAR = HEADER_LEN + 4 + 1 + 1
#: 19-byte header + the 13-byte QUERY post-header + the db's NUL + one query byte
_MIN_QUERY = HEADER_LEN + 13 + 1 + 1
#: the MariaDB GTID event body: 19 bytes, or 21 with a commit id (as begin_event accepts)
_GTID_BODY = 19


class CompatError(ValueError):
    """An event cannot be turned into what an old replica understands (too small, or a GTID
    event of an unexpected size): the server ends the dump with an error."""


def _compat_header(ev: bytes, checksum: bool, type_code: int) -> tuple[bytearray, int]:
    """A copy of the event with another type, LOG_EVENT_THREAD_SPECIFIC_F cleared and
    LOG_EVENT_SUPPRESS_USE_F set (header fields otherwise unchanged); the length of the data
    without the CRC32."""
    b = bytearray(ev)
    n = len(b) - (4 if checksum else 0)
    flags = int.from_bytes(b[17:19], "little")
    flags = (flags & ~LOG_EVENT_THREAD_SPECIFIC_F) | LOG_EVENT_SUPPRESS_USE_F
    b[17:19] = flags.to_bytes(2, "little")
    b[4] = type_code
    return b, n


def _finish(b: bytearray, n: int, checksum: bool) -> bytes:
    return add_crc32(b[:n]) if checksum else bytes(b[:n])


def dummy_event(ev: bytes, checksum: bool) -> bytes:
    """What MariaDB sends instead of an event the replica cannot handle (dummy_event in its
    log_event_server.cc): the same size and header, LOG_EVENT_THREAD_SPECIFIC_F cleared and
    LOG_EVENT_SUPPRESS_USE_F set; a QUERY event holding the comment cut or space-padded to fit,
    or, below 34 bytes without the CRC32, a USER_VAR event setting ``@`!dummyvar``` (as much of
    the name as fits) to NULL. Raises CompatError below 25 bytes."""
    old = ev[4]
    size = len(ev) - (4 if checksum else 0)
    if size < _MIN_USER_VAR:
        raise CompatError(f"event of {size} bytes is too small for a dummy event")
    if size < _MIN_QUERY:
        b, n = _compat_header(ev, checksum, int(EventType.USER_VAR_EVENT))
        name_len = size - (_MIN_USER_VAR - 1)
        body = encode_user_var(UserVarEvent("!dummyvar"[:name_len], True))
    else:
        b, n = _compat_header(ev, checksum, QUERY)
        text = DUMMY_TEXT.format(old).encode()
        room = size - (_MIN_QUERY - 1)
        comment = text[:room] if room <= len(text) else text.ljust(room, b" ")
        body = encode_query(QueryEvent(0, 0, 0, 0, 0, {}, "", comment.decode()))
    b[HEADER_LEN:n] = body
    return _finish(b, n, checksum)


def begin_event(ev: bytes, checksum: bool) -> bytes:
    """A MariaDB GTID event as old replicas get it (begin_event in its log_event_server.cc): a
    QUERY "BEGIN" of the same size (an empty time_zone status variable takes up the commit id's
    two extra bytes), flags changed as in :func:`dummy_event`. Raises CompatError for other
    sizes."""
    size = len(ev) - (4 if checksum else 0)
    if size not in (HEADER_LEN + _GTID_BODY, HEADER_LEN + _GTID_BODY + 2):
        raise CompatError(f"GTID event of {size} bytes cannot become a BEGIN")
    b, n = _compat_header(ev, checksum, QUERY)
    # the commit id's two bytes: an empty time_zone status variable (Q_TIME_ZONE_CODE 5)
    tz = b"\x05\x00" if size > HEADER_LEN + _GTID_BODY else b""
    body = encode_query(QueryEvent(0, 0, 0, 0, len(tz), {}, "", "BEGIN",
                                   unknown_status_vars=tz or None))
    b[HEADER_LEN:n] = body
    return _finish(b, n, checksum)


def zero_created(fde: bytes, checksum: bool, *, log_pos: int | None = None,
                 flags: int | None = None) -> bytes:
    """A FORMAT_DESCRIPTION with 'created' 0 (and another log_pos/flags): what the server sends
    when the replica resumes past it, so its temporary tables survive."""
    b = bytearray(fde)
    b[HEADER_LEN + 2 + 50:HEADER_LEN + 2 + 50 + 4] = bytes(4)
    return rewrite_header(bytes(b), checksum, log_pos=log_pos, flags=flags)


# ------------------------------------------------------------------------------- files / stream
class BinlogFile:
    """One binlog file: its name and events (exact bytes), in file order starting at offset 4.

    A file read from disk stays the file's bytes (``data``) plus the start offset of every event
    (``starts``, found once by ``wire.binlog.dump_frames.index_events``): dumps frame events
    straight from it, nothing is copied or decoded. ``events`` (a list of bytes) is built from
    it the first time someone asks for it, e.g. a transform that changes events; from then on
    the list is the file (``data`` is dropped).
    """

    def __init__(self, name: str, events: list[bytes] | None = None, checksum: bool = True,
                 offsets: list[int] | None = None, *, data: bytes | None = None,
                 starts: array[int] | None = None, end: int = 4) -> None:
        self.name = name
        self.checksum = checksum
        #: the file's bytes while the events are still exactly those (else None)
        self.data: bytes | None = None
        self.starts: array[int] = array("q")
        self.end = 4
        self._types: bytes | None = None
        self._max_size: int | None = None
        self._events: list[bytes] | None = None
        self._offsets: Sequence[int] = []
        if data is not None and events is None:
            if starts is None:
                starts, end = index_events(data)
            self.data, self.starts, self.end = data, starts, end
        else:
            self._events = events if events is not None else []
            if offsets:
                self._offsets = offsets
            else:
                self.reindex()

    def __repr__(self) -> str:
        return f"BinlogFile({self.name!r}, {self.count} events, checksum={self.checksum})"

    # ------------------------------------------------------------ the events
    @property
    def events(self) -> list[bytes]:
        """The events as a list of bytes (built from the file's bytes on first use)."""
        if self._events is None:
            data, st = self.data, self.starts
            assert data is not None
            bounds = [*st[1:], self.end]
            self._events = [data[a:b] for a, b in zip(st, bounds, strict=True)]
            self._offsets = list(st)
            self.data = None
            self.starts = array("q")
            self._types = None
        return self._events

    @events.setter
    def events(self, value: list[bytes]) -> None:
        self._events = value
        self.data = None
        self.starts = array("q")
        self._types = None
        self._max_size = None
        self.reindex()

    @property
    def offsets(self) -> Sequence[int]:
        """Start offset of each event in the file."""
        return self.starts if self._events is None else self._offsets

    @offsets.setter
    def offsets(self, value: list[int]) -> None:
        self.events  # noqa: B018  (materialize first)
        self._offsets = value

    @property
    def count(self) -> int:
        return len(self.starts) if self._events is None else len(self._events)

    def event(self, i: int) -> bytes:
        """Event ``i`` (negative counts from the end) without building the list."""
        if self._events is not None:
            return self._events[i]
        assert self.data is not None
        n = len(self.starts)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self.data[self.starts[i]:self.starts[i + 1] if i + 1 < n else self.end]

    def types(self) -> bytes:
        """The type byte of every event."""
        if self._events is not None:
            return bytes(ev[4] for ev in self._events)
        if self._types is None:
            assert self.data is not None
            self._types = event_types(self.data, self.starts)
        return self._types

    def max_event_size(self) -> int:
        if self._events is not None:
            return max((len(e) for e in self._events), default=0)
        if self._max_size is None:
            self._max_size = max_event_size(self.starts, self.end)
        return self._max_size

    def reindex(self) -> None:
        """Recompute the offsets after the event list changed."""
        if self._events is None:
            return
        pos = 4
        offs: list[int] = []
        for ev in self._events:
            offs.append(pos)
            pos += len(ev)
        self._offsets = offs
        self._max_size = None

    @property
    def size(self) -> int:
        if self._events is None:
            return self.end
        if not self._events:
            return 4
        return self._offsets[-1] + len(self._events[-1])

    def index_at(self, pos: int) -> int | None:
        """Index of the event starting at ``pos`` (``count`` for the end), else None."""
        if pos == self.size:
            return self.count
        offs = self.offsets
        i = bisect.bisect_left(offs, pos)
        if i < len(offs) and offs[i] == pos:
            return i
        return None

    @property
    def fde(self) -> bytes | None:
        for i in range(min(3, self.count)):
            ev = self.event(i)
            if ev[4] == FDE:
                return ev
        return None

    def file_bytes(self) -> bytes:
        if self._events is None:
            assert self.data is not None
            return self.data[:self.end]
        return BINLOG_MAGIC + b"".join(self._events)

    def select(self, wanted: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """(index, event) of the events whose type is in ``wanted``, in file order."""
        want = set(wanted)
        if self._events is not None:
            for i, ev in enumerate(self._events):
                if ev[4] in want:
                    yield i, ev
            return
        types = self.types()
        hits: list[int] = []
        for t in want:
            k = types.find(t)
            while k >= 0:
                hits.append(k)
                k = types.find(t, k + 1)
        hits.sort()
        for i in hits:
            yield i, self.event(i)


@dataclass(frozen=True, slots=True)
class GtidMark:
    """Where a transaction starts: its GTID and the event index."""

    file_index: int
    event_index: int
    gtid: str  # MariaDB "d-s-n" or MySQL "uuid:gno" / "uuid:tag:gno"
    domain: int = 0
    server_id: int = 0
    seq: int = 0


class EventStream:
    """The whole history the mock master serves (files in order), plus indexes over it.

    The indexes (GTIDs, transaction ends, tables) are built on first use: serving a file from
    its start needs none of them.
    """

    def __init__(self, files: list[BinlogFile]) -> None:
        self.files = files
        for f in files:
            f.reindex()
        self._gtids: list[GtidMark] | None = None
        self._txn_ends: set[tuple[int, int]] | None = None

    def reindex(self) -> None:
        """The files' events changed: recompute offsets, forget the indexes."""
        for f in self.files:
            f.reindex()
        self._gtids = None
        self._txn_ends = None

    @property
    def gtids(self) -> list[GtidMark]:
        """Where each transaction starts (MariaDB and MySQL GTID events, tagged ones too), in
        stream order."""
        if self._gtids is None:
            out: list[GtidMark] = []
            for fi, f in enumerate(self.files):
                for ei, ev in f.select((MARIA_GTID, MYSQL_GTID, MYSQL_GTID_TAGGED)):
                    g: Any = decode_stored(ev, f.checksum).body
                    if g is None:
                        continue
                    if ev[4] == MARIA_GTID:
                        out.append(GtidMark(fi, ei, g.gtid, g.domain_id, g.server_id,
                                            g.seq_no))
                    else:
                        out.append(GtidMark(fi, ei, g.gtid, seq=g.gno))
            self._gtids = out
        return self._gtids

    @property
    def txn_ends(self) -> set[tuple[int, int]]:
        """(file_index, event_index) of events that end a transaction (semi-sync ACK points)."""
        if self._txn_ends is None:
            ends: set[tuple[int, int]] = set()
            for fi, f in enumerate(self.files):
                for ei, ev in f.select((XID, QUERY)):
                    if ev[4] == XID:
                        ends.add((fi, ei))
                        continue
                    q = _query_text(ev, f.checksum).strip().upper()
                    if not (q == "BEGIN" or q.startswith(("XA START", "XA END"))):
                        ends.add((fi, ei))
            self._txn_ends = ends
        return self._txn_ends

    def file_index(self, name: str) -> int | None:
        for i, f in enumerate(self.files):
            if f.name == name:
                return i
        return None

    @property
    def event_count(self) -> int:
        return sum(f.count for f in self.files)

    @property
    def server_id(self) -> int | None:
        for f in self.files:
            if f.count:
                return peek_header(f.event(0)).server_id
        return None

    @property
    def server_version(self) -> str | None:
        for f in self.files:
            fde = f.fde
            body = decode_stored(fde, False).body if fde is not None else None
            if isinstance(body, FormatDescriptionEvent):
                return body.server_version
        return None

    @property
    def checksum(self) -> bool:
        return self.files[0].checksum if self.files else True

    def gtid_state(self) -> str:
        """The last GTID per MariaDB domain (``@@gtid_binlog_pos``)."""
        last: dict[int, GtidMark] = {}
        for g in self.gtids:
            if "-" in g.gtid and ":" not in g.gtid:
                last[g.domain] = g
        return ",".join(last[d].gtid for d in sorted(last))

    def append(self, events: Iterable[bytes]) -> None:
        """Append events to the last file (positions/checksums fixed), e.g. for blocking dumps."""
        f = self.files[-1]
        pos = f.size
        evs = f.events
        for ev in events:
            end = pos + len(ev)
            evs.append(set_log_pos(ev, end, f.checksum))
            pos = end
        self.reindex()


def _query_text(ev: bytes, checksum: bool) -> str:
    body = decode_stored(ev, checksum).body
    return body.query if isinstance(body, QueryEvent) else ""


# ------------------------------------------------------------------------------- transforms
def rebase(stream: EventStream) -> int:
    """Make every real event's ``log_pos`` its end offset in its file (CRC32 recomputed).

    Returns how many events were rewritten. The FDE keeps ``log_pos`` 0 if it had it.
    """
    changed = 0
    for f in stream.files:
        pos = 4
        for i, ev in enumerate(f.events):
            end = pos + len(ev)
            lp = event_log_pos(ev)
            if lp != end and not (lp == 0 and ev[4] == FDE):
                f.events[i] = set_log_pos(ev, end, f.checksum)
                changed += 1
            pos = end
    stream.reindex()
    return changed


def split_file(stream: EventStream, file_index: int, event_index: int, new_name: str) -> None:
    """Rotate: end file ``file_index`` before ``event_index`` with a ROTATE to ``new_name``;
    the remaining events move to a new file (FDE copied) and are re-based."""
    f = stream.files[file_index]
    fde = f.fde
    if fde is None:
        raise SourceError(f"{f.name}: no FORMAT_DESCRIPTION to start the new file with")
    head, tail = f.events[:event_index], f.events[event_index:]
    rot = encode_event(ROTATE, encode_rotate(RotateEvent(4, new_name)),
                       server_id=peek_header(fde).server_id, checksum=f.checksum)
    f.events = [*head, rot]
    new = BinlogFile(new_name, [fde, *tail], f.checksum)
    stream.files.insert(file_index + 1, new)
    rebase(stream)


def insert_event(stream: EventStream, file_index: int, event_index: int, ev: bytes) -> None:
    stream.files[file_index].events.insert(event_index, ev)
    rebase(stream)


def locate(stream: EventStream, n: int) -> tuple[int, int]:
    """(file_index, event_index) of the n-th event of the whole stream (0-based)."""
    for fi, f in enumerate(stream.files):
        if n < f.count:
            return fi, n
        n -= f.count
    raise SourceError(f"event {n} is beyond the end of the stream")
