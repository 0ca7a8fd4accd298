"""The error lines ``explain`` recognises: each one as a real client or server printed it.

The MariaDB lines were printed by a real MariaDB 10.11 primary and replica made to fail
(scripts in docs/explain.md: a duplicate key, a missing row, a missing table, an impossible
start position, a position inside an event, a purged binlog file, a purged and a future GTID);
the python-mysql-replication and mariadb-binlog lines by those clients against the same
servers. The binlog-connector-java and go-mysql lines follow those projects' own formatting code
(EventHeaderV4.toString, EventError.Error's ``Header %#v``), as docs/explain.md cites.
"""

from __future__ import annotations

import pytest

from binlogscope.diagnose.patterns import END, PATTERN_IDS, START, best, recognise

# (line, pattern, file, position, kind, gtid, error code)
REAL = [
    ("Could not execute Write_rows_v1 event on table test.t; Duplicate entry '2' for key "
     "'PRIMARY', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's master log "
     "mysql-bin.000001, end_log_pos 1073",
     "replica-apply", "mysql-bin.000001", 1073, END, None, 1062),
    ("Could not execute Update_rows_v1 event on table test.t; Can't find record in 't', "
     "Error_code: 1032; handler error HA_ERR_KEY_NOT_FOUND; the event's master log "
     "mysql-bin.000001, end_log_pos 1314",
     "replica-apply", "mysql-bin.000001", 1314, END, None, 1032),
    ("2026-11-27 22:52:42 13 [ERROR] Slave SQL: Error executing row event: 'Table 'test.t' "
     "doesn't exist', Gtid 0-1-3, Internal MariaDB error code: 1146",
     "replica-row-event", None, None, None, "0-1-3", 1146),
    ("2026-11-27 22:52:42 13 [ERROR] Error running query, slave SQL thread aborted. Fix the "
     "problem, and restart the slave SQL thread with \"SLAVE START\". We stopped at log "
     "'mysql-bin.000001' position 640",
     "replica-stopped-at", "mysql-bin.000001", 640, START, None, None),
    ("Got fatal error 1236 from master when reading data from binary log: 'Client requested "
     "master to start replication from impossible position; the first event "
     "'mysql-bin.000001' at 99999999, the last event read from 'mysql-bin.000001' at 4, the "
     "last byte read from 'mysql-bin.000001' at 4.'",
     "err-1236-position", "mysql-bin.000001", 99999999, START, None, 1236),
    ("Got fatal error 1236 from master when reading data from binary log: 'binlog truncated in "
     "the middle of event; consider out of disk space on master; the first event "
     "'mysql-bin.000001' at 1111, the last event read from 'mysql-bin.000001' at 1111, the "
     "last byte read from 'mysql-bin.000001' at 1130.'",
     "err-1236-position", "mysql-bin.000001", 1111, START, None, 1236),
    ("Got fatal error 1236 from master when reading data from binary log: 'Could not find "
     "first log file name in binary log index file'",
     "err-1236-no-first-log", None, None, None, None, 1236),
    ("Got fatal error 1236 from master when reading data from binary log: 'Could not find "
     "GTID state requested by slave in any binlog files. Probably the slave state is too old "
     "and required binlog files have been purged.'",
     "err-1236-gtid-purged", None, None, None, None, 1236),
    ("Got fatal error 1236 from master when reading data from binary log: 'Error: connecting "
     "slave requested to start from GTID 0-1-99999, which is not in the master's binlog'",
     "err-1236-gtid-not-in-binlog", None, None, None, "0-1-99999", 1236),
    ("ERROR: Got error reading packet from server: Could not find first log file name in "
     "binary log index file",
     "err-1236-no-first-log", None, None, None, None, 1236),
    ("ERROR: Got error reading packet from server: Client requested master to start "
     "replication from impossible position; the first event 'mysql-bin.000003' at 99999999, "
     "the last event read from 'mysql-bin.000003' at 4, the last byte read from "
     "'mysql-bin.000003' at 4.",
     "err-1236-position", "mysql-bin.000003", 99999999, START, None, 1236),
    ('Traceback (most recent call last):\n  File ".../pymysqlreplication/binlogstream.py", '
     "line 613, in fetchone\n    pkt = self._stream_connection._read_packet()\n"
     "pymysql.err.OperationalError: (1236, 'Could not find first log file name in binary log "
     "index file')",
     "err-1236-no-first-log", None, None, None, None, 1236),
    ('Traceback (most recent call last):\n  File ".../pymysqlreplication/binlogstream.py", '
     "line 613, in fetchone\npymysql.err.OperationalError: (1236, \"Client requested master "
     "to start replication from impossible position; the first event 'mysql-bin.000003' at "
     "99999999, the last event read from 'mysql-bin.000003' at 4, the last byte read from "
     "'mysql-bin.000003' at 4.\")",
     "err-1236-position", "mysql-bin.000003", 99999999, START, None, 1236),
]

# formats taken from the clients' sources (see the module docstring)
FROM_SOURCE = [
    ("com.github.shyiko.mysql.binlog.event.deserialization.EventDataDeserializationException: "
     "Failed to deserialize data of EventHeaderV4{timestamp=1647859233000, eventType="
     "EXT_UPDATE_ROWS, serverId=1, headerLength=19, dataLength=1039, nextPosition=1068, "
     "flags=0}", "binlog-connector-java", None, 1068, END),
    ("Header &replication.EventHeader{Timestamp:0x6560a1b2, EventType:0x1e, ServerID:0x1, "
     "EventSize:0x3a, LogPos:0x1d4, Flags:0x0}, Data \"\\x01\", Err: runtime error",
     "go-mysql", None, 0x1D4, END),
    ("=== WriteRowsEvent ===\nDate: 2026-11-27T22:52:43\nLog position: 1073\nEvent size: 21\n",
     "python-mysql-replication-dump", None, 1073, END),
    ("Encountered change event at offset {ts_sec=1795819963, file=mysql-bin.000001, pos=872, "
     "row=1, server_id=1, event=2}", "debezium-offset", "mysql-bin.000001", 872, START),
    ("#261127 22:52:43 server id 1  end_log_pos 1073 CRC32 0x3bc2a5b6 \tWrite_rows: table id "
     "18 flags: STMT_END_F", "end-log-pos", None, 1073, END),
    ("end:mysql-bin.000004:1341", "coordinate", "mysql-bin.000004", 1341, END),
    ("mysql-bin.000004:1262", "coordinate", "mysql-bin.000004", 1262, START),
    ("Worker 1 failed executing transaction 'ANONYMOUS' at source log binlog.000002, "
     "end_log_pos 1234; Could not execute Write_rows event on table d.t",
     "replica-worker", "binlog.000002", 1234, END),
]


@pytest.mark.parametrize(("line", "pattern", "file", "pos", "kind", "gtid", "code"), REAL)
def test_real_lines(line: str, pattern: str, file: str | None, pos: int | None,
                    kind: str | None, gtid: str | None, code: int | None) -> None:
    clue = best(recognise(line))
    assert clue is not None
    assert (clue.pattern, clue.binlog_file, clue.position, clue.position_kind, clue.gtid,
            clue.error_code) == (pattern, file, pos, kind, gtid, code)


@pytest.mark.parametrize(("line", "pattern", "file", "pos", "kind"), FROM_SOURCE)
def test_client_formats(line: str, pattern: str, file: str | None, pos: int, kind: str
                        ) -> None:
    clue = best(recognise(line))
    assert clue is not None
    assert (clue.pattern, clue.binlog_file, clue.position, clue.position_kind) == (
        pattern, file, pos, kind)


def test_java_header_fields() -> None:
    clue = best(recognise(FROM_SOURCE[0][0]))
    assert clue is not None
    assert (clue.event_type, clue.server_id, clue.event_size, clue.timestamp) == (
        "EXT_UPDATE_ROWS", 1, 19 + 1039, 1647859233)


def test_show_slave_status_paste() -> None:
    """A whole SHOW SLAVE STATUS\\G: the SQL error has no position, the status does."""
    text = ("Relay_Master_Log_File: mysql-bin.000001\n  Slave_IO_Running: Yes\n"
            "  Slave_SQL_Running: No\n  Last_SQL_Errno: 1146\n  Last_SQL_Error: Error executing "
            "row event: 'Table 'test.t' doesn't exist'\n  Exec_Master_Log_Pos: 640\n")
    clues = recognise(text)
    assert [c.pattern for c in clues] == ["replica-row-event", "replica-status-exec"]
    clue = best(clues)
    assert clue is not None and clue.where == "start:mysql-bin.000001:640"


def test_every_pattern_is_tested() -> None:
    tested = {p for _, p, *_ in REAL} | {p for _, p, *_ in FROM_SOURCE} | {
        "replica-status-exec", "replica-status-read", "replica-io-queue", "checksum"}
    untested = set(PATTERN_IDS) - tested
    # checksum and max_allowed_packet lines come from a served corruption (test_explain_real)
    assert untested <= {"checksum", "max-allowed-packet", "err-1236-gtid-purged-mysql",
                        "mysqlbinlog-at"}, untested


def test_nothing_recognised() -> None:
    assert recognise("the weather is fine") == []


def test_error_log_apply_line_carries_the_gtid() -> None:
    line = ("2026-11-27 22:52:43 22 [ERROR] Slave SQL: Could not execute Write_rows_v1 event on "
            "table test.t; Duplicate entry '2' for key 'PRIMARY', Error_code: 1062; handler "
            "error HA_ERR_FOUND_DUPP_KEY; the event's master log mysql-bin.000001, end_log_pos "
            "1073, Gtid 0-1-4, Internal MariaDB error code: 1062")
    clue = best(recognise(line))
    assert clue is not None and (clue.where, clue.gtid) == ("end:mysql-bin.000001:1073",
                                                            "0-1-4")


def test_io_thread_status_paste() -> None:
    """A real MariaDB replica whose source sent an event with a bad CRC32 (the mock master's
    corrupt_checksum_at): Last_IO_Error and the status give the event's start."""
    text = ("Master_Log_File: mysql-bin.000001\nRead_Master_Log_Pos: 1495\n"
            "Relay_Master_Log_File: mysql-bin.000001\nExec_Master_Log_Pos: 1453\n"
            "Last_IO_Errno: 1595\nLast_IO_Error: Relay log write failure: could not queue "
            "event from master\n")
    clues = recognise(text)
    assert {c.pattern for c in clues} >= {"replica-io-queue", "replica-status-read",
                                          "replica-status-exec"}
    clue = best(clues)
    assert clue is not None and clue.where == "start:mysql-bin.000001:1495"
    log = ("2026-11-27 23:51:42 15 [ERROR] Slave I/O: Replication event checksum verification "
           "failed while reading from network, Internal MariaDB error code: 1743")
    c = best(recognise(log))
    assert c is not None and (c.pattern, c.error_code) == ("checksum", 1743)
