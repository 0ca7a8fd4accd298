"""``binlogscope live`` over TLS against a real MariaDB started with a throw-away CA and
certificate: REQUIRED, VERIFY_CA with the right and a wrong CA, and a recorded TLS session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mariadb_server import start, stop, write_ca_and_cert

pytestmark = pytest.mark.mysql


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, Path]]:
    d = tmp_path_factory.mktemp("tls")
    ca, cert, key = write_ca_and_cert(d, "good")
    other_ca, _, _ = write_ca_and_cert(d, "other")
    server_dir = d / "server"
    try:
        server = start(server_dir, extra_env={
            "MARIADB_EXTRA_ARGS": f"--ssl-ca={ca} --ssl-cert={cert} --ssl-key={key}"})
    except Exception as exc:  # pragma: no cover - the fixture's failure is the test's failure
        pytest.fail(f"MariaDB with TLS could not start: {exc}")
    try:
        yield server, ca, other_ca
    finally:
        stop(server_dir)


def _live(server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MYSQL_PWD=server.repl_password, HOME=str(server.dir))
    return subprocess.run(
        [sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1", "--port",
         str(server.port), "-u", server.repl_user, "--non-blocking", "--no-reconnect", *args],
        capture_output=True, text=True, env=env, timeout=90, stdin=subprocess.DEVNULL)


def test_tls_required_and_verified(tls_server: tuple[Any, Path, Path], tmp_path: Path) -> None:
    server, ca, _ = tls_server
    rec = tmp_path / "tls.pcapng"
    for mode in (["--ssl-mode", "REQUIRED"], ["--ssl-mode", "VERIFY_CA", "--ssl-ca", str(ca)]):
        p = _live(server, "--json", *mode, "--record", str(rec))
        assert p.returncode == 0, p.stderr
        objs = [json.loads(x) for x in p.stdout.splitlines()]
        notes = [o["text"] for o in objs if o["kind"] == "note"]
        assert any(n.startswith("TLS established") for n in notes)
        kinds = [o["kind"] for o in objs if "direction" in o]
        # the SSLRequest, then the decrypted login and the whole session, decoded
        assert kinds[:3] == ["handshake_v10", "ssl_request", "handshake_response41"]
        assert "com_binlog_dump" in kinds and kinds[-1] == "eof"
    # the recording holds the decrypted session (and says so), secrets masked
    assert rec.exists() and b"****" in rec.read_bytes()
    assert "TLS" in Path(str(rec) + ".txt").read_text()


def test_tls_wrong_ca_is_one_line(tls_server: tuple[Any, Path, Path]) -> None:
    server, _, other_ca = tls_server
    p = _live(server, "--ssl-mode", "VERIFY_CA", "--ssl-ca", str(other_ca))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "certificate" in p.stderr.lower()


def test_tls_ssl_ca_alone_verifies(tls_server: tuple[Any, Path, Path]) -> None:
    """--ssl-ca without --ssl-mode means VERIFY_CA: a server signed by another CA is refused."""
    server, ca, other_ca = tls_server
    p = _live(server, "--ssl-ca", str(other_ca))
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "certificate" in p.stderr.lower()
    p = _live(server, "--json", "--ssl-ca", str(ca))
    assert p.returncode == 0, p.stderr


def test_tls_required_by_the_server_gets_a_tls_hint(tls_server: tuple[Any, Path, Path]) -> None:
    """MariaDB refuses a plain login under require_secure_transport=ON with ERR 1045 (not
    MySQL's 3159): over plain TCP to a server offering TLS the hint names --ssl-mode."""
    server, _, _ = tls_server
    c = server.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SET GLOBAL require_secure_transport=ON")
        p = _live(server, "--ssl-mode", "DISABLED")
        ok = _live(server, "--json", "--ssl-mode", "REQUIRED")
    finally:
        with c.cursor() as cur:
            cur.execute("SET GLOBAL require_secure_transport=OFF")
        c.close()
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "ERR 1045" in p.stderr and "require_secure_transport" in p.stderr
    assert "--ssl-mode REQUIRED" in p.stderr
    assert ok.returncode == 0, ok.stderr
