"""MySQL 8.3+ tagged GTIDs end to end on the MySQL 9.6 fixture
(blackbeam/rust_mysql_common ``binlog_transaction_with_GTID_TAG.000001``): the GTID_TAGGED event
(42) and the tagged PREVIOUS_GTIDS set encode back to the file's bytes; GTID sets with tags
parse, format and encode as COM_BINLOG_DUMP_GTID carries them (the live replica's dump
command), and decode back; the 9.6 rows flag USE_SQL_FOREIGN_KEY_F is named and explained.

Followed: MySQL's ``Gtid_set::encode`` / ``encode_nsids_format`` (the format byte in the first
and last byte of ``n_sids``), ``Tag::encode_tag`` (libs/mysql/gtid/tag.cpp: the tag as a
serialization-library string, lower-cased, ``[a-z_][a-z0-9_]{0,31}``) and ``Gtid_event``'s
serialization fields; the flag value 0x10 as MySQL 9.x's mysqlbinlog prints
``flags: STMT_END_F USE_SQL_FOREIGN_KEY_F`` for rows events whose flags are 0x0011."""

from __future__ import annotations

import uuid

import pytest

from binlogscope.drivers.live.dialog import mysql_gtid_set
from binlogscope.drivers.live.items import LiveError
from binlogscope.wire.binlog.encode_events import (
    encode_gtid_tagged,
    encode_previous_gtids,
    encode_value_event,
)
from binlogscope.wire.commands import (
    ComBinlogDumpGtid,
    GtidInterval,
    GtidSid,
    decode_com_binlog_dump_gtid,
    encode_com_binlog_dump_gtid,
    gtid_set_text,
)
from binlogscope.wire.gtid_sets import encode_gtid_set, parse_gtid_set
from binlogscope.wire.reader import ByteReader
from tests.wire._binlog_fixtures import BLACKBEAM, decode_file, fixture

FIXTURE = BLACKBEAM / "binlog_transaction_with_GTID_TAG.000001"
SID = "55778904-0299-11f1-b1b8-4ef0c4956feb"


def _events() -> tuple[bytes, list]:  # type: ignore[type-arg]
    data = fixture(FIXTURE)
    return data, decode_file(data)


def test_gtid_tagged_and_the_tagged_previous_gtids_encode_to_the_files_bytes() -> None:
    data, evs = _events()
    prev, gtid = evs[1], evs[2]
    assert gtid.body.gtid == f"{SID}:mytag:3"
    body = data[gtid.offset + 19:gtid.offset + gtid.header.event_size - 4]
    assert encode_gtid_tagged(gtid.body) == body
    h = gtid.header
    assert encode_value_event(gtid.body, timestamp=h.timestamp, server_id=h.server_id,
                              log_pos=h.log_pos, flags=h.flags) == \
        data[gtid.offset:gtid.offset + h.event_size]
    assert prev.body.gtid_set == f"{SID}:1-13:mytag:1-2" and prev.body.tagged
    assert encode_previous_gtids(prev.body) == \
        data[prev.offset + 19:prev.offset + prev.header.event_size - 4]
    # the same set from its text, encoded as a replica would send it, is the file's set
    parsed = parse_gtid_set(prev.body.gtid_set)
    assert encode_gtid_set((s, t, ivs) for (s, t), ivs in parsed.items()) == \
        data[prev.offset + 19:prev.offset + prev.header.event_size - 4]


def test_gtid_set_text_with_tags() -> None:
    s = parse_gtid_set(f"{SID.upper()}:3-5:1:MyTag:7:2-3 , {SID}:other_tag:9")
    assert s == {(uuid.UUID(SID), ""): [(1, 2), (3, 6)],
                 (uuid.UUID(SID), "mytag"): [(2, 4), (7, 8)],
                 (uuid.UUID(SID), "other_tag"): [(9, 10)]}
    for bad in (f"{SID}:1-", f"{SID}:5-2", "nope:1", f"{SID}:9tag:1", f"{SID}:{'t' * 33}:1"):
        with pytest.raises(ValueError):
            parse_gtid_set(bad)


def test_the_live_replicas_dump_command_carries_tagged_gtids() -> None:
    text = f"{SID}:1-13:mytag:1-2"
    sids = mysql_gtid_set(text)
    assert sids == (GtidSid(uuid.UUID(SID), (GtidInterval(1, 14),)),
                    GtidSid(uuid.UUID(SID), (GtidInterval(1, 3),), "mytag"))
    assert gtid_set_text(sids) == text
    cmd = ComBinlogDumpGtid(4242, "", 4, 0x04, sids)
    wire = encode_com_binlog_dump_gtid(cmd)
    assert encode_gtid_set((s.sid, s.tag, [(i.start, i.end) for i in s.intervals])
                           for s in sids) in wire  # the PREVIOUS_GTIDS encoding, as MySQL's
    back = decode_com_binlog_dump_gtid(ByteReader(wire, record=True))
    assert back.gtid_set == sids and back.raw_data == b""
    assert gtid_set_text(back.gtid_set) == text
    untagged = mysql_gtid_set(f"{SID}:1-5")  # no tag: the format every server reads
    assert encode_gtid_set([(SID, "", [(1, 6)])]).startswith(b"\x01\x00\x00\x00\x00\x00\x00\x00")
    assert decode_com_binlog_dump_gtid(ByteReader(encode_com_binlog_dump_gtid(
        ComBinlogDumpGtid(1, "", 4, 4, untagged)), record=False)).gtid_set == untagged
    with pytest.raises(LiveError, match="--gtid"):
        mysql_gtid_set(f"{SID}:x-y")


def test_use_sql_foreign_key_flag_is_named_and_explained() -> None:
    _, evs = _events()
    rows = next(e for e in evs if e.header.type_name == "WRITE_ROWS_EVENT")
    assert rows.body.flags == 0x11
    leaf = rows.node.find("body.flags") if rows.node is not None else None
    assert leaf is not None
    assert leaf.display == "0x0011 STMT_END_F|USE_SQL_FOREIGN_KEY_F"
    assert "USE_SQL_FOREIGN_KEY_F (MySQL 9.6+)" in leaf.doc and "cascade" in leaf.doc
