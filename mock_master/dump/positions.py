"""Where a dump starts: the file and event a COM_BINLOG_DUMP(_GTID) asks for.

:func:`find_start` reads the dump command (file + position, a MariaDB GTID state in
``@slave_connect_state``, or a MySQL GTID set) against the served :class:`EventStream` and
returns a :class:`Start`, or raises :class:`StartError` with the error the server would send.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.gtid_events import GtidListEvent, MariadbGtid
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid, gtid_set_text
from mock_master.dump.errors import StartError
from mock_master.dump.gtid_sets import tsid
from mock_master.dump.mariadb_gtid import BinlogState, GtidDump, GtidStartError
from mock_master.dump.mysql_gtid import check_auto_position, check_gtid_mode, first_file
from mock_master.history.sources import MARIA_GTID, EventStream, decode_stored

GTID_LIST = int(EventType.GTID_LIST_EVENT)


@dataclass(slots=True)
class Start:
    file_index: int
    event_index: int
    #: COM_BINLOG_DUMP_GTID: (uuid, start, end) intervals the client already has
    skip_gtids: list[tuple[str, int, int]] | None
    #: what the run log records about the dump command
    log: dict[str, Any]
    #: MariaDB GTID dump: the connect/UNTIL state machine, and the master's binlog state
    gtid_dump: GtidDump | None = None
    binlog_state: BinlogState | None = None
    #: the FORMAT_DESCRIPTION goes out with 'created' 0 (the client resumes past the file's
    #: first transaction), and log_pos 0 unless ``fde_keeps_log_pos``
    clear_fde: bool = False
    #: MySQL 8 GTID auto-positioning clears only 'created' (rpl_binlog_sender.cc)
    fde_keeps_log_pos: bool = False
    #: MySQL flavour: the dump starts inside an event, at this position (the sender reads
    #: from there: :mod:`mock_master.dump.mysql_reader`); ``event_index`` is the next event
    mid_event_pos: int | None = None


_NO_FILE = "Could not find first log file name in binary log index file"


def _user_var(user_vars: dict[str, Any], name: str) -> str | None:
    v = user_vars.get(name)
    return None if v is None else str(v)


def _flag_var(user_vars: dict[str, Any], name: str) -> bool:
    try:
        return bool(int(user_vars.get(name) or 0))
    except (TypeError, ValueError):
        return False


def find_start(stream: EventStream, cmd: ComBinlogDump | ComBinlogDumpGtid,
               user_vars: dict[str, Any], flavor: str, *, server_uuid: str | None = None,
               version: tuple[int, int, int] = (8, 0, 0)) -> Start:
    """``server_uuid`` / ``version``: the MySQL source's, for the auto-position checks."""
    if isinstance(cmd, ComBinlogDumpGtid):
        # MySQL (rpl_source.cc): the set is read whatever the flags, the name is a C string
        name = cmd.binlog_filename.split("\0", 1)[0]
        log = {"command": "COM_BINLOG_DUMP_GTID", "server_id": cmd.server_id,
               "file": name, "pos": cmd.binlog_pos, "flags": cmd.flags,
               "gtid_set": gtid_set_text(cmd.gtid_set) if cmd.gtid_set else None}
        # MySQL 8.3+: a (uuid, tag) pair is its own member of the set (wire/gtid_sets.py)
        skip = [(tsid(str(s.sid), s.tag), iv.start, iv.end) for s in cmd.gtid_set or ()
                for iv in s.intervals]
        if server_uuid is not None:
            check_gtid_mode(stream)
        if name:
            found = stream.file_index(name)
            if found is None:
                raise StartError(_NO_FILE)
            fi, ei = found, _event_at(stream, found, name, cmd.binlog_pos, flavor, version)
            # Binlog_sender::send_format_description_event: a GTID-protocol dump changes the
            # FD only through m_gtid_clear_fd_created_flag, which only check_start_file's
            # auto-position branch sets: with a file name the FD goes out as read
            if ei is None:
                return Start(fi, _next_event(stream, fi, cmd.binlog_pos), skip, log,
                             mid_event_pos=cmd.binlog_pos)
            return Start(fi, ei, skip, log)
        if server_uuid is not None:
            check_auto_position(stream, skip, server_uuid, version)
        fi, clear = first_file(stream, skip)
        if flavor == "mysql":
            _below_4(cmd.binlog_pos, version)
        # MySQL 8.0 (send_format_description_event): 'created' cleared, log_pos kept; 5.6/5.7
        # set clear_log_pos = m_gtid_clear_fd_created_flag and cleared both
        return Start(fi, 0, skip, log, clear_fde=clear, fde_keeps_log_pos=version >= (8, 0, 0))
    state = user_vars.get("slave_connect_state")
    log = {"command": "COM_BINLOG_DUMP", "server_id": cmd.server_id,
           "file": cmd.binlog_filename.split("\0", 1)[0], "pos": cmd.binlog_pos,
           "flags": cmd.flags, "gtid_state": None if state is None else str(state)}
    name = cmd.binlog_filename.split("\0", 1)[0]  # a C string on the server side
    if flavor == "mariadb" and state is not None:
        # a GTID dump: MariaDB ignores the file name and position then
        until = _user_var(user_vars, "slave_until_gtid")
        if until is not None:
            log["until_gtid"] = until
        try:
            g = GtidDump(str(state), until, strict=_flag_var(user_vars, "slave_gtid_strict_mode"),
                         ignore_duplicates=_flag_var(user_vars, "slave_gtid_ignore_duplicates"))
            binlog = mariadb_binlog_state(stream)
            g.check_start(binlog)
            fi = g.find_file([file_gtid_list(stream, k) for k in range(len(stream.files))])
        except GtidStartError as exc:
            raise StartError(str(exc), exc.code) from None
        return Start(fi, 0, None, log, gtid_dump=g, binlog_state=binlog)
    if flavor == "mariadb" and cmd.binlog_pos < 4:
        # MariaDB refuses a start before the first event at once (measured on 10.11: the
        # name shown '.' when none was given)
        shown = name or "."
        raise StartError(
            f"Client requested master to start replication from impossible position; the "
            f"first event '{shown}' at {cmd.binlog_pos}, the last event read from '{shown}' "
            f"at 4, the last byte read from '{shown}' at 4.")
    if not name and (flavor != "mysql" or not stream.files):
        return Start(0, 0, None, log)
    # MySQL: no name is the first file (find_log_pos(NULL)), read from the position given
    fi_found = stream.file_index(name) if name else 0
    if fi_found is None:
        raise StartError(_NO_FILE)
    idx = _event_at(stream, fi_found, name, cmd.binlog_pos, flavor, version)
    if idx is None:
        return Start(fi_found, _next_event(stream, fi_found, cmd.binlog_pos), None, log,
                     clear_fde=True, mid_event_pos=cmd.binlog_pos)
    return Start(fi_found, idx, None, log, clear_fde=cmd.binlog_pos > 4)


def _who(version: tuple[int, int, int]) -> str:
    return "source" if version >= (8, 0, 26) else "master"


def _below_4(pos: int, version: tuple[int, int, int]) -> None:
    """check_start_file: MySQL refuses a start before the first event (after the file is
    found; MariaDB starts such a dump at 4)."""
    if pos < 4:
        raise StartError(f"Client requested {_who(version)} to start replication from "
                         "position < 4")


def _next_event(stream: EventStream, fi: int, pos: int) -> int:
    """The index of the first event after ``pos`` (at least 1: the FD is sent first)."""
    return max(1, bisect.bisect_right(stream.files[fi].offsets, pos))


def _event_at(stream: EventStream, fi: int, name: str, pos: int, flavor: str,
              version: tuple[int, int, int]) -> int | None:
    """The index of the event at ``pos``; None when ``pos`` is inside an event (both senders
    read from there: mysql_reader); past the file's end MySQL refuses with "position > file
    size" and MariaDB with "impossible position" (measured against 10.11)."""
    if flavor == "mysql":
        _below_4(pos, version)
    if flavor == "mysql" and pos > stream.files[fi].size:
        # Binlog_sender::check_start_file, before any file is open (so no coordinates are
        # appended); 8.0.26 renamed master to source in it
        raise StartError(f"Client requested {_who(version)} to start replication from "
                         "position > file size")
    idx = stream.files[fi].index_at(pos) if pos > 4 else 0
    if idx is None and (flavor == "mysql" or pos <= stream.files[fi].size) and pos >= 4:
        return None  # inside an event: the sender reads from there (mysql_reader)
    if idx is None:
        raise StartError(
            f"Client requested master to start replication from impossible position; the "
            f"first event '{name}' at {pos}, the last event read from '{name}' at "
            f"4, the last byte read from '{name}' at 4.")
    return idx


def file_gtid_list(stream: EventStream, fi: int) -> list[MariadbGtid] | None:
    """The GTID_LIST a MariaDB binlog file opens with (None: it has none)."""
    f = stream.files[fi]
    for i in range(min(4, f.count)):
        ev = f.event(i)
        if ev[4] == GTID_LIST:
            body = decode_stored(ev, f.checksum).body
            return list(body.gtids) if isinstance(body, GtidListEvent) else None
    return None


def mariadb_binlog_state(stream: EventStream) -> BinlogState:
    """The master's binlog state: the first file's GTID_LIST, then every GTID in the stream."""
    state = BinlogState(file_gtid_list(stream, 0) if stream.files else None)
    for g in stream.gtids:
        if stream.files[g.file_index].event(g.event_index)[4] == MARIA_GTID:
            state.update(g.domain, g.server_id, g.seq)
    return state
