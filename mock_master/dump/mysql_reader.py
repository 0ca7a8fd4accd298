"""What MySQL's sender reads when a COM_BINLOG_DUMP starts inside an event (the MySQL flavour).

MySQL 5.7+/8.x has no "impossible position" check (that text is MySQL 5.5/5.6's and MariaDB's):
``Binlog_sender::check_start_file`` refuses only a start past the file's end; a start at or
before the end but inside an event is served. After the fake ROTATE and the FORMAT_DESCRIPTION
(``log_pos`` and ``created`` cleared, as for any start past 4) ``send_binlog`` seeks to the
start and ``send_events`` reads "events" from there with the file reader, whatever the bytes
say. Facts from mysql-server (read, never copied; no MySQL server here):

- ``Binlog_event_data_istream`` (``sql/binlog_reader.h``/``.cc`` at the 8.0 commits the index
  holds): the 19-byte header is read with ``read_fixed_length<TRUNC_EVENT>``: 0 bytes is
  READ_EOF, fewer is TRUNC_EVENT; ``check_event_header``: a length below 19 is BOGUS, above the
  reader's maximum EVENT_TOO_LARGE (the maximum: ``max(max_allowed_packet,
  binlog_row_event_max_size + header)``, and ``init()`` set the dump thread's
  max_allowed_packet to MAX_MAX_ALLOWED_PACKET, 1 GiB); then the rest of the event, again
  ``read_fixed_length<TRUNC_EVENT>`` (0 bytes: READ_EOF). Checksums are checked only with
  ``source_verify_checksum`` (default OFF), so an event read whole is *sent as read*, garbage
  or not, and reading goes on right after it.
- ``Binlog_sender::read_event``: READ_EOF is "no event" (a cold file: on to the next file;
  the active file: ``log_read_error_msg(SYSTEM_IO)``, "I/O error reading log event"); any
  other error is ``set_fatal_error(log_read_error_msg(type))``: BOGUS "bogus data in log
  event", EVENT_TOO_LARGE "log event entry exceeded max_allowed_packet; Increase
  max_allowed_packet on master", TRUNC_EVENT "binlog truncated in the middle of event;
  consider out of disk space on master" (``sql/rpl_binlog_sender.cc`` at 6299d1de, 8.0; no
  later copy of these texts was found, so "master" is kept for every version).
- ``run()`` appends, the file being open: "; the first event '<requested file>' at <requested
  position>, the last event read from '<file>' at <end of the last event read: the FD's, or
  the last garbage event's>, the last byte read from '<file>' at <the reader's position>."
  (the server prints the file's path; the mock its name). The reader's position counts every
  byte read: a short read moves it to the file's end.
- Not modelled: ``check_event_type`` on a garbage event whose type byte happens to be 33/34
  (the GTID_MODE refusals).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogscope.wire.binlog.header import HEADER_LEN

HEADER = HEADER_LEN
#: MAX_MAX_ALLOWED_PACKET: the dump thread's event size limit
MAX_EVENT = 1 << 30
BOGUS = "bogus data in log event"
TOO_LARGE = ("log event entry exceeded max_allowed_packet; Increase max_allowed_packet on "
             "master")
TRUNC = "binlog truncated in the middle of event; consider out of disk space on master"
IO = "I/O error reading log event"


@dataclass(slots=True)
class MidRead:
    """The sender's reading from a start inside an event."""

    #: what it read whole and sends as read
    sent: list[bytes] = field(default_factory=list)
    #: the index of the real event the reading landed on (the event count at the file's
    #: end; None: an error, or the end of file met inside a header)
    next_index: int | None = None
    #: the read error's text (without run()'s coordinates), None when none
    error: str | None = None
    #: m_last_pos: the end of the last event read
    last_pos: int = 4
    #: the reader's position when it stopped
    position: int = 4
    #: a cold file ended right after a header (READ_EOF for its body): on to the next file
    eof: bool = False


def read_from(data: bytes, pos: int, offsets: list[int], last_pos: int, *,
              active: bool, mariadb: bool = False) -> MidRead:
    """Read ``data`` (the whole file, magic included) from ``pos`` as the sender does until it
    lands on a real event (``offsets``), fails, or reaches the end; ``last_pos`` is where the
    FORMAT_DESCRIPTION ended; ``active``: the file is the binlog being written (the last).

    ``mariadb``: MariaDB's sender (sql/sql_repl.cc, its Log_event::read_log_event; measured
    against 10.11, tests/mock_master/test_mm_mid_event_mariadb.py) reads the same way but words
    the coordinates otherwise: the last event read is where the failing read started and the
    last byte read is 19 bytes on (its header), for a bogus length and a body cut short
    alike."""
    index_of = {o: i for i, o in enumerate(offsets)}
    out = MidRead(last_pos=last_pos, position=pos)
    p = pos
    size = len(data)
    while True:
        if p in index_of:
            out.next_index, out.position = index_of[p], p
            return out
        left = size - p
        if left <= 0:  # at the end: as at any file's end (next file, or wait / EOF)
            out.next_index, out.position = len(offsets), p
            return out
        if left < HEADER:
            out.error, out.position = TRUNC, size
            return out
        n = int.from_bytes(data[p + 9:p + 13], "little")
        if n < HEADER:
            out.error, out.position = BOGUS, p + HEADER
            return _maria(out, p, mariadb)
        if n > MAX_EVENT:
            out.error, out.position = TOO_LARGE, p + HEADER
            return _maria(out, p, mariadb)
        if n - HEADER > left - HEADER:
            if left == HEADER and not mariadb:  # the body read returns nothing: READ_EOF
                return _eof(out, p + HEADER, active)
            out.error, out.position = TRUNC, size
            return _maria(out, p, mariadb)
        out.sent.append(data[p:p + n])
        p += n
        out.last_pos = out.position = p


def _maria(out: MidRead, p: int, mariadb: bool) -> MidRead:
    """MariaDB's coordinates of a failed read at ``p`` (see :func:`read_from`)."""
    if mariadb:
        out.last_pos, out.position = p, p + HEADER
    return out


def _eof(out: MidRead, position: int, active: bool) -> MidRead:
    out.position = position
    if active:
        out.error = IO
    else:
        out.eof = True
    return out
