"""MySQL flavour: the source's refusals of a GTID auto-position dump, as MySQL 8.0.26+/8.4 words
them (Binlog_sender::check_start_file, binlog.cc report_missing_purged_gtids,
share/messages_to_clients.txt; see mock_master/dump/mysql_gtid.py), seen by python-mysql-replication
in GTID mode (auto_position) logging in with caching_sha2_password, on the MySQL 8.0.45 GTID
fixture binlogs. "Purged" is made real by serving only binlog.000002: the server's gtid_purged
is then that file's PREVIOUS_GTIDS (:1-4), as on a server whose binlog.000001 was purged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql
import pytest

from binlogscope.session.events import Peer
from mock_master.diff.compare import decode
from mock_master.diff.run import copy_binlogs, record
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.diff_mysql import FILES, FIXTURE, UUID, via_pymysqlreplication

pytestmark = pytest.mark.network

PURGED = ("Cannot replicate because the source purged required binary logs. Replicate the "
          "missing transactions from elsewhere, or provision a new replica from backup. "
          "Consider increasing the source's binary log expiration period. The GTID set sent "
          "by the replica is '{sent}', and the missing transactions are '{missing}'")
MORE = ("Replica has more GTIDs than the source has, using the source's SERVER_UUID. This may "
        "indicate that the the last binary log file was truncated or lost, e.g., after a power "
        "failure when sync_binlog != 1. The source may have rolled back transactions that were "
        "already replicated to the replica. Replicate any transactions that source has rolled "
        "back from replica to source, and/or commit empty transactions on source to account "
        "for transactions that have been committed on source but are not included in "
        "GTID_EXECUTED.")
OTHER = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def _serve(tmp_path: Path, names: tuple[str, ...]) -> ThreadedMockMaster:
    if not all((FIXTURE / f).exists() for f in FILES):
        pytest.fail(f"the MySQL 8.0.45 GTID fixtures are missing under {FIXTURE}")
    files = copy_binlogs([FIXTURE / f for f in names], tmp_path)
    return ThreadedMockMaster(Scenario(flavor="mysql", sources=[BinlogSource(list(files))],
                                       users=[User("repl", "replpass",
                                                   "caching_sha2_password")]))


def _refused(mm: ThreadedMockMaster, gtid_set: str) -> tuple[Any, list[Any]]:
    """python-mysql-replication's error, and the server packets of the dump connection."""
    run = record(lambda h, p: via_pymysqlreplication(h, p, gtid_set), mm.host, mm.port)
    assert run.error is not None, f"the dump was not refused: {run.result}"
    dump_conn = next(c for c in run.conversations
                     if any(p.kind == "com_binlog_dump_gtid" for p in decode(c)))
    return run.error, [p for p in decode(dump_conn) if p.direction is Peer.SERVER]


def _err_of(error: Any) -> tuple[int, str]:
    exc = error if isinstance(error, BaseException) else None
    while exc is not None and not isinstance(exc, pymysql.err.MySQLError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, f"not a server error: {error!r}"
    return int(exc.args[0]), str(exc.args[1])


def test_replica_with_more_gtids_of_the_source_uuid_is_refused(tmp_path: Path) -> None:
    with _serve(tmp_path, FILES) as mm:
        error, server = _refused(mm, f"{UUID}:1-10")
        assert [e for c in mm.log.clients for e in c.errors] == [f"ERR 1236: {MORE}"]
    assert _err_of(error) == (1236, MORE)
    err = server[-1]
    assert err.kind == "err"
    assert (err.value.error_code, err.value.sql_state) == (1236, "HY000")
    # the source answered with the ERR right after the dump command: no event was sent
    assert not any(p.kind == "binlog_event" for p in server)


def test_gtids_of_other_servers_are_not_checked(tmp_path: Path) -> None:
    """Only the source's own server_uuid is compared with gtid_executed."""
    with _serve(tmp_path, FILES) as mm:
        got = via_pymysqlreplication(mm.host, mm.port, f"{OTHER}:1-100,{UUID}:1-2")
    assert [g for k, g, *_ in got if k == "gtid"] == [f"{UUID}:{n}" for n in (3, 4, 5, 6)]


def test_purged_gtids_the_replica_lacks_are_refused_with_both_sets(tmp_path: Path) -> None:
    with _serve(tmp_path, FILES[1:]) as mm:  # binlog.000001 purged: gtid_purged = :1-4
        assert mm.master.variables["gtid_purged"].show() == f"{UUID}:1-4"
        error, server = _refused(mm, f"{OTHER}:1-3,{UUID}:1-2")
    # Gtid_set::to_string: SIDs in UUID order, ",\n" between them
    want = PURGED.format(sent=f"{UUID}:1-2,\n{OTHER}:1-3", missing=f"{UUID}:3-4")
    assert _err_of(error) == (1236, want)
    assert server[-1].kind == "err" and server[-1].value.error_message == want


def test_purged_check_passes_when_the_replica_has_them_and_the_dump_starts_there(
        tmp_path: Path) -> None:
    with _serve(tmp_path, FILES[1:]) as mm:
        got = via_pymysqlreplication(mm.host, mm.port, f"{UUID}:1-4")
        assert not [e for c in mm.log.clients for e in c.errors]
    assert [g for k, g, *_ in got if k == "gtid"] == [f"{UUID}:5", f"{UUID}:6"]


def test_servers_before_8_0_26_word_it_master_and_slave(tmp_path: Path) -> None:
    files = copy_binlogs([FIXTURE / FILES[1]], tmp_path)
    sc = Scenario(flavor="mysql", server_version="8.0.25", sources=[BinlogSource(list(files))],
                  users=[User("repl", "replpass", "caching_sha2_password")])
    with ThreadedMockMaster(sc) as mm:
        error, _ = _refused(mm, f"{UUID}:1-2")
        more, _ = _refused(mm, f"{UUID}:1-9")
    assert _err_of(error) == (1236, (
        "Cannot replicate because the master purged required binary logs. Replicate the "
        "missing transactions from elsewhere, or provision a new slave from backup. Consider "
        "increasing the master's binary log expiration period. The GTID set sent by the slave "
        f"is '{UUID}:1-2', and the missing transactions are '{UUID}:3-4'"))
    assert _err_of(more)[1].startswith("Slave has more GTIDs than the master has, using the "
                                       "master's SERVER_UUID.")


def test_sets_too_long_for_the_message_are_left_out(tmp_path: Path) -> None:
    """MYSQL_ERRMSG_SIZE (512): report_missing_purged_gtids replaces the two sets by a
    sentence when the message would not fit."""
    many = ",".join(f"{n:08x}-0000-0000-0000-000000000000:1" for n in range(1, 12))
    with _serve(tmp_path, FILES[1:]) as mm:
        error, _ = _refused(mm, f"{many},{UUID}:1-2")
    assert _err_of(error) == (1236, PURGED.split(" The GTID set")[0] + (
        " The GTID sets and the missing purged transactions are too long to print in this "
        "message. For more information, please see the source's error log or the manual for "
        "GTID_SUBTRACT"))


def test_a_server_without_gtids_refuses_any_gtid_dump(tmp_path: Path) -> None:
    """Binlog_sender::init: GTID_MODE must be ON (files of a server with GTIDs off)."""
    plain = FIXTURE.parent / "data_80045_position"
    files = copy_binlogs([plain / f for f in FILES], tmp_path)
    sc = Scenario(flavor="mysql", sources=[BinlogSource(list(files))],
                  users=[User("repl", "replpass", "caching_sha2_password")])
    with ThreadedMockMaster(sc) as mm:
        assert mm.master.variables["gtid_mode"].show() == "OFF"
        error, _ = _refused(mm, f"{OTHER}:1")
    assert _err_of(error) == (1236, "The replication sender thread cannot start in "
                                    "AUTO_POSITION mode: this server has GTID_MODE = OFF "
                                    "instead of ON.")
