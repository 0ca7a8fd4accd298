"""MySQL flavour dumps (no real MySQL here; the facts come from MySQL's rpl_source.cc and
rpl_binlog_sender.cc): COM_BINLOG_DUMP_GTID read whatever its flags say, the client's
transactions skipped, and the skipped positions reported with a heartbeat before the next event
sent, on the MySQL 8.0.45 GTID fixture binlogs."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pymysql
import pytest

from binlogscope.wire.commands import (
    ComBinlogDumpGtid,
    GtidInterval,
    GtidSid,
    encode_com_binlog_dump_gtid,
)
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_gtid")
FILES = ("binlog.000001", "binlog.000002")
UUID = uuid.UUID("396e294c-1ca4-11f1-9ae7-00155da79c6b")

pytestmark = pytest.mark.network


def _dump(mm: ThreadedMockMaster, cmd: ComBinlogDumpGtid, setup: list[str]) -> list[bytes]:
    conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    conn._sock.settimeout(10)
    try:
        with conn.cursor() as cur:
            for q in setup:
                cur.execute(q)
        conn._execute_command(0x1E, encode_com_binlog_dump_gtid(cmd)[1:])
        out = []
        while True:
            hdr = conn._read_bytes(4)
            p = bytes(conn._read_bytes(int.from_bytes(hdr[:3], "little")))
            out.append(p)
            if (p[0] in (0xFE, 0xFF) and len(p) < 9) or p[0] == 0xFF:
                return out
    finally:
        conn.close()


def _gtid_gno(p: bytes) -> int:
    return int(struct.unpack_from("<q", p, 1 + 19 + 1 + 16)[0])


def test_the_set_is_honoured_with_flags_clear_and_skips_end_with_a_heartbeat() -> None:
    if not all((FIXTURE / f).exists() for f in FILES):
        pytest.fail(f"the MySQL 8.0.45 GTID fixtures are missing under {FIXTURE}")
    sc = Scenario(flavor="mysql", sources=[BinlogSource([FIXTURE / f for f in FILES])])
    with ThreadedMockMaster(sc) as mm:
        full = _dump(mm, ComBinlogDumpGtid(0, "\0\0\0", 4, 1, ()),
                     ["SET @master_binlog_checksum = 'CRC32'"])
        have = (GtidSid(UUID, (GtidInterval(1, 3),)),)  # :1-2, python-mysql-replication style
        part = _dump(mm, ComBinlogDumpGtid(0, "\0\0\0", 4, 1, have),
                     ["SET @master_binlog_checksum = 'CRC32'"])
    gnos = [_gtid_gno(p) for p in full if p[0] == 0 and p[5] == 33]
    assert gnos[:2] == [1, 2] and len(gnos) >= 4
    sent = [_gtid_gno(p) for p in part if p[0] == 0 and p[5] == 33]
    assert sent == [g for g in gnos if g > 2]
    first = next(k for k, p in enumerate(part) if p[0] == 0 and p[5] == 33)
    hb = part[first - 1]
    assert hb[5] == 27  # a heartbeat before it, at the end of what was skipped
    start_of_first = struct.unpack_from("<I", part[first], 1 + 13)[0] - (len(part[first]) - 1)
    assert struct.unpack_from("<I", hb, 1 + 13)[0] == start_of_first
    assert part[-1][0] == 0xFE


def test_gtid_auto_position_clears_only_created_of_the_first_format_description() -> None:
    """MySQL 8.0 ``Binlog_sender::send_format_description_event`` (sql/rpl_binlog_sender.cc,
    mysql/mysql-server at 6299d1de4923): for a GTID-protocol dump only
    ``m_gtid_clear_fd_created_flag`` (set by check_start_file's auto-position branch when the
    replica's set holds the file's first GTID) changes the FD: 'created' 0, the CRC32
    recomputed, log_pos kept (126 here). Only a COM_BINLOG_DUMP past position 4 gets log_pos 0.
    The old mock sent log_pos 0 here too."""
    if not all((FIXTURE / f).exists() for f in FILES):
        pytest.fail(f"the MySQL 8.0.45 GTID fixtures are missing under {FIXTURE}")
    import zlib

    sc = Scenario(flavor="mysql", server_version="8.0.45",
                  sources=[BinlogSource([FIXTURE / f for f in FILES])])
    have = (GtidSid(UUID, (GtidInterval(1, 2),)),)  # the first file's first transaction
    with ThreadedMockMaster(sc) as mm:
        got = _dump(mm, ComBinlogDumpGtid(0, "", 4, 1, have),
                    ["SET @master_binlog_checksum = 'CRC32'"])
    fde = next(p[1:] for p in got if p[0] == 0 and p[5] == 15)
    on_disk = (FIXTURE / FILES[0]).read_bytes()
    file_fde = on_disk[4:4 + int.from_bytes(on_disk[13:17], "little")]
    assert struct.unpack_from("<I", fde, 13)[0] == 126 == struct.unpack_from("<I", file_fde, 13)[0]
    assert fde[19 + 2 + 50:19 + 2 + 54] == bytes(4) != file_fde[19 + 2 + 50:19 + 2 + 54]
    assert fde[19:19 + 52] == file_fde[19:19 + 52] and len(fde) == len(file_fde)
    assert zlib.crc32(fde[:-4]) == struct.unpack_from("<I", fde, len(fde) - 4)[0]
