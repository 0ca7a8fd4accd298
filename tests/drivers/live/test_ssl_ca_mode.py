"""``--ssl-ca`` without ``--ssl-mode`` means VERIFY_CA (as with the mysql client)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from binlogscope.cli.live import live_settings
from binlogscope.cli.main import build_parser
from binlogscope.drivers.live.options import resolve_options

ENV = {"MYSQL_PWD": "x"}


def test_cli_ssl_ca_alone_means_verify_ca(tmp_path: Path) -> None:
    o = resolve_options(cli={"ssl_ca": "/ca.pem"}, env={**ENV, "HOME": str(tmp_path)})
    assert o.ssl_mode == "VERIFY_CA"


def test_option_file_ssl_ca_alone_means_verify_ca(tmp_path: Path) -> None:
    f = tmp_path / "my.cnf"
    f.write_text("[client]\nssl-ca = /ca.pem\n")
    assert resolve_options(defaults_file=str(f), env=ENV).ssl_mode == "VERIFY_CA"


@pytest.mark.parametrize("mode", ["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_IDENTITY"])
def test_explicit_mode_wins_over_the_implied_one(tmp_path: Path, mode: str) -> None:
    o = resolve_options(cli={"ssl_ca": "/ca.pem", "ssl_mode": mode},
                        env={**ENV, "HOME": str(tmp_path)})
    assert o.ssl_mode == mode
    f = tmp_path / "my.cnf"
    f.write_text(f"[client]\nssl-ca = /ca.pem\nssl-mode = {mode.lower()}\n")
    assert resolve_options(defaults_file=str(f), env=ENV).ssl_mode == mode
    # a mode from the option file also stands when the CA comes from the command line
    f.write_text(f"[client]\nssl-mode = {mode}\n")
    assert resolve_options(defaults_file=str(f), cli={"ssl_ca": "/ca.pem"},
                           env=ENV).ssl_mode == mode


def test_no_ca_stays_preferred_and_socket_is_not_forced(tmp_path: Path) -> None:
    assert resolve_options(env={**ENV, "HOME": str(tmp_path)}).ssl_mode == "PREFERRED"
    o = resolve_options(cli={"ssl_ca": "/ca.pem", "socket": "/run/mysqld.sock"},
                        env={**ENV, "HOME": str(tmp_path)})
    assert o.ssl_mode == "PREFERRED"  # no TLS over a Unix socket: nothing to verify


def test_live_command_line_ssl_ca_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "x")
    monkeypatch.setenv("HOME", str(tmp_path))
    ca = tmp_path / "ca.pem"  # (a missing file is an error before connecting)
    ca.write_text("")
    for argv in (["live", "--ssl-ca", str(ca)], ["export", "--live", "--out", "d",
                                                  "--ssl-ca", str(ca)]):
        s = live_settings(build_parser().parse_args(argv), io.StringIO())
        assert s is not None and s.conn.ssl_mode == "VERIFY_CA"
    s = live_settings(build_parser().parse_args(["live", "--ssl-ca", str(ca), "--ssl-mode",
                                                 "preferred"]), io.StringIO())
    assert s is not None and s.conn.ssl_mode == "PREFERRED"
