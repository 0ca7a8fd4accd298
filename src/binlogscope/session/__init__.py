"""The sans-IO protocol state machine (h11 style): bytes in, events out, bytes to send.

::

    s = Session(role=Role.OBSERVER)               # REPLICA (MockSlave) | SOURCE (MockMaster)
    s.receive_data(data, sender=Peer.SERVER)      # b"" means EOF of that direction
    for ev in s.events(): ...                     # ends when more bytes are needed
    out = s.send(ComBinlogDump(...))              # REPLICA/SOURCE only

Modules, one job each:

- :mod:`.machine` - :class:`Session`: bytes in (buffering, compressed frames, gaps, EOF),
  the one packet loop, bytes out (what a REPLICA/SOURCE sends);
- :mod:`.packets` - what one whole packet becomes: sequence ids, the reader of the phase, the
  no-tree path of stream events, the :class:`PacketDecoded` and its errors;
- :mod:`.readers` - what one packet means in each phase and direction (connection phase,
  commands, stream packets, command replies);
- :mod:`.replies` - which reply the server owes in COMMAND (:class:`Reply`, the command table,
  the text result set being read);
- :mod:`.outgoing` - what a REPLICA/SOURCE may send and how each value is encoded;
- :mod:`.resync` - the mid-stream heuristics (where a packet starts after a gap or a join).

What the session emits is in :mod:`binlogscope.session.events`.
"""

from __future__ import annotations

from binlogscope.session.events import Peer, Phase, Role
from binlogscope.session.machine import SEMI_SYNC_QUERY, Session
from binlogscope.session.outgoing import BinlogEventData, ProtocolViolation
from binlogscope.session.replies import Reply

__all__ = [
    "SEMI_SYNC_QUERY",
    "BinlogEventData",
    "Peer",
    "Phase",
    "ProtocolViolation",
    "Reply",
    "Role",
    "Session",
]
