"""A COM_BINLOG_DUMP that starts inside an event, MariaDB flavour, against the real MariaDB
10.11 on the same binlog file: the server sends the fake ROTATE and the FORMAT_DESCRIPTION,
reads an "event" where it was asked to start and fails with its read error and coordinates
("bogus data in log event; the first event 'f' at 5, the last event read from 'f' at 5, the
last byte read from 'f' at 24." - measured); "impossible position" is only for a start past the
file's end. The old mock answered "impossible position" to every start inside an event. The
packets' types and the ERR text must be the real server's."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql
import pytest

from binlogscope.wire.commands import ComBinlogDump, encode_com_binlog_dump
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def _dump(host: str, port: int, user: str, pw: str, name: str, pos: int,
          setup: str = "SET @master_binlog_checksum = 'CRC32'") -> list[Any]:
    conn = pymysql.connect(host=host, port=port, user=user, password=pw)
    conn._sock.settimeout(20)
    try:
        with conn.cursor() as cur:
            cur.execute(setup)
        conn._execute_command(0x12, encode_com_binlog_dump(ComBinlogDump(pos, 0, name, 1))[1:])
        out: list[Any] = []
        while True:
            hdr = conn._read_bytes(4)
            p = bytes(conn._read_bytes(int.from_bytes(hdr[:3], "little")))
            if p[0] == 0xFF:
                out.append(p[9:].decode())
                return out
            if p[0] == 0xFE and len(p) < 9:
                out.append("EOF")
                return out
            out.append(p[5])  # the event type
    finally:
        conn.close()


def test_mid_event_starts_as_the_real_server(
        mariadb: MariaDB, tmp_path: Path,
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("CREATE TABLE IF NOT EXISTS mid_event_t (id INT PRIMARY KEY, v TEXT)")
        cur.execute("REPLACE INTO mid_event_t VALUES (1, REPEAT('x', 300))")
        cur.execute("FLUSH BINARY LOGS")
    conn.commit()
    conn.close()
    src = mariadb.binlog_files()[-2]
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    data = copy.read_bytes()
    offsets, p = [], 4
    while p < len(data):
        offsets.append(p)
        p += int.from_bytes(data[p + 9:p + 13], "little")
    with mariadb.connect().cursor() as cur:
        cur.execute("SELECT @@server_id")
        server_id = int(cur.fetchone()[0])
    mm = serve_scenario(Scenario(flavor="mariadb", server_version=mariadb.version,
                                 server_id=server_id, sources=[BinlogSource([copy])]))
    positions = [5, offsets[1] + 1, offsets[2] + 3, offsets[-1] + 2, len(data) + 50]
    for pos in positions:
        real = _dump(mariadb.host, mariadb.port, mariadb.repl_user, mariadb.repl_password,
                     src.name, pos)
        mock = _dump(mm.host, mm.port, "repl", "replpass", src.name, pos)
        assert mock == real, pos
    # a start before 4 is refused at once, with or without a file name ('.' then)
    for name, pos in ((src.name, 0), (src.name, 2), ("", 0)):
        real = _dump(mariadb.host, mariadb.port, mariadb.repl_user, mariadb.repl_password,
                     name, pos)
        mock = _dump(mm.host, mm.port, "repl", "replpass", name, pos)
        assert len(real) == 1 and "impossible position" in real[0]
        assert mock == real, (name, pos)
    assert any("bogus data" in str(x) or "truncated" in str(x)
               for pos in positions[:1]
               for x in _dump(mm.host, mm.port, "repl", "replpass", src.name, pos))
