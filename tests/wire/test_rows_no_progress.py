"""A rows event whose columns-present bitmap is empty has row images of no bytes: with rows data
after it, reading image after image would never advance (found by fuzzing the stream: the
session hung and its memory grew without bound). Every decode path now stops there with an
error at the event, and decoding goes on with the next event."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import decode_event
from tests.native_switch import NativeSwitch
from tests.session.test_session import fixture_events

_ROWS = {23, 24, 25, 30, 31, 32}


def _zero_bitmap(ev: bytes) -> bytes:
    """The event with its columns-present bitmap(s) zeroed and the CRC32 made right again."""
    b = bytearray(ev)
    code = b[4]
    p = 19 + 6 + 2 + (2 if code >= 30 else 0)  # header, table id, flags, v2 extra length
    ncols = b[p]
    nb = (ncols + 7) // 8
    p += 1
    for k in range(nb * (2 if code in (24, 31) else 1)):
        b[p + k] = 0
    struct.pack_into("<I", b, len(b) - 4, zlib.crc32(bytes(b[:-4])))
    return bytes(b)


@pytest.mark.parametrize("record", [False, True])
@pytest.mark.parametrize("c_code", [True, False])
def test_empty_present_bitmap_is_an_error_not_a_hang(record: bool, c_code: bool,
                                                     native: NativeSwitch) -> None:
    events = fixture_events()
    target = next(i for i, e in enumerate(events) if e[4] in _ROWS)
    events[target] = _zero_bitmap(events[target])
    ctx = DecodeContext()
    with contextlib.nullcontext() if c_code else native.off():  # off: the pure-Python paths
        decoded = [decode_event(e, ctx, record=record) for e in events]
    bad = decoded[target]
    assert bad.error is not None and "no columns" in bad.error, bad.error
    assert all(d.error is None for i, d in enumerate(decoded) if i != target)
