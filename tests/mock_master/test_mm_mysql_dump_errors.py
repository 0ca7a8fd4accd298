"""The MySQL flavour's 1236 errors for a COM_BINLOG_DUMP, by server version, as MySQL's sender
words and places them (mysql/mysql-server ``sql/rpl_binlog_sender.cc``; no MySQL server here):

- ``Binlog_sender::check_start_file`` runs in ``init()``, before ``run()`` opens a file: a start
  past the file's end is "Client requested master to start replication from position > file
  size" (8.0 at 6299d1de) with nothing appended (``run()`` appends "; the first event ..."
  only when a file is open); 8.0.26 renamed master/slave to source/replica in these texts
  ("Client requested source to start replication from position > file size", as replicas of
  8.0.26+ servers report it);
- a client that never set ``@master_binlog_checksum`` (UNDEF) gets the fake ROTATE (no CRC32:
  ``event_checksum_on()`` is the client's setting before the first FD), then
  ``send_format_description_event`` fails with "Slave can not handle replication events with
  the checksum that master is configured to log" ("Replica ... source ..." from 8.0.26), and
  ``run()`` appends the coordinates: the first event (the client's file name, '' for none, and
  position), the last event read (the FD: ``set_last_pos`` after ``read_event``) and the last
  byte read. A 2025 error log of an 8.0 source shows exactly that form: "...; the first event
  '' at 4, the last event read from '/var/log/mysql/mysql-bin.000001' at 126, the last byte
  read from '/var/log/mysql/mysql-bin.000001' at 126." (the server prints its path; the mock
  prints the file name). The old mock sent "...; the first event 'x' at 4" before any ROTATE,
  and MariaDB's "impossible position" text for a start past the end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pymysql
import pytest

from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_position")
FIRST = FIXTURES / "binlog.000001"

pytestmark = pytest.mark.network


def _mock(serve: Callable[[Scenario], ThreadedMockMaster], version: str) -> ThreadedMockMaster:
    if not FIRST.exists():
        pytest.fail(f"the MySQL 8.0.45 fixture binlogs are missing under {FIXTURES}")
    return serve(Scenario(flavor="mysql", server_version=version,
                          sources=[BinlogSource([FIRST])]))


def _dump(mm: ThreadedMockMaster, name: str, pos: int, setup: list[str]) -> list[bytes]:
    conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    conn._sock.settimeout(10)
    try:
        with conn.cursor() as cur:
            for q in setup:
                cur.execute(q)
        conn._execute_command(0x12, encode_com_binlog_dump(ComBinlogDump(pos, 7, name, 1))[1:])
        out = []
        while True:
            hdr = conn._read_bytes(4)
            p = bytes(conn._read_bytes(int.from_bytes(hdr[:3], "little")))
            out.append(p)
            if p[0] in (0xFE, 0xFF) and (p[0] == 0xFF or len(p) < 9):
                return out
    finally:
        conn.close()


def _err(p: bytes) -> tuple[int, str, str]:
    assert p[0] == 0xFF, p[:40]
    return int.from_bytes(p[1:3], "little"), p[4:9].decode(), p[9:].decode()


@pytest.mark.parametrize(("version", "who"), [("8.0.45", "source"), ("8.4.3", "source"),
                                              ("9.1.0", "source"), ("8.0.21", "master")])
def test_a_start_past_the_file_end(serve_scenario: Callable[[Scenario], ThreadedMockMaster],
                                   version: str, who: str) -> None:
    mm = _mock(serve_scenario, version)
    got = _dump(mm, FIRST.name, FIRST.stat().st_size + 100,
                ["SET @master_binlog_checksum = 'CRC32'"])
    assert len(got) == 1  # refused before the fake ROTATE
    assert _err(got[0]) == (1236, "HY000", f"Client requested {who} to start replication "
                                           "from position > file size")


@pytest.mark.parametrize(("version", "text"), [
    ("8.0.45", "Replica can not handle replication events with the checksum that source is "
               "configured to log"),
    ("8.0.21", "Slave can not handle replication events with the checksum that master is "
               "configured to log")])
@pytest.mark.parametrize("name", ["", FIRST.name])
def test_a_checksum_unaware_client(serve_scenario: Callable[[Scenario], ThreadedMockMaster],
                                   version: str, text: str, name: str) -> None:
    mm = _mock(serve_scenario, version)
    got = _dump(mm, name, 4, [])
    rotate, err = got
    assert rotate[0] == 0 and rotate[5] == 4  # the fake ROTATE first, without a CRC32
    assert len(rotate) == 1 + 19 + 8 + len(FIRST.name)
    assert _err(err) == (1236, "HY000", f"{text}; the first event '{name}' at 4, the last event "
                                        f"read from '{FIRST.name}' at 126, the last byte read "
                                        f"from '{FIRST.name}' at 126.")


# ----------------------------------------------------------------- a start inside an event
def _fake_rotate_pos(p: bytes) -> int:
    return int.from_bytes(p[1 + 19:1 + 19 + 8], "little")


@pytest.mark.parametrize(("pos", "text"), [
    (135, "bogus data in log event; the first event '{n}' at 135, the last event read from "
          "'{n}' at 126, the last byte read from '{n}' at 154."),
    (127, "log event entry exceeded max_allowed_packet; Increase max_allowed_packet on master; "
          "the first event '{n}' at 127, the last event read from '{n}' at 126, the last byte "
          "read from '{n}' at 146."),
    (1497, "I/O error reading log event; the first event '{n}' at 1497, the last event read "
           "from '{n}' at 126, the last byte read from '{n}' at 1516."),
])
def test_a_start_inside_an_event_reads_what_is_there(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster], pos: int, text: str) -> None:
    """MySQL 5.7+/8.x has no "impossible position" check (the mock sent MariaDB's text): the
    sender sends the fake ROTATE (at the requested position) and the FD (log_pos 0), seeks and
    reads an event there (mock_master/dump/mysql_reader.py: Binlog_event_data_istream's header
    checks at 135: length 0 < 19, BOGUS; at 127: 0x9d000000 > 1 GiB, EVENT_TOO_LARGE; at 1497
    the header ends at the file's end and the body read returns nothing: READ_EOF inside the
    active file, SYSTEM_IO) and fails with log_read_error_msg's text and run()'s coordinates
    (the last event read: the FD, ending at 126; the last byte: 19 bytes on, or the end)."""
    mm = _mock(serve_scenario, "8.0.45")
    got = _dump(mm, FIRST.name, pos, ["SET @source_binlog_checksum = 'CRC32'"])
    rotate, fde, err = got
    assert rotate[5] == 4 and _fake_rotate_pos(rotate) == pos
    assert fde[5] == 15 and int.from_bytes(fde[1 + 13:1 + 17], "little") == 0  # log_pos 0
    assert _err(err) == (1236, "HY000", text.format(n=FIRST.name))


def test_what_the_sender_reads_whole_goes_out_as_read(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """From 130 the "event" read is 157 bytes long (its length field reads 0x9d): sent as
    read, then at 287 the next "header" announces more than the file holds: TRUNC_EVENT, the
    reader's position at the file's end. From 615 the garbage event (642 bytes by its length
    field) ends at 1257, an event boundary: from there the file's events go out unchanged."""
    data = FIRST.read_bytes()
    mm = _mock(serve_scenario, "8.4.3")
    got = _dump(mm, FIRST.name, 130, ["SET @source_binlog_checksum = 'CRC32'"])
    assert got[2] == b"\x00" + data[130:287]
    assert _err(got[3]) == (1236, "HY000", (
        "binlog truncated in the middle of event; consider out of disk space on master; the "
        f"first event '{FIRST.name}' at 130, the last event read from '{FIRST.name}' at 287, "
        f"the last byte read from '{FIRST.name}' at {len(data)}."))
    got = _dump(mm, FIRST.name, 615, ["SET @source_binlog_checksum = 'CRC32'"])
    assert got[2] == b"\x00" + data[615:1257]
    rest = b"".join(p[1:] for p in got[3:-1])
    assert rest == data[1257:] and got[-1][0] == 0xFE


@pytest.mark.parametrize(("version", "who"), [("8.0.45", "source"), ("8.0.21", "master")])
def test_a_start_before_4(serve_scenario: Callable[[Scenario], ThreadedMockMaster],
                          version: str, who: str) -> None:
    """check_start_file: ``m_start_pos < BIN_LOG_HEADER_SIZE`` is refused before any file is
    open (the mock started such a dump at 4, as MariaDB does)."""
    got = _dump(_mock(serve_scenario, version), FIRST.name, 2,
                ["SET @master_binlog_checksum = 'CRC32'"])
    assert len(got) == 1
    assert _err(got[0]) == (1236, "HY000", f"Client requested {who} to start replication "
                                           "from position < 4")
