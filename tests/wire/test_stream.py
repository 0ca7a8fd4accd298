"""The binlog file stream decoder: chunking, truncation, damage and resync."""

from __future__ import annotations

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import decode_event
from tests.helpers import FIXTURES, assert_tiles, decode_bytes, read_all

_OSHEROFF = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources"
CRC_FILE = _OSHEROFF / "mysql-bin.checksum-crc32"
NONE_FILE = _OSHEROFF / "mysql-bin.checksum-none"


def test_chunking_does_not_change_results() -> None:
    data = read_all(CRC_FILE)
    whole, _ = decode_bytes(data)
    for chunk in (1, 7, 19, 4096):
        parts, _ = decode_bytes(data, chunk=chunk)
        assert [(e.offset, e.size, e.type_name) for e in parts] == [
            (e.offset, e.size, e.type_name) for e in whole]
    assert whole[0].type_name == "FORMAT_DESCRIPTION_EVENT"
    assert sum(e.size for e in whole) + 4 == len(data)


def test_checksums_verified_and_explained() -> None:
    events, dec = decode_bytes(read_all(CRC_FILE))
    assert dec.ctx.checksum_alg == 1
    assert all(e.checksum_ok is True for e in events)
    node = events[1].node
    assert node is not None
    ck = node.find("checksum")
    assert ck.length == 4 and "ok" in ck.display
    assert "FORMAT_DESCRIPTION at offset 4" in ck.doc


def test_checksum_off_means_last_four_bytes_are_body() -> None:
    events, dec = decode_bytes(read_all(NONE_FILE))
    assert dec.ctx.checksum_alg == 0
    rotate_or_query = events[2]
    assert rotate_or_query.checksum_ok is None
    assert rotate_or_query.node is not None
    assert rotate_or_query.node.get("checksum") is None


def test_bit_flip_is_a_checksum_error_on_that_event_only() -> None:
    data = bytearray(read_all(CRC_FILE))
    good, _ = decode_bytes(bytes(data))
    victim = good[3]
    data[victim.offset + victim.size - 6] ^= 0x40  # a body byte
    events, _ = decode_bytes(bytes(data))
    assert len(events) == len(good)
    bad = [e for e in events if e.checksum_ok is False]
    assert [e.offset for e in bad] == [victim.offset]
    assert bad[0].error and "checksum mismatch" in bad[0].error


def test_truncated_file_keeps_every_complete_event() -> None:
    data = read_all(CRC_FILE)
    good, _ = decode_bytes(data)
    cut = good[10].offset + 7
    events, _ = decode_bytes(data[:cut])
    assert [e.offset for e in events[:10]] == [e.offset for e in good[:10]]
    assert all(e.error is None for e in events[:10])
    assert len(events) == 11
    assert events[10].error is not None and "truncated" in events[10].error
    assert_tiles(events[10])


def test_corrupt_size_resyncs_at_next_header() -> None:
    data = bytearray(read_all(CRC_FILE))
    good, _ = decode_bytes(bytes(data))
    victim = good[5]
    data[victim.offset + 9 : victim.offset + 13] = (3).to_bytes(4, "little")  # event_size=3
    events, _ = decode_bytes(bytes(data))
    errs = [e for e in events if e.error]
    assert errs[0].offset == victim.offset
    assert "skipped" in (errs[0].error or "")
    # decoding continues at the next real event
    after = [e.offset for e in events if e.offset > victim.offset]
    assert after[0] == good[6].offset
    assert [e.offset for e in events][-1] == good[-1].offset


def test_not_a_binlog() -> None:
    events, dec = decode_bytes(b"-----BEGIN PGP")
    assert events == []
    assert dec.fatal is not None and "not a binlog" in dec.fatal


def test_decode_event_never_raises_on_garbage() -> None:
    ctx = DecodeContext()
    for junk in (b"", b"\x00", b"\xff" * 19, b"\x00" * 18 + b"\x01" * 30):
        ev = decode_event(junk, ctx)
        assert ev.error is not None or ev.size == len(junk)


@pytest.mark.parametrize("record", [True, False])
def test_fast_and_tree_mode_same_events(record: bool) -> None:
    data = read_all(CRC_FILE)
    a, _ = decode_bytes(data, record=True)
    b, _ = decode_bytes(data, record=record)
    assert [(e.offset, e.checksum_ok, e.error) for e in a] == [
        (e.offset, e.checksum_ok, e.error) for e in b]
    assert (b[0].node is None) is (not record)


def test_a_files_encrypted_rest_stops_with_a_clear_error() -> None:
    """MariaDB encrypt_binlog=ON: after START_ENCRYPTION the file's bytes are encrypted; a
    reader without the key stops there saying so (not a 'damaged data' scan through random
    bytes); a stream a server sent (decrypted) reads on when told it is no file."""
    import os

    from binlogscope.wire.binlog.control_events import StartEncryptionEvent
    from binlogscope.wire.binlog.encode_events import (
        encode_event,
        encode_format_description,
        encode_start_encryption,
        format_description,
    )
    from binlogscope.wire.binlog.stream import BinlogStreamDecoder
    from binlogscope.wire.binlog.types import EventType as E

    fde = encode_event(E.FORMAT_DESCRIPTION_EVENT, encode_format_description(
        format_description("10.11.19-MariaDB-log")), log_pos=256)
    se = encode_event(E.START_ENCRYPTION_EVENT, encode_start_encryption(
        StartEncryptionEvent(1, 7, bytes(12))), log_pos=4 + len(fde) + 36)
    rest = os.urandom(400)
    dec = BinlogStreamDecoder()
    dec.receive_data(b"\xfebin" + fde + se + rest)
    dec.receive_data(b"")
    types = [ev.header.type_code for ev in dec.events() if ev.header is not None]
    assert types == [E.FORMAT_DESCRIPTION_EVENT, E.START_ENCRYPTION_EVENT]
    assert dec.fatal is not None and "encrypted" in dec.fatal and "key version 7" in dec.fatal
    assert dec.fatal.startswith(f"at offset {4 + len(fde) + len(se)}:")
    from binlogscope.wire.binlog.control_events import XidEvent
    from binlogscope.wire.binlog.encode_events import encode_xid

    xid = encode_event(E.XID_EVENT, encode_xid(XidEvent(5)),
                       log_pos=4 + len(fde) + len(se) + 31)
    served = BinlogStreamDecoder(encrypted_file=False)
    served.receive_data(b"\xfebin" + fde + se + xid)
    served.receive_data(b"")
    assert [ev.header.type_code for ev in served.events() if ev.header is not None] == [
        E.FORMAT_DESCRIPTION_EVENT, E.START_ENCRYPTION_EVENT, E.XID_EVENT]
    assert served.fatal is None
