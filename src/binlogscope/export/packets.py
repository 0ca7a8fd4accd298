"""The ``packets`` table: one row per wire packet (pcap and live sources), with the redaction
hook that keeps scrambles and passwords out of the export."""

from __future__ import annotations

import re
from typing import Any

from binlogscope.export.arrow import SCHEMA_VERSION, partition_date
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
    row = [
        SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id, rec.flow,
        rec.direction, rec.frame, None if t is None else round(t * 1_000_000), rec.seq,
        rec.payload_length, rec.semi_sync, rec.ack_request, rec.kind, rec.command,
        rec.binlog_file, rec.log_pos, None if no_raw else redact_payload(rec),
    ]
    return (partition_date(int(t)) if t is not None else "",), row
