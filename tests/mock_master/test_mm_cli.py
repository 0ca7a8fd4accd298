"""``python -m mock_master`` / ``binlogscope mock-master`` and ``binlogscope demo --live``."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymysql
import pytest

from binlogscope.cli.main import main as binlogscope_main
from mock_master.__main__ import main as mm_main

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


@pytest.mark.network
@pytest.mark.parametrize("cmd", [[sys.executable, "-m", "mock_master"],
                                 [sys.executable, "-m", "binlogscope", "mock-master"]])
def test_port_zero_prints_the_port_and_serves(cmd: list[str], tmp_path: Path) -> None:
    """The binlog as a positional argument, a login whose password comes from the
    environment, a line on stderr per connect / dump / close (never the password)."""
    log = tmp_path / "run.json"
    proc = subprocess.Popen([*cmd, str(CAPTURE), "--port", "0", "--log", str(log),
                             "--user", "cdc", "--password-env", "MM_TEST_PW"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO,
                            env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}",
                                 "MM_TEST_PW": "s3cret-pw"})
    try:
        assert proc.stdout is not None
        head = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in head and "264 events" in head
        port = int(proc.stdout.readline())
        with pytest.raises(pymysql.err.OperationalError):  # the scenario decides the users
            pymysql.connect(host="127.0.0.1", port=port, user="repl", password="replpass")
        c = pymysql.connect(host="127.0.0.1", port=port, user="cdc", password="s3cret-pw")
        cur = c.cursor()
        cur.execute("SHOW BINARY LOGS")
        assert cur.fetchall() == (("mysql-bin.000001", CAPTURE.stat().st_size),)
        c.close()
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import QueryEvent

        r = BinLogStreamReader(connection_settings={"host": "127.0.0.1", "port": port,
                                                    "user": "cdc", "password": "s3cret-pw"},
                               server_id=4242, blocking=False, only_events=[QueryEvent])
        try:
            assert any(True for _ in r)
        finally:
            r.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert '"queries": [' in log.read_text() and "SHOW BINARY LOGS" in log.read_text()
    lines = err.splitlines()
    assert any(" client 1 connected from 127.0.0.1:" in x for x in lines), err
    assert any(" client 2 closed by client (COM_QUIT)" in x for x in lines), err
    assert any(" client 3 (cdc) started COM_BINLOG_DUMP_GTID: server_id 4242" in x
               or " client 3 (cdc) started COM_BINLOG_DUMP: server_id 4242" in x
               for x in lines), err
    assert "s3cret-pw" not in err and "s3cret-pw" not in log.read_text()


@pytest.mark.network
def test_quiet_serves_without_client_lines() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mock_master", str(CAPTURE), "--port", "0",
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"})
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        port = int(proc.stdout.readline())
        pymysql.connect(host="127.0.0.1", port=port, user="repl", password="replpass").close()
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and err == ""


@pytest.mark.parametrize("entry", ["mock-master", "binlogscope"])
def test_both_entry_points_take_the_same_command_line(entry: str, tmp_path: Path) -> None:
    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        if entry == "mock-master":
            rc = mm_main(list(argv), out=out, err=err)
        else:
            rc = binlogscope_main(["mock-master", *argv], out=out, err=err)
        return rc, out.getvalue(), err.getvalue()

    rc, out, _ = run("actions")
    assert rc == 0 and "disconnect_after_event" in out and "split_packet" in out
    rc, _, err = run(str(CAPTURE), "--user", "repl:replpass", "--port", "0")
    assert rc == 2 and "--user takes a name only" in err and "--password-env" in err
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    # record: the password from a file; a server that is not there is one clear line
    rc, _, err = run("record", "--host", "127.0.0.1", "--port", "1", "--user", "u",
                     "--password-file", str(pw), str(tmp_path / "r.jsonl"))
    assert rc == 1 and err.count("\n") == 1 and "secret" not in err
    rc, _, err = run("record", "--password-file", str(tmp_path / "nope"), "out.jsonl")
    assert rc == 1 and "cannot read password file" in err
    rc, _, err = run("serve", "--binlog", "/nonexistent/x.000001", "--port", "0")
    assert rc == 1 and "cannot read /nonexistent/x.000001" in err


def test_a_password_in_argv_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["record", "--password", "x", "o.jsonl"],
                 [str(CAPTURE), "--user", "u", "--password", "x"]):
        assert mm_main(argv) == 2
        assert "passwords are not taken from the command line" in capsys.readouterr().err
        assert binlogscope_main(["mock-master", *argv]) == 2
        assert "passwords are not taken from the command line" in capsys.readouterr().err


def test_bad_input_is_one_clear_line() -> None:
    err = io.StringIO()
    assert mm_main(["--binlog", "/nonexistent/x.000001", "--port", "0"], err=err) == 1
    assert err.getvalue().startswith("mock-master: error: cannot read /nonexistent/x.000001")
    err = io.StringIO()
    assert mm_main(["--binlog", str(CAPTURE), "--action", "explode at=1"], err=err) == 1
    assert "action 'explode'" in err.getvalue()
    out = io.StringIO()
    assert mm_main(["actions"], out=out) == 0
    assert "disconnect_after_event" in out.getvalue() and "split_packet" in out.getvalue()


@pytest.mark.network
def test_demo_live_serves_the_bundled_capture_in_process() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert binlogscope_main(["demo", "--live", "--brief"], out=out, err=err) == 0, \
        err.getvalue()
    text = out.getvalue()
    assert "-- mock master serving mariadb-10.11-workload.000001 on 127.0.0.1:" in text
    assert "ROTATE_EVENT mysql-bin.000002:4" in text
    assert "end of the binlog (non-blocking dump)" in text


@pytest.mark.network
def test_the_pytest_fixture(mock_master: object, tmp_path: Path) -> None:
    mm = mock_master(binlogs=[CAPTURE])  # type: ignore[operator]
    c = pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass")
    cur = c.cursor()
    cur.execute("SELECT @@server_id")
    assert cur.fetchall() == ((1,),)
    c.close()
    y = tmp_path / "s.yaml"
    y.write_text(f"flavor: mysql\nserver_version: 8.0.45\nsources:\n  - binlog: ['{CAPTURE}']\n")
    mm2 = mock_master(y)  # type: ignore[operator]
    c = pymysql.connect(host=mm2.host, port=mm2.port, user="repl", password="replpass")
    assert c.get_server_info() == "8.0.45"
    c.close()
    assert mm.log.clients[0].queries[-1] == "SELECT @@server_id"


def test_binlogscope_never_imports_the_mock_master() -> None:
    """The mock master plugs its commands into binlogscope (entry points), never the reverse."""
    import ast

    src = Path(__file__).resolve().parents[2] / "src" / "binlogscope"
    offenders = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "mock_master" or n.startswith("mock_master.") for n in names):
                offenders.append(f"{path.relative_to(src)}:{getattr(node, 'lineno', '?')}")
    assert not offenders


def test_mock_master_registers_its_commands() -> None:
    from binlogscope.cli.plugins import command_plugins, demo_runner
    from mock_master.cli import MOCK_MASTER, demo_session

    assert command_plugins()["mock-master"] is MOCK_MASTER
    assert demo_runner() is demo_session


ZALORA = REPO.parent / "shared" / "fixtures" / "zalora__binlog-parser" / "data" / "fixtures" / (
    "mysql-bin.01")


def _serve_stderr(args: list[str]) -> str:
    """Start ``mock-master serve`` with ``args``, wait until it listens, stop it: its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "mock_master", *args, "--port", "0",
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO,
                            env={**os.environ,
                                 "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"})
    try:
        assert proc.stdout is not None
        head = proc.stdout.readline()
        assert "listening on" in head, head
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    return err


@pytest.mark.network
def test_tables_the_mock_cannot_describe_are_named_at_load_time(tmp_path: Path) -> None:
    """MySQL 5.6 binlogs (zalora/binlog-parser's fixture): TABLE_MAPs of test_db.buildings and
    test_db.rooms without column names (binlog_row_metadata did not exist) and no CREATE TABLE
    in the file. The old mock said so only in the --log JSON; now two stderr lines at load time
    name the tables and the flags that describe them (also with --quiet)."""
    if not ZALORA.exists():
        pytest.fail(f"fixture missing: {ZALORA}")
    err = _serve_stderr(["serve", str(ZALORA), "--flavor", "mysql"])
    lines = [ln for ln in err.splitlines() if "warning:" in ln]
    assert len(lines) == 2, err
    assert "2 table(s)" in lines[0] and "test_db.buildings, test_db.rooms" in lines[0]
    assert "ERR 1146" in lines[1] and "--schema-ddl FILE" in lines[1] \
        and "--schema-from mysql://" in lines[1]
    ddl = tmp_path / "t.sql"
    ddl.write_text("CREATE TABLE test_db.buildings (building_no int PRIMARY KEY, "
                   "building_name varchar(255), address varchar(355));\n", encoding="utf-8")
    err = _serve_stderr(["serve", str(ZALORA), "--flavor", "mysql", "--schema-ddl", str(ddl)])
    warn = [ln for ln in err.splitlines() if "warning:" in ln]
    assert "1 table(s)" in warn[0] and "test_db.rooms" in warn[0] \
        and "buildings" not in warn[0], err
