"""The inspector's rows of a compressed session (the MySQL 5.7 capture in the shared
fixtures): a COMPRESSED_FRAME row above the packets each frame carried, apart from the
binlog's own TRANSACTION_PAYLOAD compression."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.inspector.sources.packets import PacketStreamSource

CAP = (Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "colinnewell__pcap2mysql-log"
       / "test" / "captures" / "compressed.pcap")


@pytest.mark.skipif(not CAP.is_file(), reason="shared fixtures not present")
def test_frame_rows_above_their_packets() -> None:
    src = PacketStreamSource()
    for item in read_capture(str(CAP), record=True):
        src.add(item)
    n = src.info().rows
    assert n is not None
    types = [src.row(i).event_type for i in range(n)]
    at = types.index("COM_QUERY")
    assert types[at - 1] == "COMPRESSED_FRAME"
    assert types[types.index("COLUMN_COUNT") - 1] == "COMPRESSED_FRAME"
    assert types.count("COMPRESSED_FRAME") == 3
    i = types.index("COLUMN_COUNT") - 1
    assert src.row(i).summary.startswith("frame #1: zlib 98 -> 161 bytes")
    assert src.detail(i) is not None
