"""``live`` / ``export --live`` reject bad options before connecting: one line, exit 2
(nothing listens where they point, so a connect attempt would show as 'refused', exit 1);
``--connect-timeout`` bounds the TCP connect and the handshake."""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlogscope.cli.main import main


@pytest.fixture
def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MYSQL_PWD", "x")


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(args), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _one_line(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("binlogscope: error: "), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize(("args", "words"), [
    (["--start", "mysql-bin.000001"], ["--start", "FILE:POS"]),
    (["--start", ":four"], ["--start", "FILE:POS"]),  # (":4": the first binlog file)
    (["--start", "mysql-bin.000001:-4"], ["FILE:POS"]),
    (["--start", "mysql-bin.000001:3"], ["position 3", "4..4294967295"]),
    (["--start", "mysql-bin.000001:4294967296"], ["out of range"]),
    (["--heartbeat", "-1"], ["--heartbeat -1", "0..4294967"]),
    (["--heartbeat", "nan"], ["--heartbeat"]),
    (["--connect-timeout", "-2"], ["--connect-timeout -2", ">= 0"]),
    (["--count", "0"], ["--count 0"]),
    (["--server-id", "0"], ["--server-id 0"]),
    (["--ssl-ca", "/nonexistent/ca.pem"], ["--ssl-ca /nonexistent/ca.pem", "no such file"]),
    (["--ssl-mode", "REQUIRED", "--ssl-cert", "/"], ["--ssl-cert /", "not a file"]),
])
def test_bad_live_options_are_one_line_before_connecting(
        free_port: int, args: list[str], words: list[str]) -> None:
    rc, _, err = _run("live", "--json", "--port", str(free_port), "--no-reconnect", *args)
    _one_line(rc, err, *words)
    assert "refused" not in err


@pytest.mark.parametrize("port", ["0", "65536", "-1"])
def test_port_out_of_range(port: str) -> None:
    rc, _, err = _run("live", "--json", "--port", port, "--no-reconnect")
    _one_line(rc, err, f"port {port}", "1..65535")


def test_port_out_of_range_in_the_option_file(tmp_path: Path) -> None:
    f = tmp_path / "my.cnf"
    f.write_text("[client]\nport=70000\n")
    rc, _, err = _run("live", "--json", "--defaults-file", str(f), "--no-reconnect")
    _one_line(rc, err, "port 70000")


def test_export_live_validates_too(free_port: int, tmp_path: Path) -> None:
    rc, _, err = _run("export", "--live", "--port", str(free_port), "--no-reconnect",
                      "--start", "x:1", "--out", str(tmp_path / "ds"))
    _one_line(rc, err, "position 1")
    assert not (tmp_path / "ds").exists()


def test_ssl_files_are_not_checked_when_tls_is_disabled(free_port: int) -> None:
    rc, _, err = _run("live", "--json", "--port", str(free_port), "--no-reconnect",
                      "--ssl-mode", "DISABLED", "--ssl-ca", "/nonexistent/ca.pem")
    assert rc == 1 and "refused" in err, err  # it went on to connect


@pytest.mark.parametrize(("text", "words"), [
    ("user=repl\n[client]\npassword=x\n", ["line 1", "before any [group]"]),
    ("[client\nuser=repl\n", ["line 1", "wrong group definition"]),
    ("[client]\nuser=repl\n[mysqld\n", ["line 3", "wrong group definition"]),
])
def test_malformed_defaults_file_is_an_error_not_a_fallback_to_root(
        tmp_path: Path, free_port: int, text: str, words: list[str]) -> None:
    f = tmp_path / "bad.cnf"
    f.write_text(text)
    rc, _, err = _run("live", "--json", "--port", str(free_port), "--no-reconnect",
                      "--defaults-file", str(f))
    _one_line(rc, err, str(f), *words)
    assert "root@" not in err


def test_defaults_file_group_with_a_comment_is_fine(tmp_path: Path, free_port: int) -> None:
    f = tmp_path / "ok.cnf"
    f.write_text("# hello\n\n[client] # the client's\nuser=repl\n")
    rc, _, err = _run("live", "--json", "--port", str(free_port), "--no-reconnect",
                      "--defaults-file", str(f))
    assert rc == 1 and "repl@" in err and "refused" in err, err


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never sends a greeting."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    try:
        yield int(s.getsockname()[1])
    finally:
        s.close()


def test_connect_timeout_bounds_the_handshake(silent_server: int) -> None:
    t0 = time.monotonic()
    rc, _, err = _run("live", "--json", "--port", str(silent_server), "--no-reconnect",
                      "--connect-timeout", "0.5")
    took = time.monotonic() - t0
    assert rc == 1 and "no answer within the timeout" in err and err.count("\n") == 1, err
    assert 0.4 <= took < 5, took


@pytest.mark.parametrize("mode", ["REQUIRED", "PREFERRED"])
def test_a_ca_with_a_mode_that_does_not_verify_is_warned_about(tmp_path: Path, mode: str,
                                                               free_port: int) -> None:
    """``--ssl-mode REQUIRED --ssl-ca CA`` does not verify the certificate (as the mysql client
    does): a wrong CA would connect without a word, so it says so first, as the mysql client
    warns; VERIFY_CA (and --ssl-ca alone, which means VERIFY_CA) has no such line."""
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    port = str(free_port)
    rc, _, err = _run("live", "--json", "--host", "127.0.0.1", "--port", port, "--ssl-mode",
                      mode, "--ssl-ca", str(ca), "--no-reconnect")
    assert rc != 0
    first = err.splitlines()[0]
    assert first.startswith(f"binlogscope: warning: --ssl-mode {mode} does not verify"), err
    assert "VERIFY_CA" in first
    for args in (["--ssl-mode", "VERIFY_CA", "--ssl-ca", str(ca)], ["--ssl-ca", str(ca)]):
        rc, _, err = _run("live", "--json", "--host", "127.0.0.1", "--port", port, *args,
                          "--no-reconnect")
        assert rc != 0 and "warning" not in err, err
