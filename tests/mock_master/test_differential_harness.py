"""The differential harness itself, without a real server: two mock masters play the two
sides. The same binlog served twice must compare equal (only the documented differences:
scrambles); a fault on one side must be found at the right packet and field, and the
``mock-master diff`` command must exit 1 on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_master.diff.capture import Relay
from mock_master.diff.compare import FieldDiff, PacketDiff, compare, decode
from mock_master.diff.run import differential, record
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network

WORKLOAD = "mariadb-10.11-workload.000001"


def capture(name: str) -> Path:
    return Path(__file__).resolve().parents[2] / "captures" / name


def _mock(*actions: Action) -> ThreadedMockMaster:
    sc = Scenario(sources=[BinlogSource([capture(WORKLOAD)])],
                  users=[User("repl", "replpass")], actions=list(actions))
    return ThreadedMockMaster(sc)  # started by `with` or .start()


@pytest.fixture
def pair() -> Iterator[tuple[ThreadedMockMaster, ThreadedMockMaster]]:
    a, b = _mock().start(), _mock(Action("corrupt_checksum_at", at=30)).start()
    yield a, b
    a.stop()
    b.stop()


def _served_name() -> str:
    """The name the mock serves the capture under (the one its ROTATE implies)."""
    with _mock() as mm:
        return str(mm.master.stream.files[0].name)


def _pmr(host: str, port: int) -> object:
    from pymysqlreplication import BinLogStreamReader

    s = BinLogStreamReader(connection_settings={"host": host, "port": port, "user": "repl",
                                                "password": "replpass"},
                           server_id=77, blocking=False, log_file=_served_name(),
                           log_pos=4, resume_stream=True, ignore_decode_errors=True)
    try:
        return sum(1 for _ in s)
    finally:
        s.close()


def test_the_relay_records_both_directions_byte_for_byte() -> None:
    with _mock() as mm, Relay(mm.host, mm.port) as relay:
        n = _pmr(relay.host, relay.port)
    assert isinstance(n, int) and n > 50
    conv = relay.conversations[0]
    packets = decode(conv)
    server = [p for p in packets if p.direction.value == "server"]
    assert server[0].kind == "handshake_v10"
    assert sum(1 for p in server if p.binlog_event is not None) >= n - 1
    # every byte of each direction is in exactly one packet
    for who in ("client", "server"):
        data = conv.data(who)
        assert sum(p.wire_length for p in packets if p.direction.value == who) == len(data)


def test_the_same_binlog_served_twice_compares_equal() -> None:
    with _mock() as a, _mock() as b:
        rep, ra, rb = differential(_pmr, (a.host, a.port), mock=(b.host, b.port))
    assert ra.result == rb.result
    assert rep.ok, rep.text()
    assert rep.packets_compared > 50
    assert rep.allowed["scramble"] >= 2  # two scramble parts per greeting


def test_a_difference_is_found_at_its_packet_and_field(
        pair: tuple[ThreadedMockMaster, ThreadedMockMaster]) -> None:
    good, bad = pair
    real = record(_pmr, good.host, good.port)
    mock = record(_pmr, bad.host, bad.port)
    rep = compare(real.conversations, mock.conversations)
    assert not rep.ok
    first = rep.differences[0]
    assert [f.path for f in first.fields] == ["binlog_event.event.checksum"]
    assert first.fields[0].real.endswith(" ok") and not first.fields[0].mock.endswith(" ok")
    text = rep.text()
    assert text.startswith("DIFFERENT: ")
    assert ">> " in text and "binlog_event.event.checksum" in text
    # a report showing the greeting never shows its scramble
    greeting = decode(real.conversations[0])[0]
    assert greeting.node is not None
    part1 = greeting.node.find("handshake_v10.auth_plugin_data_part_1")
    rep.differences.insert(0, PacketDiff(0, 0, greeting, greeting, [FieldDiff(
        "handshake_v10.thread_id", "1", "2")], real.conversations[0].data("server")))
    text = rep.text()
    assert "handshake_v10.auth_plugin_data_part_1 = <redacted> (8 bytes)" in text
    assert bytes(part1.value).hex(" ") not in text


def test_mock_master_diff_command_exits_1_on_a_difference(
        pair: tuple[ThreadedMockMaster, ThreadedMockMaster], tmp_path: Path) -> None:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        pytest.skip("mariadb-binlog is not installed")
    good, bad = pair
    client = [exe, "--read-from-remote-server", "--host={host}", "--port={port}",
              "--user=repl", "--password=replpass", "--to-last-log", _served_name()]

    def diff(real: ThreadedMockMaster, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mock_master", "diff", "--real", f"{real.host}:{real.port}",
             "--binlog", str(capture(WORKLOAD)), *extra, "--", *client],
            capture_output=True, text=True, timeout=120, cwd=tmp_path)

    same = diff(good)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("SAME: ")
    differs = diff(bad)  # the "real" side corrupts a checksum, the command's mock does not
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "binlog_event.event.checksum" in differs.stdout


def test_identity_strings_are_allowed_and_other_values_are_not() -> None:
    """Two servers of different versions: the greeting's version, VERSION() and the `version`
    variable are allowed differences; a different @@server_id is a difference."""
    def session(host: str, port: int) -> object:
        import pymysql

        conn = pymysql.connect(host=host, port=port, user="repl", password="replpass")
        try:
            with conn.cursor() as cur:
                out = []
                for q in ("SELECT VERSION()", "SHOW GLOBAL VARIABLES LIKE 'version'",
                          "SELECT @@server_id"):
                    cur.execute(q)
                    out.append(cur.fetchall())
                return out
        finally:
            conn.close()

    def mock(**kw: object) -> ThreadedMockMaster:
        return ThreadedMockMaster(Scenario(sources=[BinlogSource([capture(WORKLOAD)])],
                                           users=[User("repl", "replpass")], **kw))  # type: ignore[arg-type]

    with mock() as a, mock(server_version="10.11.99-MariaDB-log", server_id=2) as b:
        rep, _, _ = differential(session, (a.host, a.port), mock=(b.host, b.port))
    # the greeting, VERSION()'s column length and value, the `version` variable
    assert rep.allowed["server_version"] == 4, rep.text()
    assert [(d.index, [f.path for f in d.fields]) for d in rep.differences] == [
        (rep.differences[0].index, ["text_row.@@server_id"])]
    assert rep.differences[0].fields[0].real == "'1'"
    assert rep.differences[0].fields[0].mock == "'2'"
    assert "SELECT @@server_id" in rep.differences[0].title()


def test_mock_master_diff_takes_the_mocks_login_and_reports_a_refused_one(tmp_path: Path) -> None:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        pytest.skip("mariadb-binlog is not installed")
    client = [exe, "--read-from-remote-server", "--host={host}", "--port={port}",
              "--user=repl", "--password=replpass", "--to-last-log", _served_name()]
    env = dict(os.environ, DIFF_PW="replpass")
    with _mock() as real:
        def diff(user: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "mock_master", "diff", "--real",
                 f"{real.host}:{real.port}", "--binlog", str(capture(WORKLOAD)), "--user", user,
                 "--password-env", "DIFF_PW", "--", *client],
                capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)

        same = diff("repl")
        assert same.returncode == 0, same.stdout + same.stderr
        refused = diff("someone")  # the mock knows only 'someone': repl is refused
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "err 1045 \"Access denied for user 'repl'" in refused.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "mock_master", "diff", "--real", "127.0.0.1:1", "--binlog",
         str(capture(WORKLOAD)), "--user", "x", "--password-env", "DIFF_PW_UNSET", "--", "true"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert missing.returncode == 2
    assert "DIFF_PW_UNSET" in missing.stderr and "Traceback" not in missing.stderr


def _stats_session(host: str, port: int) -> object:
    import pymysql

    conn = pymysql.connect(host=host, port=port, user="repl", password="replpass")
    try:
        with conn.cursor() as cur:
            out = []
            for q in ("SHOW INDEX FROM test.t",
                      "SELECT TABLE_NAME, TABLE_ROWS, DATA_LENGTH, UPDATE_TIME FROM "
                      "information_schema.TABLES WHERE TABLE_SCHEMA = 'test'",
                      "SHOW TABLE STATUS FROM test"):
                cur.execute(q)
                out.append(cur.fetchall())
            return out
    finally:
        conn.close()


def _stats_mock(rows: int, cardinality: int, name: str = "t") -> ThreadedMockMaster:
    """A mock whose table answers say ``rows`` rows and ``cardinality`` (scenario answers:
    two servers that differ only where the statistics of a table with data would)."""
    answers = [
        (r"SHOW INDEX FROM test\.t", {"columns": ["Table", "Key_name", "Column_name",
                                                  "Cardinality"],
                                      "rows": [[name, "PRIMARY", "id", cardinality]]}),
        (r"SELECT TABLE_NAME, TABLE_ROWS.*", {
            "columns": ["TABLE_NAME", "TABLE_ROWS", "DATA_LENGTH", "UPDATE_TIME"],
            "rows": [[name, rows, rows * 16384, f"2026-01-0{rows % 9 + 1} 00:00:00"]]}),
        (r"SHOW TABLE STATUS FROM test", {
            "columns": ["Name", "Engine", "Rows", "Avg_row_length", "Data_length",
                        "Auto_increment", "Create_time"],
            "rows": [[name, "InnoDB", rows, 16384 // rows, rows * 16384, rows + 1,
                      f"2026-01-0{rows % 9 + 1} 00:00:00"]]}),
    ]
    return ThreadedMockMaster(Scenario(sources=[BinlogSource([capture(WORKLOAD)])],
                                       users=[User("repl", "replpass")], answers=answers))


def test_table_statistics_are_allowed_differences_counted_in_the_summary() -> None:
    """docs/differential.md and mock_master/README allow the statistics of TABLES / SHOW TABLE
    STATUS and Cardinality (the mock has no table data). The old harness reported them as
    DIFFERENT, so a client asking SHOW INDEX could never pass it."""
    with _stats_mock(3, 3) as a, _stats_mock(5, 4) as b:
        rep, _, _ = differential(_stats_session, (a.host, a.port), mock=(b.host, b.port))
    assert rep.ok, rep.text()
    # Cardinality; TABLE_ROWS, DATA_LENGTH, UPDATE_TIME; Rows, Avg_row_length, Data_length,
    # Auto_increment, Create_time
    assert rep.allowed["table_statistics"] == 9, rep.allowed
    assert "table_statistics 9" in rep.summary()
    # the same columns differing in another statement, or another column: a difference
    with _stats_mock(3, 3) as a, _stats_mock(3, 3, name="u") as b:
        rep, _, _ = differential(_stats_session, (a.host, a.port), mock=(b.host, b.port))
    assert not rep.ok
    assert {f.path for d in rep.differences for f in d.fields} == {
        "text_row.Table", "text_row.TABLE_NAME", "text_row.Name"}


@pytest.mark.mysql
def test_statement_ids_are_allowed_differences_against_mariadb(mariadb: Any) -> None:
    """MariaDB numbers prepared statements per server thread, and reuses a closed connection's
    thread from its thread cache: a client that prepares on a second connection may get id 2
    from the server (measured alone) or 1 (the suite's busy server), and 1 from the mock. The
    README allows the difference; the old harness reported it as DIFFERENT (the id bytes)."""
    def session(host: str, port: int) -> object:
        import pymysql

        out = []
        for _ in range(2):
            conn = pymysql.connect(host=host, port=port, user=mariadb.repl_user,
                                   password=mariadb.repl_password)
            try:
                # COM_STMT_PREPARE (its OK, then the column definitions and their EOF),
                # then COM_STMT_CLOSE (no reply)
                conn._execute_command(0x16, "SELECT @@server_id")
                ok = bytes(conn._read_packet().get_all_data())
                out.append(ok)
                for count in (int.from_bytes(ok[7:9], "little"),
                              int.from_bytes(ok[5:7], "little")):  # parameters, columns
                    for _ in range(count + 1 if count else 0):
                        conn._read_packet()
                conn._execute_command(0x19, ok[1:5])
            finally:
                conn.close()
        return out

    with ThreadedMockMaster(Scenario(sources=[BinlogSource([capture(WORKLOAD)])],
                                     users=[User(mariadb.repl_user,
                                                 mariadb.repl_password)])) as mm:
        rep, real, mock = differential(session, (mariadb.host, mariadb.port),
                                       mock=(mm.host, mm.port))
    assert isinstance(real.result, list) and isinstance(mock.result, list), rep.notes
    real_ids = [int.from_bytes(p[1:5], "little") for p in real.result]
    mock_ids = [int.from_bytes(p[1:5], "little") for p in mock.result]
    assert mock_ids == [1, 1] and real_ids[1] >= real_ids[0] >= 1, (real_ids, mock_ids)
    assert rep.ok, rep.text()
    if real_ids != mock_ids:  # (the server's thread was reused: the ids differ, allowed)
        assert rep.allowed["statement_id"] >= 1, rep.allowed
