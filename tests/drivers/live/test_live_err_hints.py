"""The live replica's hints fit the error: the server texts here are the real ones (MariaDB
10.11 as captured in tests/drivers/live/test_live_hints.py; MySQL's from its errmsg/sql_repl
sources)."""

from __future__ import annotations

import pytest

from binlogscope.drivers.live.items import err_hint, err_text
from binlogscope.wire.responses import ErrPacket

_DENIED = "Access denied for user 'nopriv'@'%' (using password: YES)"


def test_1045_after_login_is_the_replication_privilege_not_the_password() -> None:
    h = err_hint(ErrPacket(1045, _DENIED, "28000"), logged_in=True)
    assert h is not None and "REPLICATION SLAVE" in h and "password" not in h


def test_1045_at_login_is_user_or_password_and_tls_only_when_it_could_be() -> None:
    e = ErrPacket(1045, "Access denied for user 'repl'@'127.0.0.1' (using password: YES)",
                  "28000")
    assert err_hint(e, logged_in=False) == "wrong user or password"
    h = err_hint(e, logged_in=False, tls_possible=True)
    assert h is not None and h.startswith("wrong user or password") and "--ssl-mode" in h


def test_1227_naming_replication_slave() -> None:
    e = ErrPacket(1227, "Access denied; you need (at least one of) the REPLICATION SLAVE "
                        "privilege(s) for this operation", "42000")
    h = err_hint(e)
    assert h is not None and "REPLICATION SLAVE" in h and "password" not in h


def test_3159_secure_transport_is_a_tls_hint() -> None:
    e = ErrPacket(3159, "Connections using insecure transport are prohibited while "
                        "--require_secure_transport=ON.", "HY000")
    h = err_hint(e, logged_in=False)
    assert h is not None and "--ssl-mode REQUIRED" in h


@pytest.mark.parametrize("msg", [
    "Error: connecting slave requested to start from GTID 0-1-99999, which is not in the "
    "master's binlog",
    "Could not find GTID state requested by slave in any binlog files. Probably the slave "
    "state is too old and required binlog files have been purged.",
    "The slave is connecting using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master "
    "has purged binary logs containing GTIDs that the slave requires.",
])
def test_1236_gtid_is_a_gtid_hint(msg: str) -> None:
    h = err_hint(ErrPacket(1236, msg))
    assert h is not None and "GTID" in h and "SHOW BINARY LOGS" not in h


@pytest.mark.parametrize(("msg", "word"), [
    ("Could not find first log file name in binary log index file", "SHOW BINARY LOGS"),
    ("Client requested master to start replication from impossible position; the first event "
     "'mysql-bin.000001' at 999999999, the last event read from 'mysql-bin.000001' at 4, the "
     "last byte read from 'mysql-bin.000001' at 4.", "SHOW BINLOG EVENTS"),
    ("Client requested master to start replication from position > file size",
     "SHOW BINLOG EVENTS"),
])
def test_1236_file_and_position(msg: str, word: str) -> None:
    h = err_hint(ErrPacket(1236, msg))
    assert h is not None and word in h and "GTID" not in h


def test_err_text_is_one_line_with_the_server_text() -> None:
    t = err_text(ErrPacket(1045, _DENIED, "28000"), "COM_REGISTER_SLAVE refused")
    assert t.startswith("COM_REGISTER_SLAVE refused: ERR 1045 (28000) Access denied")
    assert "\n" not in t and "REPLICATION SLAVE" in t
