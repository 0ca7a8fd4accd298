"""Sources, the event builder, stream transforms, scenarios and answers (no sockets)."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import pytest

from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.encode_events import encode_event
from binlogscope.wire.binlog.header import crc32
from binlogscope.wire.binlog.payload_events import TransactionPayloadEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.node import check_tiling
from mock_master.answers.base import QueryContext
from mock_master.answers.queries import Answerer, default_variables
from mock_master.history.builder import EventBuilder
from mock_master.history.loaders import load_binlog_files, load_pcap, load_recording, save_recording
from mock_master.history.sources import CompatError, EventStream, split_file
from mock_master.scenario.faults import Action, apply_stream_actions
from mock_master.scenario.scenarios import ScenarioError, load_scenario
from mock_master.schema.ddl import catalog_from_ddl
from mock_master.schema.sources import SchemaKnowledge
from mock_master.serve.server import dummy_event
from tests.helpers import body_of

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


def _decode(stream: EventStream) -> list[list[DecodedEvent]]:
    out: list[list[DecodedEvent]] = []
    for f in stream.files:
        dec = BinlogStreamDecoder(record=True)
        dec.receive_data(f.file_bytes())
        dec.receive_data(b"")
        evs = list(dec.events())
        for e in evs:
            assert e.error is None, (f.name, e.type_name, e.error)
            assert e.checksum_ok is not False, (f.name, e.type_name)
            assert e.node is not None and not check_tiling(e.node)
            assert e.header is not None and e.header.log_pos in (0, e.offset + e.size)
        out.append(evs)
    return out


def _valid(stream: EventStream) -> None:
    """Positions consistent with the file offsets and every CRC32 right."""
    for f in stream.files:
        for ev, off in zip(f.events, f.offsets, strict=True):
            assert struct.unpack_from("<I", ev, 9)[0] == len(ev)
            lp = struct.unpack_from("<I", ev, 13)[0]
            assert lp == off + len(ev)
            if f.checksum:
                assert crc32(ev[:-4]) == struct.unpack_from("<I", ev, len(ev) - 4)[0]


def test_builder_values_round_trip_through_the_decoder() -> None:
    b = EventBuilder("mariadb")
    t = b.table("shop", "t", [("id", "INT"), ("u", "BIGINT UNSIGNED"), ("v", "VARCHAR(20)"),
                              ("c", "CHAR(3)"), ("d", "DECIMAL(10,2)"), ("f", "DOUBLE"),
                              ("at", "DATETIME(3)"), ("tm", "TIME(2)"), ("dd", "DATE"),
                              ("y", "YEAR"), ("bl", "BLOB"), ("s", "SMALLINT"),
                              ("m", "MEDIUMINT"), ("ti", "TINYINT UNSIGNED"), ("fl", "FLOAT")])
    row = (1, 2**64 - 1, "héllo", "abc", Decimal("-12345678.91"), 1.5,
           dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
           dt.timedelta(hours=-1, minutes=-2, seconds=-3, microseconds=-450000),
           dt.date(2024, 2, 29), 2024, b"\x00\x01", -32768, -8388608, 255, 0.25)
    g = b.transaction(t, [row, (2,) + (None,) * 14])
    assert g == "0-1-1"
    evs = _decode(b.build())[0]
    assert [e.type_name for e in evs] == [
        "FORMAT_DESCRIPTION_EVENT", "GTID_LIST_EVENT", "BINLOG_CHECKPOINT_EVENT", "GTID_EVENT",
        "QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT_V1", "XID_EVENT"]
    rows = body_of(evs[6], RowsEvent).rows
    assert rows[0]["after"] == {
        "id": 1, "u": 18446744073709551615, "v": "héllo", "c": "abc", "d": "-12345678.91",
        "f": 1.5, "at": "2024-01-02 03:04:05.678", "tm": "-01:02:03.45", "dd": "2024-02-29",
        "y": 2024, "bl": b"\x00\x01", "s": -32768, "m": -8388608, "ti": 255, "fl": 0.25}
    assert set(rows[1]["after"].values()) == {2, None}


def test_builder_mysql_flavour_and_rotation() -> None:
    b = EventBuilder("mysql")
    t = b.table("db", "t", [("id", "INT"), ("name", "VARCHAR(5)")])
    b.transaction(t, [(1, "a")])
    assert b.rotate() == "mysql-bin.000002"
    b.begin()
    b.update(t, [((1, "a"), (1, "b"))])
    b.delete(t, [(1, "b")])
    b.commit()
    st = b.build()
    _valid(st)
    files = _decode(st)
    assert [e.type_name for e in files[0]][-1] == "ROTATE_EVENT"
    assert [e.type_name for e in files[1]] == [
        "FORMAT_DESCRIPTION_EVENT", "PREVIOUS_GTIDS_LOG_EVENT", "GTID_LOG_EVENT", "QUERY_EVENT",
        "TABLE_MAP_EVENT", "UPDATE_ROWS_EVENT", "TABLE_MAP_EVENT", "DELETE_ROWS_EVENT",
        "XID_EVENT"]
    assert [g.gtid.rsplit(":", 1)[1] for g in st.gtids] == ["1", "2"]


def test_binlog_file_names_come_from_the_rotate() -> None:
    st = load_binlog_files([CAPTURE])
    assert [f.name for f in st.files] == ["mysql-bin.000001"]
    assert st.files[0].file_bytes() == CAPTURE.read_bytes()
    assert st.server_version == "10.11.19-MariaDB-0+deb12u1-log"
    assert st.checksum is True
    assert st.gtid_state().startswith("0-1-")


def test_pcap_source_rebuilds_the_binlog_the_dump_carried() -> None:
    st = load_pcap(REPO / "captures" / "pcap-mariadb-binlog.pcap")
    # mariadb-binlog asked for annotate events: every event was sent, so the first file is
    # the source binlog byte for byte
    assert st.files[0].file_bytes() == (REPO / "captures" / "pcap-mariadb-binlog.binlog"
                                        ).read_bytes()
    _valid(st)


def test_recording_round_trip(tmp_path: Path) -> None:
    st = load_binlog_files([CAPTURE])
    save_recording(st, tmp_path / "r.jsonl")
    back = load_recording(tmp_path / "r.jsonl")
    assert [f.file_bytes() for f in back.files] == [f.file_bytes() for f in st.files]
    (tmp_path / "bad.jsonl").write_text('{"format": "x"}\n')
    with pytest.raises(Exception, match="not a mock-master recording"):
        load_recording(tmp_path / "bad.jsonl")


def test_rotate_split_packet_and_compress_rebase_and_recompute_checksums() -> None:
    st = load_binlog_files([CAPTURE])
    n = st.event_count
    apply_stream_actions(st, [Action("rotate", at=100), Action("split_packet", at=50,
                                                              size=1 << 20)], "mariadb")
    assert [f.name for f in st.files] == ["mysql-bin.000001", "mysql-bin.000002"]
    assert st.event_count == n + 3  # ROTATE, the new file's FDE, the big event
    assert max(len(e) for e in st.files[0].events) == 1 << 20
    _valid(st)
    _decode(st)
    b = EventBuilder("mysql")
    t = b.table("db", "t", [("id", "INT")])
    b.transaction(t, [(1,), (2,)])
    ms = b.build()
    apply_stream_actions(ms, [Action("compress_transaction")], "mysql")
    _valid(ms)
    evs = _decode(ms)[0]
    assert [e.type_name for e in evs][-2:] == ["GTID_LOG_EVENT", "TRANSACTION_PAYLOAD_EVENT"]
    inner = body_of(evs[-1], TransactionPayloadEvent).events
    assert [e.type_name for e in inner] == ["QUERY_EVENT", "TABLE_MAP_EVENT",
                                            "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert body_of(inner[2], RowsEvent).rows == [{"before": None, "after": {"id": 1}},
                                  {"before": None, "after": {"id": 2}}]


def test_split_file_keeps_the_fde() -> None:
    st = load_binlog_files([CAPTURE])
    split_file(st, 0, 10, "other.000009")
    assert st.files[1].name == "other.000009"
    assert st.files[1].events[0] == st.files[0].events[0]
    assert st.files[0].events[-1][4] == 4
    _valid(st)


def test_dummy_events_keep_the_size_and_decode() -> None:
    st = load_binlog_files([CAPTURE])
    f = st.files[0]
    gtid = next(e for e in f.events if e[4] == 162)
    annotate = next(e for e in f.events if e[4] == 160)
    for ev in (gtid, annotate):
        d = dummy_event(ev, True)
        assert len(d) == len(ev) and d[13:17] == ev[13:17]
        assert crc32(d[:-4]) == struct.unpack_from("<I", d, len(d) - 4)[0]
    # MariaDB's rules: the comment cut to fit (a 38-byte GTID event keeps 5 characters),
    # LOG_EVENT_THREAD_SPECIFIC_F cleared, LOG_EVENT_SUPPRESS_USE_F set
    g = dummy_event(gtid, True)
    assert g[4] == 2 and g[-9:-4] == b"# Dum" and g[17] & 0x08 and not g[17] & 0x04
    q = dummy_event(annotate, True)
    assert q[4] == 2 and b"# Dummy event replacing event type 160 that slave cannot handle." \
        in q
    small = encode_event(163, bytes(10), checksum=True)  # 29 bytes without the CRC32
    u = dummy_event(small, True)
    assert u[4] == 14 and u[19:23] == (5).to_bytes(4, "little") and u[23:29] == b"!dumm\x01"
    with pytest.raises(CompatError):
        dummy_event(encode_event(163, bytes(4), checksum=True), True)


def test_scenario_file(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text(f'''
flavor = "mariadb"
log = "run.json"
[[users]]
name = "app"
password = "pw"
plugin = "caching_sha2_password"
[[sources]]
binlog = ["{CAPTURE}"]
[[actions]]
action = "disconnect_after_event"
at = 10
[[answers]]
query = "SELECT 42"
columns = ["42"]
rows = [[42]]
''')
    sc = load_scenario(p)
    assert sc.users[0].plugin == "caching_sha2_password"
    assert sc.actions[0].kind == "disconnect_after_event" and sc.actions[0].at == 10
    assert sc.log == str(tmp_path / "run.json")
    assert sc.load_stream().event_count == 264
    p.write_text('[[actions]]\naction = "explode"\n')
    with pytest.raises(ScenarioError, match="action 'explode'"):
        load_scenario(p)
    p.write_text('[[actions]]\naction = "delay"\n')
    with pytest.raises(ScenarioError, match="give 'at'"):
        load_scenario(p)


def _answerer() -> Answerer:
    v = default_variables("mariadb", "10.11.19-MariaDB-log", 1, checksum=True, semi_sync=True,
                          gtid_pos="0-1-5", server_uuid="x", port=3306, basename="mysql-bin",
                          mysql_gtids=False)
    k = SchemaKnowledge(tables=catalog_from_ddl("CREATE TABLE db.t (id INT, v TEXT)").tables)
    return Answerer("mariadb", v, lambda: [("mysql-bin.000001", 1052)], lambda: k)


def test_answers_match_what_mariadb_sends() -> None:
    """Column definitions as captured from MariaDB 10.11 for a utf8mb4 (45) connection."""
    a = _answerer()
    ctx = QueryContext()
    r = a.answer("SELECT @@global.binlog_checksum", ctx)
    assert r is not None and r.rows[0].values == (b"CRC32",)
    c = r.columns[0]
    assert (c.name, c.type, c.character_set, c.column_length, c.flags, c.decimals) == (
        "@@global.binlog_checksum", 253, 45, 20, 0, 39)
    r = a.answer("SELECT @@GLOBAL.SERVER_ID", ctx)
    assert r is not None
    c = r.columns[0]
    assert (c.name, c.type, c.character_set, c.column_length, c.flags) == (
        "@@GLOBAL.SERVER_ID", 8, 63, 21, 160)
    r = a.answer("SHOW VARIABLES LIKE 'SERVER_ID'", ctx)
    assert r is not None and r.rows[0].values == (b"server_id", b"1")
    c = r.columns[1]
    assert (c.name, c.schema, c.table, c.org_name, c.column_length, c.flags) == (
        "Value", "information_schema", "SESSION_VARIABLES", "VARIABLE_VALUE", 16384, 4097)
    r = a.answer("SHOW MASTER STATUS", ctx)
    assert r is not None and [(c.name, c.type, c.column_length, c.flags) for c in r.columns] \
        == [("File", 253, 2048, 1), ("Position", 8, 20, 161), ("Binlog_Do_DB", 253, 1020, 1),
            ("Binlog_Ignore_DB", 253, 1020, 1)]
    r = a.answer("SHOW BINARY LOG STATUS", ctx)
    assert r is not None and r.err is not None and r.err.error_code == 1064
    r = a.answer("SELECT UNIX_TIMESTAMP()", ctx)
    assert r is not None and (r.columns[0].type, r.columns[0].column_length) == (8, 17)
    assert a.answer("SET NAMES utf8", ctx) is not None and ctx.charset == 33
    r = a.answer("SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'", ctx)
    assert r is not None and r.columns[0].column_length == 192  # 64 x 3 for utf8mb3
    assert a.answer("SET @master_binlog_checksum= @@global.binlog_checksum", ctx) is not None
    assert ctx.user_vars["master_binlog_checksum"] == "CRC32"
    r = a.answer("SELECT @master_binlog_checksum", ctx)
    assert r is not None and (r.columns[0].type, r.columns[0].column_length) == (
        251, 50331645)
    r = a.answer("SELECT @@gtid_mode", ctx)
    assert r is not None and r.err is not None and r.err.error_code == 1193
    r = a.answer("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'db' "
                 "AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION", ctx)
    assert r is not None and [x.values for x in r.rows] == [(b"id",), (b"v",)]
    assert (r.columns[0].schema, r.columns[0].org_table, r.columns[0].flags) == (
        "information_schema", "COLUMNS", 4097)
    r = a.answer("SELECT bogus FROM nowhere", ctx)
    assert r is not None and r.err is not None and r.err.error_code == 1046
    assert a.answer("SELECT bogus", ctx) is None
