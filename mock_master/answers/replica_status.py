"""SHOW SLAVE STATUS / SHOW REPLICA STATUS / SHOW ALL SLAVES STATUS of the MariaDB flavour: the
mock master is no replica, so the answer is the server's empty result - its column definitions
as MariaDB 10.11 sends them (taken from the real server: tests/mock_master/
test_mm_show_replicas.py compares them field by field; lengths in characters, times the
connection charset's bytes per character).

MySQL's 50-odd columns were not checked against a server (none here): the MySQL flavour answers
only which statement a version has (SHOW REPLICA STATUS from 8.0.22, SHOW SLAVE STATUS until
8.4) and refuses the rest with ERR 1105 (a scenario [[answers]] entry can give them)."""

from __future__ import annotations

from binlogscope.wire.results import ColumnDefinition41
from mock_master.answers.base import (
    BINARY,
    NOT_NULL,
    T_LONG,
    T_LONGLONG,
    UNSIGNED,
    Answer,
    int_col,
    string_col,
)

T_DOUBLE = 5
_S, _L, _LL = "s", "l", "ll"
#: (name, kind, characters or length)
_SLAVE_STATUS: list[tuple[str, str, int]] = [
    ("Slave_IO_State", _S, 30), ("Master_Host", _S, 766), ("Master_User", _S, 385),
    ("Master_Port", _L, 7), ("Connect_Retry", _L, 10), ("Master_Log_File", _S, 512),
    ("Read_Master_Log_Pos", _LL, 10), ("Relay_Log_File", _S, 512),
    ("Relay_Log_Pos", _LL, 10), ("Relay_Master_Log_File", _S, 512),
    ("Slave_IO_Running", _S, 3), ("Slave_SQL_Running", _S, 3), ("Replicate_Do_DB", _S, 20),
    ("Replicate_Ignore_DB", _S, 20), ("Replicate_Do_Table", _S, 20),
    ("Replicate_Ignore_Table", _S, 23), ("Replicate_Wild_Do_Table", _S, 24),
    ("Replicate_Wild_Ignore_Table", _S, 28), ("Last_Errno", _L, 4), ("Last_Error", _S, 20),
    ("Skip_Counter", _L, 10), ("Exec_Master_Log_Pos", _LL, 10), ("Relay_Log_Space", _LL, 10),
    ("Until_Condition", _S, 6), ("Until_Log_File", _S, 512), ("Until_Log_Pos", _LL, 10),
    ("Master_SSL_Allowed", _S, 7), ("Master_SSL_CA_File", _S, 512),
    ("Master_SSL_CA_Path", _S, 512), ("Master_SSL_Cert", _S, 512),
    ("Master_SSL_Cipher", _S, 512), ("Master_SSL_Key", _S, 512),
    ("Seconds_Behind_Master", _LL, 10), ("Master_SSL_Verify_Server_Cert", _S, 3),
    ("Last_IO_Errno", _L, 4), ("Last_IO_Error", _S, 20), ("Last_SQL_Errno", _L, 4),
    ("Last_SQL_Error", _S, 20), ("Replicate_Ignore_Server_Ids", _S, 512),
    ("Master_Server_Id", _L, 8), ("Master_SSL_Crl", _S, 512), ("Master_SSL_Crlpath", _S, 512),
    ("Using_Gtid", _S, 11), ("Gtid_IO_Pos", _S, 30), ("Replicate_Do_Domain_Ids", _S, 512),
    ("Replicate_Ignore_Domain_Ids", _S, 512), ("Parallel_Mode", _S, 12),
    ("SQL_Delay", _L, 10), ("SQL_Remaining_Delay", _L, 8), ("Slave_SQL_Running_State", _S, 20),
    ("Slave_DDL_Groups", _LL, 20), ("Slave_Non_Transactional_Groups", _LL, 20),
    ("Slave_Transactional_Groups", _LL, 20), ("Replicate_Rewrite_DB", _S, 23),
]
_ALL_FIRST = [("Connection_name", _S, 192), ("Slave_SQL_State", _S, 30)]
_ALL_LAST = [("Retried_transactions", _L, 10), ("Max_relay_log_size", _LL, 10),
             ("Executed_log_entries", _L, 10), ("Slave_received_heartbeats", _L, 10)]


def _col(name: str, kind: str, n: int, cs: int) -> ColumnDefinition41:
    if kind == _S:
        return string_col(name, n, cs, flags=NOT_NULL)
    return int_col(name, n, NOT_NULL | UNSIGNED | BINARY,
                   type_code=T_LONG if kind == _L else T_LONGLONG)


def mariadb_slave_status(all_slaves: bool, cs: int, gtid_slave_pos: str = "") -> Answer:
    """The empty answer of SHOW [ALL] SLAVE(S) STATUS (no replication is configured);
    ``Gtid_Slave_Pos`` is sized by the replica GTID state (``@@gtid_slave_pos``'s text here;
    0 on a real server that never replicated - on one that did, a size seen with an empty
    ``@@gtid_slave_pos`` too: what exactly sizes it there was not found out)."""
    spec = (_ALL_FIRST + _SLAVE_STATUS + _ALL_LAST) if all_slaves else _SLAVE_STATUS
    cols = [_col(n, k, c, cs) for n, k, c in spec]
    if all_slaves:
        cols.append(ColumnDefinition41("Slave_heartbeat_period", T_DOUBLE, "", "", "", "",
                                       "def", 63, 10, NOT_NULL | BINARY, 3))
        cols.append(string_col("Gtid_Slave_Pos", len(gtid_slave_pos), cs, flags=NOT_NULL))
    return Answer(cols, [])
