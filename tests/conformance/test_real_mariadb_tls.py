"""The TLS-required source checked against a real MariaDB with require_secure_transport=ON: a
plain login gets the same answer from both (ERR 1045 28000 'Access denied ...' with sequence
id 2), and mariadb-binlog's default switches to TLS on the real
server as it does on the mock (the conformance case)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from mock_master.conformance.catalogue.common import txn_stream
from mock_master.conformance.catalogue.setup import _tls_files
from mock_master.diff.capture import SERVER, Relay
from mock_master.diff.compare import decode
from mock_master.scenario.scenarios import Scenario, StreamSource, User
from mock_master.serve.server import ThreadedMockMaster
from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, start, stop

pytestmark = [pytest.mark.mysql, pytest.mark.network]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    cert, key = _tls_files()
    d = Path(tmp_path_factory.mktemp("tls-required"))
    try:
        server = start(d, extra_env={"MARIADB_EXTRA_ARGS": f"--ssl-cert={cert} --ssl-key={key} "
                                     "--require-secure-transport=ON"})
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        yield server
    finally:
        stop(d)


def _plain_login(port: int, user: str, password: str) -> tuple[Any, list[Any], str | None]:
    """A plain-TCP login through a recording relay: the error, the server's packets and who
    closed the connection."""
    relay = Relay("127.0.0.1", port).start()
    err: Any = None
    try:
        pymysql.connect(host="127.0.0.1", port=relay.port, user=user, password=password,
                        ssl_disabled=True, connect_timeout=10).close()
    except pymysql.MySQLError as exc:
        err = exc
    finally:
        relay.stop(timeout=2)
    conv = relay.conversations[0]
    server = [p for p in decode(conv) if p.direction.name == "SERVER"]
    assert conv.data(SERVER), "the server sent nothing"
    return err, server, conv.closed_by


def test_a_plain_login_gets_the_real_servers_answer(tls_server: MariaDB) -> None:
    real_err, real, real_closed = _plain_login(tls_server.port, tls_server.repl_user,
                                               tls_server.repl_password)
    cert, key = _tls_files()
    b, _ = txn_stream("mariadb", 1)
    mm = ThreadedMockMaster(Scenario(users=[User(tls_server.repl_user,
                                                 tls_server.repl_password)],
                                     sources=[StreamSource(b.build())], tls_cert=cert,
                                     tls_key=key, tls_required=True)).start()
    try:
        mock_err, mock, mock_closed = _plain_login(mm.port, tls_server.repl_user,
                                                   tls_server.repl_password)
    finally:
        mm.stop()
    assert real_err is not None and mock_err is not None
    assert real_err.args == mock_err.args  # (1045, "Access denied for user 'repl'@'127...")
    assert [(p.kind, p.seq) for p in real] == [(p.kind, p.seq) for p in mock] == [
        ("handshake_v10", 0), ("err", 2)]
    r, m = real[-1].value, mock[-1].value
    assert (r.error_code, r.sql_state) == (m.error_code, m.sql_state) == (1045, "28000")
    # who closes first after the ERR - the server or PyMySQL, which closes on the error - is a
    # race on both (the relay's closed_by is recorded, not compared)
    del real_closed, mock_closed


def test_mariadb_binlog_switches_to_tls_on_both(tls_server: MariaDB, tmp_path: Path) -> None:
    """mariadb-binlog's default tries TLS when the server offers it: it reads the real
    TLS-only server (the conformance case's pass on the mock is the same behaviour)."""
    import os

    r = subprocess.run(["mariadb-binlog", "--read-from-remote-server", "--host=127.0.0.1",
                        f"--port={tls_server.port}", f"--user={tls_server.repl_user}",
                        "--protocol=TCP", "--to-last-log", "mysql-bin.000001"],
                       env=dict(os.environ, MYSQL_PWD=tls_server.repl_password),
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert "BINLOG" in r.stdout or "Format_desc" in r.stdout or "Start:" in r.stdout, r.stdout[:500]
