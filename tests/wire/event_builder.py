"""Helpers for the event-decoder tests: hand-built events (for types with no real fixture) and
cached decodes of fixture files."""

from __future__ import annotations

from functools import lru_cache

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.encode_events import encode_event
from tests.helpers import FIXTURES, assert_tiles, decode_bytes, hexbytes, read_all


def build_event(type_code: int, body_hex: str, *, server_id: int = 1, log_pos: int = 0,
                flags: int = 0, timestamp: int = 0) -> bytes:
    """A v4 event with no checksum: 19-byte header + ``body_hex`` (commented hex)."""
    return encode_event(type_code, hexbytes(body_hex), timestamp=timestamp, server_id=server_id,
                        log_pos=log_pos, flags=flags, checksum=False)


def decode_one(raw: bytes, ctx: DecodeContext | None = None, *, record: bool = True,
               base: int = 0) -> DecodedEvent:
    """Decode one hand-built event (checksums off unless ``ctx`` says otherwise)."""
    ev = decode_event(raw, ctx if ctx is not None else DecodeContext(), base=base, record=record)
    if record:
        assert_tiles(ev)
    return ev


@lru_cache(maxsize=64)
def fixture_events(relpath: str) -> tuple[DecodedEvent, ...]:
    """Every event of a fixture file (path relative to shared/fixtures), tree mode."""
    events, dec = decode_bytes(read_all(FIXTURES / relpath))
    assert dec.fatal is None
    for ev in events:
        assert_tiles(ev)
    return tuple(events)


def fixture_fast(relpath: str) -> list[DecodedEvent]:
    events, _ = decode_bytes(read_all(FIXTURES / relpath), record=False)
    return events


def event_at(relpath: str, offset: int) -> DecodedEvent:
    for ev in fixture_events(relpath):
        if ev.offset == offset:
            return ev
    raise AssertionError(f"no event at {offset} in {relpath}")


def of_type(relpath: str, type_name: str) -> list[DecodedEvent]:
    return [e for e in fixture_events(relpath) if e.type_name == type_name]
