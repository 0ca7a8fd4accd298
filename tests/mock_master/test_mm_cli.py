"""``python -m mock_master`` / ``binlogscope mock-master`` and ``binlogscope demo --live``."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from binlogscope.cli import main as binlogscope_main
from mock_master.__main__ import main as mm_main

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


@pytest.mark.network
@pytest.mark.parametrize("cmd", [[sys.executable, "-m", "mock_master"],
                                 [sys.executable, "-m", "binlogscope", "mock-master"]])
def test_port_zero_prints_the_port_and_serves(cmd: list[str], tmp_path: Path) -> None:
    log = tmp_path / "run.json"
    proc = subprocess.Popen([*cmd, "--binlog", str(CAPTURE), "--port", "0", "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO,
                            env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"})
    try:
        assert proc.stdout is not None
        head = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in head and "264 events" in head
        port = int(proc.stdout.readline())
        c = pymysql.connect(host="127.0.0.1", port=port, user="repl", password="replpass")
        cur = c.cursor()
        cur.execute("SHOW BINARY LOGS")
        assert cur.fetchall() == (("mysql-bin.000001", CAPTURE.stat().st_size),)
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert '"queries": [' in log.read_text() and "SHOW BINARY LOGS" in log.read_text()


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
                offenders.append(f"{path.relative_to(src)}:{node.lineno}")
    assert not offenders


def test_mock_master_registers_its_commands() -> None:
    from binlogscope.cli_plugins import command_plugins, demo_runner
    from mock_master.cli import MOCK_MASTER, demo_session

    assert command_plugins()["mock-master"] is MOCK_MASTER
    assert demo_runner() is demo_session
