"""SHOW SLAVE STATUS / SHOW REPLICA STATUS / SHOW ALL SLAVES STATUS of the MariaDB flavour: the
mock master is no replica, so the answer is the server's empty result - its column definitions
as MariaDB 10.11 sends them (taken from the real server: tests/mock_master/
test_mm_show_replicas.py compares them field by field; lengths in characters, times the
connection charset's bytes per character).

The MySQL flavour (8.0 and later; no MySQL server here) answers from the server's source:
``show_slave_status_metadata`` in mysql-server sql/rpl_replica.cc (read at 0305767c, an 8.0
tree, and at 200daa1a, 9.7.0 - the same 62 columns) sends ``Replica_IO_State`` ...
``Network_Namespace`` (``Item_empty_string(name, chars)``: VAR_STRING in the connection
charset, ``Item_return_int(name, length, type)``: unsigned LONG/LONGLONG), and
``show_slave_status`` sends no row when no channel is configured (the mock is no replica).
SHOW SLAVE STATUS (the deprecated syntax, until 8.4 removed it) renames them
(``rename_fields_use_old_replica_source_terms``) to the names every 8.0 before 8.0.22 sent:
Slave_IO_State, Master_Host, ... Get_master_public_key (the MySQL 8.0 manual's SHOW SLAVE
STATUS page: "only the terminology used for the statement and its output has changed"; the
names as a real client reads them, e.g. radondb-mysql-kubernetes' SlaveStatus struct).
``Network_Namespace`` came with replication's network namespaces in 8.0.22 (the manual's
"Network Namespace Support": "MySQL 8.0.22 and higher"), so 8.0.21 and earlier end at
``Get_master_public_key``. MySQL 5.x is not described (its columns differ: ERR 1105)."""

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


#: MySQL's SHOW REPLICA STATUS columns (sql/rpl_replica.cc show_slave_status_metadata): (new
#: name, old name or "" when the same, kind, characters or length); "gtid_io" / "gtid_sql": the
#: Retrieved_Gtid_Set / Executed_Gtid_Set texts' lengths
_HOST, _USER, _FN, _NAME = 255 + 1, 32 * 3 + 1, 512, 64 * 3 + 1
_MYSQL_REPLICA_STATUS: list[tuple[str, str, str, int]] = [
    ("Replica_IO_State", "Slave_IO_State", _S, 14), ("Source_Host", "Master_Host", _S, _HOST),
    ("Source_User", "Master_User", _S, _USER), ("Source_Port", "Master_Port", _L, 7),
    ("Connect_Retry", "", _L, 10), ("Source_Log_File", "Master_Log_File", _S, _FN),
    ("Read_Source_Log_Pos", "Read_Master_Log_Pos", _LL, 10), ("Relay_Log_File", "", _S, _FN),
    ("Relay_Log_Pos", "", _LL, 10), ("Relay_Source_Log_File", "Relay_Master_Log_File", _S, _FN),
    ("Replica_IO_Running", "Slave_IO_Running", _S, 3),
    ("Replica_SQL_Running", "Slave_SQL_Running", _S, 3), ("Replicate_Do_DB", "", _S, 20),
    ("Replicate_Ignore_DB", "", _S, 20), ("Replicate_Do_Table", "", _S, 20),
    ("Replicate_Ignore_Table", "", _S, 23), ("Replicate_Wild_Do_Table", "", _S, 24),
    ("Replicate_Wild_Ignore_Table", "", _S, 28), ("Last_Errno", "", _L, 4),
    ("Last_Error", "", _S, 20), ("Skip_Counter", "", _L, 10),
    ("Exec_Source_Log_Pos", "Exec_Master_Log_Pos", _LL, 10), ("Relay_Log_Space", "", _LL, 10),
    ("Until_Condition", "", _S, 6), ("Until_Log_File", "", _S, _FN),
    ("Until_Log_Pos", "", _LL, 10), ("Source_SSL_Allowed", "Master_SSL_Allowed", _S, 7),
    ("Source_SSL_CA_File", "Master_SSL_CA_File", _S, _FN),
    ("Source_SSL_CA_Path", "Master_SSL_CA_Path", _S, _FN),
    ("Source_SSL_Cert", "Master_SSL_Cert", _S, _FN),
    ("Source_SSL_Cipher", "Master_SSL_Cipher", _S, _FN),
    ("Source_SSL_Key", "Master_SSL_Key", _S, _FN),
    ("Seconds_Behind_Source", "Seconds_Behind_Master", _LL, 10),
    ("Source_SSL_Verify_Server_Cert", "Master_SSL_Verify_Server_Cert", _S, 3),
    ("Last_IO_Errno", "", _L, 4), ("Last_IO_Error", "", _S, 20), ("Last_SQL_Errno", "", _L, 4),
    ("Last_SQL_Error", "", _S, 20), ("Replicate_Ignore_Server_Ids", "", _S, _FN),
    ("Source_Server_Id", "Master_Server_Id", _L, 8), ("Source_UUID", "Master_UUID", _S, 36),
    ("Source_Info_File", "Master_Info_File", _S, 2 * _FN), ("SQL_Delay", "", _L, 10),
    ("SQL_Remaining_Delay", "", _L, 8),
    ("Replica_SQL_Running_State", "Slave_SQL_Running_State", _S, 20),
    ("Source_Retry_Count", "Master_Retry_Count", _LL, 10),
    ("Source_Bind", "Master_Bind", _S, _HOST), ("Last_IO_Error_Timestamp", "", _S, 20),
    ("Last_SQL_Error_Timestamp", "", _S, 20), ("Source_SSL_Crl", "Master_SSL_Crl", _S, _FN),
    ("Source_SSL_Crlpath", "Master_SSL_Crlpath", _S, _FN),
    ("Retrieved_Gtid_Set", "", "gtid_io", 0), ("Executed_Gtid_Set", "", "gtid_sql", 0),
    ("Auto_Position", "", _L, 8), ("Replicate_Rewrite_DB", "", _S, 24),
    ("Channel_Name", "", _S, 64), ("Source_TLS_Version", "Master_TLS_Version", _S, _FN),
    ("Source_public_key_path", "Master_public_key_path", _S, _FN),
    ("Get_Source_public_key", "Get_master_public_key", _L, 8),
    ("Network_Namespace", "", _S, _NAME),
]


def mysql_replica_status(old_terms: bool, version: tuple[int, int, int], cs: int,
                         gtid_executed: str) -> Answer:
    """MySQL's empty answer of SHOW REPLICA STATUS (``old_terms``: SHOW SLAVE STATUS's names)
    on a server with no replication channel configured: the columns only.
    ``Executed_Gtid_Set`` is sized by ``@@gtid_executed``'s text, ``Retrieved_Gtid_Set`` by
    the longest configured channel's (none: 0)."""
    cols = []
    for new, old, kind, n in _MYSQL_REPLICA_STATUS:
        if new == "Network_Namespace" and version < (8, 0, 22):
            continue
        name = (old or new) if old_terms else new
        if kind in ("gtid_io", "gtid_sql"):
            chars = len(gtid_executed) if kind == "gtid_sql" else 0
            cols.append(string_col(name, chars, cs, flags=NOT_NULL))
        else:
            cols.append(_col(name, kind, n, cs))
    return Answer(cols, [])
