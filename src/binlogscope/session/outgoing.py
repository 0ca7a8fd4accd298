"""What a REPLICA or SOURCE session sends: the values it accepts and their encoding.

:func:`encode_value` turns one value (``ComQuery``, ``OkPacket``, :class:`BinlogEventData`...)
into its payload with the wire encoders; :meth:`Session.send` frames it (sequence id) and
decodes it back for the log. :class:`ProtocolViolation` is what the session raises when we,
acting as a peer, would break the protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from binlogscope.session.events import Phase
from binlogscope.wire import commands, handshake, replication, results
from binlogscope.wire.constants import SEMI_SYNC_ACK_REQ, CapabilityFlag


class ProtocolViolation(Exception):  # noqa: N818  (the name h11 and the design use)
    """Raised by :meth:`Session.send` when we, acting as a peer, would break the protocol."""


@dataclass(slots=True)
class BinlogEventData:
    """What a SOURCE sends for one stream event: the raw event bytes (+ ACK wish)."""

    event: bytes
    ack_requested: bool = False


#: values only a client (REPLICA) sends
CLIENT_TYPES = (handshake.HandshakeResponse41, handshake.HandshakeResponse320,
                handshake.SslRequest, handshake.AuthSwitchResponse, commands.ComQuery,
                commands.SimpleCommand, commands.ComRegisterSlave, commands.ComBinlogDump,
                commands.ComBinlogDumpGtid, replication.SemiSyncAck)
#: commands: they start a new exchange (sequence id 0)
COMMAND_TYPES = (commands.ComQuery, commands.SimpleCommand, commands.ComRegisterSlave,
                 commands.ComBinlogDump, commands.ComBinlogDumpGtid)

#: what each value is encoded with: type -> encoder(value, capabilities)
ENCODERS: dict[type, Callable[[Any, int], bytes]] = {
    handshake.HandshakeV10: lambda v, c: handshake.encode_handshake_v10(v),
    handshake.SslRequest: lambda v, c: handshake.encode_ssl_request(v),
    handshake.HandshakeResponse41: lambda v, c: handshake.encode_handshake_response41(v),
    handshake.HandshakeResponse320: lambda v, c: handshake.encode_handshake_response320(v),
    handshake.AuthSwitchRequest: lambda v, c: handshake.encode_auth_switch_request(v),
    handshake.AuthMoreData: lambda v, c: handshake.encode_auth_more_data(v),
    handshake.AuthSwitchResponse: lambda v, c: handshake.encode_auth_switch_response(v),
    handshake.OkPacket: handshake.encode_ok,
    handshake.ErrPacket: handshake.encode_err,
    commands.ComQuery: commands.encode_com_query,
    commands.SimpleCommand: lambda v, c: commands.encode_simple_command(v),
    commands.ComRegisterSlave: lambda v, c: commands.encode_com_register_slave(v),
    commands.ComBinlogDump: lambda v, c: commands.encode_com_binlog_dump(v),
    commands.ComBinlogDumpGtid: lambda v, c: commands.encode_com_binlog_dump_gtid(v),
    results.ColumnCount: results.encode_column_count,
    results.ColumnDefinition41: results.encode_column_definition41,
    results.TextRow: results.encode_text_row,
    replication.SemiSyncAck: lambda v, c: replication.encode_semi_sync_ack(v),
}


def encode_value(v: Any, caps: int, phase: Phase, semi_sync: bool | None) -> bytes:
    """The payload for ``v`` under the capabilities ``caps`` in ``phase``.

    An ``EofPacket`` becomes the OK-with-0xFE terminator once CLIENT_DEPRECATE_EOF is in force
    (after AUTH); a :class:`BinlogEventData` gets the semi-sync header when semi-sync was
    negotiated, and only in BINLOG_STREAM."""
    if isinstance(v, handshake.EofPacket):
        if caps & CapabilityFlag.CLIENT_DEPRECATE_EOF and phase != Phase.AUTH:
            return handshake.encode_ok(
                handshake.OkPacket(status_flags=v.status_flags, warnings=v.warnings,
                                   header=0xFE), caps)
        return handshake.encode_eof(v, caps)
    if isinstance(v, BinlogEventData):
        if phase != Phase.BINLOG_STREAM:
            raise ProtocolViolation("binlog events are sent only after COM_BINLOG_DUMP")
        if v.ack_requested and not semi_sync:
            raise ProtocolViolation("ACK requested but semi-sync was not negotiated")
        flag = (SEMI_SYNC_ACK_REQ if v.ack_requested else 0) if semi_sync else None
        return replication.encode_binlog_packet(v.event, flag)
    for cls in type(v).__mro__:
        encoder = ENCODERS.get(cls)
        if encoder is not None:
            return encoder(v, caps)
    raise ProtocolViolation(f"don't know how to send {type(v).__name__}")


__all__ = ["CLIENT_TYPES", "COMMAND_TYPES", "ENCODERS", "BinlogEventData", "ProtocolViolation",
           "encode_value"]
