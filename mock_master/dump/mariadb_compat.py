"""The events a MariaDB primary makes up during a dump (the tests compare them byte by byte
with a real MariaDB): what it sends a replica below the GTID capability instead of an event
(``send_event_to_slave`` in MariaDB's sql/sql_repl.cc: a GTID becomes a QUERY ``BEGIN``, a
standalone one a dummy, other events the replica cannot handle dummy events of the same size,
or nothing at capability 2-3), and the fake GTID_LIST of a GTID dump."""

from __future__ import annotations

from binlogscope.wire.binlog.encode_events import (
    LOG_EVENT_ARTIFICIAL_F,
    encode_event,
    encode_gtid_list,
)
from binlogscope.wire.binlog.gtid_events import GtidListEvent, MariadbGtid
from binlogscope.wire.binlog.header import HEADER_LEN
from binlogscope.wire.binlog.types import EventType
from mock_master.dump.mariadb_gtid import GTID, GTID_LIST
from mock_master.history.sources import begin_event, dummy_event

#: MariaDB's MARIA_SLAVE_CAPABILITY_*: 1 ANNOTATE, 2 TOLERATE_HOLES, 3 BINLOG_CHECKPOINT, 4 GTID
CAP_ANNOTATE, CAP_HOLES, CAP_CHECKPOINT, CAP_GTID = 1, 2, 3, 4
ANNOTATE_ROWS = int(EventType.ANNOTATE_ROWS_EVENT)
BINLOG_CHECKPOINT = int(EventType.BINLOG_CHECKPOINT_EVENT)


def compat_event(ev: bytes, ck: bool, cap: int, annotate: bool) -> bytes | None:
    """One MariaDB-specific event (type >= 160) for a replica at capability ``cap`` that did
    (``annotate``) or did not ask for annotate events; None: not sent. Raises
    sources.CompatError where the server ends the dump."""
    t = ev[4]
    if t == ANNOTATE_ROWS and not annotate:
        if cap >= CAP_HOLES:
            return None
        if cap < CAP_ANNOTATE:
            return dummy_event(ev, ck)
    elif t == GTID and cap < CAP_GTID:
        if ev[HEADER_LEN + 12] & 1:  # FL_STANDALONE: no COMMIT follows
            return None if cap >= CAP_HOLES else dummy_event(ev, ck)
        return begin_event(ev, ck)
    elif (t == BINLOG_CHECKPOINT and cap < CAP_CHECKPOINT) or (t == GTID_LIST and cap < CAP_GTID):
        return None if cap >= CAP_HOLES else dummy_event(ev, ck)
    return ev


def changed_types(cap: int, annotate: bool) -> set[int]:
    """The MariaDB event types :func:`compat_event` may change for such a replica."""
    out = set()
    if not annotate or cap < CAP_ANNOTATE:
        out.add(ANNOTATE_ROWS)
    if cap < CAP_CHECKPOINT:
        out.add(BINLOG_CHECKPOINT)
    if cap < CAP_GTID:
        out |= {GTID, GTID_LIST}
    return out


def compat_error(event_type: int) -> str:
    """The server's text when an event is too small for its replacement (CompatError)."""
    return {
        ANNOTATE_ROWS: "Failed to replace row annotate event with dummy: too small event.",
        GTID: "Failed to replace GTID event with backwards-compatible event: corrupt event.",
    }.get(event_type, "Failed to replace binlog checkpoint or gtid list event with dummy: too "
                      "small event.")


def fake_gtid_list(gtids: list[MariadbGtid], flags: int, log_pos: int, checksum: bool,
                   server_id: int) -> bytes:
    """The artificial GTID_LIST a GTID dump sends after the group it asked for (flags:
    FLAG_UNTIL_REACHED when UNTIL ends the dump)."""
    body = encode_gtid_list(GtidListEvent(",".join(map(str, gtids)), gtids, flags))
    return encode_event(GTID_LIST, body, server_id=server_id, log_pos=log_pos,
                        flags=LOG_EVENT_ARTIFICIAL_F, checksum=checksum)
