"""Where a dump starts: the file and event a COM_BINLOG_DUMP(_GTID) asks for.

:func:`find_start` reads the dump command (file + position, a MariaDB GTID state in
``@slave_connect_state``, or a MySQL GTID set) against the served :class:`EventStream` and
returns a :class:`Start`, or raises :class:`StartError` with the error the server would send.
:func:`in_gtid_set` tells whether a MySQL GTID event's transaction is in the client's set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binlogscope.wire.binlog.gtid_events import GtidEvent
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid, gtid_set_text
from mock_master.sources import EventStream, decode_stored

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


class StartError(Exception):
    """The dump cannot start: the ERR packet's code and message."""

    def __init__(self, message: str, code: int = ER_MASTER_FATAL_ERROR_READING_BINLOG) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class Start:
    file_index: int
    event_index: int
    #: COM_BINLOG_DUMP_GTID: (uuid, start, end) intervals the client already has
    skip_gtids: list[tuple[str, int, int]] | None
    #: what the run log records about the dump command
    log: dict[str, Any]


_NO_FILE = "Could not find first log file name in binary log index file"


def find_start(stream: EventStream, cmd: ComBinlogDump | ComBinlogDumpGtid,
               user_vars: dict[str, Any], flavor: str) -> Start:
    if isinstance(cmd, ComBinlogDumpGtid):
        log = {"command": "COM_BINLOG_DUMP_GTID", "server_id": cmd.server_id,
               "file": cmd.binlog_filename, "pos": cmd.binlog_pos, "flags": cmd.flags,
               "gtid_set": gtid_set_text(cmd.gtid_set) if cmd.gtid_set else None}
        skip = [(str(s.sid), iv.start, iv.end) for s in cmd.gtid_set or ()
                for iv in s.intervals]
        fi = 0
        if cmd.binlog_filename:
            found = stream.file_index(cmd.binlog_filename)
            if found is None:
                raise StartError(_NO_FILE)
            fi = found
        return Start(fi, 0, skip, log)
    state = user_vars.get("slave_connect_state")
    log = {"command": "COM_BINLOG_DUMP", "server_id": cmd.server_id,
           "file": cmd.binlog_filename, "pos": cmd.binlog_pos, "flags": cmd.flags,
           "gtid_state": None if state is None else str(state)}
    name = cmd.binlog_filename.split("\0", 1)[0]  # a C string on the server side
    if flavor == "mariadb" and state is not None:
        # a GTID dump: MariaDB ignores the file name and position then
        fi, ei = _mariadb_gtid_start(stream, str(state))
        return Start(fi, ei, None, log)
    if not name:
        return Start(0, 0, None, log)
    fi_found = stream.file_index(name)
    if fi_found is None:
        raise StartError(_NO_FILE)
    idx = stream.files[fi_found].index_at(cmd.binlog_pos) if cmd.binlog_pos > 4 else 0
    if idx is None:
        raise StartError(
            f"Client requested master to start replication from impossible position; the "
            f"first event '{name}' at {cmd.binlog_pos}, the last event read from '{name}' at "
            f"4, the last byte read from '{name}' at 4.")
    return Start(fi_found, idx, None, log)


def _mariadb_gtid_start(stream: EventStream, state: str) -> tuple[int, int]:
    wanted: dict[int, tuple[int, int]] = {}
    for part in state.replace(" ", "").split(","):
        if not part:
            continue
        try:
            d, s, n = (int(x) for x in part.split("-"))
        except ValueError:
            raise StartError(f"Could not parse GTID list: {state!r}") from None
        wanted[d] = (s, n)
    if not wanted:
        return 0, 0
    start: tuple[int, int] | None = None
    for d, (s, n) in wanted.items():
        idx = next((i for i, g in enumerate(stream.gtids)
                    if g.domain == d and g.server_id == s and g.seq == n), None)
        if idx is None:
            raise StartError(f"Error: connecting slave requested to start from GTID "
                             f"{d}-{s}-{n}, which is not in the master's binlog")
        nxt = stream.gtids[idx + 1] if idx + 1 < len(stream.gtids) else None
        here = (nxt.file_index, nxt.event_index) if nxt is not None else (
            len(stream.files) - 1, stream.files[-1].count)
        if start is None or here < start:
            start = here
    assert start is not None
    return start


def in_gtid_set(ev: bytes, checksum: bool, skip: list[tuple[str, int, int]]) -> bool:
    """Is the transaction this MySQL GTID event starts in the client's GTID set?"""
    g = decode_stored(ev, checksum).body
    if not isinstance(g, GtidEvent):
        return False
    return any(s == g.sid and a <= g.gno < b for s, a, b in skip)
