"""Shared helpers for the row-decoding tests: fixture paths and whole-file decoding."""

from __future__ import annotations

import gzip
from pathlib import Path

from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from tests.ci_support import unavailable
from tests.helpers import FIXTURES as FIXTURES  # (re-exported for the tests)

BLACKBEAM = FIXTURES / "blackbeam__rust_mysql_common/test-data/binlogs"
RUST_US = FIXTURES / "rust-us__mysql-cdc-rs/tests/events"
ROW_TYPES = {19, 20, 21, 22, 23, 24, 25, 30, 31, 32, 39, 166, 167, 168, 169, 170, 171}


def fixture(path: Path) -> bytes:
    if not path.exists():
        unavailable(f"fixture {path} not present")
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def decode_file(data: bytes, *, record: bool = True) -> list[DecodedEvent]:
    d = BinlogStreamDecoder(record=record)
    d.receive_data(data)
    d.receive_data(b"")
    return list(d.events())


def all_binlogs() -> list[Path]:
    """Every binlog file (magic fe 62 69 6e) under the fixtures directory."""
    if not FIXTURES.exists():
        return []
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file():
            continue
        head = p.read_bytes()[:4] if p.suffix != ".gz" else gzip.decompress(p.read_bytes())[:4]
        if head == b"\xfebin":
            out.append(p)
    return out
