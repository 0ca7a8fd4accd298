from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.live.options import OptionFileError, parse_option_file, resolve_options


def test_option_file_groups_quotes_and_includes(tmp_path: Path) -> None:
    inc = tmp_path / "extra.cnf"
    inc.write_text("[client]\nssl-ca = /ca.pem\n")
    f = tmp_path / "my.cnf"
    f.write_text(
        "# comment\n[mysqld]\nport=1\n[client]\nhost = db.example\nport=3307\n"
        "password = \"p#ss word\"\nuser=repl # trailing comment\n"
        f"!include {inc}\n[binlogscope]\nssl_mode=required\n")
    s = parse_option_file(f)
    assert s == {"host": "db.example", "port": "3307", "password": "p#ss word",
                 "user": "repl", "ssl_ca": "/ca.pem", "ssl_mode": "required"}


def test_precedence_file_env_cli(tmp_path: Path) -> None:
    f = tmp_path / "my.cnf"
    f.write_text("[client]\nuser=a\npassword=file\nport=4000\n")
    o = resolve_options(defaults_file=str(f), env={"MYSQL_PWD": "env"}, cli={"port": 5000},
                        prompt=False)
    assert (o.user, o.password, o.port, o.ssl_mode) == ("a", "env", 5000, "PREFERRED")
    assert "env" not in repr(o) and "env" not in o.describe()


def test_no_password_anywhere_and_no_tty_means_empty(tmp_path: Path) -> None:
    o = resolve_options(env={"HOME": str(tmp_path)}, prompt=False)
    assert o.password == ""


def test_missing_defaults_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OptionFileError, match="cannot read option file"):
        resolve_options(defaults_file=str(tmp_path / "nope.cnf"), prompt=False)
