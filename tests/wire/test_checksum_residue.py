"""The CRC32 check reads an event's whole bytes (data + trailer give the CRC32 residue) instead
of slicing the trailer off: the stored and computed values it reports stay those of
header + body, matching or not."""

from __future__ import annotations

import struct
import zlib

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event, decode_plain
from tests.wire._binlog_fixtures import all_binlogs, decode_file, fixture

BINLOGS = all_binlogs()


@pytest.mark.skipif(not BINLOGS, reason="no fixture binlogs")
def test_computed_is_the_crc_of_header_and_body() -> None:
    checked = 0
    for path in BINLOGS:
        for ev in decode_file(fixture(path), record=False):
            if ev.checksum_computed is None or ev.raw is None:
                continue
            body_end = len(ev.raw) - 4
            assert ev.checksum_stored == struct.unpack_from("<I", ev.raw, body_end)[0]
            crc = zlib.crc32(ev.raw[:body_end])
            if crc != ev.checksum_computed:  # a FORMAT_DESCRIPTION of a file in use
                patched = bytearray(ev.raw[:body_end])
                patched[17] &= 0xFE
                crc = zlib.crc32(patched)
            assert ev.checksum_computed == crc
            assert ev.checksum_ok is (crc == ev.checksum_stored)
            checked += 1
    assert checked > 500


def test_a_flipped_byte_reports_both_crcs() -> None:
    def is_xid(e: DecodedEvent) -> bool:  # (an XID's last body byte is any byte)
        return e.checksum_computed is not None and e.header is not None and \
            e.header.type_code == 16
    path = next(p for p in BINLOGS if any(map(is_xid, decode_file(fixture(p), record=False))))
    ctx = DecodeContext()
    for ev in decode_file(fixture(path), record=False):  # (the FORMAT_DESCRIPTION first)
        decode_event(ev.raw or b"", ctx, record=False)
        if is_xid(ev):
            break
    raw = bytearray(ev.raw or b"")
    raw[-5] ^= 0xFF  # the XID's last byte
    bad = decode_event(bytes(raw), ctx, record=False)
    want = zlib.crc32(bytes(raw[:-4]))
    assert bad.checksum_ok is False
    assert bad.checksum_computed == want != bad.checksum_stored
    assert f"computed 0x{want:08x}" in (bad.error or "")


@pytest.mark.skipif(not BINLOGS, reason="no fixture binlogs")
@pytest.mark.parametrize("verify", [True, False])
def test_the_plain_path_equals_the_general_one(verify: bool) -> None:
    """decode_plain / decode_event's common case (a reused non-recording reader: the
    stream's hot loop) gives what
    its general path gives (no reader) for every event of every fixture binlog, damaged
    copies included (an event's last body byte and its checksum's first byte flipped)."""
    from binlogscope.wire.reader import ByteReader
    from tests.property.test_fuzz_binlog import event_key

    compared = 0
    for path in BINLOGS:
        data = fixture(path)
        plain_ctx, general_ctx = (DecodeContext(verify_checksums=verify) for _ in range(2))
        reader = ByteReader(b"", record=False)
        pos = 4
        while pos + 19 <= len(data):
            size = struct.unpack_from("<I", data, pos + 9)[0]
            if size < 19:
                break
            variants = []
            if size > 23 and data[pos + 4] != 15:  # (a FORMAT_DESCRIPTION kept whole)
                bad = bytearray(data)
                bad[pos + size - 5] ^= 0x5A
                bad[pos + size - 4] ^= 0xA5
                variants.append(bytes(bad))
            variants.append(data)  # (damaged first: both contexts see the same events)
            for buf in variants:
                plain = (decode_plain(buf, plain_ctx, pos, 0, reader) if size >= 23 else
                         decode_event(buf, plain_ctx, start=pos, base=0, record=False,
                                      reader=reader))
                general = decode_event(buf, general_ctx, start=pos, base=0, record=False)
                assert event_key(plain) == event_key(general), (path, pos)
                compared += 1
            pos += size
    assert compared > 1000
