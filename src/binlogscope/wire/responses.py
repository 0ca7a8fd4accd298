"""OK, ERR and EOF: the generic response packets that answer commands (and end result sets).

Each ``decode_x(r, caps)`` reads through a recording :class:`ByteReader`; each ``encode_x``
returns the payload bytes. The connection phase (greeting, handshake response, auth exchange) is
in :mod:`binlogscope.wire.handshake`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.wire.constants import (
    DEFAULT_CAPABILITIES,
    ERROR_HINTS,
    CapabilityFlag,
    SessionTrackType,
    StatusFlag,
)
from binlogscope.wire.fields import flag_field, lenenc_bytes, lenenc_int, lenenc_str, u8, u16
from binlogscope.wire.reader import ByteReader

CAP = CapabilityFlag

@dataclass(frozen=True, slots=True)
class SessionStateChange:
    """One entry of an OK packet's session-state info (CLIENT_SESSION_TRACK)."""

    type: int
    data: tuple[str | None, ...]  # decoded strings of the entry


@dataclass(frozen=True, slots=True)
class OkPacket:
    """OK: a command succeeded (header 0x00; 0xFE when it ends a result set with DEPRECATE_EOF)."""

    affected_rows: int = 0
    last_insert_id: int = 0
    status_flags: int = int(StatusFlag.SERVER_STATUS_AUTOCOMMIT)
    warnings: int = 0
    info: str = ""
    session_state_changes: tuple[SessionStateChange, ...] = ()
    header: int = 0x00


def _status_and_warnings(r: ByteReader, caps: int) -> tuple[int, int]:
    status = warnings = 0
    if caps & CAP.CLIENT_PROTOCOL_41:
        status = flag_field(r, "status_flags", 2, StatusFlag,
                            doc="SERVER_STATUS_* bits: in transaction, autocommit, more results...")
        warnings = r.u16("warnings", doc="number of warnings (SHOW WARNINGS)")
    elif caps & CAP.CLIENT_TRANSACTIONS:
        status = flag_field(r, "status_flags", 2, StatusFlag, doc="SERVER_STATUS_* bits")
    return status, warnings


def _session_state(r: ByteReader) -> tuple[SessionStateChange, ...]:
    total = r.lenenc("session_state_info_length",
                     doc="byte length of the session-state changes that follow") or 0
    out: list[SessionStateChange] = []
    r.begin("session_state_info", doc="what this statement changed in the session")
    with r.bounded(total, "session_state_info"):
        while not r.at_end():
            code = r.peek_u8() or 0
            try:
                tname = SessionTrackType(code).name
            except ValueError:
                tname = f"unknown ({code})"
            r.begin("session_state_change", display=tname)
            t = r.u8("type", doc="which tracker reported the change", display=tname)
            n = r.lenenc("data_length", doc="byte length of this entry's data") or 0
            vals: list[str | None] = []
            with r.bounded(n, "data"):
                if t == SessionTrackType.SESSION_TRACK_SYSTEM_VARIABLES:
                    vals.append(r.lenenc_str("name", doc="system variable that changed"))
                    vals.append(r.lenenc_str("value", doc="its new value"))
                elif t == SessionTrackType.SESSION_TRACK_GTIDS:
                    r.u8("encoding_specification", doc="0: the GTID set is a text string")
                    vals.append(r.lenenc_str("gtids", doc="GTIDs of the transaction(s)"))
                elif t in (SessionTrackType.SESSION_TRACK_SCHEMA,
                           SessionTrackType.SESSION_TRACK_STATE_CHANGE,
                           SessionTrackType.SESSION_TRACK_TRANSACTION_CHARACTERISTICS,
                           SessionTrackType.SESSION_TRACK_TRANSACTION_STATE):
                    vals.append(r.lenenc_str("value", doc="new schema / '1' state changed / "
                                             "transaction characteristics or state"))
                if not r.at_end():
                    r.rest("unparsed", doc="entry bytes binlogscope does not decode")
            r.end_group()
            out.append(SessionStateChange(t, tuple(vals)))
    r.end_group()
    return tuple(out)


def decode_ok(r: ByteReader, caps: int = DEFAULT_CAPABILITIES) -> OkPacket:
    """OK_Packet: affected rows, insert id, status, warnings, info, session-state changes."""
    header = r.u8("header", doc="0x00 OK (0xFE: OK that ends a result set, CLIENT_DEPRECATE_EOF)")
    if header not in (0x00, 0xFE):
        raise ValueError(f"OK header 0x{header:02x}, expected 0x00 or 0xFE")
    affected = r.lenenc("affected_rows", doc="rows changed by the statement") or 0
    insert_id = r.lenenc("last_insert_id", doc="AUTO_INCREMENT value generated, if any") or 0
    status, warnings = _status_and_warnings(r, caps)
    info = ""
    changes: tuple[SessionStateChange, ...] = ()
    if caps & CAP.CLIENT_SESSION_TRACK:
        if not r.at_end():
            info = r.lenenc_str("info", doc="human-readable status, e.g. 'Rows matched: 1'") or ""
        if status & StatusFlag.SERVER_SESSION_STATE_CHANGED and not r.at_end():
            changes = _session_state(r)
    elif not r.at_end():
        info = r.rest_str("info", doc="human-readable status, e.g. 'Rows matched: 1'")
    return OkPacket(affected, insert_id, status, warnings, info, changes, header)


def encode_ok(v: OkPacket, caps: int = DEFAULT_CAPABILITIES) -> bytes:
    out = [u8(v.header), lenenc_int(v.affected_rows), lenenc_int(v.last_insert_id)]
    if caps & CAP.CLIENT_PROTOCOL_41:
        out.append(u16(v.status_flags) + u16(v.warnings))
    elif caps & CAP.CLIENT_TRANSACTIONS:
        out.append(u16(v.status_flags))
    if caps & CAP.CLIENT_SESSION_TRACK:
        if v.info or v.session_state_changes:
            out.append(lenenc_str(v.info))
        if v.status_flags & StatusFlag.SERVER_SESSION_STATE_CHANGED:
            entries = b""
            for ch in v.session_state_changes:
                data = b""
                if ch.type == SessionTrackType.SESSION_TRACK_GTIDS:
                    data += b"\0"
                data += b"".join(lenenc_str(x) for x in ch.data)
                entries += u8(ch.type) + lenenc_bytes(data)
            out.append(lenenc_bytes(entries))
    else:
        out.append(v.info.encode())
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class ErrPacket:
    """ERR: a command failed (or, with error_code 0xFFFF, a MariaDB progress report)."""

    error_code: int
    error_message: str
    sql_state: str | None = "HY000"

    @property
    def hint(self) -> str:
        return ERROR_HINTS.get(self.error_code, "")


def decode_err(r: ByteReader, caps: int = DEFAULT_CAPABILITIES) -> ErrPacket:
    """ERR_Packet: error code, '#' + 5-char SQL state (4.1 protocol), message."""
    r.u8("header", doc="0xFF: this is an ERR packet")
    code = r.peek(2)
    num = int.from_bytes(code, "little") if len(code) == 2 else 0
    hint = ERROR_HINTS.get(num, "")
    err = r.u16("error_code", doc="server error number (ER_* in mysqld_error.h)",
                display=f"{num} - hint: {hint}" if hint else "")
    if err == 0xFFFF:  # MariaDB progress report: not an error
        r.u8("stage", doc="MariaDB progress report: current stage")
        r.u8("max_stage", doc="number of stages")
        prog = r.u24("progress", doc="progress in 1/1000 of a percent")
        info = r.lenenc_str("progress_info", doc="what the server is doing") or ""
        return ErrPacket(err, f"progress {prog / 1000:.1f}%: {info}", None)
    state: str | None = None
    if r.peek(1) == b"#":  # absent in errors sent before the 4.1 protocol was agreed
        r.fixed_str("sql_state_marker", 1, doc="'#': a SQL state follows")
        state = r.fixed_str("sql_state", 5, doc="5-character ANSI SQL state, e.g. 'HY000'")
    msg = r.rest_str("error_message", doc="human-readable error text")
    return ErrPacket(err, msg, state)


def encode_err(v: ErrPacket, caps: int = DEFAULT_CAPABILITIES) -> bytes:
    out = b"\xff" + u16(v.error_code)
    if v.sql_state is not None and caps & CAP.CLIENT_PROTOCOL_41:
        out += b"#" + v.sql_state.encode()[:5].ljust(5, b"0")
    return out + v.error_message.encode()


@dataclass(frozen=True, slots=True)
class EofPacket:
    """EOF (0xFE, < 9 bytes): ends column definitions or rows without CLIENT_DEPRECATE_EOF."""

    warnings: int = 0
    status_flags: int = int(StatusFlag.SERVER_STATUS_AUTOCOMMIT)


def decode_eof(r: ByteReader, caps: int = DEFAULT_CAPABILITIES) -> EofPacket:
    h = r.u8("header", doc="0xFE: EOF packet (payload shorter than 9 bytes)")
    if h != 0xFE:
        raise ValueError(f"EOF header 0x{h:02x}, expected 0xFE")
    warnings = status = 0
    if caps & CAP.CLIENT_PROTOCOL_41 and not r.at_end():
        warnings = r.u16("warnings", doc="number of warnings")
        status = flag_field(r, "status_flags", 2, StatusFlag,
                            doc="SERVER_STATUS_* bits (SERVER_MORE_RESULTS_EXISTS: another "
                            "result set follows)")
    return EofPacket(warnings, status)


def encode_eof(v: EofPacket, caps: int = DEFAULT_CAPABILITIES) -> bytes:
    if caps & CAP.CLIENT_PROTOCOL_41:
        return b"\xfe" + u16(v.warnings) + u16(v.status_flags)
    return b"\xfe"


def is_eof_packet(payload: bytes, caps: int) -> bool:
    """Does this payload end a result set part (EOF, or OK with 0xFE under DEPRECATE_EOF)?"""
    if not payload or payload[0] != 0xFE:
        return False
    if caps & CAP.CLIENT_DEPRECATE_EOF:
        return len(payload) < 0xFFFFFF
    return len(payload) < 9
