"""binlogscope: see and test the MySQL/MariaDB replication protocol byte by byte."""

from __future__ import annotations

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.node import Node

__version__ = "0.1.0"

__all__ = [
    "BinlogStreamDecoder",
    "DecodeContext",
    "DecodedEvent",
    "Node",
    "__version__",
    "decode_event",
]
