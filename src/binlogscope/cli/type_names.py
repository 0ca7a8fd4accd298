"""The names ``--type`` accepts: binlog event types (every version's name and its family) and
packet kinds, and the check that a name is one of them.

A binlog event type matches by its name as the server's headers call it
(``WRITE_ROWS_EVENT_V1``), without ``_EVENT``/``_LOG_EVENT`` (``write_rows_v1``), and by its
family without the version suffix (``WRITE_ROWS_EVENT`` and ``write_rows`` match MySQL's v2
and MariaDB's v1 alike; ``gtid`` matches MySQL's GTID_LOG_EVENT and MariaDB's GTID_EVENT;
PARTIAL_UPDATE_ROWS is a family of its own). A packet matches by its kind (``com_query``,
``semi_sync_ack``, ``err``) and, for the commands read without a decoder of their own, by the
command's name (``com_quit``). Names are compared case-blind. A name that is none of these is
an error, never an empty output.
"""

from __future__ import annotations

import re
from functools import cache

from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.constants import Command
from binlogscope.wire.packet import KINDS

_VERSION = re.compile(r"_v\d$")


@cache
def event_type_names(type_name: str) -> frozenset[str]:
    """Every ``--type`` spelling that selects events of ``type_name`` (lower case)."""
    t = type_name.lower()
    names = {t}
    for base in (t, _VERSION.sub("", t)):
        names |= {base, base.removesuffix("_event"), base.removesuffix("_log_event")}
        short = base.replace("_event_v", "_v").replace("_log_event", "")
        names.add(short)
        names.add(_VERSION.sub("", short).removesuffix("_event"))
    names.discard("")
    return frozenset(names)


@cache
def known_types() -> frozenset[str]:
    """Every name ``--type`` accepts (lower case)."""
    names: set[str] = set(KINDS) | {"binlog_event", "decode_error", "note"}
    for et in EventType:
        names |= event_type_names(et.name)
    for cmd in Command:
        names.add(cmd.name.lower())
    return frozenset(names)


def unknown_types(wanted: set[str]) -> list[str]:
    """The names in ``wanted`` (lower case) that select nothing."""
    known = known_types()
    return sorted(t for t in wanted if t not in known)
