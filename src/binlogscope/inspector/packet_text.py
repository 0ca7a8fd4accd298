"""What the packet list says about a non-binlog packet: its summary, colour class and type name,
and why a replica sent a setup query (captures have no setup steps of their own)."""

from __future__ import annotations

from binlogscope.drivers.live.setup import QUERY_WHY, setup_steps
from binlogscope.inspector.source import event_kind
from binlogscope.render.text import statement_text
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.fields import escaped

SUMMARY_MAX = 120
_HANDSHAKE = {"handshake_v10", "ssl_request", "handshake_response41", "handshake_response320",
              "auth_switch_request", "auth_more_data", "auth_switch_response"}
_RESULT = {"ok", "eof", "column_count", "column_definition41", "text_row",
           "local_infile_request", "stmt_prepare_ok", "param_definition", "binary_row"}
_DUMP = {"com_register_slave", "com_binlog_dump", "com_binlog_dump_gtid"}


def _why_table() -> list[tuple[str, str, str]]:
    """(SQL prefix, phase, why) of every query a replica sends during setup."""
    out: list[tuple[str, str, str]] = []
    for mariadb in (False, True):
        for st in setup_steps(slave_uuid="x", heartbeat=1.0, semi_sync=True, mariadb=mariadb,
                              gtid="0-1-1", net_read_timeout=60):
            if st.sql:
                out.append((st.sql.split("=")[0].strip().lower()[:24], st.what, st.why))
    out += [("select @@global.binlog_checksum", "checksum", QUERY_WHY["checksum"]),
            ("select @@server_id", "server_id", QUERY_WHY["server_id"]),
            ("select @@version", "version", QUERY_WHY["version"]),
            ("show master status", "position", QUERY_WHY["position"]),
            ("show binary log status", "position", QUERY_WHY["position"])]
    return out


_WHY = _why_table()


def why_for_query(sql: str) -> tuple[str, str] | None:
    """(what, why) for a setup query a replica sends (captures have no SetupStep items)."""
    q = " ".join(sql.split()).lower()
    for prefix, what, why in _WHY:
        if q.startswith(prefix):
            return what, why
    return None


def fit(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 3] + "..."


def packet_summary(ev: PacketDecoded) -> str:
    """The list's summary of a non-binlog packet."""
    v = ev.value
    if v is None:
        return f"ERROR {ev.error}" if ev.error else ""
    name = type(v).__name__
    parts: list[str] = []
    if name == "HandshakeV10":
        parts.append(f"{v.server_version} conn {v.connection_id} {v.auth_plugin_name or ''}")
    elif name in ("HandshakeResponse41", "HandshakeResponse320"):
        parts.append(f"user {v.username} {getattr(v, 'client_plugin_name', '') or ''}")
    elif name == "ComQuery":
        parts.append(v.query)
    elif name == "ErrPacket":
        parts.append(f"ERR {v.error_code} ({v.sql_state}) {v.error_message}")
    elif name == "OkPacket":
        parts.append(f"OK affected={v.affected_rows} status=0x{v.status_flags:04x}"
                     + (f" {v.info}" if v.info else ""))
    elif name == "ComBinlogDump" and v.malformed and not v.requested_file:
        # nothing but NULs where the name goes: not a file name
        parts.append(f"MALFORMED file name ({len(v.binlog_filename)} NUL bytes, read as '': "
                     f"the first file):{v.binlog_pos} server_id={v.server_id} "
                     f"flags=0x{v.flags:x}")
    elif name == "ComBinlogDump" and v.malformed:  # a name with a NUL in it
        parts.append(f"from {escaped(v.binlog_filename)}:{v.binlog_pos} "
                     f"server_id={v.server_id} flags=0x{v.flags:x} MALFORMED: NUL in the "
                     f"file name (read as {escaped(v.requested_file)})")
    elif name in ("ComBinlogDump", "ComBinlogDumpGtid"):
        parts.append(f"from {escaped(v.binlog_filename) or '(gtid)'}:{v.binlog_pos} "
                     f"server_id={v.server_id} flags=0x{v.flags:x}")
    elif name in ("ComStmtPrepare", "StmtPrepareOk", "StmtExecute", "ComStmtClose",
                  "BinaryRow"):
        parts.append(statement_text(v) or "")
    elif name == "ComRegisterSlave":
        parts.append(f"server_id={v.server_id} host={v.hostname}")
    elif name == "ColumnCount":
        parts.append(f"{v.column_count} column(s)")
    elif name == "ColumnDefinition41":
        parts.append(f"column {v.name} type={v.type}")
    elif name == "TextRow":
        parts.append(" | ".join("NULL" if x is None else x.decode("utf-8", "replace")
                                for x in v.values))
    elif name == "SemiSyncAck":
        parts.append(f"ACK {escaped(v.binlog_filename)}:{v.binlog_pos}")
    elif name == "AuthSwitchRequest":
        parts.append(f"switch to {v.plugin_name}")
    if ev.error:
        parts.append(f"ERROR {ev.error}")
    return fit(" ".join(parts))


def packet_kind(ev: PacketDecoded) -> str:
    """Colour class of a packet."""
    if ev.error or ev.kind == "err":
        return "error"
    if ev.binlog_event is not None:
        return event_kind(ev.binlog_event.type_name, bool(ev.binlog_event.error))
    k = ev.kind
    if k in _HANDSHAKE:
        return "handshake"
    if k in ("com_query", "com_stmt_prepare", "com_stmt_execute"):
        return "query"
    if k in _RESULT:
        return "result"
    if k in _DUMP:
        return "dump"
    if k == "semi_sync_ack":
        return "ack"
    return "other"


def type_name(ev: PacketDecoded) -> str:
    """The list's type column of a packet."""
    if ev.binlog_event is not None:
        return ev.binlog_event.type_name
    if ev.kind == "err" and ev.value is not None:
        return "ERR"
    if ev.kind == "command" and ev.value is not None:
        return str(getattr(ev.value, "name", "COMMAND")).upper()
    return ev.kind.upper()


__all__ = ["fit", "packet_kind", "packet_summary", "type_name", "why_for_query"]
