"""Coordinates of binlog events: which file each event is in, where it starts, its transaction.

One tracker for every source, so that ``file``, ``live``, ``pcap``, the inspector and the export
give the same ``(binlog_file, offset, log_pos, gtid)`` for the same event:

- **files** (:meth:`CoordTracker.for_file`): the file is the one being read, the offset is
  where the event starts in it;
- **replication streams** (:meth:`CoordTracker.for_stream`: live, captures): the file comes from
  the ROTATE events (the dump's fake ROTATE, sent first, names the file the dump starts in; a
  real ROTATE at the end of a file names the next one), and the offset is ``log_pos -
  event_size`` (``log_pos`` is where the event ends in the source's file). Events that are in
  no file - the fake ROTATE (:func:`~.header.is_fake_rotate`), heartbeats, events with the
  LOG_EVENT_ARTIFICIAL_F flag (MariaDB's fake GTID_LIST), the FORMAT_DESCRIPTION re-sent with
  ``log_pos`` 0 when a dump starts mid-file - have no offset. MariaDB 11.4+ writes the events
  it copies from a transaction's cache with ``log_pos`` 0 (``binlog_legacy_event_pos=OFF``,
  the default; only the GTID event before them and the end of the transaction carry it):
  inside a transaction an event with ``log_pos`` 0 and no artificial flag is in the file,
  right after the event before it, so its offset comes from the stream (the previous event's
  end) and not from ``log_pos``. A second FORMAT_DESCRIPTION with a real
  ``log_pos`` and no ROTATE before it means a new file whose name was not seen (a gap in a
  capture): the file becomes unknown (None) until the next ROTATE.

The transaction's GTID is given to every event of the transaction: from the GTID event up to
and including the event that ends it (XID, XA PREPARE, COMMIT/ROLLBACK, or the single
statement after a GTID that does not open a group, such as DDL).

Pure: the tracker only reads decoded events and writes their ``binlog_file``, ``file_pos`` and
``trx_gtid`` slots.
"""

from __future__ import annotations

import re
from typing import Any

from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
from binlogscope.wire.binlog.header import ARTIFICIAL, in_no_file, is_fake_rotate
from binlogscope.wire.binlog.types import EventType as E

_ROTATE = int(E.ROTATE_EVENT)
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_GTIDS = frozenset(int(t) for t in (E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT,
                                    E.GTID_TAGGED_LOG_EVENT, E.GTID_EVENT))
_MARIADB_GTID = int(E.GTID_EVENT)
_QUERIES = frozenset((int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)))
_ENDS = frozenset((int(E.XID_EVENT), int(E.XA_PREPARE_LOG_EVENT)))
#: events that only occur inside a group: after a GTID that did not open one, they open it
_INSIDE = frozenset(int(t) for t in (
    E.TABLE_MAP_EVENT, E.ANNOTATE_ROWS_EVENT, E.ROWS_QUERY_LOG_EVENT, E.INTVAR_EVENT,
    E.USER_VAR_EVENT, E.RAND_EVENT, E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT,
    E.WRITE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT_V1, E.DELETE_ROWS_EVENT_V1,
    E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT, E.DELETE_ROWS_EVENT, E.PARTIAL_UPDATE_ROWS_EVENT,
    E.WRITE_ROWS_COMPRESSED_EVENT_V1, E.UPDATE_ROWS_COMPRESSED_EVENT_V1,
    E.DELETE_ROWS_COMPRESSED_EVENT_V1, E.WRITE_ROWS_COMPRESSED_EVENT,
    E.UPDATE_ROWS_COMPRESSED_EVENT, E.DELETE_ROWS_COMPRESSED_EVENT))
_FL_STANDALONE = 0x01

_WORD = re.compile(r"\s*(?:/\*.*?\*/\s*)*([A-Za-z]+)(?:\s+([A-Za-z]+))?", re.S)


def statement_kind(query: Any) -> str:
    """``BEGIN`` (opens a transaction), ``END`` (commits or rolls one back) or ``OTHER``."""
    if type(query) is not str:
        return "OTHER"
    m = _WORD.match(query)
    if not m:
        return "OTHER"
    w1 = m.group(1).upper()
    w2 = (m.group(2) or "").upper()
    if w1 == "BEGIN" or (w1 == "START" and w2 == "TRANSACTION") or (
            w1 == "XA" and w2 in ("START", "BEGIN")):
        return "BEGIN"
    if w1 == "COMMIT" or (w1 == "ROLLBACK" and w2 != "TO") or (
            w1 == "XA" and w2 in ("COMMIT", "ROLLBACK", "PREPARE")):
        return "END"
    return "OTHER"


class CoordTracker:
    """Stamps ``binlog_file``, ``file_pos`` and ``trx_gtid`` on events fed in source order."""

    __slots__ = ("_end", "_fde_seen", "_in_trx", "_open", "disorder", "file", "in_file",
                 "open_gtid")

    def __init__(self, file: str | None = None, *, in_file: bool = False) -> None:
        #: the binlog file events are in now (None: not known)
        self.file = file
        #: True: reading a file (offsets are file offsets, ROTATE does not change the file)
        self.in_file = in_file
        self._fde_seen = False  # a FORMAT_DESCRIPTION with a real log_pos in the current file
        #: the open transaction's GTID (None: none, or not known)
        self.open_gtid: str | None = None
        self._open = False  # the transaction is a group (BEGIN, or a MariaDB group GTID)
        self._in_trx = False
        #: where the last event with an offset ended in the current file (None: not known)
        self._end: int | None = None
        #: why the event just stamped is out of order (a stream's event that starts before the
        #: previous one ended: sent twice, or swapped), else None
        self.disorder: str | None = None

    @property
    def in_transaction(self) -> bool:
        """The current transaction began in this stream (its GTID or BEGIN was seen)."""
        return self._in_trx

    @staticmethod
    def file_name(name: str) -> str:
        """The binlog file's name of a path (``.gz`` dropped): its events' ``binlog_file``."""
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        return base[:-3] if base.endswith(".gz") else base

    @classmethod
    def for_file(cls, name: str) -> CoordTracker:
        """Events read from the binlog file ``name`` (a path or a name; ``.gz`` dropped)."""
        return cls(cls.file_name(name), in_file=True)

    @classmethod
    def for_stream(cls, file: str | None = None) -> CoordTracker:
        """Events of a replication stream (``file``: the dump's file, if known already)."""
        return cls(file)

    def stamp(self, ev: DecodedEvent) -> None:
        """Set the event's coordinates and move the state on."""
        self.disorder = None
        h = ev.header
        if h is None:
            ev.binlog_file = self.file
            ev.file_pos = ev.offset if self.in_file else None
            return
        code = h.type_code
        log_pos = h.log_pos
        if self.in_file:
            ev.binlog_file = self.file
            ev.file_pos = ev.offset
        elif code == _ROTATE:
            rot = bodies.rotate(ev)
            name = rot.next_log_name if rot is not None else None
            if is_fake_rotate(h):  # the dump's fake ROTATE: the stream is in that file from here
                if type(name) is str:
                    self.file = name
                ev.binlog_file = self.file
                ev.file_pos = None
            else:  # the last event of a file: the next events are in the one it names
                ev.binlog_file = self.file
                ev.file_pos = log_pos - h.event_size
                self.file = name if type(name) is str else None
            self._fde_seen = False
            self._end = None
            self._end_trx()
            return
        else:
            pos: int | None = None
            if in_no_file(h):
                pass
            elif log_pos:
                pos = log_pos - h.event_size
            elif self._in_trx and self._end is not None and code != _FDE:
                pos = self._end  # MariaDB 11.4: log_pos 0 inside a transaction
            if code == _FDE and pos is not None:
                if self._fde_seen:  # a new file began without its ROTATE being seen
                    self.file = None
                self._fde_seen = True
            ev.binlog_file = self.file
            ev.file_pos = pos
            if pos is not None:
                if self._end is not None and pos < self._end and code != _FDE:
                    self.disorder = (f"out of order: the {ev.type_name} at {self.file}:{pos} "
                                     f"starts before the previous event's end ({self._end}): "
                                     "an event sent twice, or events swapped")
                self._end = pos + h.event_size
        self._transaction(ev, code)

    @property
    def end(self) -> int | None:
        """Where the last event with an offset ended in the current file (None: not known):
        where the next event starts when the stream goes on in order."""
        return self._end

    def written(self, code: int, gtid: str | None, flags2: int | None, log_pos: int
                ) -> str | None:
        """:meth:`stamp` of an event written without being decoded (the native kernel's
        line of a stream's event packet, ``session/packets.py``): of type ``code`` (its
        ``gtid`` and ``flags2`` when a GTID event), in the current file, starting at
        :attr:`end` and ending at ``log_pos`` (the only such events: in order, not a
        ROTATE, FORMAT_DESCRIPTION or QUERY, not artificial). Returns its transaction's GTID."""
        self.disorder = None
        self._end = log_pos
        return self.moved(code, gtid, flags2, None)

    def lost(self) -> None:
        """Events are missing here (a gap in a capture): the open transaction's GTID is not
        known to cover what follows."""
        self._end_trx()
        self._end = None

    def _end_trx(self) -> None:
        self.open_gtid = None
        self._open = self._in_trx = False

    def _transaction(self, ev: DecodedEvent, code: int) -> None:
        if code in _GTIDS:
            body = ev.body  # (what bodies.gtid / bodies.mariadb_gtid_flags read, inline)
            if isinstance(body, MariadbGtidEvent):
                g: str | None = body.gtid
                flags2: int | None = body.flags2
            else:
                g = body.gtid if isinstance(body, GtidEvent) else None
                flags2 = None
            ev.trx_gtid = self.moved(code, g, flags2, None)
            return
        trx = self.moved(code, None, None,
                         bodies.statement(ev) if code in _QUERIES else None)
        if trx is not None:
            ev.trx_gtid = trx

    def moved(self, code: int, gtid: str | None, flags2: int | None, query: Any
              ) -> str | None:
        """Move the transaction state on by an event of type ``code`` (a GTID event: its
        ``gtid`` and MariaDB ``flags2``; a QUERY: its statement ``query``) and return the
        GTID of the transaction the event belongs to (None: none). The one definition for
        :meth:`stamp` and for the lines the native kernel writes (``drivers/binlog_file.py``),
        which hand over these values instead of a decoded event."""
        if code in _GTIDS:
            self.open_gtid = gtid if gtid is not None and gtid != "ANONYMOUS" else None
            self._in_trx = True
            self._open = (code == _MARIADB_GTID and flags2 is not None
                          and not flags2 & _FL_STANDALONE)
            return self.open_gtid
        if code == _FDE:
            self._end_trx()
            return None
        if not self._in_trx:
            if code in _QUERIES and statement_kind(query) == "BEGIN":
                self._in_trx = self._open = True  # a transaction without a GTID
            return None
        trx = self.open_gtid
        if code in _ENDS:  # (_end_trx, inline: an XID ends a transaction per event group)
            self.open_gtid = None
            self._open = self._in_trx = False
        elif code in _QUERIES:
            kind = statement_kind(query)
            if kind == "BEGIN":
                self._open = True
            elif kind == "END" or not self._open:
                self._end_trx()
        elif code in _INSIDE:
            self._open = True
        return trx

    def moved_run(self, run: list[tuple[Any, ...]]) -> None:
        """:meth:`moved` by each event of a run the native kernel took (its ``_line.c``
        values: code, log_pos, gtid, flags2, statement, ...), in one loop. An event that only
        occurs inside a group changes nothing but ``_open`` inside a transaction, so where
        that is already set (or no transaction is in progress) it is passed over without the
        call (tests/wire/test_coords.py holds both ways equal)."""
        moved = self.moved
        inside = _INSIDE
        for v in run:
            if v[0] in inside and (self._open or not self._in_trx):
                continue
            moved(v[0], v[2], v[3], v[4])


__all__ = ["ARTIFICIAL", "CoordTracker", "statement_kind"]
