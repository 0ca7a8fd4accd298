"""Any bytes, any truncation, any bit flip: the binlog decoder returns trees with error nodes and
never raises; trees always tile their bytes; and the tree and bulk modes, with the native kernel
and without, give the same events, values and errors."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog import stream
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from tests.helpers import (
    FIXTURES,
    assert_tiles,
    binlog_fixtures,
    decode_bytes,
    event_shape,
    read_all,
)
from tests.native_switch import NativeSwitch

_OSHEROFF = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources"
_BLACKBEAM = FIXTURES / "blackbeam__rust_mysql_common/test-data/binlogs"
SEEDS = [
    read_all(_OSHEROFF / "mysql-bin.checksum-crc32")[:6000],
    read_all(_BLACKBEAM / "json.binlog.000001"),
    read_all(_BLACKBEAM / "mariadb-bin.000001"),
    read_all(_BLACKBEAM / "transaction_compression.000001"),
    read_all(_BLACKBEAM / "mysql-enum-string-set.000001"),
    read_all(_BLACKBEAM / "vector.binlog"),
]
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(data: bytes) -> None:
    for record in (True, False):
        events, _ = decode_bytes(data, record=record)
        if record:
            for ev in events:
                assert_tiles(ev)


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_after_magic(data: bytes) -> None:
    _check(b"\xfebin" + data)


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_truncation_anywhere(seed: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(seed)))
    _check(seed[:cut])


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_bit_flips(seed: bytes, data: st.DataObject) -> None:
    buf = bytearray(seed)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        i = data.draw(st.integers(min_value=4, max_value=len(buf) - 1))
        buf[i] ^= 1 << data.draw(st.integers(min_value=0, max_value=7))
    _check(bytes(buf))


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_byte_overwrites_in_bodies_with_checksums_off(seed: bytes, data: st.DataObject) -> None:
    """With checksum verification off, corrupt bodies reach every body decoder."""
    good, _ = decode_bytes(seed)
    ctx = DecodeContext(verify_checksums=False)
    buf = bytearray(seed)
    i = data.draw(st.integers(min_value=4, max_value=len(buf) - 1))
    buf[i] = data.draw(st.integers(min_value=0, max_value=255))
    for ev in good:
        for record in (True, False):
            out = decode_event(bytes(buf), ctx, start=ev.offset, record=record)
            if record:
                assert_tiles(out)


# ----------------------------------------------------------------------------- one decoder
# Tree mode (a recording reader, a Node per field) and bulk mode (no tree, row values read on
# first access to ``body.rows``), with the native kernel and without it (``_native.kernel``,
# the one switch): the same events, values and errors (message and offset) on damaged input.

#: fields that only one mode fills (the tree) or that are caches, not decoded values
_NOT_VALUES = frozenset({"node", "decompressed", "nodes", "nodes_offset", "compiled",
                         "_rows", "_lazy", "_count"})


def value_key(v: Any) -> Any:
    """A decoded value as plain data, comparable across modes: dataclasses by their fields
    (tree-only fields and caches left out), a rows event with its rows read."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {f.name: value_key(getattr(v, f.name)) for f in dataclasses.fields(v)
               if f.name not in _NOT_VALUES}
        if isinstance(v, RowsEvent):
            out["rows"] = value_key(v.rows)
        return (type(v).__name__, out)
    if isinstance(v, list | tuple):
        return [value_key(x) for x in v]
    if isinstance(v, dict):
        return {k: value_key(x) for k, x in v.items()}
    return v


def event_key(ev: DecodedEvent) -> tuple[Any, ...]:
    """Everything one decoded event says, but its tree: offsets, header, body and rows,
    checksum, error, size, raw bytes, and the ``--json`` shape of the event."""
    return (ev.offset, value_key(ev.header), value_key(ev.body), ev.checksum_ok,
            ev.checksum_stored, ev.checksum_computed, ev.error, ev.size, ev.raw,
            event_shape(ev))


def _stream_keys(data: bytes, record: bool, verify: bool, chunk: int | None
                 ) -> tuple[list[tuple[Any, ...]], str | None]:
    dec = BinlogStreamDecoder(DecodeContext(verify_checksums=verify), record=record)
    keys: list[tuple[Any, ...]] = []
    step = chunk or len(data) or 1
    for i in range(0, len(data), step):
        dec.receive_data(data[i : i + step])
        keys.extend(event_key(ev) for ev in dec.events())
    dec.receive_data(b"")
    keys.extend(event_key(ev) for ev in dec.events())
    return keys, dec.fatal


@functools.lru_cache(maxsize=1)
def _all_seeds() -> tuple[bytes, ...]:
    """The start (up to 24 KB) of every binlog fixture."""
    return tuple(read_all(p)[:24_000] for p in binlog_fixtures())


@functools.lru_cache(maxsize=512)
def _event_starts(seed: bytes) -> tuple[int, ...]:
    return tuple(ev.offset for ev in decode_bytes(seed, record=False)[0])


def _damage(seed: bytes, data: st.DataObject) -> bytes:
    buf = bytearray(seed)
    mode = data.draw(st.sampled_from(["flip", "byte", "truncate", "event_size", "length"]))
    if mode == "truncate":
        return bytes(buf[: data.draw(st.integers(0, len(buf)))])
    for _ in range(data.draw(st.integers(1, 4))):
        if mode == "event_size":  # an event's size field: slightly off, or anything
            starts = [p for p in _event_starts(seed) if p + 13 <= len(buf)]
            if not starts:
                break
            p = data.draw(st.sampled_from(starts))
            size = int.from_bytes(buf[p + 9 : p + 13], "little")
            new = data.draw(st.one_of(st.integers(max(size - 40, 0), min(size + 40, 0xFFFFFFFF)),
                                      st.integers(0, 0xFFFFFFFF)))
            buf[p + 9 : p + 13] = new.to_bytes(4, "little")
            continue
        i = data.draw(st.integers(4, len(buf) - 1))
        if mode == "flip":
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif mode == "byte":
            buf[i] = data.draw(st.integers(0, 255))
        else:  # a length byte: packed-integer markers, or lengths past the end
            buf[i] = data.draw(st.sampled_from([0, 1, 0x7F, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF]))
    return bytes(buf)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_damaged_streams_decode_alike_in_every_mode(data: st.DataObject, native: NativeSwitch
                                                    ) -> None:
    """A damaged real binlog (bit flips, byte overwrites, truncation, event sizes, length
    bytes), decoded with a tree and without (in chunks of any size), with the native kernel
    and without: the same events, values and errors, message and offset."""
    seed = data.draw(st.sampled_from(_all_seeds()))
    damaged = _damage(seed, data)
    verify = data.draw(st.booleans())
    chunk = data.draw(st.sampled_from([None, 1, 7, 19, 500]))
    # events of this size and more get a buffer of their own bytes (small here: it happens)
    exact_cut = data.draw(st.sampled_from([stream.EXACT_CUT, 0, 20, 64]))
    want = _stream_keys(damaged, True, verify, None)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(stream, "EXACT_CUT", exact_cut)
        assert _stream_keys(damaged, False, verify, chunk) == want
    if native.loaded:
        with native.off(), pytest.MonkeyPatch.context() as m:
            m.setattr(stream, "EXACT_CUT", exact_cut)
            assert _stream_keys(damaged, False, verify, chunk) == want
            assert _stream_keys(damaged, True, verify, None) == want
