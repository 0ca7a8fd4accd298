"""The one test switch: every fixture binlog and the shipped MariaDB captures decode to the
same events, values, errors and trees with the native kernel as with it turned off (the
facade's one attribute, ``binlogscope._native.kernel``, set to None - what
``BINLOGSCOPE_PURE_PYTHON=1`` does at import): fed whole and in small chunks, with and without
the tree, and on damaged copies, where the kernel must also never crash."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.node import Node
from tests.helpers import FIXTURES, binlog_fixtures, body_of, decode_bytes, read_all
from tests.native_switch import NativeSwitch

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
MARIADB = [*sorted(CAPTURES.glob("*.binlog")), CAPTURES / "mariadb-10.11-workload.000001"]
FILES = binlog_fixtures() + MARIADB


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES) else p.name


@pytest.fixture(autouse=True)
def _need_kernel(native: NativeSwitch) -> None:
    native.require()


def _decode(data: bytes, chunk: int, verify: bool = True, record: bool = False
            ) -> list[DecodedEvent]:
    return decode_bytes(data, record=record, chunk=chunk, verify=verify)[0]


def _norm(ev: DecodedEvent) -> tuple[Any, ...]:
    """Everything of the event; the body by its repr (dataclass fields; ``table_map`` holds
    compiled plans, which are per-run objects, and is left out of the repr)."""
    body = ev.body
    extra = ((body.raw_rows, body.decompressed, body.rows) if isinstance(body, RowsEvent)
             else (None, None, None))
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


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_native_equals_pure(path: Path, native: NativeSwitch) -> None:
    data = read_all(path)
    kernel = _decode(data, len(data) or 1)
    lazy = sum(isinstance(e.body, RowsEvent) and e.body._lazy is not None for e in kernel)
    chunked = _decode(data, 1000)
    with native.off():
        pure = _decode(data, len(data) or 1)
    assert [_norm(e) for e in kernel] == [_norm(e) for e in pure]
    assert [_norm(e) for e in chunked] == [_norm(e) for e in pure]
    if path in MARIADB:
        assert lazy > 0, "no rows left to the kernel: the test would prove nothing"


def _lines(data: bytes, verify: bool = True) -> list[bytes]:
    """The ``file --json`` lines of the events (rows not read before: the kernel writes their
    JSON text where it can)."""
    return [dumps_line(binlog_event_json(e, "f")) for e in _decode(data, len(data) or 1, verify)]


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_native_json_lines_equal_pure(path: Path, native: NativeSwitch) -> None:
    data = read_all(path)
    kernel = _lines(data)
    with native.off():
        assert _lines(data) == kernel


@pytest.mark.parametrize("seed", range(6))
def test_native_json_lines_equal_pure_on_damaged_bytes(seed: int, native: NativeSwitch) -> None:
    data = bytearray(read_all(CAPTURES / "mariadb-10.11-workload.000001"))
    rnd = random.Random(seed)
    for _ in range(40):
        at = rnd.randrange(4, len(data))
        data[at] = rnd.randrange(256)
    kernel = _lines(bytes(data), verify=False)
    with native.off():
        assert _lines(bytes(data), verify=False) == kernel


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_native_tree_equals_pure_tree(path: Path, native: NativeSwitch) -> None:
    data = read_all(path)
    kernel = _decode(data, len(data) or 1, record=True)
    with native.off():
        pure = _decode(data, len(data) or 1, record=True)
    assert [_norm(e) for e in kernel] == [_norm(e) for e in pure]


def test_rows_are_read_on_demand() -> None:
    """Without a tree the row values wait in the event's bytes: ``row_count`` does not read
    them, the first ``rows`` does (once), and gives what the tree path gives."""
    data = read_all(CAPTURES / "mariadb-10.11-workload.000001")
    fast = [e for e in _decode(data, len(data)) if isinstance(e.body, RowsEvent)]
    tree = [e for e in _decode(data, len(data), record=True) if isinstance(e.body, RowsEvent)]
    fast_bodies = [body_of(e, RowsEvent) for e in fast]
    assert fast and all(b._lazy is not None and b._rows is None for b in fast_bodies)
    assert [b.row_count for b in fast_bodies] == [len(body_of(e, RowsEvent).rows) for e in tree]
    assert all(b._lazy is not None for b in fast_bodies)  # row_count read nothing
    assert [b.rows for b in fast_bodies] == [body_of(e, RowsEvent).rows for e in tree]
    assert all(b._lazy is None and b.rows is b.rows for b in fast_bodies)


@pytest.mark.parametrize("seed", range(12))
def test_native_equals_pure_on_damaged_bytes(seed: int, native: NativeSwitch) -> None:
    data = bytearray(read_all(CAPTURES / "mariadb-10.11-workload.000001"))
    rnd = random.Random(seed)
    for _ in range(40):
        at = rnd.randrange(4, len(data))
        data[at] = rnd.randrange(256)
    damaged = bytes(data)
    kernel = _decode(damaged, len(damaged), verify=False)
    with native.off():
        pure = _decode(damaged, len(damaged), verify=False)
    assert [_norm(e) for e in kernel] == [_norm(e) for e in pure]


@pytest.mark.parametrize("seed", range(4))
def test_native_equals_pure_on_damaged_bodies_with_valid_checksums(
        seed: int, native: NativeSwitch) -> None:
    """Bytes changed inside event bodies and each event's CRC32 recomputed, so the C paths
    (the kernel's row walk and reads) see damaged images: still the same
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
        kernel = _decode(damaged, len(damaged), record=record)
        with native.off():
            pure = _decode(damaged, len(damaged), record=record)
        assert [_norm(e) for e in kernel] == [_norm(e) for e in pure]
