"""The replica's user variables are read under the names the emulated MySQL version reads
(mock_master/dump/replica_vars.py):

- from 8.0.26 the sender looks up the new name first, then the old one
  (``get_user_var_from_alternatives(thd, alt1, alt2)`` in mysql-server ``sql/rpl_source.cc``
  at 08415f0d: ``uv.find(alt1)`` then ``uv.find(alt2)``; ``init_checksum_alg`` passes
  ``"source_binlog_checksum", "master_binlog_checksum"``);
- before 8.0.26 only ``master_binlog_checksum`` exists (``sql/rpl_binlog_sender.cc`` at
  6299d1de: ``m_thd->user_vars.find("master_binlog_checksum")``): a client that set only
  ``@source_binlog_checksum`` is checksum-unaware there (UNDEF) and a CRC32 binlog's dump is
  refused after the fake ROTATE.

The fake ROTATE carries a CRC32 exactly when the client's setting read by
``init_checksum_alg`` says CRC32 (``event_checksum_on()`` before the first FD), so its length
shows which name won. The old mock read ``master_`` first and ``source_`` as a fallback at
every version.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mock_master.dump.replica_vars import names
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.mariadb_server import MariaDB
from tests.mock_master.test_mm_mysql_dump_errors import FIRST, _dump, _err, _mock

ROTATE_NO_CRC = 1 + 19 + 8 + len(FIRST.name)


def test_a_pre_8026_source_does_not_read_the_new_name(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario, "8.0.21")
    got = _dump(mm, FIRST.name, 4, ["SET @source_binlog_checksum = 'CRC32'"])
    rotate, err = got
    assert len(rotate) == ROTATE_NO_CRC  # UNDEF: no CRC32 on the fake ROTATE
    code, _, text = _err(err)
    assert code == 1236
    assert text.startswith("Slave can not handle replication events with the checksum that "
                           "master is configured to log; ")


def test_a_new_source_reads_the_new_name(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario, "8.4.3")
    got = _dump(mm, FIRST.name, 4, ["SET @source_binlog_checksum = 'CRC32'"])
    assert len(got[0]) == ROTATE_NO_CRC + 4  # the fake ROTATE with its CRC32
    assert got[-1][0] == 0xFE and len(got) > 3  # events, then the non-blocking dump's EOF


def test_the_new_name_wins_over_the_old_one(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario, "8.0.45")
    got = _dump(mm, FIRST.name, 4, ["SET @master_binlog_checksum = 'NONE', "
                                    "@source_binlog_checksum = 'CRC32'"])
    assert len(got[0]) == ROTATE_NO_CRC + 4
    old = _mock(serve_scenario, "8.0.25")
    got = _dump(old, FIRST.name, 4, ["SET @master_binlog_checksum = 'NONE', "
                                     "@source_binlog_checksum = 'CRC32'"])
    assert len(got[0]) == ROTATE_NO_CRC  # 8.0.25 reads only the old name: NONE
    assert got[-1][0] == 0xFE


def test_the_names_by_flavour_and_version() -> None:
    assert names("heartbeat_period", "mysql", (8, 0, 26)) == ("source_heartbeat_period",
                                                               "master_heartbeat_period")
    assert names("uuid", "mysql", (8, 0, 25)) == ("slave_uuid",)
    assert names("uuid", "mariadb", (11, 4, 2)) == ()
    assert names("binlog_checksum", "mariadb", (11, 4, 2)) == ("master_binlog_checksum",)


# ----------------------------------------------------------------- semi-sync, by plugin
def _semi_headers(mm: ThreadedMockMaster, setup: list[str]) -> tuple[list[bytes], list[str]]:
    got = _dump(mm, FIRST.name, 4, ["SET @master_binlog_checksum = 'CRC32'", *setup])
    return got, list(mm.log.clients[-1].violations)


def test_semi_sync_needs_the_name_the_source_plugin_reads(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """8.0.26+ plays ``semisync_source``: only ``@rpl_semi_sync_replica`` turns the 0xEF
    headers on (``ReplSemiSyncMaster::is_semi_sync_slave`` reads it); 8.0.21 plays
    ``semisync_master``, which reads ``@rpl_semi_sync_slave``. The old mock honoured either
    name at every version."""
    new = _mock(serve_scenario, "8.4.3")
    got, violations = _semi_headers(new, ["SET @rpl_semi_sync_slave = 1"])
    assert all(p[0] == 0 and p[1] != 0xEF for p in got[:-1])
    assert any("@rpl_semi_sync_replica" in v for v in violations)
    got, violations = _semi_headers(new, ["SET @rpl_semi_sync_replica = 1"])
    assert all(p[:2] == b"\x00\xef" for p in got[:-1]) and not violations
    old = _mock(serve_scenario, "8.0.21")
    got, _ = _semi_headers(old, ["SET @rpl_semi_sync_slave = 1"])
    assert all(p[:2] == b"\x00\xef" for p in got[:-1])
    got, _ = _semi_headers(old, ["SET @rpl_semi_sync_replica = 1"])
    assert all(p[1] != 0xEF for p in got[:-1])


def test_the_semi_sync_and_replica_system_variables_by_version(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    import pymysql

    def ask(mm: ThreadedMockMaster, var: str) -> object:
        conn = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT @@global.{var}")
                return cur.fetchone()[0]
        except pymysql.err.OperationalError as exc:
            return exc.args[0]
        finally:
            conn.close()

    new = _mock(serve_scenario, "8.4.3")
    old = _mock(serve_scenario, "8.0.21")
    assert ask(new, "rpl_semi_sync_source_enabled") == 1
    assert ask(new, "rpl_semi_sync_master_enabled") == 1193  # Unknown system variable
    assert ask(new, "log_replica_updates") == 0
    assert ask(old, "rpl_semi_sync_master_enabled") == 1
    assert ask(old, "rpl_semi_sync_source_enabled") == 1193
    assert ask(old, "log_replica_updates") == 1193


@pytest.mark.mysql
def test_mariadb_reads_only_the_master_name(
        mariadb: MariaDB, serve_scenario: Callable[[Scenario], ThreadedMockMaster],
        tmp_path: Path) -> None:
    """MariaDB (sql_repl.cc) reads ``@master_binlog_checksum`` only: a client that set only
    ``@source_binlog_checksum`` is checksum-unaware there. Compared with the real 10.11 on a
    copy of one of its binlog files."""
    import shutil

    from tests.mock_master.test_mm_mid_event_mariadb import _dump as dump_types

    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SELECT @@server_id")
        server_id = int(cur.fetchone()[0])
    conn.close()
    src = mariadb.binlog_files()[-2]
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    mm = serve_scenario(Scenario(flavor="mariadb", server_version=mariadb.version,
                                 server_id=server_id, sources=[BinlogSource([copy])]))
    got = []
    for host, port, user, pw in ((mariadb.host, mariadb.port, mariadb.repl_user,
                                  mariadb.repl_password), (mm.host, mm.port, "repl", "replpass")):
        got.append(dump_types(host, port, user, pw, src.name, 4,
                              setup="SET @source_binlog_checksum = 'CRC32'"))
    real, mock = got
    assert "Slave can not handle replication events with the checksum" in str(real[-1])
    assert mock == real
