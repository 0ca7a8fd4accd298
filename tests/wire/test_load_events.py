"""The LOAD DATA family: BEGIN_LOAD_QUERY / APPEND_BLOCK / EXECUTE_LOAD_QUERY from real MySQL
5.1 and 5.7 files (checked against the mysqlbinlog dump), and hand-built MySQL 4.x events
(LOAD, NEW_LOAD, CREATE_FILE, EXEC_LOAD, DELETE_FILE) that no fixture has."""

from __future__ import annotations

from binlogscope.wire.binlog.load_events import FileBlockEvent, FileIdEvent, LoadEvent
from binlogscope.wire.binlog.query_event import ExecuteLoadQueryEvent
from binlogscope.wire.binlog.types import EventType
from tests.helpers import FIXTURES, body_of
from tests.wire.event_builder import build_event, decode_one, event_at, fixture_events

L57 = "rust-us__mysql-cdc-rs/tests/events/5.7/17_18_load/log.bin"
V51 = "blackbeam__rust_mysql_common/test-data/binlogs/ver_5_1_23.001"


def test_begin_load_query_57() -> None:
    ev = event_at(L57, 304)
    assert ev.body == FileBlockEvent(1, b'1,"abc"\n')  # dump: file_id: 1  block_len: 8
    assert ev.node is not None
    d = ev.node.find("body.block_data")
    assert (d.offset, d.length) == (304 + 19 + 4, 8)


def test_execute_load_query_57() -> None:
    ev = event_at(L57, 339)
    b = ev.body
    assert isinstance(b, ExecuteLoadQueryEvent)
    assert (b.thread_id, b.exec_time, b.error_code, b.schema) == (23, 0, 0, "default")
    assert (b.file_id, b.start_pos, b.end_pos, b.dup_handling) == (1, 9, 37, 0)
    # mysqlbinlog replaces query[start_pos:end_pos] with its local temp-file clause
    assert b.query[b.start_pos : b.end_pos] == " INFILE '/tmp/data.txt' INTO"
    dump = (FIXTURES / L57).with_name("dump.txt").read_text("utf-8")
    assert (b.query[: b.start_pos] + " LOCAL INFILE '/tmp/SQL_LOAD_MB-1-0' INTO"
            + b.query[b.end_pos :]) in dump
    n = ev.node
    assert n is not None
    ph = n.find("body.post_header")
    assert (ph.offset, ph.length) == (339 + 19, 26)
    assert [c.name for c in ph.children][-4:] == ["file_id", "start_pos", "end_pos",
                                                  "dup_handling"]
    assert n.find("body.post_header.dup_handling").display == "LOAD_DUP_ERROR"
    assert n.find("body.status_vars").offset == 339 + 19 + 26


def test_blocks_rebuild_the_loaded_file_51() -> None:
    events = fixture_events(V51)
    blocks = [body_of(e, FileBlockEvent) for e in events
              if e.type_name in ("BEGIN_LOAD_QUERY_EVENT", "APPEND_BLOCK_EVENT")]
    assert [(b.file_id, len(b.block_data)) for b in blocks] == [(2, 131072), (2, 17664)]
    content = b"".join(b.block_data for b in blocks)
    assert content.count(b"\n") > 10000 and b"\nabbreviated\n" in content
    ex = next(body_of(e, ExecuteLoadQueryEvent) for e in events
              if e.type_name == "EXECUTE_LOAD_QUERY_EVENT")
    assert ex.file_id == 2
    assert ex.query.startswith("LOAD DATA INFILE 'big_file.dat' INTO TABLE t3")
    assert ex.query[ex.start_pos : ex.end_pos] == " INFILE 'big_file.dat' INTO"


def test_delete_file_and_exec_load_hand_built() -> None:
    ev = decode_one(build_event(EventType.DELETE_FILE_EVENT, "07 00 00 00  # file_id 7"))
    assert ev.body == FileIdEvent(7)
    ev = decode_one(build_event(EventType.EXEC_LOAD_EVENT, "08 00 00 00  # file_id 8"))
    assert ev.body == FileIdEvent(8)


LOAD_HEADER = """
    05 00 00 00     # thread_id 5
    01 00 00 00     # exec_time 1
    02 00 00 00     # skip_lines 2
    02              # table_name_len 2 ("t1")
    04              # db_len 4 ("test")
    02 00 00 00     # num_fields 2
"""
FIELDS_TABLE_DB = """
    01 01           # field_lens: 1, 1
    61 00  62 00    # field names "a", "b"
    74 31 00        # table "t1"
    74 65 73 74 00  # db "test"
"""


def test_old_load_event_hand_built() -> None:
    raw = build_event(EventType.LOAD_EVENT, LOAD_HEADER + """
        2c 22 0a 00 5c   # field_term ',' enclosed '"' line_term '\\n' line_start 0 escaped '\\'
        01               # opt_flags
        08               # empty_flags
    """ + FIELDS_TABLE_DB + """
        2f 74 6d 70 2f 78   # file_name "/tmp/x" (to the end)
    """)
    ev = decode_one(raw)
    b = ev.body
    assert isinstance(b, LoadEvent)
    assert (b.thread_id, b.skip_lines, b.table, b.schema, b.fields) == (
        5, 2, "t1", "test", ["a", "b"])
    assert (b.field_term, b.enclosed, b.escaped, b.opt_flags, b.empty_flags) == (
        b",", b'"', b"\\", 1, 8)
    assert b.file_name == "/tmp/x"


def test_new_load_and_create_file_hand_built() -> None:
    sql_ex = """
        01 2c   # field_term ","
        00      # enclosed ""
        01 0a   # line_term "\\n"
        00      # line_start ""
        01 5c   # escaped "\\"
        00      # opt_flags
    """
    ev = decode_one(build_event(EventType.NEW_LOAD_EVENT, LOAD_HEADER + sql_ex
                                + FIELDS_TABLE_DB + "2f 74 6d 70 2f 79  # file_name"))
    b = body_of(ev, LoadEvent)
    assert (b.field_term, b.line_term, b.file_name) == (b",", b"\n", "/tmp/y")
    raw = build_event(EventType.CREATE_FILE_EVENT, LOAD_HEADER + "09 00 00 00  # file_id 9\n"
                      + sql_ex + FIELDS_TABLE_DB + """
        2f 74 6d 70 2f 7a 00   # file_name "/tmp/z" + NUL
        31 2c 32 0a            # block_data "1,2\\n"
    """)
    ev = decode_one(raw)
    b = body_of(ev, LoadEvent)
    assert (b.file_id, b.file_name, b.block_data) == (9, "/tmp/z", b"1,2\n")
    assert ev.node is not None
    assert ev.node.find("body.block_data").offset == len(raw) - 4


def test_load_event_with_missing_nul_is_an_error() -> None:
    raw = build_event(EventType.LOAD_EVENT, LOAD_HEADER + "2c 22 0a 00 5c 01 08  01 01  61 62")
    ev = decode_one(raw)
    assert ev.error is not None


def test_the_encoders_rebuild_the_real_events_byte_for_byte() -> None:
    """encode_file_block (BEGIN_LOAD_QUERY, APPEND_BLOCK) and encode_query of an
    ExecuteLoadQueryEvent give back the real MySQL 5.7 and 5.1 events' bodies exactly."""
    from binlogscope.wire.binlog.encode_events import encode_file_block
    from binlogscope.wire.binlog.encode_query import encode_query

    checked = []
    for path, tail in ((L57, 4), (V51, 0)):  # 5.7: CRC32; 5.1: no checksum
        for ev in fixture_events(path):
            if ev.type_name not in ("BEGIN_LOAD_QUERY_EVENT", "APPEND_BLOCK_EVENT",
                                    "EXECUTE_LOAD_QUERY_EVENT"):
                continue
            assert ev.raw is not None
            body = ev.raw[19:len(ev.raw) - tail]
            if isinstance(ev.body, FileBlockEvent):
                assert encode_file_block(ev.body) == body
            else:
                assert isinstance(ev.body, ExecuteLoadQueryEvent)
                assert encode_query(ev.body) == body
            checked.append(ev.type_name)
    assert sorted(set(checked)) == ["APPEND_BLOCK_EVENT", "BEGIN_LOAD_QUERY_EVENT",
                                    "EXECUTE_LOAD_QUERY_EVENT"]
