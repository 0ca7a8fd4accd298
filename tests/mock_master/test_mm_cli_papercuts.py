"""The mock master's command line as a new user meets it (issue 31): no binlog given says so
(not "the scenario has no [[sources]]"), the default port is a free one (not 3306, which a real
server on the machine has), ``record`` without ``--start`` records from the first binlog file,
``diff`` says what it is doing on stderr."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from mock_master.__main__ import main as mm_main
from tests.mariadb_server import MariaDB, sql

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


def test_no_binlog_given_says_what_to_give() -> None:
    err = io.StringIO()
    assert mm_main([], err=err) == 2
    line, = err.getvalue().splitlines()
    assert line.startswith("mock-master: error: no binlog given: nothing to serve")
    assert "[[sources]]" in line and "--pcap" in line and "--recording" in line
    assert "scenario has no" not in line


def test_a_scenario_without_sources_is_named(tmp_path: Path) -> None:
    sc = tmp_path / "empty.toml"
    sc.write_text('flavor = "mariadb"\n')
    err = io.StringIO()
    assert mm_main(["--scenario", str(sc)], err=err) == 2
    assert err.getvalue().startswith("mock-master: error: the scenario has no [[sources]]")


@pytest.mark.network
def test_the_default_port_is_a_free_one_named_in_the_banner() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mock_master", str(CAPTURE), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"})
    try:
        assert proc.stdout is not None
        head = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in head, head
        port = int(head.split("listening on 127.0.0.1:")[1].split(",")[0])
        assert port != 3306
        pymysql.connect(host="127.0.0.1", port=port, user="repl", password="replpass").close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == ""  # no bare port line: that is --port 0's (for scripts)


@pytest.mark.mysql
def test_record_without_start_records_every_binlog_file(mariadb: MariaDB,
                                                         tmp_path: Path) -> None:
    """The help says "default: the first binlog file's start": the recording holds the events
    of every file the server has (it used to hold one: the dump began at the current end)."""
    from binlogscope.drivers.binlog_file import read_binlog_file
    from mock_master.history.loaders import load_recording

    sql(mariadb, "FLUSH BINARY LOGS")
    files = sorted(mariadb.binlog_dir.glob(f"{mariadb.binlog_basename}.[0-9]*"))
    assert len(files) >= 2
    rec = tmp_path / "rec.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}",
           "REC_PW": mariadb.repl_password}
    p = subprocess.run([sys.executable, "-m", "mock_master", "record", str(rec), "--host",
                        mariadb.host, "--port", str(mariadb.port), "--user", mariadb.repl_user,
                        "--password-env", "REC_PW"], capture_output=True, text=True,
                       timeout=120, env=env, cwd=REPO)
    assert p.returncode == 0, p.stderr
    stream = load_recording(rec)
    names = [f.name for f in stream.files]
    assert names[0] == files[0].name  # from the first file, not the current one
    assert len(names) >= len(files) - 1
    first = [e for e in read_binlog_file(files[0]) if e.header is not None]
    assert p.stdout.startswith("recorded ")
    assert int(p.stdout.split()[1]) >= len(first)


def test_diff_says_what_it_is_doing_on_stderr(tmp_path: Path) -> None:
    """Every step on stderr with its time (the report stays on stdout); --quiet: none."""
    for quiet in (False, True):
        out, err = io.StringIO(), io.StringIO()
        rc = mm_main(["diff", "--real", "127.0.0.1:1", "--binlog", str(CAPTURE),
                      *(["--quiet"] if quiet else []), "--", "true"], out=out, err=err)
        assert rc in (0, 1)
        lines = err.getvalue().splitlines()
        if quiet:
            assert lines == []
            continue
        assert lines[0] == "mock-master: diff: running the client against the real server " \
                           "127.0.0.1:1 ..."
        assert lines[1].startswith("mock-master: diff:   the client exited 0; 0 connection(s) "
                                   "recorded (")
        assert any("starting the mock master (1 binlog file(s) copied)" in x for x in lines)
        assert lines[-1].startswith("mock-master: diff:   compared (")
        assert not any(x.startswith("NOTHING COMPARED") for x in lines)
        assert out.getvalue().startswith("NOTHING COMPARED: the client never connected")
