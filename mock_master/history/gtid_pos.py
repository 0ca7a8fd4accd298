"""``binlog_gtid_pos(file, pos)``: the GTID position at a point of the served binlog files.

As MariaDB computes it (``gtid_state_from_binlog_pos``): the state starts from the file's
GTID_LIST event (also for a position at or before it: 0, 4, the GTID_LIST's own start) and
every GTID event that ends at or before ``pos`` replaces its domain's GTID.
``pos`` must be an event boundary of the file (its start 0/4 or an event's start or end);
anything else, and a file the server does not have, gives NULL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from binlogscope.wire.binlog.gtid_events import GtidListEvent, MariadbGtidEvent
from binlogscope.wire.binlog.types import EventType

if TYPE_CHECKING:
    from mock_master.history.sources import EventStream

_GTID = int(EventType.GTID_EVENT)
_GTID_LIST = int(EventType.GTID_LIST_EVENT)
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)


def binlog_gtid_pos(stream: EventStream, name: str, pos: int) -> str | None:
    """The GTID state (``d-s-n,...`` by domain) at ``name``:``pos``; None where MariaDB gives
    NULL."""
    from mock_master.history.sources import decode_stored

    fi = stream.file_index(name)
    if fi is None or pos < 0:
        return None
    f = stream.files[fi]
    offsets = f.offsets
    if pos not in (0, 4, f.size) and pos not in set(offsets):
        return None
    state: dict[int, str] = {}
    for i in range(f.count):
        ev = f.event(i)
        if offsets[i] + len(ev) > pos and ev[4] not in (_GTID_LIST, _FDE):
            break  # (the file's preamble - FORMAT_DESCRIPTION, GTID_LIST - is read whatever
            # the position, as the server does: its starting state counts from position 0)
        if ev[4] == _GTID_LIST:
            body = decode_stored(ev, f.checksum).body
            for g in body.gtids if isinstance(body, GtidListEvent) else []:
                state[g.domain_id] = f"{g.domain_id}-{g.server_id}-{g.seq_no}"
        elif ev[4] == _GTID:
            gtid = decode_stored(ev, f.checksum).body
            if isinstance(gtid, MariadbGtidEvent):
                state[gtid.domain_id] = gtid.gtid
    return ",".join(state[d] for d in sorted(state))
