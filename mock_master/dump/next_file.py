"""The file a served binlog rotates to: the server's current file, as the server opened it.

A binlog the server closed ends with a ROTATE naming the next file (the demo binlog ends with
``Rotate to mysql-bin.000002``). On the real server that next file exists - it is the current
one, written as the server opened it - and a replica that reconnects at ``mysql-bin.000002:4``
(having read to the end) is served its start and then waits for events; the mock served no such
file and answered ERR 1236 (could not find the file). :func:`open_rotated_file` appends it as
MariaDB writes a file's start (the MariaDB flavour calls it when the scenario says
``current_file = true``; not yet the default: some 20 tests of other areas count the served
stream's events and files as they were):

- MariaDB (measured on 10.11 after ``FLUSH BINARY LOGS``: ``mariadb-binlog`` of the new file and
  of a ``--read-from-remote-server`` dump of it): FORMAT_DESCRIPTION (created = the rotation's
  time), GTID_LIST (the binlog state: the last GTID per domain and server id, the oldest file's
  GTID_LIST updated with every GTID served), BINLOG_CHECKPOINT naming the previous file, then
  BINLOG_CHECKPOINT naming the new one (the real server sometimes repeats the previous file's
  checkpoint first - its background thread's timing; the settled form is written).

Not done: the MySQL flavour (FORMAT_DESCRIPTION, then PREVIOUS_GTIDS with gtid_executed, as
``MYSQL_BIN_LOG::open_binlog`` writes) - with it the served file is no longer the active one,
and the MySQL reader's errors for a read past a file's end (tests/mock_master/
test_mm_mysql_dump_errors.py: READ_EOF inside the active file) and the GTID dump's choice of
the first file (find_first_log_not_in_gtid_set) must first be checked against the source for a
closed file.

Nothing is added when the last event is no ROTATE, or names a file already served.
"""

from __future__ import annotations

from binlogscope.wire.binlog.control_events import BinlogCheckpointEvent, RotateEvent
from binlogscope.wire.binlog.encode_events import (
    encode_binlog_checkpoint,
    encode_event,
    encode_gtid_list,
)
from binlogscope.wire.binlog.gtid_events import (
    GtidListEvent,
    MariadbGtid,
)
from binlogscope.wire.binlog.header import HEADER_LEN, peek_header
from binlogscope.wire.binlog.types import EventType as E
from mock_master.history.sources import (
    BinlogFile,
    EventStream,
    decode_stored,
    rebase,
    rewrite_header,
)

#: the FORMAT_DESCRIPTION body's 'created' field: after binlog version (2) and server version (50)
_CREATED = HEADER_LEN + 2 + 50


def open_rotated_file(stream: EventStream) -> str | None:
    """Append the file the stream's last ROTATE names (see the module docstring); its name, or
    None when nothing was added."""
    if not stream.files or not stream.files[-1].count:
        return None
    last = stream.files[-1]
    rot = last.event(last.count - 1)
    if rot[4] != E.ROTATE_EVENT:
        return None
    body = decode_stored(rot, last.checksum).body
    if not isinstance(body, RotateEvent) or not body.next_log_name:
        return None
    name = body.next_log_name
    fde = last.fde
    if fde is None or stream.file_index(name) is not None:
        return None
    h = peek_header(rot)
    ck = last.checksum

    def event(type_code: int, payload: bytes) -> bytes:
        return encode_event(type_code, payload, timestamp=h.timestamp, server_id=h.server_id,
                            checksum=ck)

    new_fde = bytearray(fde)
    new_fde[0:4] = h.timestamp.to_bytes(4, "little")
    if int.from_bytes(new_fde[_CREATED:_CREATED + 4], "little"):
        new_fde[_CREATED:_CREATED + 4] = h.timestamp.to_bytes(4, "little")
    events = [rewrite_header(bytes(new_fde), ck)]
    state = binlog_state(stream)
    events.append(event(E.GTID_LIST_EVENT, encode_gtid_list(
        GtidListEvent(",".join(map(str, state)), state, 0))))
    events.append(event(E.BINLOG_CHECKPOINT_EVENT,
                        encode_binlog_checkpoint(BinlogCheckpointEvent(last.name))))
    events.append(event(E.BINLOG_CHECKPOINT_EVENT,
                        encode_binlog_checkpoint(BinlogCheckpointEvent(name))))
    stream.files.append(BinlogFile(name, events, ck))
    rebase(stream)
    return name


def binlog_state(stream: EventStream) -> list[MariadbGtid]:
    """MariaDB's binlog state after the stream: the oldest file's GTID_LIST, then every GTID
    served - the last per (domain, server id); by domain, a domain's latest GTID last."""
    state: dict[tuple[int, int], MariadbGtid] = {}
    first = stream.files[0]
    for _, ev in first.select((E.GTID_LIST_EVENT,)):
        body = decode_stored(ev, first.checksum).body
        if isinstance(body, GtidListEvent):
            for g in body.gtids:
                state[(g.domain_id, g.server_id)] = g
        break
    for m in stream.gtids:
        if "-" in m.gtid and ":" not in m.gtid:
            state.pop((m.domain, m.server_id), None)  # (moved to the end: the latest)
            state[(m.domain, m.server_id)] = MariadbGtid(m.domain, m.server_id, m.seq)
    order = sorted(range(len(state)), key=lambda i: list(state)[i][0])
    values = list(state.values())
    return [values[i] for i in order]
