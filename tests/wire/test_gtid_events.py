"""GTID events: MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED / PREVIOUS_GTIDS from real files,
checked against the mysqlbinlog dumps shipped with them; MariaDB GTID / GTID_LIST from real
MariaDB files, plus hand-built MariaDB events for the flags no fixture has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from binlogscope.wire.binlog.gtid_events import (
    GtidEvent,
    GtidListEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    _sv4,
    _ts7,
    format_server_version,
    format_usec_timestamp,
)
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.reader import ByteReader
from tests.helpers import FIXTURES, body_of
from tests.wire.event_builder import build_event, decode_one, event_at, fixture_events, of_type

RUST = "rust-us__mysql-cdc-rs/tests/events"
BB = "blackbeam__rust_mysql_common/test-data/binlogs"
GTID_TYPES = ("GTID_LOG_EVENT", "ANONYMOUS_GTID_LOG_EVENT")

_HDR = re.compile(r"# ?\t(GTID|Anonymous_GTID)\tlast_committed=(\d+)\tsequence_number=(\d+)"
                  r"\trbr_only=(\w+)(?:\toriginal_committed_timestamp=(\d+)"
                  r"\timmediate_commit_timestamp=(\d+)\ttransaction_length=(\d+))?")
_NEXT = re.compile(r"SET @@SESSION.GTID_NEXT= '([^']+)'")


def _dump_dirs() -> list[Path]:
    out = []
    for d in sorted((FIXTURES / RUST).glob("*/*")):
        dump = d / "dump.txt"
        if dump.exists() and "last_committed" in _read_dump(dump):
            out.append(d)
    return out


def _read_dump(p: Path) -> str:
    raw = p.read_bytes()
    return raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode()


@pytest.mark.parametrize("d", _dump_dirs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_gtids_match_mysqlbinlog(d: Path) -> None:
    dump = _read_dump(d / "dump.txt")
    binlog = next(p for p in sorted(d.iterdir()) if p.name == "log.bin"
                  or p.name.startswith("binlog."))
    evs = [e for e in fixture_events(str(binlog.relative_to(FIXTURES)))
           if e.type_name in GTID_TYPES]
    headers = _HDR.findall(dump)
    nexts = [g for g in _NEXT.findall(dump) if g != "AUTOMATIC"]
    assert len(evs) == len(headers) == len(nexts) > 0
    sv = re.findall(r"SET @@session.immediate_server_version=(\d+)", dump)
    for i, (e, h, g) in enumerate(zip(evs, headers, nexts, strict=True)):
        b = e.body
        assert isinstance(b, GtidEvent)
        assert b.gtid == g
        assert b.anonymous == (h[0] == "Anonymous_GTID")
        assert (b.last_committed, b.sequence_number) == (int(h[1]), int(h[2]))
        assert bool(b.flags & 1) == (h[3] == "no")  # rbr_only=no <=> FLAG_MAY_HAVE_SBR
        if h[4]:
            assert b.original_commit_timestamp == int(h[4])
            assert b.immediate_commit_timestamp == int(h[5])
            assert b.transaction_length == int(h[6])
            assert b.immediate_server_version == int(sv[i])
        else:
            assert b.immediate_commit_timestamp is None


def test_gtid_57_spans() -> None:
    ev = event_at(f"{RUST}/5.7/14_user_var/log.bin", 154)
    b = body_of(ev, GtidEvent)
    assert b.gtid == "e3e2a4ee-b6dc-11ea-8bcf-0242ac150002:1"
    assert (b.flags, b.gno, b.lt_type, b.last_committed, b.sequence_number) == (1, 1, 2, 0, 1)
    n = ev.node
    assert n is not None
    spans = [(c.name, c.offset, c.length) for c in n.find("body.post_header").children]
    assert spans == [("gtid_flags", 173, 1), ("sid", 174, 16), ("gno", 190, 8),
                     ("lt_type", 198, 1), ("last_committed", 199, 8),
                     ("sequence_number", 207, 8)]
    assert n.find("body.post_header.gtid_flags").display == "FLAG_MAY_HAVE_SBR"


def test_anonymous_gtid_80_spans() -> None:
    ev = event_at(f"{RUST}/8.0/02_query/binlog.000001", 157)
    b = body_of(ev, GtidEvent)
    assert b.gtid == "ANONYMOUS" and b.anonymous
    assert b.sid == "00000000-0000-0000-0000-000000000000" and b.gno == 0
    assert b.immediate_commit_timestamp == b.original_commit_timestamp == 1701928719488251
    assert (b.transaction_length, b.immediate_server_version) == (212, 80200)
    assert b.original_server_version == 80200 and b.commit_group_ticket is None
    n = ev.node
    assert n is not None
    t = n.find("body.immediate_commit_timestamp")
    assert (t.offset, t.length) == (218, 7)
    assert t.display == "2023-12-07 05:58:39.488251 UTC"
    tl = n.find("body.transaction_length")
    assert (tl.offset, tl.length) == (225, 1)
    v = n.find("body.immediate_server_version")
    assert (v.offset, v.length, v.display) == (226, 4, "8.2.0")
    assert n.find("checksum").offset == 230


def test_commit_timestamp_and_server_version_high_bit_rule() -> None:
    # 7-byte timestamp with bit 55 set: the original timestamp follows
    buf = (1 << 55 | 1000).to_bytes(7, "little") + (999).to_bytes(7, "little")
    r = ByteReader(buf)
    assert _ts7(r, "immediate_commit_timestamp", "") == (1000, True)
    assert _ts7(r, "original_commit_timestamp", "") == (999, False)
    buf = (1 << 31 | 80200).to_bytes(4, "little") + (50744).to_bytes(4, "little")
    r = ByteReader(buf)
    assert _sv4(r, "immediate_server_version", "") == (80200, True)
    assert _sv4(r, "original_server_version", "") == (50744, False)
    assert format_server_version(50744) == "5.7.44"
    assert format_server_version(999999).startswith("undefined")
    assert format_usec_timestamp(0) == "1970-01-01 00:00:00.000000 UTC"


def test_gtid_tagged_mysql_96() -> None:
    rel = f"{BB}/binlog_transaction_with_GTID_TAG.000001"
    ev = event_at(rel, 245)
    b = body_of(ev, GtidEvent)
    assert ev.type_name == "GTID_TAGGED_LOG_EVENT" and ev.error is None
    assert b.gtid == "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"
    assert (b.sid, b.tag, b.gno) == ("55778904-0299-11f1-b1b8-4ef0c4956feb", "mytag", 3)
    assert (b.last_committed, b.sequence_number) == (0, 1)
    assert b.immediate_commit_timestamp == b.original_commit_timestamp == 1770368687207196
    # the transaction runs from this event to the end of the XID: 245 .. 541
    assert b.transaction_length == 541 - 245
    assert b.immediate_server_version == b.original_server_version == 90600
    n = ev.node
    assert n is not None
    h = n.find("body.message_header")
    assert (h.offset, h.length) == (264, 3)
    assert n.find("body.message_header.serializable_size").value == 60  # the whole body
    fields = [(c.name, c.offset, c.length) for c in n.find("body.fields").children]
    assert fields[:4] == [("gtid_flags", 267, 2), ("sid", 269, 26), ("gno", 295, 2),
                          ("tag", 297, 7)]
    assert [f[0] for f in fields[4:]] == ["last_committed", "sequence_number",
                                          "immediate_commit_timestamp", "transaction_length",
                                          "immediate_server_version"]
    assert n.find("body.fields.immediate_server_version.value").display == "9.6.0"
    assert n.find("body.fields.sid.value").length == 25  # 16 bytes as varlen integers


def test_previous_gtids_tagged_and_untagged() -> None:
    ev = of_type(f"{BB}/binlog_transaction_with_GTID_TAG.000001", "PREVIOUS_GTIDS_LOG_EVENT")[0]
    b = body_of(ev, PreviousGtidsEvent)
    assert b.tagged
    assert b.gtid_set == "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2"
    assert [(e.tag, [(i.start, i.end) for i in e.intervals]) for e in b.entries] == [
        ("", [(1, 14)]), ("mytag", [(1, 3)])]
    n = ev.node
    assert n is not None
    ns = n.find("body.n_sids")
    assert (ns.offset, ns.length, ns.value) == (146, 8, 2)
    assert n.find("body.sid_1.tag").value == "mytag"
    assert n.find("body.sid_0.interval_0").display == "1-13"

    empty = of_type(f"{RUST}/5.7/14_user_var/log.bin", "PREVIOUS_GTIDS_LOG_EVENT")[0]
    eb = body_of(empty, PreviousGtidsEvent)
    assert (eb.gtid_set, eb.tagged) == ("", False)


def test_previous_gtids_agree_with_the_gtids_of_the_previous_file() -> None:
    d = "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_gtid"
    first = [body_of(e, GtidEvent).gtid for e in of_type(f"{d}/binlog.000001", "GTID_LOG_EVENT")]
    prev = body_of(of_type(f"{d}/binlog.000002", "PREVIOUS_GTIDS_LOG_EVENT")[0], PreviousGtidsEvent)
    uuid = prev.entries[0].sid
    assert first == [f"{uuid}:{i}" for i in range(1, 5)]
    assert prev.gtid_set == f"{uuid}:1-4"


def test_mariadb_gtid_and_gtid_list_from_files() -> None:
    g = event_at(f"{BB}/mariadb-bin.000001", 330)
    b = g.body
    assert isinstance(b, MariadbGtidEvent)
    assert (b.gtid, b.seq_no, b.domain_id, b.server_id, b.flags2) == ("0-1-1", 1, 0, 1, 12)
    assert g.node is not None
    assert g.node.find("body.flags2").display == "FL_TRANSACTIONAL|FL_ALLOW_PARALLEL"
    pad = g.node.find("body.padding")
    assert (pad.offset, pad.length) == (330 + 19 + 13, 6)

    z = "zalora__binlog-parser/data/fixtures/mysql-bin.07"
    lst = body_of(event_at(z, 248), GtidListEvent)
    assert lst.gtid_list == "0-3704-2814" and lst.flags == 0
    s = body_of(event_at(z, 326), MariadbGtidEvent)
    assert s.gtid == "0-3704-2815" and s.standalone  # the DDL that follows has no COMMIT
    assert body_of(event_at(z, 627), MariadbGtidEvent).gtid == "0-3704-2816"
    assert body_of(event_at(f"{BB}/mariadb-bin.000001", 256), GtidListEvent).gtids == []


MARIADB_GTID_XA = """
    05 00 00 00 00 00 00 00   # seq_no 5
    02 00 00 00               # domain_id 2
    c2                        # flags2: FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA
    09 00 00 00 00 00 00 00   # commit_id 9
    01 00 00 00               # XID format_id 1
    02                        # gtrid_length
    01                        # bqual_length
    61 62                     # gtrid "ab"
    63                        # bqual "c"
    05                        # flags_extra: MULTI_ENGINE | COMMIT_ALTER
    02                        # extra_engines
    07 00 00 00 00 00 00 00   # sa_seq_no 7
"""


def test_mariadb_gtid_all_optional_parts_hand_built() -> None:
    raw = build_event(EventType.GTID_EVENT, MARIADB_GTID_XA, server_id=11)
    ev = decode_one(raw)
    b = body_of(ev, MariadbGtidEvent)
    assert ev.error is None
    assert b.gtid == "2-11-5"
    assert (b.commit_id, b.xa_format_id, b.xa_gtrid, b.xa_bqual) == (9, 1, b"ab", b"c")
    assert (b.flags_extra, b.extra_engines, b.sa_seq_no) == (5, 2, 7)
    assert ev.node is not None
    assert ev.node.find("body.xid").offset == 19 + 21
    assert ev.node.find("body.sa_seq_no").offset == len(raw) - 8


def test_mariadb_gtid_list_flags_hand_built() -> None:
    raw = build_event(EventType.GTID_LIST_EVENT, """
        02 00 00 10               # count 2, flags 1 (FLAG_UNTIL_REACHED) in the top 4 bits
        00 00 00 00 01 00 00 00 03 00 00 00 00 00 00 00   # 0-1-3
        01 00 00 00 02 00 00 00 05 00 00 00 00 00 00 00   # 1-2-5
    """)
    ev = decode_one(raw)
    b = body_of(ev, GtidListEvent)
    assert b.gtid_list == "0-1-3,1-2-5" and b.flags == 1
    assert ev.node is not None
    assert "FLAG_UNTIL_REACHED" in ev.node.find("body.count").display
    assert ev.node.find("body.gtid_1").display == "1-2-5"


def test_gtid_list_count_too_large_is_an_error() -> None:
    ev = decode_one(build_event(EventType.GTID_LIST_EVENT, "ff 00 00 00"))
    assert ev.error is not None and "cannot fit" in ev.error


def test_fast_path_same_gtid_values() -> None:
    from tests.wire.event_builder import fixture_fast
    for rel in (f"{BB}/binlog_transaction_with_GTID_TAG.000001", f"{BB}/mariadb-bin.000001",
                f"{RUST}/8.0/02_query/binlog.000001"):
        assert [e.body for e in fixture_fast(rel)
                if "GTID" in e.type_name] == [e.body for e in fixture_events(rel)
                                              if "GTID" in e.type_name]

