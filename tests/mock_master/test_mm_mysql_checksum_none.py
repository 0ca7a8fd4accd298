"""The MySQL flavour against clients that set ``@master_binlog_checksum='NONE'`` (MySQL's own
mysqlbinlog, go-mysql, mariadb-binlog do): events go out as read, CRC32 included.

What MySQL's sender does (mysql/mysql-server ``sql/rpl_binlog_sender.cc``, read at commit
6299d1de4923 (8.0) and 0313b3535a46 (5.7); no MySQL server here):

- ``Binlog_sender::init_checksum_alg``: the client's variable is read into
  ``m_slave_checksum_alg`` ('NONE' -> OFF; unset -> UNDEF), and ``m_event_checksum_alg`` starts as
  it ("it is used by fake_rotate_event() which will be called before reading any
  Format_description_log_event");
- ``fake_rotate_event``: timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F, a CRC32 only when
  ``event_checksum_on()`` - for the first file the client's setting: none for 'NONE';
- ``send_format_description_event``: ``m_event_checksum_alg`` becomes the FD's own algorithm;
  only an UNDEF client is refused ("Slave can not handle replication events with the checksum
  that master is configured to log"); LOG_EVENT_BINLOG_IN_USE_F cleared; a COM_BINLOG_DUMP
  starting past the FD (``start_pos > BIN_LOG_HEADER_SIZE``) gets log_pos 0 and 'created' 0,
  the CRC32 recomputed ("fix the checksum due to latest changes in header"); nothing else;
- ``send_events`` / ``read_event``: every other event is sent as ``read_event_data`` read it,
  its CRC32 with it (no stripping anywhere in the sender).

Served: the MySQL 8.0.45 binlogs of Percona's binlog server tests (../shared/fixtures).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from mock_master.history.sources import FLAG_IN_USE, EventStream
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_position")
FILES = ("binlog.000001", "binlog.000002")
#: binlog.000001: the ANONYMOUS_GTID of its third transaction (an INSERT)
MID_FILE = 642

pytestmark = pytest.mark.network


def _paths() -> list[Path]:
    paths = [FIXTURES / f for f in FILES]
    if not all(p.exists() for p in paths):
        pytest.fail(f"the MySQL 8.0.45 fixture binlogs are missing under {FIXTURES}")
    return paths


@pytest.fixture
def mysql_mock(serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> ThreadedMockMaster:
    return serve_scenario(Scenario(flavor="mysql", server_version="8.0.45",
                                   sources=[BinlogSource(list(_paths()))]))


def _file_events(path: Path) -> Iterator[tuple[int, bytes]]:
    data = path.read_bytes()
    pos = 4
    while pos < len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        yield pos, data[pos:pos + size]
        pos += size


# ----------------------------------------------------------------- mysql-connector-python
def _connector_dump(mm: ThreadedMockMaster, checksum: str, name: str, pos: int) -> list[bytes]:
    """Log in with mysql-connector-python, set the checksum variable as mysqlbinlog does, send
    a non-blocking COM_BINLOG_DUMP; the events (payload without its OK byte) up to the EOF."""
    import mysql.connector

    cnx: Any = mysql.connector.connect(host=mm.host, port=mm.port, user="repl",
                                       password="replpass", use_pure=True)
    try:
        cur = cnx.cursor()
        cur.execute(f"SET @master_binlog_checksum='{checksum}'")
        cur.close()
        payload = encode_com_binlog_dump(ComBinlogDump(pos, 99, name, flags=1))[1:]
        pkt = cnx._send_cmd(0x12, payload)
        events: list[bytes] = []
        while True:
            body = bytes(pkt[4:])
            if body[0] == 0xFE and len(body) < 9:
                return events
            assert body[0] == 0x00, body[:64]
            events.append(body[1:])
            pkt = cnx._socket.recv()
    finally:
        cnx.close()


def _crc_ok(ev: bytes) -> bool:
    import zlib

    return bool(zlib.crc32(ev[:-4]) == struct.unpack_from("<I", ev, len(ev) - 4)[0])


def test_a_none_client_gets_the_events_as_read_from_the_file_start(
        mysql_mock: ThreadedMockMaster) -> None:
    first = _paths()[0]
    got = _connector_dump(mysql_mock, "NONE", first.name, 4)
    rotate, fde, rest = got[0], got[1], got[2:]
    # fake_rotate_event: no CRC32 for a NONE client, timestamp 0, log_pos 0, ARTIFICIAL
    assert rotate[4] == 4 and len(rotate) == 19 + 8 + len(first.name)
    assert struct.unpack_from("<I", rotate, 0)[0] == 0
    assert struct.unpack_from("<I", rotate, 13)[0] == 0
    assert struct.unpack_from("<H", rotate, 17)[0] == 0x20
    file_events = [ev for _, ev in _file_events(first)]
    # the FD as read: its CRC32 algorithm byte and checksum, log_pos 126 (start at 4)
    file_fde = file_events[0]
    assert fde[4] == 15 and len(fde) == len(file_fde)
    assert struct.unpack_from("<I", fde, 13)[0] == 126
    assert fde[-5] == 1 and _crc_ok(fde)
    assert struct.unpack_from("<H", fde, 17)[0] == struct.unpack_from(
        "<H", file_fde, 17)[0] & ~FLAG_IN_USE
    # then every event of the file byte for byte (CRC32 kept), and the next file's
    n = len(file_events) - 1
    assert rest[:n] == file_events[1:]
    second = [ev for _, ev in _file_events(_paths()[1])]
    assert rest[n][4] == 4 and rest[n + 1] == second[0] and rest[n + 2:] == second[1:]


def test_a_none_client_resuming_mid_file_reads_a_consistent_stream(
        mysql_mock: ThreadedMockMaster) -> None:
    """A resume at a position past the FD: the FD says CRC32 and every event carries one (the
    old mock stripped the events but not the FD's algorithm byte: EOF errors, no rows)."""
    first = _paths()[0]
    got = _connector_dump(mysql_mock, "NONE", first.name, MID_FILE)
    fde = got[1]
    file_events = dict(_file_events(first))
    file_fde = file_events[4]
    # send_format_description_event with start_pos > 4: log_pos 0, 'created' 0, CRC recomputed
    assert len(fde) == len(file_fde) and fde[-5] == 1 and _crc_ok(fde)
    assert struct.unpack_from("<I", fde, 13)[0] == 0
    assert fde[19 + 2 + 50:19 + 2 + 54] == bytes(4)
    assert fde[19:19 + 2 + 50] == file_fde[19:19 + 2 + 50]
    wanted = [ev for pos, ev in file_events.items() if pos >= MID_FILE]
    assert got[2:2 + len(wanted)] == wanted
    assert all(_crc_ok(ev) for ev in got[1:])


def test_a_crc32_client_gets_a_checksummed_fake_rotate(mysql_mock: ThreadedMockMaster) -> None:
    first = _paths()[0]
    got = _connector_dump(mysql_mock, "CRC32", first.name, MID_FILE)
    assert len(got[0]) == 19 + 8 + len(first.name) + 4 and _crc_ok(got[0])
    assert got[2] == dict(_file_events(first))[MID_FILE]


# ----------------------------------------------------------------- python-mysql-replication
def _rows(mm: ThreadedMockMaster, checksum: str | None, pos: int,
          monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """python-mysql-replication's rows from ``pos``; ``checksum``: what its checksum SET
    becomes on the wire (None: as the library sends it, @@global.binlog_checksum)."""
    import pymysql.cursors
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    if checksum is not None:
        orig = pymysql.cursors.Cursor.execute

        def execute(self: Any, query: str, args: Any = None) -> Any:
            if "@master_binlog_checksum" in query:
                query = f"SET @master_binlog_checksum='{checksum}'"
            return orig(self, query, args)

        monkeypatch.setattr(pymysql.cursors.Cursor, "execute", execute)
    s = BinLogStreamReader(connection_settings={"host": mm.host, "port": mm.port,
                                                "user": "repl", "passwd": "replpass"},
                           server_id=4243, blocking=False, resume_stream=True,
                           log_file=FILES[0], log_pos=pos, only_events=[WriteRowsEvent])
    out: list[tuple[str, Any]] = []
    try:
        for ev in s:
            out.extend((ev.table, r["values"]) for r in ev.rows)
    finally:
        s.close()
        monkeypatch.undo()
    return out


@pytest.mark.parametrize("pos", [4, MID_FILE])
def test_python_mysql_replication_set_to_none_reads_the_rows(
        mysql_mock: ThreadedMockMaster, monkeypatch: pytest.MonkeyPatch, pos: int) -> None:
    """The same rows as the library's own CRC32 setting. (The library takes the CRC32 as
    present from SHOW GLOBAL VARIABLES, whatever it told the server, and sizes each event body
    by the header's event_size minus 23; the old mock's stripped events had their event_size
    shrunk too, so the library lost 4 bytes it never reads for these row images and this test
    passes on the old mock as well: the byte checks above are the ones that failed there.)"""
    want = _rows(mysql_mock, None, pos, monkeypatch)
    assert want, "no rows served from the fixture"
    assert _rows(mysql_mock, "NONE", pos, monkeypatch) == want
    assert not mysql_mock.log.violations


def test_the_stream_is_what_the_fixture_holds(mysql_mock: ThreadedMockMaster) -> None:
    """The served stream is the fixture's bytes (so the comparisons above are with the file)."""
    stream: EventStream = mysql_mock.master.stream
    assert [f.name for f in stream.files] == list(FILES)
    assert stream.files[0].event(0) == next(_file_events(_paths()[0]))[1]
