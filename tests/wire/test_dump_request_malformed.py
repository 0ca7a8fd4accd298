"""A COM_BINLOG_DUMP whose file name field holds NUL bytes is shown as malformed (issue 31),
not as a file name of NULs: python-mysql-replication's MariaDB dump writes an empty name as 4
NULs under a length header one byte short (14 for 15 bytes), so the packet holds 3 NULs and
the 4th begins the client's next packet. The server reads the name up to the first NUL."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from binlogscope.inspector.packet_text import packet_summary
from binlogscope.session import Role, Session
from binlogscope.session.events import PacketDecoded, Peer, Phase
from binlogscope.wire import commands as cm
from binlogscope.wire.packet import run_decoder

CAPTURES = Path(__file__).resolve().parents[2] / "captures"

#: what python-mysql-replication 1.0.x writes for a MariaDB dump (__set_mariadb_settings)
PMR_MARIADB_DUMP = (struct.pack("<i", 4 + 2 + 4 + 4) + bytes([0x12]) + struct.pack("<i", 4)
                    + struct.pack("<H", 1) + struct.pack("<I", 77) + b"\0\0\0\0")


def test_the_nul_name_is_malformed_and_read_as_the_first_file() -> None:
    d = run_decoder("payload", cm.decode_com_binlog_dump, PMR_MARIADB_DUMP[4:18], caps=0,
                    base=4)
    v = d.value
    assert v.binlog_filename == "\0\0\0" and v.requested_file == ""
    assert v.malformed is not None and v.malformed.startswith(
        "malformed COM_BINLOG_DUMP: 3 NUL byte(s) where the file name goes")
    assert d.node is not None
    leaf = next(n for _, n in d.node.walk() if n.name == "binlog_filename")
    assert leaf.error == v.malformed
    assert leaf.display == ("malformed: \\x00\\x00\\x00 (3 NUL bytes; the server reads '': "
                            "the first binlog file)")
    # a proper name, and a NUL-terminated one, are told apart
    ok = cm.ComBinlogDump(4, 1, "mysql-bin.000001")
    assert ok.malformed is None and ok.requested_file == "mysql-bin.000001"
    term = cm.ComBinlogDump(4, 1, "mysql-bin.000001\0")
    assert term.requested_file == "mysql-bin.000001"
    assert term.malformed is not None and "'mysql-bin.000001'" in term.malformed


def test_the_session_shows_the_request_as_malformed() -> None:
    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    s.receive_data(PMR_MARIADB_DUMP, Peer.CLIENT)
    (p,) = [e for e in s.events() if isinstance(e, PacketDecoded)]
    assert p.kind == "com_binlog_dump" and p.payload_length == 14
    text = packet_summary(p)
    assert text.startswith("MALFORMED file name (3 NUL bytes, read as '': the first file):4")
    assert "\\x00" not in text
    assert p.node is not None and any(
        n.error and n.error.startswith("malformed COM_BINLOG_DUMP") for _, n in p.node.walk())


def test_the_left_over_nul_is_named_when_the_connection_closes() -> None:
    """The 4th NUL starts the client's next packet: its COM_QUIT (01 00 00 00 01) is read
    behind it as a header announcing 256 bytes, and the close finds 6 bytes pending - the
    message says where they most likely came from."""
    from binlogscope.session.events import DecodeError

    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    s.receive_data(PMR_MARIADB_DUMP + bytes.fromhex("0100000001"), Peer.CLIENT)
    s.receive_data(b"", Peer.CLIENT)
    (err,) = [e for e in s.events() if isinstance(e, DecodeError)]
    assert "connection closed in the middle of a packet (6 bytes left over)" in err.message
    assert "the NUL the malformed COM_BINLOG_DUMP left over" in err.message
    # a proper dump request and the same close: no such guess
    ok = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    payload = cm.encode_com_binlog_dump(cm.ComBinlogDump(4, 77, ""))
    ok.receive_data(len(payload).to_bytes(3, "little") + b"\0" + payload, Peer.CLIENT)
    ok.receive_data(b"", Peer.CLIENT)
    assert not [e for e in ok.events() if isinstance(e, DecodeError)]


@pytest.mark.network
def test_python_mysql_replication_against_the_mock_is_shown_malformed() -> None:
    """The real client (is_mariadb=True) through a recording relay to the mock master: its
    dump request, decoded by binlogscope, is the malformed one above."""
    from pymysqlreplication import BinLogStreamReader

    from mock_master.diff.compare import decode
    from mock_master.diff.run import record
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster

    def session(host: str, port: int) -> object:
        r = BinLogStreamReader(connection_settings={"host": host, "port": port, "user": "repl",
                                                    "passwd": "replpass"},
                               server_id=77, is_mariadb=True, blocking=False)
        try:
            return sum(1 for _ in r)
        finally:
            r.close()

    sc = Scenario(sources=[BinlogSource([CAPTURES / "mariadb-10.11-workload.000001"])])
    with ThreadedMockMaster(sc) as mm:
        run = record(session, mm.host, mm.port)
    assert run.error is None and isinstance(run.result, int) and run.result > 100
    dumps = [p for c in run.conversations for p in decode(c) if p.kind == "com_binlog_dump"]
    assert len(dumps) == 1
    assert packet_summary(dumps[0]).startswith("MALFORMED file name (3 NUL bytes, read as "
                                               "'': the first file):4 server_id=77")
