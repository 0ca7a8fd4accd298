"""Fault actions: what can go wrong on purpose, and the stream-level ones applied up front.

An :class:`Action` (the one type the proxy's faults use too:
:mod:`binlogscope.drivers.scenario_files`) fires on a connection at the ``at``-th event sent on
it (1 = the fake ROTATE, 2 = the FORMAT_DESCRIPTION, ...) or ``after_seconds`` after the dump
started, on the first ``times`` connections (0: every connection), or only on connection number
``client``.

Stream-level actions (``rotate``, ``split_packet``, ``compress_transaction``) change the served
history itself, so every client sees the same consistent binlog and resumes work; for them ``at``
counts the events of the source stream (1 = its first event).
"""

from __future__ import annotations

from typing import Any

from binlogscope.drivers.scenario_files import Action as Action
from binlogscope.drivers.scenario_files import action_from_mapping as _from_mapping
from binlogscope.drivers.scenario_files import check_action
from binlogscope.wire.binlog.control_events import RowsQueryEvent
from binlogscope.wire.binlog.encode_events import (
    encode_event,
    encode_header,
    encode_rows_query,
    encode_transaction_payload,
)
from binlogscope.wire.binlog.header import HEADER_LEN, peek_header
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.types import MYSQL_GTIDS, EventType
from mock_master.history.sources import (
    EventStream,
    SourceError,
    decode_stored,
    insert_event,
    locate,
    rebase,
    split_file,
)
from mock_master.scenario.errors import ScenarioError

#: action name -> (argument names with defaults, what it does)
ACTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "delay": ({"seconds": 1.0}, "wait before sending event N"),
    "pause_until_ack": ({}, "after event N (ACK requested), send nothing until its ACK arrives"),
    "heartbeat": ({"count": 1}, "send heartbeat events before event N"),
    "rotate": ({"name": None}, "stream: end the file before source event N with a ROTATE; "
               "the rest moves to a new file (re-based, checksums recomputed)"),
    "disconnect_after_event": ({}, "close the connection right after event N"),
    "corrupt_checksum_at": ({}, "send event N with a wrong CRC32"),
    "truncate_event": ({"keep": None}, "send only the first bytes of event N, then close"),
    "cut_packet": ({"keep": None}, "frame event N's packet, send only its first `keep` "
                   "bytes (default: the header and half the payload: a TCP cut inside the "
                   "packet), then close"),
    "mangle_packet": ({"field": "length", "delta": 0, "value": 0},
                      "frame event N's packet, then change one framing field: 'length' (the "
                      "header, by delta), 'seq' (the sequence id, by delta) or 'first_byte' "
                      "(the OK byte, set to value); the stream goes on"),
    "send_error": ({"code": 1236, "message": "mock master: injected error"},
                   "send an ERR packet instead of event N and end the dump"),
    "duplicate_event": ({}, "send event N twice"),
    "reorder": ({}, "swap events N and N+1"),
    "slow_drip": ({"bytes_per_second": 1024}, "from event N on, send at most this rate"),
    "stall": ({"seconds": None}, "from event N on send nothing (no heartbeats) for this long "
              "(default: until the client goes away)"),
    "restart": ({"seconds": 2.0}, "close every connection and refuse new ones for a while"),
    "bad_semisync_magic": ({}, "event N's semi-sync header has a wrong magic byte"),
    "semisync_without_negotiation": ({}, "from event N on, send the 0xEF header although the "
                                     "client never enabled semi-sync"),
    "ack_timeout": ({"seconds": 1.0}, "when an ACK is late by this much, fall back to async "
                    "(stop asking for ACKs) like a master whose semi-sync timed out"),
    "split_packet": ({"size": 17 * 1024 * 1024}, "stream: insert an ignorable event of this "
                     "size before source event N (sent across several packets)"),
    "compress_transaction": ({}, "stream (MySQL): wrap each transaction in a "
                             "TRANSACTION_PAYLOAD event (zstd)"),
    "mariadb_dummy_events": ({"types": [int(EventType.ANNOTATE_ROWS_EVENT),
                                        int(EventType.BINLOG_CHECKPOINT_EVENT),
                                        int(EventType.GTID_EVENT),
                                        int(EventType.GTID_LIST_EVENT)]},
                             "replace these event types with dummy events, as MariaDB does for "
                             "replicas whose @mariadb_slave_capability is too low"),
    "heartbeat_storm": ({"count": 1000}, "send this many heartbeats at once before event N"),
    "heartbeat_gap": ({"seconds": 10.0}, "send no heartbeats for this long"),
}
STREAM_ACTIONS = {"rotate", "split_packet", "compress_transaction"}
#: actions that fire on a connection with no event number (they apply from the start)
NO_POSITION = {"restart", "ack_timeout", "heartbeat_gap", "mariadb_dummy_events",
               "semisync_without_negotiation", "slow_drip", "compress_transaction"}


def validate_action(a: Action) -> Action:
    """Check ``a`` against the mock master's table of actions (raises ScenarioError) and bind
    its defaults."""
    return check_action(a, ACTIONS, NO_POSITION, ScenarioError)


def action_from_mapping(entry: Any) -> Action:
    """One ``[[actions]]`` table of a scenario file, checked."""
    return validate_action(_from_mapping(entry, ScenarioError))


# ------------------------------------------------------------------------------- stream actions
def apply_stream_actions(stream: EventStream, actions: list[Action], flavor: str) -> None:
    """Apply rotate / split_packet / compress_transaction to the shared stream (in place)."""
    actions = [validate_action(a) for a in actions]
    # positions refer to the original stream: apply from the last to the first
    positional = sorted((a for a in actions if a.kind in ("rotate", "split_packet")),
                        key=lambda a: a.at or 0, reverse=True)
    for a in positional:
        fi, ei = locate(stream, (a.at or 1) - 1)
        f = stream.files[fi]
        if a.kind == "rotate":
            name = a.arg("name") or _next_name(stream)
            split_file(stream, fi, ei, name)
        else:
            insert_event(stream, fi, ei, ignorable_event(int(a.arg("size")), f.checksum,
                                                         _server_id(f.events[0])))
    if any(a.kind == "compress_transaction" for a in actions):
        if flavor != "mysql":
            raise SourceError("compress_transaction needs the MySQL flavour "
                              "(TRANSACTION_PAYLOAD is a MySQL 8 event)")
        compress_transactions(stream)


def _server_id(ev: bytes) -> int:
    return peek_header(ev).server_id


def _next_name(stream: EventStream) -> str:
    last = stream.files[-1].name
    base, _, num = last.rpartition(".")
    n = int(num) + 1 if num.isdigit() else len(stream.files) + 1
    names = {f.name for f in stream.files}
    while True:
        cand = f"{base or last}.{n:06d}"
        if cand not in names:
            return cand
        n += 1


def ignorable_event(size: int, checksum: bool, server_id: int) -> bytes:
    """A ROWS_QUERY event (29) flagged LOG_EVENT_IGNORABLE_F of exactly ``size`` bytes."""
    fixed = HEADER_LEN + 1 + (4 if checksum else 0)
    if size < fixed + 1:
        raise SourceError(f"split_packet: size {size} is too small")
    text = "/* mock master: a big ignorable event */ "
    text = (text * (size // len(text) + 1))[:size - fixed]
    return encode_event(EventType.ROWS_QUERY_LOG_EVENT, encode_rows_query(RowsQueryEvent(text)),
                        server_id=server_id, flags=0x80, checksum=checksum)


def _is_commit(ev: bytes, checksum: bool) -> bool:
    """Does this event end a transaction (XID, or a QUERY other than BEGIN)?"""
    if ev[4] == EventType.XID_EVENT:
        return True
    if ev[4] != EventType.QUERY_EVENT:
        return False
    body = decode_stored(ev, checksum).body
    return isinstance(body, QueryEvent) and body.query.strip().upper() != "BEGIN"


def compress_transactions(stream: EventStream) -> None:
    """Wrap every GTID transaction's events (after the GTID) into a TRANSACTION_PAYLOAD."""
    for f in stream.files:
        out: list[bytes] = []
        txn: list[bytes] | None = None
        for ev in f.events:
            t = ev[4]
            if t in MYSQL_GTIDS:
                out.append(ev)
                txn = []
                continue
            if txn is None:
                out.append(ev)
                continue
            # inside the payload: no checksum, log_pos 0
            h = peek_header(ev)
            body = ev[HEADER_LEN:len(ev) - 4 if f.checksum else len(ev)]
            h.event_size, h.log_pos = HEADER_LEN + len(body), 0
            txn.append(encode_header(h) + body)
            if _is_commit(ev, f.checksum):
                out.append(encode_event(EventType.TRANSACTION_PAYLOAD_EVENT,
                                        encode_transaction_payload(b"".join(txn)),
                                        timestamp=h.timestamp, server_id=h.server_id,
                                        checksum=f.checksum))
                txn = None
        if txn:
            out.extend(txn)
        f.events = out
    rebase(stream)
