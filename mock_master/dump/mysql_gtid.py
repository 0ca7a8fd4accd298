"""MySQL GTID auto-positioning: where a COM_BINLOG_DUMP_GTID without a file name starts, and
the two errors the source refuses it with.

Facts from MySQL's source (never its code): ``sql/rpl_binlog_sender.cc``
(``Binlog_sender::check_start_file``, 8.0/8.4 and Percona Server 8.x which keeps it), and
``sql/binlog.cc`` (``find_first_log_not_in_gtid_set``, ``read_gtids_from_binlog``,
``report_missing_purged_gtids``):

- any COM_BINLOG_DUMP_GTID needs GTID_MODE = ON (Binlog_sender::init), else "The replication
  sender thread cannot start in AUTO_POSITION mode: this server has GTID_MODE = OFF instead of
  ON." (8.0 source);
- the checks below run only when the dump names no file (the "auto position" branch);
- first: the replica's GTIDs *of the source's own server_uuid* must be a subset of the
  source's ``gtid_executed`` (owned GTIDs count too; the mock has none), else
  ``ER_REPLICA_HAS_MORE_GTIDS_THAN_SOURCE`` (formerly ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER);
- then: the source's ``gtid_purged`` (``lost_gtids``: the PREVIOUS_GTIDS of its oldest binlog
  file) must be a subset of the replica's set, else ``ER_SOURCE_HAS_PURGED_REQUIRED_GTIDS``
  (1789) whose ``%s`` is ``The GTID set sent by the replica is '<set>', and the missing
  transactions are '<purged minus set>'`` (or, when the whole message would pass
  MYSQL_ERRMSG_SIZE = 512, a sentence saying they are too long);
- then the files are read newest first, only up to their PREVIOUS_GTIDS; the first whose
  PREVIOUS_GTIDS is a subset of the replica's set is the start. A file without PREVIOUS_GTIDS
  ends the search with "Found old binary log without GTIDs ...".
- Both errors travel as ``ER_SOURCE_FATAL_ERROR_READING_BINLOG`` (1236, HY000) with the text as
  the message (``set_fatal_error``), without the "; the first event ..." suffix (no file is
  open yet).

The message texts are share/messages_to_clients.txt's (mysql-server, 8.4 era) for servers from
8.0.26 on (the source/replica wording); older 8.0 servers wrote "master"/"slave" (the texts
below, as those servers printed them). GTID sets are written as ``Gtid_set::to_string`` writes
them by default: ``uuid:1-5:7``, SIDs in UUID order separated by ",\\n".
"""

from __future__ import annotations

from typing import Any

from mock_master.dump.errors import StartError
from mock_master.dump.gtid_sets import (
    Triples,
    executed,
    gtid_set,
    in_gtid_set,
    previous_gtids,
    purged,
    subtract,
    to_text,
)
from mock_master.history.sources import MYSQL_GTID, MYSQL_GTID_TAGGED, EventStream

MYSQL_ERRMSG_SIZE = 512

_PURGED = {
    "new": ("Cannot replicate because the source purged required binary logs. Replicate the "
            "missing transactions from elsewhere, or provision a new replica from backup. "
            "Consider increasing the source's binary log expiration period. %s"),
    "old": ("Cannot replicate because the master purged required binary logs. Replicate the "
            "missing transactions from elsewhere, or provision a new slave from backup. "
            "Consider increasing the master's binary log expiration period. %s"),
}
_PURGED_INFO = {
    "new": "The GTID set sent by the replica is '{sent}', and the missing transactions are "
           "'{missing}'",
    "old": "The GTID set sent by the slave is '{sent}', and the missing transactions are "
           "'{missing}'",
}
_TOO_LONG = {
    "new": "The GTID sets and the missing purged transactions are too long to print in this "
           "message. For more information, please see the source's error log or the manual "
           "for GTID_SUBTRACT",
    "old": "The GTID sets and the missing purged transactions are too long to print in this "
           "message. For more information, please see the master's error log or the manual "
           "for GTID_SUBTRACT",
}
_MORE = {
    "new": ("Replica has more GTIDs than the source has, using the source's SERVER_UUID. This "
            "may indicate that the the last binary log file was truncated or lost, e.g., after "
            "a power failure when sync_binlog != 1. The source may have rolled back "
            "transactions that were already replicated to the replica. Replicate any "
            "transactions that source has rolled back from replica to source, and/or commit "
            "empty transactions on source to account for transactions that have been "
            "committed on source but are not included in GTID_EXECUTED."),
    "old": ("Slave has more GTIDs than the master has, using the master's SERVER_UUID. This "
            "may indicate that the end of the binary log was truncated or that the last binary "
            "log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The "
            "master may or may not have rolled back transactions that were already replicated "
            "to the slave. Suggest to replicate any transactions that master has rolled back "
            "from slave to master, and/or commit empty transactions on master to account for "
            "transactions that have been committed on master but are not included in "
            "GTID_EXECUTED."),
}
NO_GTIDS_FILE = ("Found old binary log without GTIDs while looking for the oldest binary log "
                 "that contains any GTID that is not in the given gtid set")


def server_uuid_of(stream: EventStream) -> str | None:
    """The UUID of the newest MySQL GTID in the files: the server that wrote them."""
    for g in reversed(stream.gtids):
        sid, sep, _ = g.gtid.partition(":")  # uuid:gno or uuid:tag:gno
        if sep and "-" in sid:
            return sid.lower()
    return None


def _new_wording(version: tuple[int, int, int]) -> str:
    return "new" if version >= (8, 0, 26) else "old"


GTID_MODE_OFF = ("The replication sender thread cannot start in AUTO_POSITION mode: this "
                 "server has GTID_MODE = OFF instead of ON.")


def check_gtid_mode(stream: EventStream) -> None:
    """Binlog_sender::init: a GTID-protocol dump needs GTID_MODE = ON (the mock's is ON when
    its files hold MySQL GTIDs)."""
    if not any(":" in g.gtid for g in stream.gtids):
        raise StartError(GTID_MODE_OFF)


def check_auto_position(stream: EventStream, skip: Triples, server_uuid: str,
                        version: tuple[int, int, int]) -> None:
    """check_start_file's two checks; raises StartError with the source's text."""
    words = _new_wording(version)
    sent = gtid_set(skip)
    uuid = server_uuid.lower()
    ex = executed(stream)
    # the server UUID's GTIDs, tagged ones included (a tag is a group of the same server's
    # transactions; whether 8.3+'s check covers the tags is not read in the source: taken so)
    own = {k: v for k, v in sent.items() if k.partition(":")[0] == uuid}
    if subtract(own, ex):
        raise StartError(_MORE[words])
    missing = subtract(purged(stream), sent)
    if missing:
        info = _PURGED_INFO[words].format(sent=to_text(sent), missing=to_text(missing))
        fmt = _PURGED[words]
        if len(fmt) - 2 + len(info) > MYSQL_ERRMSG_SIZE:
            info = _TOO_LONG[words]
        raise StartError((fmt % info)[:MYSQL_ERRMSG_SIZE - 1])


def first_file(stream: EventStream, skip: Triples) -> tuple[int, bool]:
    """find_first_log_not_in_gtid_set: the newest file whose PREVIOUS_GTIDS the client's set
    covers, and whether the client has that file's first transaction (then the
    FORMAT_DESCRIPTION's 'created' is cleared)."""
    sent = gtid_set(skip)
    fi = 0
    for k in range(len(stream.files) - 1, -1, -1):
        prev = previous_gtids(stream, k)
        if prev is None:
            raise StartError(NO_GTIDS_FILE)
        if not subtract(gtid_set(prev), sent):
            fi = k
            break
    f = stream.files[fi]
    first: Any = next(f.select((MYSQL_GTID, MYSQL_GTID_TAGGED)), None)
    clear = first is not None and in_gtid_set(first[1], f.checksum, skip)
    return fi, clear
