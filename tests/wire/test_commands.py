"""Client commands: COM_QUERY, COM_PING/QUIT, COM_REGISTER_SLAVE, COM_BINLOG_DUMP(_GTID)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from binlogscope.wire import commands as cm
from binlogscope.wire.constants import BinlogDumpFlag, BinlogDumpGtidFlag, Command
from binlogscope.wire.constants import CapabilityFlag as C
from binlogscope.wire.fields import is_sensitive
from binlogscope.wire.node import Node, check_tiling
from binlogscope.wire.packet import run_decoder


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def decode(fn: Callable[..., Any], payload: bytes, caps: int = 0) -> tuple[Any, Node]:
    d = run_decoder("payload", fn, payload, caps=caps, base=4)
    assert d.error is None, d.error
    assert d.node is not None and check_tiling(d.node) == []
    assert d.node.length == len(payload)
    fast = run_decoder("payload", fn, payload, caps=caps, base=4, record=False)
    assert fast.value == d.value
    return d.value, d.node


def span(node: Node, path: str) -> tuple[int, int]:
    n = node.find(path)
    return n.offset, n.length


def test_com_query() -> None:
    payload = hexbytes("""
        03                          # command COM_QUERY
        53 45 4c 45 43 54 20 31     # query "SELECT 1" (string<EOF>)
    """)
    v, node = decode(cm.decode_com_query, payload)
    assert v == cm.ComQuery("SELECT 1")
    assert node.find("command").display == "COM_QUERY (0x03)"
    assert span(node, "query") == (5, 8)
    assert cm.encode_com_query(v) == payload


def test_com_query_with_query_attributes() -> None:
    payload = hexbytes("""
        03                  # command COM_QUERY
        01                  # parameter_count 1
        01                  # parameter_set_count 1
        00                  # null_bitmap
        01                  # new_params_bind_flag
        fe 00               # param_type_and_flag MYSQL_TYPE_STRING
        01 6e               # parameter_name "n"
        02 68 69            # parameter_value "hi" (string<lenenc>)
        53 45 4c 45 43 54 20 31   # query "SELECT 1"
    """)
    v, node = decode(cm.decode_com_query, payload, C.CLIENT_QUERY_ATTRIBUTES)
    assert v.query == "SELECT 1"
    assert v.attributes == (("n", b"hi"),)
    assert span(node, "parameters") == (9, 4)
    assert span(node, "query") == (16, 8)
    assert cm.encode_com_query(cm.ComQuery("x"), C.CLIENT_QUERY_ATTRIBUTES) == b"\x03\x00\x01x"


def test_ping_and_quit() -> None:
    v, node = decode(cm.decode_simple_command, hexbytes("0e  # command COM_PING"))
    assert v == cm.COM_PING and v.name == "COM_PING"
    assert span(node, "command") == (4, 1)
    assert cm.encode_simple_command(cm.COM_QUIT) == b"\x01"
    v, node = decode(cm.decode_simple_command, hexbytes("02  # COM_INIT_DB\n 64 62  # db"))
    assert v == cm.SimpleCommand(Command.COM_INIT_DB, b"db")
    assert node.find("schema_name").value == "db"


REGISTER_SLAVE = hexbytes("""
    15              # command COM_REGISTER_SLAVE
    e9 03 00 00     # server_id 1001
    05              # hostname_length 5
    68 6f 73 74 31  # hostname "host1"
    04              # user_length 4
    72 65 70 6c     # user "repl"
    02              # password_length 2
    70 77           # password "pw"
    ea 0c           # port 3306
    00 00 00 00     # replication_rank (ignored)
    00 00 00 00     # master_id 0
""")


def test_com_register_slave() -> None:
    v, node = decode(cm.decode_com_register_slave, REGISTER_SLAVE)
    assert v == cm.ComRegisterSlave(1001, "host1", "repl", "pw", 3306, 0, 0)
    assert span(node, "server_id") == (5, 4)
    assert span(node, "hostname") == (10, 5)
    assert span(node, "password") == (21, 2)
    assert span(node, "port") == (23, 2)
    assert span(node, "master_id") == (29, 4)
    assert is_sensitive(node.find("password"))
    assert "pw" not in repr(v)
    assert cm.encode_com_register_slave(v) == REGISTER_SLAVE


BINLOG_DUMP = hexbytes("""
    12              # command COM_BINLOG_DUMP
    04 00 00 00     # binlog_pos 4
    01 00           # flags BINLOG_DUMP_NON_BLOCK (2 bytes little-endian)
    e9 03 00 00     # server_id 1001
    62 69 6e 6c 6f 67 2e 30 30 30 30 30 31   # binlog_filename "binlog.000001"
""")


def test_com_binlog_dump() -> None:
    v, node = decode(cm.decode_com_binlog_dump, BINLOG_DUMP)
    assert v == cm.ComBinlogDump(4, 1001, "binlog.000001", BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK)
    assert v.non_block
    flags = node.find("flags")
    assert (flags.offset, flags.length) == (9, 2)
    assert flags.find("BINLOG_DUMP_NON_BLOCK").value is True
    assert "BINLOG_DUMP_NON_BLOCK" in flags.display
    assert span(node, "binlog_filename") == (15, 13)
    assert cm.encode_com_binlog_dump(v) == BINLOG_DUMP


SID = uuid.UUID("3e11fa47-71ca-11e1-9e33-c80aa9429562")
BINLOG_DUMP_GTID = hexbytes("""
    1e                      # command COM_BINLOG_DUMP_GTID
    04 00                   # flags BINLOG_THROUGH_GTID
    e9 03 00 00             # server_id 1001
    00 00 00 00             # binlog_name_info_size 0
                            # binlog_name "" (0 bytes)
    04 00 00 00 00 00 00 00 # binlog_pos 4
    30 00 00 00             # data_size 48
    01 00 00 00 00 00 00 00 # n_sids 1
    3e 11 fa 47 71 ca 11 e1 9e 33 c8 0a a9 42 95 62   # sid
    01 00 00 00 00 00 00 00 # n_intervals 1
    01 00 00 00 00 00 00 00 # start 1
    06 00 00 00 00 00 00 00 # end 6 (exclusive: GNOs 1-5)
""")


def test_com_binlog_dump_gtid() -> None:
    v, node = decode(cm.decode_com_binlog_dump_gtid, BINLOG_DUMP_GTID)
    assert v.flags == BinlogDumpGtidFlag.BINLOG_THROUGH_GTID
    assert (v.server_id, v.binlog_filename, v.binlog_pos) == (1001, "", 4)
    assert v.gtid_set == (cm.GtidSid(SID, (cm.GtidInterval(1, 6),)),)
    assert cm.gtid_set_text(v.gtid_set) == f"{SID}:1-5"
    assert span(node, "binlog_pos") == (15, 8)
    assert span(node, "data_size") == (23, 4)
    data = node.find("data")
    assert (data.offset, data.length, data.display) == (27, 48, f"{SID}:1-5")
    assert data.find("sid_entry.sid").value == SID
    assert span(node, "data.sid_entry.interval.end") == (67, 8)
    assert cm.encode_com_binlog_dump_gtid(v) == BINLOG_DUMP_GTID


def test_com_binlog_dump_gtid_without_set() -> None:
    v = cm.ComBinlogDumpGtid(7, "mysql-bin.000002", 154)
    payload = cm.encode_com_binlog_dump_gtid(v)
    got, node = decode(cm.decode_com_binlog_dump_gtid, payload)
    assert got == v
    assert node.get("data_size") is None
    assert node.find("binlog_name").value == "mysql-bin.000002"


#: what python-mysql-replication sends in MySQL GTID mode: flags 0, a NUL-filled name
PYMYSQLREPL_DUMP_GTID = hexbytes("""
    1e                      # command COM_BINLOG_DUMP_GTID
    00 00                   # flags: BINLOG_THROUGH_GTID clear
    e9 03 00 00             # server_id 1001
    03 00 00 00             # binlog_name_info_size 3
    00 00 00                # binlog_name: NUL-filled (none)
    04 00 00 00 00 00 00 00 # binlog_pos 4
    30 00 00 00             # data_size 48
    01 00 00 00 00 00 00 00 # n_sids 1
    3e 11 fa 47 71 ca 11 e1 9e 33 c8 0a a9 42 95 62   # sid
    01 00 00 00 00 00 00 00 # n_intervals 1
    01 00 00 00 00 00 00 00 # start 1
    06 00 00 00 00 00 00 00 # end 6 (exclusive: GNOs 1-5)
""")


def test_com_binlog_dump_gtid_read_as_mysql_reads_it() -> None:
    """MySQL reads the name as a C string and the set whatever the flags (rpl_source.cc)."""
    v, node = decode(cm.decode_com_binlog_dump_gtid, PYMYSQLREPL_DUMP_GTID)
    assert v.flags == 0 and v.binlog_filename == "" and v.binlog_pos == 4
    assert v.gtid_set == (cm.GtidSid(SID, (cm.GtidInterval(1, 6),)),)
    assert node.find("binlog_name").value == ""
    assert span(node, "binlog_name") == (15, 3)
    assert span(node, "data_size") == (26, 4)
    assert node.find("data").display == f"{SID}:1-5"
    # the encoder keeps the flags as given and still sends the set
    again = cm.encode_com_binlog_dump_gtid(cm.ComBinlogDumpGtid(1001, "\0\0\0", 4, 0,
                                                                v.gtid_set))
    assert again == PYMYSQLREPL_DUMP_GTID
    named = bytearray(PYMYSQLREPL_DUMP_GTID)
    named[11:14] = b"a\0b"
    assert decode(cm.decode_com_binlog_dump_gtid, bytes(named))[0].binlog_filename == "a"


def test_bad_sid_count_is_an_error() -> None:
    bad = bytearray(BINLOG_DUMP_GTID)
    bad[27 - 4 + 4 : 27 - 4 + 12] = (10**6).to_bytes(8, "little")  # n_sids far too big
    d = run_decoder("payload", cm.decode_com_binlog_dump_gtid, bytes(bad), caps=0, base=4)
    assert d.error is not None and "n_sids" in d.error
    assert d.node is not None and check_tiling(d.node) == []


texts = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), texts, st.integers(0, 0xFFFF))
def test_binlog_dump_roundtrip(pos: int, sid: int, name: str, flags: int) -> None:
    v = cm.ComBinlogDump(pos, sid, name, flags)
    assert decode(cm.decode_com_binlog_dump, cm.encode_com_binlog_dump(v))[0] == v


@given(st.integers(0, 2**32 - 1), texts, st.integers(0, 2**63),
       st.lists(st.tuples(st.uuids(), st.lists(st.tuples(st.integers(1, 2**40),
                                                         st.integers(1, 2**20)), max_size=3)),
                max_size=3))
def test_binlog_dump_gtid_roundtrip(sid: int, name: str, pos: int,
                                    sids: list[tuple[uuid.UUID, list[tuple[int, int]]]]) -> None:
    gset = tuple(cm.GtidSid(u, tuple(cm.GtidInterval(a, a + n) for a, n in ivs))
                 for u, ivs in sids)
    v = cm.ComBinlogDumpGtid(sid, name, pos, int(BinlogDumpGtidFlag.BINLOG_THROUGH_GTID), gset)
    assert decode(cm.decode_com_binlog_dump_gtid, cm.encode_com_binlog_dump_gtid(v))[0] == v


@given(st.integers(0, 2**32 - 1), texts, texts, texts, st.integers(0, 0xFFFF))
def test_register_slave_roundtrip(sid: int, host: str, user: str, pw: str, port: int) -> None:
    v = cm.ComRegisterSlave(sid, host, user, pw, port)
    assert decode(cm.decode_com_register_slave, cm.encode_com_register_slave(v))[0] == v
