"""Any bytes, any truncation, any bit flip: the binlog decoder returns trees with error nodes and
never raises; trees always tile their bytes."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import decode_event
from tests.helpers import FIXTURES, assert_tiles, decode_bytes, read_all

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
