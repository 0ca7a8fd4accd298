"""The sans-IO protocol state machine (h11 style): bytes in, events out, bytes to send.

::

    s = Session(role=Role.OBSERVER)               # REPLICA (MockSlave) | SOURCE (MockMaster)
    s.receive_data(data, sender=Peer.SERVER)      # b"" means EOF of that direction
    for ev in s.events(): ...                     # ends when more bytes are needed
    out = s.send(ComBinlogDump(...))              # REPLICA/SOURCE only

Modules:

- :mod:`.machine` - :class:`Session`: the phases, sequence ids, buffering and the packet loop;
- :mod:`.resync` - the mid-stream heuristics (where a packet starts after a gap or a join).
"""
from __future__ import annotations

from binlogscope.events import Peer, Phase, Role
from binlogscope.session.machine import (
    SEMI_SYNC_QUERY,
    BinlogEventData,
    ProtocolViolation,
    Session,
)

__all__ = [
    "SEMI_SYNC_QUERY",
    "BinlogEventData",
    "Peer",
    "Phase",
    "ProtocolViolation",
    "Role",
    "Session",
]
