"""The ``packets`` table: one row per wire packet (pcap and live sources), with the redaction
hook that keeps scrambles and passwords out of the export."""

from __future__ import annotations

import re
from typing import Any

from binlogscope.export.arrow import SCHEMA_VERSION, partition_date
from binlogscope.export.columns import packets_row
from binlogscope.export.records import PacketRecord

_SECRET_KINDS = ("HANDSHAKE", "AUTH")
_SECRET_COMMANDS = frozenset({"COM_CHANGE_USER", "COM_REGISTER_SLAVE"})
_SECRET_TEXT = re.compile(rb"(?i)password|identified")


def redact_payload(rec: PacketRecord) -> bytes | None:
    """The payload bytes that may be exported for a packet (None: never export them).

    The redaction hook: the server greeting carries the auth scramble, the handshake response
    and auth-switch/more-data packets carry the password proof, COM_CHANGE_USER does too, and a
    statement mentioning PASSWORD/IDENTIFIED may carry a password in clear text.
    """
    kind = rec.kind.upper()
    if kind.startswith(_SECRET_KINDS) or (rec.command or "") in _SECRET_COMMANDS:
        return None
    payload = rec.payload
    if payload is not None and rec.command == "COM_QUERY" and _SECRET_TEXT.search(payload):
        return None
    return payload


def packet_row(rec: PacketRecord, no_raw: bool) -> tuple[tuple[str], list[Any]]:
    """The partition (the UTC date) and the ``packets`` values (in schema order) of a packet."""
    t = rec.time
    row = packets_row(
        schema_version=SCHEMA_VERSION, source_kind=rec.source_kind, source=rec.source,
        session_id=rec.session_id, flow=rec.flow, direction=rec.direction, frame=rec.frame,
        time=None if t is None else round(t * 1_000_000), seq=rec.seq,
        payload_length=rec.payload_length, semi_sync=rec.semi_sync,
        ack_request=rec.ack_request, kind=rec.kind, command=rec.command,
        binlog_file=rec.binlog_file, log_pos=rec.log_pos,
        payload=None if no_raw else redact_payload(rec),
    )
    return (partition_date(int(t)) if t is not None else "",), row
