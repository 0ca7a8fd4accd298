"""Where to read more: the servers' documentation and source for each event and packet type and the
main fields (one table; the TUI's field help line and the tour show them, ``test_doc_links``
checks every entry is a well-formed https link to a known site).

Documentation: MariaDB's replication protocol reference and MySQL's source documentation pages
(the protocol pages of the MySQL source tree). Source: the files that write or send the bytes, on a
fixed branch of each server (MySQL 8.0, MariaDB 11.4), so a line number in them stays put.
"""

from __future__ import annotations

from dataclasses import dataclass

MARIADB_DOCS = "https://mariadb.com/docs/server/reference/clientserver-protocol/replication-protocol/"
MYSQL_DOCS = "https://dev.mysql.com/doc/dev/mysql-server/latest/"
MYSQL_SRC = "https://github.com/mysql/mysql-server/blob/8.0/"
MARIADB_SRC = "https://github.com/MariaDB/server/blob/11.4/"

#: the hosts a link may point to (the test checks every link against them)
HOSTS = ("mariadb.com", "dev.mysql.com", "github.com")


@dataclass(frozen=True, slots=True)
class DocLink:
    title: str
    url: str


def _m(slug: str, title: str) -> DocLink:
    return DocLink(f"MariaDB docs: {title}", MARIADB_DOCS + slug)


def _my(page: str, title: str) -> DocLink:
    return DocLink(f"MySQL docs: {title}", MYSQL_DOCS + page)


def _ms(path: str) -> DocLink:
    return DocLink(f"MySQL source: {path}", MYSQL_SRC + path)


def _mds(path: str) -> DocLink:
    return DocLink(f"MariaDB source: {path}", MARIADB_SRC + path)


_EVENTS = _my("page_protocol_replication_binlog_event.html", "binlog events")
_LOG_EVENT = (_ms("sql/log_event.cc"), _mds("sql/log_event.cc"))
_ROWS = (_m("rows_event_v1v2-rows_compressed_event_v1", "ROWS_EVENT"), _EVENTS,
         _ms("libbinlogevents/include/rows_event.h"), *_LOG_EVENT)
_DUMP = (_m("com_binlog_dump", "COM_BINLOG_DUMP"),
         _my("page_protocol_com_binlog_dump.html", "COM_BINLOG_DUMP"),
         _ms("sql/rpl_binlog_sender.cc"), _mds("sql/sql_repl.cc"))

#: event / packet type -> links (types as the list's type column names them)
LINKS: dict[str, tuple[DocLink, ...]] = {
    "FORMAT_DESCRIPTION_EVENT": (_m("format_description_event", "FORMAT_DESCRIPTION_EVENT"),
                                 _EVENTS, _ms("libbinlogevents/include/control_events.h"),
                                 *_LOG_EVENT),
    "ROTATE_EVENT": (_m("rotate_event", "ROTATE_EVENT"), _EVENTS,
                     _ms("libbinlogevents/include/control_events.h"), _mds("sql/sql_repl.cc")),
    "QUERY_EVENT": (_m("query_event", "QUERY_EVENT"), _EVENTS,
                    _ms("libbinlogevents/include/statement_events.h"), *_LOG_EVENT),
    "TABLE_MAP_EVENT": (_m("table_map_event", "TABLE_MAP_EVENT"), _EVENTS,
                        _ms("libbinlogevents/include/rows_event.h"), *_LOG_EVENT),
    "WRITE_ROWS_EVENT": _ROWS, "UPDATE_ROWS_EVENT": _ROWS, "DELETE_ROWS_EVENT": _ROWS,
    "WRITE_ROWS_EVENT_V1": _ROWS, "UPDATE_ROWS_EVENT_V1": _ROWS, "DELETE_ROWS_EVENT_V1": _ROWS,
    "XID_EVENT": (_m("xid_event", "XID_EVENT"), _EVENTS,
                  _ms("libbinlogevents/include/control_events.h"), *_LOG_EVENT),
    "GTID_EVENT": (_m("gtid_event", "GTID_EVENT"), *_LOG_EVENT),
    "GTID_LOG_EVENT": (_EVENTS, _ms("libbinlogevents/include/control_events.h"), *_LOG_EVENT),
    "ANONYMOUS_GTID_LOG_EVENT": (_EVENTS, _ms("libbinlogevents/include/control_events.h")),
    "PREVIOUS_GTIDS_LOG_EVENT": (_EVENTS, _ms("libbinlogevents/include/control_events.h")),
    "GTID_LIST_EVENT": (_m("gtid_list_event", "GTID_LIST_EVENT"), *_LOG_EVENT),
    "BINLOG_CHECKPOINT_EVENT": (_m("binlog_checkpoint_event", "BINLOG_CHECKPOINT_EVENT"),
                                _mds("sql/log_event.cc")),
    "ANNOTATE_ROWS_EVENT": (_m("annotate_rows_event", "ANNOTATE_ROWS_EVENT"),
                            _mds("sql/log_event.cc")),
    "HEARTBEAT_LOG_EVENT": (_m("heartbeat_log_event", "HEARTBEAT_LOG_EVENT"), _EVENTS,
                            _ms("sql/rpl_binlog_sender.cc"), _mds("sql/sql_repl.cc")),
    "HANDSHAKE_V10": (_my("page_protocol_connection_phase_packets_protocol_handshake_v10.html",
                          "Protocol::HandshakeV10"), _ms("sql/auth/sql_authentication.cc")),
    "HANDSHAKE_RESPONSE41": (
        _my("page_protocol_connection_phase_packets_protocol_handshake_response.html",
            "Protocol::HandshakeResponse41"), _ms("sql/auth/password.cc"),
        _mds("sql/password.c")),
    "COM_REGISTER_SLAVE": (_m("com_register_slave", "COM_REGISTER_SLAVE"),
                           _my("page_protocol_com_register_slave.html", "COM_REGISTER_SLAVE"),
                           _ms("sql/rpl_source.cc")),
    "COM_BINLOG_DUMP": _DUMP,
    "COM_BINLOG_DUMP_GTID": (_my("page_protocol_com_binlog_dump_gtid.html",
                                "COM_BINLOG_DUMP_GTID"), _ms("sql/rpl_binlog_sender.cc")),
    "COM_QUERY": (_my("page_protocol_com_query.html", "COM_QUERY"),),
    "COM_QUIT": (_my("page_protocol_com_quit.html", "COM_QUIT"),),
    "OK": (_my("page_protocol_basic_ok_packet.html", "OK_Packet"),),
    "EOF": (_my("page_protocol_basic_eof_packet.html", "EOF_Packet"),),
    "ERR": (_my("page_protocol_basic_err_packet.html", "ERR_Packet"),),
    "COLUMN_COUNT": (_my("page_protocol_com_query_response_text_resultset.html",
                         "Text Resultset"),),
    "COLUMN_DEFINITION41": (_my("page_protocol_com_query_response_text_resultset_column_"
                                "definition.html", "Column Definition"),),
    "TEXT_ROW": (_my("page_protocol_com_query_response_text_resultset_row.html",
                     "Text Resultset Row"),),
    "SEMI_SYNC_ACK": (_m("4-semi-sync-replication", "Semi-Sync Replication"),
                      _ms("plugin/semisync/semisync_source.cc"),
                      _mds("sql/semisync_master.cc")),
}
# every other event type: the server's reference page where it has one, the header that
# declares the event (MySQL 8.0's libbinlogevents; MariaDB's sql/log_event.h) and the file
# that writes it
_BINLOG_EVENTS = _m("1-binlog-events", "binlog events")
_MY_CONTROL = _ms("libbinlogevents/include/control_events.h")
_MY_STATEMENT = _ms("libbinlogevents/include/statement_events.h")
_MY_LOAD = _ms("libbinlogevents/include/load_data_events.h")
_MY_ROWS = _ms("libbinlogevents/include/rows_event.h")
_MD_HEADER = _mds("sql/log_event.h")


def _both(slug: str | None, title: str, mysql_header: DocLink) -> tuple[DocLink, ...]:
    """An event both servers have: MariaDB's page (else the events overview), MySQL's events
    page, MySQL's declaring header, MariaDB's log_event.h and the log_event.cc of both."""
    first = _m(slug, title) if slug else _BINLOG_EVENTS
    return (first, _EVENTS, mysql_header, _MD_HEADER, *_LOG_EVENT)


def _mysql_only(header: DocLink) -> tuple[DocLink, ...]:
    return (_EVENTS, header, _ms("sql/log_event.cc"))


def _mariadb_only(slug: str | None, title: str) -> tuple[DocLink, ...]:
    first = _m(slug, title) if slug else _BINLOG_EVENTS
    return (first, _MD_HEADER, _mds("sql/log_event.cc"))


_ROWS_COMPRESSED = (_m("rows_event_v1v2-rows_compressed_event_v1", "ROWS_COMPRESSED_EVENT"),
                    _MD_HEADER, _mds("sql/log_event.cc"))
LINKS.update({
    "UNKNOWN_EVENT": (_BINLOG_EVENTS, _EVENTS, _ms("libbinlogevents/include/binlog_event.h")),
    "START_EVENT_V3": _both(None, "binlog events", _MY_CONTROL),
    "STOP_EVENT": _both("stop_event", "STOP_EVENT", _MY_CONTROL),
    "INTVAR_EVENT": _both("intvar_event", "INTVAR_EVENT", _MY_STATEMENT),
    "RAND_EVENT": _both("rand_event", "RAND_EVENT", _MY_STATEMENT),
    "USER_VAR_EVENT": _both("user_var_event", "USER_VAR_EVENT", _MY_STATEMENT),
    "LOAD_EVENT": _both(None, "binlog events", _MY_LOAD),
    "SLAVE_EVENT": (_BINLOG_EVENTS, _EVENTS, _ms("libbinlogevents/include/binlog_event.h")),
    "CREATE_FILE_EVENT": _both(None, "binlog events", _MY_LOAD),
    "APPEND_BLOCK_EVENT": _both(None, "binlog events", _MY_LOAD),
    "EXEC_LOAD_EVENT": _both(None, "binlog events", _MY_LOAD),
    "DELETE_FILE_EVENT": _both(None, "binlog events", _MY_LOAD),
    "NEW_LOAD_EVENT": _both(None, "binlog events", _MY_LOAD),
    "BEGIN_LOAD_QUERY_EVENT": _both("begin_load_query_event", "BEGIN_LOAD_QUERY_EVENT",
                                    _MY_LOAD),
    "EXECUTE_LOAD_QUERY_EVENT": _both("execute_load_query_event", "EXECUTE_LOAD_QUERY_EVENT",
                                      _MY_LOAD),
    "PRE_GA_WRITE_ROWS_EVENT": _ROWS, "PRE_GA_UPDATE_ROWS_EVENT": _ROWS,
    "PRE_GA_DELETE_ROWS_EVENT": _ROWS,
    "INCIDENT_EVENT": _both(None, "binlog events", _MY_CONTROL),
    "IGNORABLE_LOG_EVENT": _mysql_only(_MY_CONTROL),
    "ROWS_QUERY_LOG_EVENT": _mysql_only(_MY_ROWS),
    "TRANSACTION_CONTEXT_EVENT": _mysql_only(_MY_CONTROL),
    "VIEW_CHANGE_EVENT": _mysql_only(_MY_CONTROL),
    "XA_PREPARE_LOG_EVENT": _both("xa_prepare_log_event", "XA_PREPARE_LOG_EVENT", _MY_CONTROL),
    "PARTIAL_UPDATE_ROWS_EVENT": _mysql_only(_MY_ROWS),
    "TRANSACTION_PAYLOAD_EVENT": (*_mysql_only(_MY_CONTROL),
                                  _ms("libbinlogevents/include/compression/zstd_dec.h")),
    "HEARTBEAT_LOG_EVENT_V2": (_EVENTS, _MY_CONTROL, _ms("sql/rpl_binlog_sender.cc")),
    # MySQL 8.3+: not on the 8.0 branch; 8.4's tree moved libbinlogevents to libs/
    "GTID_TAGGED_LOG_EVENT": (
        _EVENTS, DocLink("MySQL source: libs/mysql/binlog/event/control_events.h",
                         "https://github.com/mysql/mysql-server/blob/8.4/"
                         "libs/mysql/binlog/event/control_events.h"),
        DocLink("MySQL source: sql/log_event.cc",
                "https://github.com/mysql/mysql-server/blob/8.4/sql/log_event.cc")),
    "START_ENCRYPTION_EVENT": _mariadb_only("start_encryption_event", "START_ENCRYPTION_EVENT"),
    "QUERY_COMPRESSED_EVENT": _mariadb_only("query_event", "QUERY_EVENT"),
    "WRITE_ROWS_COMPRESSED_EVENT_V1": _ROWS_COMPRESSED,
    "UPDATE_ROWS_COMPRESSED_EVENT_V1": _ROWS_COMPRESSED,
    "DELETE_ROWS_COMPRESSED_EVENT_V1": _ROWS_COMPRESSED,
    "WRITE_ROWS_COMPRESSED_EVENT": _ROWS_COMPRESSED,
    "UPDATE_ROWS_COMPRESSED_EVENT": _ROWS_COMPRESSED,
    "DELETE_ROWS_COMPRESSED_EVENT": _ROWS_COMPRESSED,
})
# every other packet kind (types as the list names them, wire.packet.KINDS upper-cased)
_HANDSHAKE_RESPONSE = _my("page_protocol_connection_phase_packets_protocol_handshake_response"
                          ".html", "Protocol::HandshakeResponse")
_PREPARE = _my("page_protocol_com_stmt_prepare.html", "COM_STMT_PREPARE")
_AUTH_SRC = _ms("sql/auth/sql_authentication.cc")
LINKS.update({
    "SSL_REQUEST": (_my("page_protocol_connection_phase_packets_protocol_ssl_request.html",
                        "Protocol::SSLRequest"), _AUTH_SRC),
    "HANDSHAKE_RESPONSE320": (_HANDSHAKE_RESPONSE, _AUTH_SRC),
    "AUTH_SWITCH_REQUEST": (_my("page_protocol_connection_phase_packets_protocol_auth_switch_"
                                "request.html", "Protocol::AuthSwitchRequest"), _AUTH_SRC),
    "AUTH_MORE_DATA": (_my("page_protocol_connection_phase_packets_protocol_auth_more_data"
                           ".html", "Protocol::AuthMoreData"),
                       _ms("sql/auth/sha2_password.cc")),
    "AUTH_SWITCH_RESPONSE": (_my("page_protocol_connection_phase_packets_protocol_auth_switch_"
                                 "response.html", "Protocol::AuthSwitchResponse"), _AUTH_SRC),
    "COM_STMT_PREPARE": (_PREPARE, _ms("sql/sql_prepare.cc")),
    "STMT_PREPARE_OK": (_PREPARE, _ms("sql/sql_prepare.cc")),
    "PARAM_DEFINITION": (_PREPARE,),
    "COM_STMT_EXECUTE": (_my("page_protocol_com_stmt_execute.html", "COM_STMT_EXECUTE"),
                         _ms("sql/sql_prepare.cc")),
    "COM_STMT_CLOSE": (_my("page_protocol_com_stmt_close.html", "COM_STMT_CLOSE"),),
    "BINARY_ROW": (_my("page_protocol_binary_resultset.html", "Binary Protocol Resultset"),),
    "COMMAND": (_my("page_protocol_command_phase.html", "Command Phase"),),
    "LOCAL_INFILE_REQUEST": (_my("page_protocol_com_query_response_local_infile_request.html",
                                 "LOCAL INFILE Request"),),
    "RAW": (_my("page_protocol_basic_packets.html", "MySQL Packets"),),
})

#: field name (the tree's) -> links
FIELD_LINKS: dict[str, tuple[DocLink, ...]] = {
    "header": (_m("2-binlog-event-header", "binlog event header"), _EVENTS),
    "log_pos": (_m("2-binlog-event-header", "binlog event header"),),
    "flags": (_m("2-binlog-event-header", "binlog event header"),),
    "checksum": (_m("format_description_event", "FORMAT_DESCRIPTION_EVENT (checksum)"),),
    "semi_sync_header": (_m("4-semi-sync-replication", "Semi-Sync Replication"),
                         _ms("plugin/semisync/semisync_source.cc"),
                         _mds("sql/semisync_master.cc")),
    "semi_sync_flag": (_m("4-semi-sync-replication", "Semi-Sync Replication"),
                       _ms("plugin/semisync/semisync_source.cc"),
                       _mds("sql/semisync_master.cc")),
    "auth_plugin_data": (_ms("sql/auth/password.cc"), _mds("sql/password.c")),
    "auth_response": (_ms("sql/auth/password.cc"), _mds("sql/password.c")),
    "table_id": (_m("table_map_event", "TABLE_MAP_EVENT"),),
    "column_types": (_m("table_map_event", "TABLE_MAP_EVENT"),),
    "metadata": (_m("table_map_event", "TABLE_MAP_EVENT"),),
}


def links_for(type_name: str, field: str | None = None) -> tuple[DocLink, ...]:
    """The links for an event/packet type and (first) one of its fields."""
    out: list[DocLink] = []
    if field is not None:
        out.extend(FIELD_LINKS.get(field, ()))
    out.extend(LINKS.get(type_name, ()))
    unique: dict[str, DocLink] = {}
    for d in out:
        unique.setdefault(d.url, d)
    return tuple(unique.values())


__all__ = ["FIELD_LINKS", "HOSTS", "LINKS", "DocLink", "links_for"]
