"""BinlogFileSource: compact index, lazy detail decode from context checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.inspector.source import RowSource
from binlogscope.inspector.sources import binlog_file as bf
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.wire.node import check_tiling
from tests.helpers import FIXTURES
from tests.tui.conftest import CRC, TRUNC

SAKILA = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila.gz"


def _indexed(path: Path) -> BinlogFileSource:
    s = BinlogFileSource(path)
    s.run(lambda: False)
    return s


def test_rows_match_the_decoder() -> None:
    s = _indexed(CRC)
    assert isinstance(s, RowSource)
    evs = list(read_binlog_file(CRC, record=True))
    assert len(s) == len(evs) == 303
    for i, ev in enumerate(evs):
        row = s.row(i)
        assert ev.header is not None
        assert (row.offset, row.length, row.event_type, row.log_pos) == (
            ev.offset, ev.size, ev.type_name, ev.header.log_pos)
    info = s.info()
    assert info.done and info.server_version == "5.7.21-log" and info.checksum == "CRC32"
    assert s.position(5) == "mysql-bin.checksum-crc32:384"
    assert s.find_offset(400) == 5 and s.find_offset(384) == 5 and s.find_offset(0) == 0


@pytest.mark.parametrize("path", [CRC, SAKILA, TRUNC], ids=lambda p: p.name)
def test_detail_equals_a_full_decode(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bf, "CHECKPOINT_EVENTS", 7)  # many checkpoints: replay from each
    s = _indexed(path)
    evs = list(read_binlog_file(path, record=True))
    assert len(s) == len(evs)
    assert len(s._cp_offsets) > min(3, len(evs) // 7)
    for i in [*range(0, len(evs), max(len(evs) // 60, 1)), len(evs) - 1]:
        d = s.detail(i)
        ev = evs[i]
        assert ev.node is not None
        assert d.node.to_dict() == ev.node.to_dict(), i
        assert d.base == ev.offset and d.raw == ev.raw and d.error == ev.error
        if ev.error is None:
            assert not check_tiling(d.node)
        assert d.slice(d.node) == ev.raw
