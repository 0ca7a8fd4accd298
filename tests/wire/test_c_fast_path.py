"""The C accelerator (``_crows``: row images and whole hot events) gives exactly what the
pure-Python fast path gives: on every fixture binlog, on the shipped MariaDB captures' binlogs,
fed whole and in small chunks, and on damaged copies (random bytes changed, checksums not
verified, so the C code parses garbage) - where it must also never crash."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ci_support import unavailable

from binlogscope.wire import reader
from binlogscope.wire.binlog import _cfast, decode, rows, stream, table_map
from binlogscope.wire.binlog._rowcode import c_module
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.node import Node, _python_maker
from tests.helpers import FIXTURES, binlog_fixtures, read_all

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
MARIADB = [*sorted(CAPTURES.glob("*.binlog")), CAPTURES / "mariadb-10.11-workload.000001"]
FILES = binlog_fixtures() + MARIADB


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES) else p.name


@pytest.fixture(autouse=True)
def _need_c() -> None:
    if c_module() is None or _cfast.fast_event_c is None:
        unavailable("the C accelerator (binlogscope.wire.binlog._crows) is not built")


@contextmanager
def _pure_python(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.setenv("BINLOGSCOPE_PURE_PYTHON", "1")  # row plans compiled in Python
        m.setattr(stream, "fast_event_c", None)
        m.setattr(decode, "fast_event_c", None)
        m.setattr(decode, "_record_event", None)  # whole recorded events
        m.setattr(decode, "_record_header", None)  # recorded headers
        m.setattr(decode, "_make_event", DecodedEvent)
        m.setattr(decode, "_c_crc32", None)
        m.setattr(rows, "_c_decode_rows", None)
        m.setattr(rows, "_CReader", type(None))  # recorded images: the Python code
        m.setattr(table_map, "_crows", None)  # repeated TABLE_MAP nodes shifted in Python
        m.setattr(reader, "make_node", _python_maker())
        yield


def _decode(data: bytes, chunk: int, verify: bool = True, record: bool = False
            ) -> list[DecodedEvent]:
    dec = BinlogStreamDecoder(DecodeContext(verify_checksums=verify), record=record)
    out: list[DecodedEvent] = []
    for i in range(0, len(data), chunk):
        dec.receive_data(data[i : i + chunk])
        out.extend(dec.events())
    dec.receive_data(b"")
    out.extend(dec.events())
    return out


def _norm(ev: DecodedEvent) -> tuple[Any, ...]:
    """Everything of the event; the body by its repr (dataclass fields; ``table_map`` holds
    compiled plans, which are per-run objects, and is left out of the repr)."""
    body = ev.body
    extra = (getattr(body, "raw_rows", None), getattr(body, "decompressed", None))
    return (ev.offset, ev.header, ev.checksum_ok, ev.checksum_stored, ev.checksum_computed,
            ev.error, ev.size, _node_key(ev.node), ev.raw, type(body).__name__, repr(body),
            extra)


def _node_key(n: Node | None) -> Any:
    """A Node as nested tuples, values by repr (a TRANSACTION_PAYLOAD's value holds the inner
    events, whose table maps hold per-run compiled plans)."""
    if n is None:
        return None
    return (n.name, n.offset, n.length, type(n.value).__name__, repr(n.value), n.wire,
            n.display, n.doc, n.error, tuple(_node_key(c) for c in n.children))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    hits = [0]
    real = _cfast.fast_event_c
    assert real is not None

    def counted(buf: bytes, pos: int, base: int, ctx: Any) -> DecodedEvent | None:
        ev = real(buf, pos, base, ctx)
        hits[0] += ev is not None
        return ev

    monkeypatch.setattr(stream, "fast_event_c", counted)
    return hits


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_c_equals_python(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = read_all(path)
    hits = _counting(monkeypatch)
    with_c = _decode(data, len(data) or 1)
    chunked = _decode(data, 1000)
    with _pure_python(monkeypatch):
        pure = _decode(data, len(data) or 1)
    assert [_norm(e) for e in with_c] == [_norm(e) for e in pure]
    assert [_norm(e) for e in chunked] == [_norm(e) for e in pure]
    if path in MARIADB:
        assert hits[0] > 0, "the C path decoded nothing: the test would prove nothing"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_c_tree_equals_python_tree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree path with C parts (row image nodes, shifted TABLE_MAP nodes, Node
    construction) gives the same Nodes as the pure-Python tree path."""
    data = read_all(path)
    with_c = _decode(data, len(data) or 1, record=True)
    with _pure_python(monkeypatch):
        pure = _decode(data, len(data) or 1, record=True)
    assert [_norm(e) for e in with_c] == [_norm(e) for e in pure]


HOT = {"GTID_EVENT", "ANNOTATE_ROWS_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT_V1",
       "UPDATE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT_V1", "XID_EVENT"}


def _types_taken_by_c(monkeypatch: pytest.MonkeyPatch, module: Any, name: str,
                      record: bool) -> set[str]:
    """Decode the MariaDB workload binlog; the event types ``module.name`` (a C entry point)
    returned an event for."""
    data = read_all(CAPTURES / "mariadb-10.11-workload.000001")
    seen: set[str] = set()
    real = getattr(module, name)
    assert real is not None

    def spy(buf: bytes, pos: int, base: int, ctx: Any) -> DecodedEvent | None:
        ev = real(buf, pos, base, ctx)
        if ev is not None:
            seen.add(ev.type_name)
        return ev

    monkeypatch.setattr(module, name, spy)
    _decode(data, len(data), record=record)
    return seen


def test_c_covers_the_hot_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the MariaDB workload binlog the C path takes GTIDs, annotations, table maps, row
    events and XIDs (everything else goes to Python)."""
    assert _types_taken_by_c(monkeypatch, stream, "fast_event_c", record=False) >= HOT


def test_c_tree_covers_the_hot_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """In record mode the C tree builder takes the same hot events (so the tree comparison
    above compares C-built trees, not Python with Python)."""
    assert _types_taken_by_c(monkeypatch, decode, "_record_event", record=True) >= HOT


@pytest.mark.parametrize("seed", range(12))
def test_c_equals_python_on_damaged_bytes(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytearray(read_all(CAPTURES / "mariadb-10.11-workload.000001"))
    rnd = random.Random(seed)
    for _ in range(40):
        at = rnd.randrange(4, len(data))
        data[at] = rnd.randrange(256)
    damaged = bytes(data)
    with_c = _decode(damaged, len(damaged), verify=False)
    with _pure_python(monkeypatch):
        pure = _decode(damaged, len(damaged), verify=False)
    assert [_norm(e) for e in with_c] == [_norm(e) for e in pure]


@pytest.mark.parametrize("seed", range(4))
def test_c_equals_python_on_damaged_bodies_with_valid_checksums(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes changed inside event bodies and each event's CRC32 recomputed, so the C paths
    (fast and tree) take the damaged events instead of leaving them to Python: still the same
    events, values, trees and errors as pure Python, and no crash."""
    import struct
    import zlib

    data = bytearray(read_all(CAPTURES / "mariadb-10.11-workload.000001"))
    events: list[tuple[int, int]] = []
    p = 4
    while p + 19 <= len(data):
        size = struct.unpack_from("<I", data, p + 9)[0]
        events.append((p, size))
        p += size
    rnd = random.Random(seed)
    for _ in range(40):
        p, size = rnd.choice(events[2:])  # not the FORMAT_DESCRIPTION
        if size <= 23:
            continue
        for _ in range(rnd.randrange(1, 4)):
            data[p + 19 + rnd.randrange(size - 23)] = rnd.randrange(256)
        struct.pack_into("<I", data, p + size - 4, zlib.crc32(bytes(data[p : p + size - 4])))
    damaged = bytes(data)
    for record in (False, True):
        with_c = _decode(damaged, len(damaged), record=record)
        with _pure_python(monkeypatch):
            pure = _decode(damaged, len(damaged), record=record)
        assert [_norm(e) for e in with_c] == [_norm(e) for e in pure]


def test_crc32_equals_zlib() -> None:
    import zlib

    crows = c_module()
    assert crows is not None
    rnd = random.Random(7)
    for n in [0, 1, 7, 8, 9, 63, 64, 65, 1000, 4099]:
        b = rnd.randbytes(n)
        assert crows.crc32(b, 0, n) == zlib.crc32(b)
        if n > 3:
            assert crows.crc32(b, 2, n - 1) == zlib.crc32(b[2 : n - 1])
