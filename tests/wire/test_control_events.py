"""Control and small session events: real fixture bytes checked against the mysqlbinlog dumps
shipped with them; hand-built events (commented hex, one field per line) only for types no
fixture contains (heartbeats, XA_PREPARE, VIEW_CHANGE, TRANSACTION_CONTEXT, START_ENCRYPTION,
START_V3, IGNORABLE, SLAVE)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.control_events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    FormatDescriptionEvent,
    HeartbeatEvent,
    IgnorableEvent,
    IncidentEvent,
    IntvarEvent,
    RandEvent,
    RotateEvent,
    RowsQueryEvent,
    SlaveEvent,
    StartEncryptionEvent,
    StartEventV3,
    TransactionContextEvent,
    UserVarEvent,
    ViewChangeEvent,
    XaPrepareEvent,
    XidEvent,
    decode_packed_decimal,
)
from binlogscope.wire.binlog.payload_events import TransactionPayloadEvent
from binlogscope.wire.binlog.types import ChecksumAlg, EventType
from tests.helpers import FIXTURES, body_of
from tests.wire.event_builder import build_event, decode_one, event_at, fixture_events, of_type

R57 = "rust-us__mysql-cdc-rs/tests/events/5.7"
BB = "blackbeam__rust_mysql_common/test-data/binlogs"


# ------------------------------------------------------------------ FDE / ROTATE / STOP
def test_format_description_rotate_stop() -> None:
    fde = event_at(f"{R57}/14_user_var/log.bin", 4)
    fdb = body_of(fde, FormatDescriptionEvent)
    assert fdb.server_version == "5.7.30-log"
    assert fdb.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32
    assert fde.node is not None
    assert fde.node.find("body.checksum_alg").offset == 4 + 119 - 5
    rot = event_at(f"{R57}/14_user_var/log.bin", 1237)
    rotb = body_of(rot, RotateEvent)
    assert (rotb.position, rotb.next_log_name) == (4, "mysql_bin.000002")
    assert rot.node is not None
    name = rot.node.find("body.next_log_name")
    assert (name.offset, name.length) == (1237 + 19 + 8, 16)
    stop = of_type(f"{R57}/03_stop/log.bin", "STOP_EVENT")
    assert len(stop) == 1 and stop[0].error is None and stop[0].size == 23


# ------------------------------------------------------------------ XID / INTVAR / RAND
def _dumps() -> list[Path]:
    return sorted((FIXTURES / R57).glob("*/dump.txt"))


@pytest.mark.parametrize("dump", _dumps(), ids=lambda p: p.parent.name)
def test_xid_intvar_rand_match_mysqlbinlog(dump: Path) -> None:
    text = dump.read_text("utf-8")
    events = fixture_events(str((dump.parent / "log.bin").relative_to(FIXTURES)))
    xids = [body_of(e, XidEvent).xid for e in events if e.type_name == "XID_EVENT"]
    assert xids == [int(x) for x in re.findall(r"#\s*\tXid = (\d+)", text)]
    intvars = [(b.type_name, b.value) for e in events if e.type_name == "INTVAR_EVENT"
               for b in [body_of(e, IntvarEvent)]]
    expected = [("INSERT_ID_EVENT" if k == "INSERT_ID" else "LAST_INSERT_ID_EVENT", int(v))
                for k, v in re.findall(r"^SET (INSERT_ID|LAST_INSERT_ID)=(\d+)", text, re.M)]
    assert intvars == expected
    rands = [(b.seed1, b.seed2) for e in events if e.type_name == "RAND_EVENT"
             for b in [body_of(e, RandEvent)]]
    assert rands == [(int(a), int(b)) for a, b in
                     re.findall(r"SET @@RAND_SEED1=(\d+), @@RAND_SEED2=(\d+)", text)]


def test_small_event_spans() -> None:
    rel = f"{R57}/14_user_var/log.bin"
    xid = event_at(rel, 1206)
    assert body_of(xid, XidEvent).xid == 83 and xid.node is not None
    x = xid.node.find("body.xid")
    assert (x.offset, x.length) == (1225, 8)
    iv = event_at(rel, 869)
    assert (body_of(iv, IntvarEvent).type, body_of(iv, IntvarEvent).value) == (2, 1)
    assert iv.node is not None
    assert iv.node.find("body.type").display == "INSERT_ID_EVENT"
    assert (iv.node.find("body.value").offset, iv.node.find("body.value").length) == (889, 8)
    rnd = event_at(f"{R57}/13_rand/log.bin", 736)
    assert (body_of(rnd, RandEvent).seed1, body_of(rnd, RandEvent).seed2) == (694882935, 292094996)
    assert rnd.node is not None and rnd.node.find("body.seed2").offset == 736 + 19 + 8


# ------------------------------------------------------------------ USER_VAR
def test_user_var_string_int_decimal() -> None:
    rel = f"{R57}/14_user_var/log.bin"
    s = event_at(rel, 901)
    assert s.body == UserVarEvent("val_s", False, 0, 33, "test blog", b"test blog", None)
    assert s.node is not None
    v = s.node.find("body.value")
    assert (v.offset, v.length) == (901 + 19 + 4 + 5 + 1 + 1 + 4 + 4, 9)
    assert "utf8mb3_general_ci" in s.node.find("body.charset").display

    i = body_of(event_at(rel, 952), UserVarEvent)
    assert (i.name, i.type, i.value, i.flags, i.is_unsigned) == ("val_i", 2, 100, 0, False)
    d = event_at(rel, 1003)
    db = body_of(d, UserVarEvent)
    assert (db.name, db.type, db.value) == ("val_d", 4, "1.00")
    assert d.node is not None and "DECIMAL(3,2)" in d.node.find("body.value").display


def test_user_var_null() -> None:
    ev = event_at(f"{BB}/bug11747887-bin.000003", 422)
    assert ev.body == UserVarEvent("2", True)
    assert ev.node is not None and ev.node.find("body.is_null").value == 1


def test_user_var_unsigned_and_real_hand_built() -> None:
    raw = build_event(EventType.USER_VAR_EVENT, """
        01 00 00 00               # name_length 1
        75                        # name "u"
        00                        # is_null 0
        02                        # type INT_RESULT
        3f 00 00 00               # charset 63 (binary)
        08 00 00 00               # value_length 8
        ff ff ff ff ff ff ff ff   # value: 2^64-1 when unsigned
        01                        # flags: UNSIGNED_F
    """)
    ev = decode_one(raw)
    b = body_of(ev, UserVarEvent)
    assert (b.value, b.is_unsigned) == (2**64 - 1, True)
    raw = build_event(EventType.USER_VAR_EVENT, """
        01 00 00 00  72  00       # name "r", not NULL
        01                        # type REAL_RESULT
        3f 00 00 00  08 00 00 00  # charset 63, length 8
        00 00 00 00 00 00 f8 3f   # 1.5 as a double
        00                        # flags
    """)
    assert body_of(decode_one(raw), UserVarEvent).value == 1.5


def test_mariadb_dummy_user_var_is_explained() -> None:
    raw = build_event(EventType.USER_VAR_EVENT, """
        02 00 00 00   # name_length 2 (as much of "!dummyvar" as fits)
        21 64         # "!d"
        01            # is_null
    """, flags=0x08)
    ev = decode_one(raw)
    assert body_of(ev, UserVarEvent).is_null and ev.node is not None
    assert "MariaDB dummy" in ev.node.find("body.name").display


@pytest.mark.parametrize(("data", "prec", "scale", "text"), [
    ("81 00", 3, 2, "1.00"),
    ("7e ff", 3, 2, "-1.00"),
    ("80 00 00 00 00", 10, 0, "0"),
    ("81 0d fb 38 d2 04 d2", 14, 4, "1234567890.1234"),  # the MySQL manual's example
    ("7e f2 04 c7 2d fb 2d", 14, 4, "-1234567890.1234"),
    ("80 00 00 00  00 00 00 00  00 00 00 00  00 01", 30, 30,
     "0.000000000000000000000000000001"),
])
def test_packed_decimal(data: str, prec: int, scale: int, text: str) -> None:
    assert decode_packed_decimal(bytes.fromhex(data), prec, scale) == text


def test_packed_decimal_rejects_bad_precision() -> None:
    with pytest.raises(ValueError, match="valid precision"):
        decode_packed_decimal(b"\x80", 2, 3)


# ------------------------------------------------------------------ text events
def test_rows_query_annotate_checkpoint() -> None:
    rq = event_at(f"{R57}/29_row_query/log.bin", 802)
    text = body_of(rq, RowsQueryEvent).query
    assert text == "INSERT INTO `boxercrab` (`title`) VALUES ('hahhhhhhhhh')"
    dump = (FIXTURES / R57 / "29_row_query/dump.txt").read_text("utf-8")
    assert f"# {text}\n" in dump
    assert rq.node is not None
    assert (rq.node.find("body.length").offset, rq.node.find("body.query").offset) == (821, 822)

    an = event_at(f"{BB}/mariadb-bin.000001", 372)
    assert body_of(an, AnnotateRowsEvent).query.startswith(
        "insert into outbox (topic, event_type, event) values")
    cp = event_at(f"{BB}/mariadb-bin.000001", 285)
    assert body_of(cp, BinlogCheckpointEvent).binlog_file == "mariadb-bin.000001"
    assert cp.node is not None
    assert cp.node.find("body.binlog_file_name").offset == 285 + 19 + 4


def test_incident_with_invalid_number() -> None:
    """bug40482: the mysql-server sample of an Incident event with a bogus incident number."""
    ev = event_at(f"{BB}/bug40482-bin.000001", 106)
    assert ev.error is None
    b = body_of(ev, IncidentEvent)
    assert (b.incident, b.message) == (66, "")
    assert ev.node is not None
    assert "unknown incident number 66" in ev.node.find("body.incident").display


def test_incident_lost_events_hand_built() -> None:
    raw = build_event(EventType.INCIDENT_EVENT, """
        01 00                                   # incident 1: INCIDENT_LOST_EVENTS
        0b                                      # message_length 11
        6c 6f 73 74 20 65 76 65 6e 74 73        # "lost events"
    """)
    ev = decode_one(raw)
    b = body_of(ev, IncidentEvent)
    assert (b.incident, b.message) == (1, "lost events")


# ------------------------------------------------------------------ hand-built only
def test_heartbeat_v1() -> None:
    raw = build_event(EventType.HEARTBEAT_LOG_EVENT, """
        62 69 6e 6c 6f 67 2e 30 30 30 30 30 37   # log_ident "binlog.000007" (to the end)
    """, log_pos=1234, flags=0x20)
    ev = decode_one(raw)
    assert ev.body == HeartbeatEvent("binlog.000007", 1234)
    assert ev.node is not None
    ident = ev.node.find("body.log_ident")
    assert (ident.offset, ident.length) == (19, 13)


def test_heartbeat_v2() -> None:
    raw = build_event(EventType.HEARTBEAT_LOG_EVENT_V2, """
        01                                        # type 1: log_filename
        0d                                        # length 13
        62 69 6e 6c 6f 67 2e 30 30 30 30 34 32    # "binlog.000042"
        02                                        # type 2: log_position
        09                                        # length 9
        fe 00 00 00 00 01 00 00 00                # packed int: 2^32 (beyond 32-bit log_pos)
        00                                        # end mark
    """, log_pos=0)
    ev = decode_one(raw)
    assert ev.error is None
    assert ev.body == HeartbeatEvent("binlog.000042", 1 << 32)
    assert ev.node is not None
    pos = ev.node.find("body.log_position")
    assert (pos.offset, pos.length, pos.value) == (19 + 15, 11, 1 << 32)
    assert ev.node.find("body.end_mark").offset == len(raw) - 1


def test_heartbeat_v2_bad_int_length_is_an_error() -> None:
    raw = build_event(EventType.HEARTBEAT_LOG_EVENT_V2, """
        02        # log_position
        02        # length 2, but the packed int inside is 1 byte
        05 00
    """)
    ev = decode_one(raw)
    assert ev.error is not None and "after the value" in ev.error


def test_xa_prepare() -> None:
    raw = build_event(EventType.XA_PREPARE_LOG_EVENT, """
        00              # one_phase 0: XA PREPARE
        01 00 00 00     # format_id 1
        03 00 00 00     # gtrid_length 3
        02 00 00 00     # bqual_length 2
        67 74 72        # gtrid "gtr"
        62 71           # bqual "bq"
    """)
    ev = decode_one(raw)
    assert ev.body == XaPrepareEvent(False, 1, b"gtr", b"bq")
    assert body_of(ev, XaPrepareEvent).xid == "X'677472',X'6271',1"
    assert ev.node is not None and ev.node.find("body.bqual").offset == 19 + 13 + 3


def test_xa_prepare_lengths_over_64_are_an_error() -> None:
    raw = build_event(EventType.XA_PREPARE_LOG_EVENT,
                      "01  01 00 00 00  41 00 00 00  00 00 00 00")
    assert "exceed 64" in (decode_one(raw).error or "")


def test_view_change() -> None:
    view_id = b"16234567890123456:1".ljust(40, b"\0")
    raw = build_event(EventType.VIEW_CHANGE_EVENT, f"""
        {view_id.hex()}              # view_id, NUL-padded to 40
        07 00 00 00 00 00 00 00      # seq_number 7
        01 00 00 00                  # certification_info_size 1
        02 00  6b 31                 # key_length 2, key "k1"
        03 00 00 00  61 62 63        # value_length 3, value "abc"
    """)
    ev = decode_one(raw)
    b = body_of(ev, ViewChangeEvent)
    assert (b.view_id, b.seq_number) == ("16234567890123456:1", 7)
    assert b.certification_info == {"k1": b"abc"}
    assert ev.node is not None
    assert ev.node.find("body.certification_info.entry_0.value").offset == len(raw) - 3


def test_transaction_context() -> None:
    uuid = b"3e11fa47-71ca-11e1-9e33-c80aa9429562"
    raw = build_event(EventType.TRANSACTION_CONTEXT_EVENT, f"""
        24                 # server_uuid_length 36
        05 00 00 00        # thread_id 5
        01                 # gtid_specified
        02 00 00 00        # snapshot_version_length 2
        01 00 00 00        # write_set_length: 1 item
        00 00 00 00        # read_set_length: 0 items
        {uuid.hex()}       # server_uuid
        aa bb              # snapshot_version
        03 00  01 02 03    # write-set item of 3 bytes
    """)
    ev = decode_one(raw)
    b = body_of(ev, TransactionContextEvent)
    assert (b.server_uuid, b.thread_id, b.gtid_specified) == (uuid.decode(), 5, True)
    assert (b.snapshot_version, b.write_set, b.read_set) == (b"\xaa\xbb", [b"\x01\x02\x03"], [])


def test_start_encryption() -> None:
    raw = build_event(EventType.START_ENCRYPTION_EVENT, """
        01                                   # crypto_scheme 1
        02 00 00 00                          # key_version 2
        00 01 02 03 04 05 06 07 08 09 0a 0b  # nonce (12 bytes)
    """)
    ev = decode_one(raw, DecodeContext(server_version="10.11.6-MariaDB"))
    b = body_of(ev, StartEncryptionEvent)
    assert (b.crypto_scheme, b.key_version) == (1, 2)
    assert b.nonce == bytes(range(12))
    assert ev.node is not None and "encrypted" in ev.node.doc


def test_start_v3_ignorable_slave() -> None:
    raw = build_event(EventType.START_EVENT_V3, "03 00" + (b"4.0.24".ljust(50, b"\0")).hex()
                      + "10 00 00 00")
    ev = decode_one(raw)
    b = body_of(ev, StartEventV3)
    assert (b.binlog_version, b.server_version, b.create_timestamp) == (
        3, "4.0.24", 16)
    ig = decode_one(build_event(EventType.IGNORABLE_LOG_EVENT, "01 02 03", flags=0x80))
    assert body_of(ig, IgnorableEvent).data == b"\x01\x02\x03"
    sl = decode_one(build_event(EventType.SLAVE_EVENT, "ff"))
    assert body_of(sl, SlaveEvent).data == b"\xff"


def test_truncated_small_event_is_an_error_node() -> None:
    ev = decode_one(build_event(EventType.XID_EVENT, "01 02 03"))
    assert ev.error is not None and "truncated" in ev.error
    assert ev.node is not None and ev.node.errors()


def test_fast_path_same_values() -> None:
    from tests.wire.event_builder import fixture_fast
    rel = f"{R57}/14_user_var/log.bin"
    assert [e.body for e in fixture_fast(rel)] == [e.body for e in fixture_events(rel)]


# ------------------------------------------------------------------ the whole corpus
_ROW_TYPES = {"TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "UPDATE_ROWS_EVENT", "DELETE_ROWS_EVENT",
              "WRITE_ROWS_EVENT_V1", "UPDATE_ROWS_EVENT_V1", "DELETE_ROWS_EVENT_V1",
              "PARTIAL_UPDATE_ROWS_EVENT", "PRE_GA_WRITE_ROWS_EVENT", "PRE_GA_UPDATE_ROWS_EVENT",
              "PRE_GA_DELETE_ROWS_EVENT"}
#: expected non-row errors: (file name, offset) -> why
_EXPECTED_ERRORS = {
    ("binlog_truncated_event.000001", 4): "magic + 10 bytes: truncated header",
    ("binlog_truncated_prev_gtid_event.000001", 120): "truncated PREVIOUS_GTIDS",
    ("corrupt-relay-bin.000624", 91204): "mysql-server's corrupt relay log: a QUERY body "
                                         "overwritten with text",
}


def test_every_fixture_has_no_errors_in_non_row_events() -> None:
    from tests.helpers import binlog_fixtures, decode_bytes, read_all

    seen: set[tuple[str, int]] = set()
    for path in binlog_fixtures():
        events, dec = decode_bytes(read_all(path))
        assert dec.fatal is None, path
        for ev in events:
            inner = ev.body.events if isinstance(ev.body, TransactionPayloadEvent) else []
            for e in [ev, *inner]:
                if e.type_name in _ROW_TYPES:
                    continue
                bad = e.error or (e.node is not None and e.node.errors())
                if bad:
                    key = (path.name, e.offset)
                    assert key in _EXPECTED_ERRORS, (str(path), e.offset, e.type_name, e.error)
                    seen.add(key)
    assert seen == set(_EXPECTED_ERRORS)
