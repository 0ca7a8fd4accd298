"""Pasted error lines -> :class:`Clue`: which client said it, and where in the binlog it points.

Each pattern is one regular expression over the text a user pastes (a ``SHOW REPLICA STATUS``
field, a server error-log line, a connector's exception, a traceback) and says which position it
gives and what kind it is:

- ``end``: where the failing event *ends* in its file - its header's ``log_pos``, the position
  a replica resumes after it (``end_log_pos``, binlog-connector-java's ``nextPosition``,
  go-mysql's ``LogPos``, python-mysql-replication's ``Log position``);
- ``start``: where an event or a transaction *starts* (a requested dump position, a replica's
  ``We stopped at log ... position``, Debezium's restart ``pos``, ``# at N``).

The real lines each pattern came from are listed in docs/explain.md. Pure: text in, clues out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

END = "end"
START = "start"


@dataclass(slots=True)
class Clue:
    """What one recognised line says."""

    pattern: str  # the pattern's id (docs/explain.md lists them)
    client: str  # who writes such lines
    text: str  # the part of the input that matched
    meaning: str  # what the line means, in one sentence
    binlog_file: str | None = None
    position: int | None = None
    position_kind: str | None = None  # END | START (None: no position)
    gtid: str | None = None  # a GTID (or GTID set) the line names
    error_code: int | None = None
    event_type: str | None = None  # as the client spells it (Write_rows_v1, EXT_UPDATE_ROWS..)
    table: str | None = None
    server_id: int | None = None
    event_size: int | None = None
    timestamp: int | None = None
    #: further coordinates the line gives (name -> value), e.g. the last event read
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """``end:FILE:POS`` / ``start:FILE:POS`` / ``GTID`` (for messages)."""
        if self.position is not None:
            return f"{self.position_kind}:{self.binlog_file or '?'}:{self.position}"
        return self.gtid or "-"


Build = Callable[["re.Match[str]"], Clue]


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


_FILE = r"[^\s',;:()\"]+"

# ------------------------------------------------------------------------------- the patterns
#: MariaDB/MySQL replica SQL thread (Last_SQL_Error, error log): a row event failed to apply
_APPLY = re.compile(
    r"Could not execute (?P<type>\w+) event on table (?P<table>[^;]+); (?P<why>.*?)"
    r",? Error_code: (?P<code>\d+);.*?the event's (?:master|source) log (?P<file>" + _FILE
    + r"), end_log_pos (?P<pos>\d+)(?:, Gtid (?P<gtid>\d+-\d+-\d+))?", re.S)
#: MySQL 5.7/8.x multi-threaded replica: the coordinator's summary of a worker's failure
_WORKER = re.compile(
    r"Worker \d+ failed executing transaction '(?P<gtid>[^']*)' at (?:master|source) log "
    r"(?P<file>" + _FILE + r"), end_log_pos (?P<pos>\d+)")
#: MariaDB error log when the SQL thread stops: where it will start again
_STOPPED = re.compile(
    r"We stopped at log '(?P<file>[^']+)' position (?P<pos>\d+)(?:; GTID position "
    r"'(?P<gtid>[^']*)')?")
#: MariaDB error log: "Slave SQL: Error executing row event: '...', Gtid 0-1-3, Internal
#: MariaDB error code: 1146" (and Last_SQL_Error's shorter form without the GTID)
_ROW_EVENT = re.compile(
    r"Error executing row event: '(?P<why>.*?)'(?=,\s*Gtid|,\s*Internal|\s*$)"
    r"(?:, Gtid (?P<gtid>\d+-\d+-\d+))?(?:, Internal MariaDB error code: (?P<code>\d+))?",
    re.S | re.M)
#: ERR 1236, the dump thread: a start position that is past the end / not an event boundary /
#: a damaged event; the source names the event it tried and the last one it read
_FIRST_EVENT = re.compile(
    r"(?P<why>[^';]*(?:;[^']*?)?); the first event '(?P<file>[^']+)' at (?P<pos>\d+), the last "
    r"event read from '(?P<lfile>[^']+)' at (?P<lpos>\d+), the last byte read from "
    r"'(?P<bfile>[^']+)' at (?P<bpos>\d+)")
#: SHOW REPLICA STATUS\\G pasted whole: the SQL thread's next transaction starts here
_STATUS_EXEC = re.compile(r"Relay_(?:Master|Source)_Log_File:\s*(?P<file>\S+).*?"
                          r"Exec_(?:Master|Source)_Log_Pos:\s*(?P<pos>\d+)", re.S)
#: SHOW REPLICA STATUS\\G pasted whole: the IO thread's next event starts here
_STATUS_READ = re.compile(r"(?<![A-Za-z_])(?:Master|Source)_Log_File:\s*(?P<file>\S+).*?"
                          r"Read_(?:Master|Source)_Log_Pos:\s*(?P<pos>\d+)", re.S)
#: MariaDB replica IO thread (Last_IO_Error 1595): an event it received was rejected
_QUEUE = re.compile(r"Relay log write failure: could not queue event from (?:master|source)")
_NO_FIRST_LOG = re.compile(r"Could not find first log file name in binary log index file")
_GTID_STATE_GONE = re.compile(
    r"Could not find GTID state requested by (?:slave|replica) in any binlog files")
_GTID_NOT_IN = re.compile(
    r"connecting (?:slave|replica) requested to start from GTID (?P<gtid>[\d,\- ]+?), which is "
    r"not in the master's binlog")
_GTID_AHEAD = re.compile(
    r"(?:slave|replica) has (?:more )?GTID (?P<gtid>\d+-\d+-\d+)[^.]*?which is not in the "
    r"master's binlog")
_MYSQL_PURGED = re.compile(
    r"(?:purged (?:required )?binary logs|has purged binary logs containing GTIDs)[^.]*"
    r"(?:.*?missing transactions are '(?P<gtid>[^']*)')?", re.S)
_CHECKSUM = re.compile(
    r"(?:event checksum verification failed|did not pass crc check|Event crc check failed|"
    r"checksum mismatch)", re.I)
_MAX_PACKET = re.compile(r"log event entry exceeded max_allowed_packet", re.I)
#: mysql-binlog-connector-java (Debezium, Maxwell, ...): EventHeaderV4.toString()
_JAVA_HEADER = re.compile(
    r"EventHeaderV4\{timestamp=(?P<ts>\d+), eventType=(?P<type>\w+), serverId=(?P<sid>\d+), "
    r"headerLength=(?P<hl>\d+), dataLength=(?P<dl>\d+), nextPosition=(?P<pos>\d+), "
    r"flags=(?P<flags>\d+)\}")
#: Debezium's offsets in its messages: the restart point of the transaction being read
_DEBEZIUM_OFFSET = re.compile(r"\bfile=(?P<file>" + _FILE + r"), pos=(?P<pos>\d+)")
_DEBEZIUM_SOURCE = re.compile(
    r"currentBinlogFilename=(?P<file>" + _FILE + r"), currentBinlogPosition=(?P<pos>\d+)")
#: go-mysql's EventError: "Header %#v, Data %q, Err: %v"
_GO_HEADER = re.compile(
    r"EventHeader\{Timestamp:(?P<ts>0x[0-9a-f]+|\d+), EventType:(?P<type>0x[0-9a-f]+|\d+|\w+), "
    r"ServerID:(?P<sid>0x[0-9a-f]+|\d+), EventSize:(?P<size>0x[0-9a-f]+|\d+), "
    r"LogPos:(?P<pos>0x[0-9a-f]+|\d+), Flags:(?P<flags>0x[0-9a-f]+|\d+)\}", re.I)
#: python-mysql-replication's event dump (event.dump()): "Log position: N"
_PY_DUMP = re.compile(r"=== (?P<type>\w+) ===.*?Log position: (?P<pos>\d+)(?:.*?Event size: "
                      r"(?P<size>\d+))?", re.S)
#: a pymysql error in a python-mysql-replication traceback: (code, "message")
_PYMYSQL = re.compile(r"pymysql\.err\.\w+: \((?P<code>\d+), [\"'](?P<msg>.*?)[\"']\)\s*$",
                      re.M | re.S)
#: mysqlbinlog / mariadb-binlog output: "# at N" then "... end_log_pos M"
_BINLOG_AT = re.compile(r"^# at (?P<pos>\d+)\s*$", re.M)
_END_LOG_POS = re.compile(r"\bend_log_pos[ =:]+(?P<pos>\d+)")
#: a coordinate written by hand or by binlogscope: end:FILE:POS, start:FILE:POS, FILE:POS
_COORD = re.compile(r"(?:(?P<kind>end|start):)?(?P<file>[\w.\-/]*?[\w\-]+\.\d{3,}):(?P<pos>\d+)")
_ERROR_1236 = re.compile(r"(?:Got fatal error|ERROR:? ?Got error reading packet from server|"
                         r"error) (?P<code>1236)?", re.I)
_ERRCODE = re.compile(r"(?:Got fatal error|Error_code:|errno|error code:?) ?(?P<code>\d{4})",
                      re.I)


def _code(text: str) -> int | None:
    m = _ERRCODE.search(text)
    return _int(m.group("code")) if m else None


def _apply(m: re.Match[str]) -> Clue:
    return Clue("replica-apply", "MariaDB/MySQL replica SQL thread (Last_SQL_Error)", m.group(0),
                f"the replica could not apply a {m.group('type')} event: "
                f"{m.group('why').strip()}", m.group("file"), int(m.group("pos")), END,
                gtid=m.group("gtid"), error_code=int(m.group("code")),
                event_type=m.group("type"), table=m.group("table").strip())


def _worker(m: re.Match[str]) -> Clue:
    gtid = m.group("gtid")
    return Clue("replica-worker", "MySQL multi-threaded replica (Last_SQL_Error)", m.group(0),
                "a replica worker failed to apply the transaction that ends here",
                m.group("file"), int(m.group("pos")), END,
                gtid=None if gtid in ("", "ANONYMOUS") else gtid)


def _stopped(m: re.Match[str]) -> Clue:
    return Clue("replica-stopped-at", "MariaDB replica error log (SQL thread aborted)",
                m.group(0), "the SQL thread stopped; it starts again with the transaction that "
                "starts here", m.group("file"), int(m.group("pos")), START,
                gtid=m.group("gtid") or None)


def _row_event(m: re.Match[str]) -> Clue:
    return Clue("replica-row-event", "MariaDB replica SQL thread (Last_SQL_Error / error log)",
                m.group(0), f"a row event failed to apply: {m.group('why')}",
                gtid=m.group("gtid"), error_code=_int(m.group("code")))


def _first_event(m: re.Match[str]) -> Clue:
    why = m.group("why").strip().lstrip("'").strip()
    return Clue("err-1236-position", "MariaDB/MySQL source dump thread (ERR 1236)", m.group(0),
                f"the source stopped the dump: {why}", m.group("file"), int(m.group("pos")),
                START, error_code=1236,
                extra={"last_event_read": f"{m.group('lfile')}:{m.group('lpos')}",
                       "last_byte_read": f"{m.group('bfile')}:{m.group('bpos')}"})


def _status_exec(m: re.Match[str]) -> Clue:
    return Clue("replica-status-exec", "SHOW REPLICA/SLAVE STATUS (Relay_Master_Log_File, "
                "Exec_Master_Log_Pos)", m.group(0), "the replica's SQL thread has applied "
                "everything before this position: the next transaction starts here",
                m.group("file"), int(m.group("pos")), START)


def _status_read(m: re.Match[str]) -> Clue:
    return Clue("replica-status-read", "SHOW REPLICA/SLAVE STATUS (Master_Log_File, "
                "Read_Master_Log_Pos)", m.group(0), "the replica's IO thread has queued "
                "everything before this position: the event it read next starts here",
                m.group("file"), int(m.group("pos")), START)


def _queue(m: re.Match[str]) -> Clue:
    return Clue("replica-io-queue", "MariaDB replica IO thread (Last_IO_Error 1595)", m.group(0),
                "the replica rejected an event it received (the error log says why: a "
                "checksum, a size, an event out of order); it is the event at "
                "Read_Master_Log_Pos", error_code=1595)


def _no_first_log(m: re.Match[str]) -> Clue:
    return Clue("err-1236-no-first-log", "MariaDB/MySQL source dump thread (ERR 1236)",
                m.group(0), "the binlog file the client asked for is not in the source's index "
                "(purged, or a name from another server)", error_code=1236)


def _gtid_state_gone(m: re.Match[str]) -> Clue:
    return Clue("err-1236-gtid-purged", "MariaDB source dump thread (ERR 1236)", m.group(0),
                "the binlog holding the replica's GTID position has been purged", error_code=1236)


def _gtid_not_in(m: re.Match[str]) -> Clue:
    return Clue("err-1236-gtid-not-in-binlog", "MariaDB source dump thread (ERR 1236)",
                m.group(0), "the replica asked for a GTID the source's binlog does not hold",
                gtid=m.group("gtid").strip(), error_code=1236)


def _mysql_purged(m: re.Match[str]) -> Clue:
    gtid = m.groupdict().get("gtid")
    return Clue("err-1236-gtid-purged-mysql", "MySQL source dump thread (ERR 1236)", m.group(0),
                "the source purged binlogs holding GTIDs the replica still needs",
                gtid=gtid or None, error_code=1236)


def _checksum(m: re.Match[str]) -> Clue:
    return Clue("checksum", "replica / client checksum check", m.group(0),
                "an event's CRC32 did not match its bytes")


def _max_packet(m: re.Match[str]) -> Clue:
    return Clue("max-allowed-packet", "source dump thread (ERR 1236)", m.group(0),
                "an event is bigger than the max_allowed_packet in force", error_code=1236)


def _java(m: re.Match[str]) -> Clue:
    return Clue("binlog-connector-java", "mysql-binlog-connector-java (Debezium, Maxwell)",
                m.group(0), "the connector failed on (or reports) the event that ends here",
                None, int(m.group("pos")), END, event_type=m.group("type"),
                server_id=int(m.group("sid")),
                event_size=int(m.group("hl")) + int(m.group("dl")),
                timestamp=int(m.group("ts")) // 1000)


def _debezium(m: re.Match[str]) -> Clue:
    return Clue("debezium-offset", "Debezium (offsets in its log)", m.group(0),
                "Debezium's restart point: the start of the transaction it was reading",
                m.group("file"), int(m.group("pos")), START)


def _go(m: re.Match[str]) -> Clue:
    return Clue("go-mysql", "go-mysql (EventError)", m.group(0),
                "go-mysql failed to decode the event that ends here", None,
                _int(m.group("pos")), END, event_type=str(_int(m.group("type"))
                                                          or m.group("type")),
                server_id=_int(m.group("sid")), event_size=_int(m.group("size")),
                timestamp=_int(m.group("ts")))


def _py_dump(m: re.Match[str]) -> Clue:
    return Clue("python-mysql-replication-dump", "python-mysql-replication (event.dump())",
                m.group(0), "the event python-mysql-replication printed, ending here", None,
                int(m.group("pos")), END, event_type=m.group("type"),
                event_size=_int(m.group("size")))


def _binlog_at(m: re.Match[str]) -> Clue:
    return Clue("mysqlbinlog-at", "mysqlbinlog / mariadb-binlog output", m.group(0),
                "an event that starts here", None, int(m.group("pos")), START)


def _end_log_pos(m: re.Match[str]) -> Clue:
    return Clue("end-log-pos", "mysqlbinlog / replica messages", m.group(0),
                "an event that ends here", None, int(m.group("pos")), END)


def _coord(m: re.Match[str]) -> Clue:
    kind = m.group("kind")
    return Clue("coordinate", "a coordinate (FILE:POS, end:FILE:POS, start:FILE:POS)",
                m.group(0), "the event that " + ("ends" if kind == END else "starts") + " here",
                m.group("file"), int(m.group("pos")), kind or START)


#: (regex, builder), most specific first; a pattern's match region is not matched again
PATTERNS: tuple[tuple[re.Pattern[str], Build], ...] = (
    (_APPLY, _apply),
    (_WORKER, _worker),
    (_FIRST_EVENT, _first_event),
    (_STOPPED, _stopped),
    (_ROW_EVENT, _row_event),
    (_STATUS_EXEC, _status_exec),
    (_STATUS_READ, _status_read),
    (_QUEUE, _queue),
    (_NO_FIRST_LOG, _no_first_log),
    (_GTID_STATE_GONE, _gtid_state_gone),
    (_GTID_NOT_IN, _gtid_not_in),
    (_MYSQL_PURGED, _mysql_purged),
    (_CHECKSUM, _checksum),
    (_MAX_PACKET, _max_packet),
    (_JAVA_HEADER, _java),
    (_DEBEZIUM_OFFSET, _debezium),
    (_DEBEZIUM_SOURCE, _debezium),
    (_GO_HEADER, _go),
    (_PY_DUMP, _py_dump),
    (_BINLOG_AT, _binlog_at),
    (_END_LOG_POS, _end_log_pos),
    (_COORD, _coord),
)

#: the ids of the patterns (docs/explain.md lists each with the real line it came from)
PATTERN_IDS = ("replica-apply", "replica-worker", "err-1236-position", "replica-stopped-at",
               "replica-row-event", "replica-status-exec", "replica-status-read",
               "replica-io-queue", "err-1236-no-first-log",
               "err-1236-gtid-purged", "err-1236-gtid-not-in-binlog",
               "err-1236-gtid-purged-mysql", "checksum",
               "max-allowed-packet", "binlog-connector-java", "debezium-offset", "go-mysql",
               "python-mysql-replication-dump", "mysqlbinlog-at", "end-log-pos", "coordinate")


def recognise(text: str) -> list[Clue]:
    """Every clue in ``text``, in the order of :data:`PATTERNS` (most specific first); a
    stretch of text that one pattern matched is not read again by a later one."""
    taken: list[tuple[int, int]] = []
    out: list[Clue] = []
    for rx, build in PATTERNS:
        for m in rx.finditer(text):
            a, b = m.span()
            if rx not in (_STATUS_EXEC, _STATUS_READ):  # a status paste spans other lines
                if any(a < e and s < b for s, e in taken):
                    continue
                taken.append((a, b))
            out.append(build(m))
    py = _PYMYSQL.search(text)
    if py is not None:  # a traceback: the server's message is the clue; say who raised it
        for c in out:
            if c.error_code is None:
                c.error_code = int(py.group("code"))
        if not out:
            out.append(Clue("pymysql-error", "python-mysql-replication (pymysql error)",
                            py.group(0), py.group("msg"), error_code=int(py.group("code"))))
        elif "pymysqlreplication" in text or "pymysql" in text:
            for c in out:
                c.client = f"{c.client}, raised in python-mysql-replication"
    if out:
        code = _code(text)
        for c in out:
            if c.error_code is None and code is not None:
                c.error_code = code
    return out


_SQL_SIDE = frozenset(("replica-apply", "replica-worker", "replica-row-event",
                       "replica-stopped-at"))


def best(clues: list[Clue]) -> Clue | None:
    """The clue to answer: the first with a position, else the first. A pasted status has
    both threads' positions: the SQL thread's for an apply error, else the IO thread's."""
    sql_side = any(c.pattern in _SQL_SIDE for c in clues)
    skip = "replica-status-read" if sql_side else "replica-status-exec"
    both = {c.pattern for c in clues} >= {"replica-status-read", "replica-status-exec"}
    for c in clues:
        if c.position is not None and not (both and c.pattern == skip):
            return c
    return clues[0] if clues else None


__all__ = ["END", "PATTERNS", "PATTERN_IDS", "START", "Clue", "best", "recognise"]
