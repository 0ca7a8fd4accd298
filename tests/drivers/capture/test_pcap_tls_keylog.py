"""``pcap --tls-keylog``: TLS sessions to a real MariaDB, captured with Wireshark's dumpcap while
the client writes an NSS key log, decode to what the client saw.

- ``live --ssl-mode REQUIRED --tls-keylog FILE`` dumps the server's binlog over TLS (1.3, the
  server's choice) and writes the key log; ``pcap --tls-keylog FILE`` of the capture gives the
  same binlog events (type, position, rows) as ``live``'s own output.
- pymysql sessions pinned to TLS 1.2 and to TLS 1.3 (Python's ``ssl`` writing the key log):
  their queries and result rows are in ``pcap``'s decoding.
- A key log without the sessions' secrets: the TLS data is reported as not decrypted, the exit
  status is 1 (nothing is dropped silently).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, start, stop, write_ca_and_cert
from tests.watch_support import CLI, ENV, LoopbackCapture

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]

TABLE = "keylog_t"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MariaDB, Path]]:
    d = tmp_path_factory.mktemp("keylog")
    ca, cert, key = write_ca_and_cert(d, "keylog")
    try:
        server = start(d / "server", extra_env={
            "MARIADB_EXTRA_ARGS": f"--ssl-ca={ca} --ssl-cert={cert} --ssl-key={key}"})
    except ServerStartError as exc:
        unavailable(f"MariaDB with TLS could not be started: {exc}")
    try:
        conn = server.connect()
        with conn.cursor() as cur:
            for q in (f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, v VARCHAR(40))",
                      f"INSERT INTO {TABLE} VALUES (1, 'one'), (2, 'two'), (3, 'three')",
                      f"UPDATE {TABLE} SET v = 'uno' WHERE id = 1",
                      f"DELETE FROM {TABLE} WHERE id = 2"):
                cur.execute(q)
        conn.commit()
        conn.close()
        yield server, ca
    finally:
        stop(d / "server")


def _capture(path: Path, server: MariaDB, *ports: int) -> LoopbackCapture:
    """dumpcap on the server's port, returned once it has written a frame: its "Capturing on"
    line comes before the first frames are taken (a session opened at once was seen missing
    or cut), so connections to a listener of the test's own (in the capture filter, not
    MySQL: no flow of the decoding) are made until the file grows; ``ports``: more ports to
    capture."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        probe.listen(64)
        port = probe.getsockname()[1]
        cap = LoopbackCapture(path, [server.port, *ports, port])
        size = path.stat().st_size if path.exists() else 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
            time.sleep(0.2)
            if path.exists() and path.stat().st_size > size + 200:
                return cap
    cap.stop()
    raise AssertionError("dumpcap wrote no frame within 60 s")


def _events(lines: list[str]) -> list[tuple[Any, ...]]:
    """The binlog events of ``--json`` lines: (type, log_pos, rows), artificial ones out."""
    out = []
    for line in lines:
        d = json.loads(line)
        if d.get("event_type") and d.get("log_pos"):
            out.append((d["event_type"], d["log_pos"], json.dumps(d.get("rows"))))
    return out


def _pcap(capture: Path, keylog: Path, port: int, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "pcap", str(capture), "--tls-keylog", str(keylog), "--port",
                           str(port), *more], capture_output=True, text=True, timeout=240,
                          env=ENV)


def test_live_over_tls_and_the_decrypted_capture_agree(tls_server: tuple[MariaDB, Path],
                                                       tmp_path: Path) -> None:
    server, _ = tls_server
    keys = tmp_path / "keys.log"
    cap = _capture(tmp_path / "tls.pcapng", server)
    try:
        first = server.binlog_files()[0].name
        live = subprocess.run([*CLI, "live", "--host", server.host, "--port", str(server.port),
                               "-u", server.repl_user, "--ssl-mode", "REQUIRED",
                               "--tls-keylog", str(keys), "--start", f"{first}:4",
                               "--non-blocking", "--json"], capture_output=True, text=True,
                              timeout=120, env={**ENV, "MYSQL_PWD": server.repl_password})
    finally:
        cap.stop()
    assert live.returncode == 0, live.stderr
    assert "--tls-keylog" in live.stderr and "keep it private" in live.stderr  # the warning
    assert "CLIENT_TRAFFIC_SECRET_0" in keys.read_text()  # TLS 1.3 secrets were written
    want = _events(live.stdout.splitlines())
    assert any(t.startswith("WRITE_ROWS_EVENT") for t, _, _ in want), want
    got = _pcap(tmp_path / "tls.pcapng", keys, server.port, "--json")
    assert got.returncode == 0, got.stderr
    assert _events(got.stdout.splitlines()) == want
    # without the key log the capture shows a TLS session and no event
    plain = subprocess.run([*CLI, "pcap", str(tmp_path / "tls.pcapng"), "--json", "--port",
                            str(server.port)], capture_output=True, text=True, timeout=240,
                           env=ENV)
    assert _events(plain.stdout.splitlines()) == []


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_a_pymysql_session_decrypts(tls_server: tuple[MariaDB, Path], tmp_path: Path,
                                    version: ssl.TLSVersion) -> None:
    import pymysql

    server, ca = tls_server
    keys = tmp_path / "keys.log"
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    ctx.minimum_version = ctx.maximum_version = version
    ctx.keylog_filename = str(keys)
    cap = _capture(tmp_path / "tls.pcapng", server)
    try:
        conn = pymysql.connect(host=server.host, port=server.port, user=server.repl_user,
                               password=server.repl_password, ssl=ctx)
        with conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Ssl_version'")
            negotiated = cur.fetchone()[1]
            cur.execute("SELECT 'decrypted-by-keylog' AS marker")
        conn.close()
    finally:
        cap.stop()
    assert negotiated == {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                          ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    got = _pcap(tmp_path / "tls.pcapng", keys, server.port, "--json")
    assert got.returncode == 0, got.stderr
    text = got.stdout
    assert "SELECT 'decrypted-by-keylog' AS marker" in text
    rows = [json.loads(x)["fields"]["values"] for x in text.splitlines()
            if '"kind":"text_row"' in x]
    assert [b"decrypted-by-keylog".hex()] in rows  # the row (values in hex)
    assert [b"Ssl_version".hex(), negotiated.encode().hex()] in rows
    # a key log without these sessions: said so, exit 1
    other = tmp_path / "other.log"
    other.write_text("CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48 + "\n")
    bad = _pcap(tmp_path / "tls.pcapng", other, server.port, "--brief")
    assert bad.returncode == 1
    assert "could not be decrypted" in bad.stderr and str(other) in bad.stderr
    assert "decrypted-by-keylog" not in bad.stdout


def test_a_missing_key_log_is_one_line(tmp_path: Path) -> None:
    cap = tmp_path / "x.pcap"
    cap.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    got = subprocess.run([*CLI, "pcap", str(cap), "--tls-keylog", str(tmp_path / "nope.log")],
                         capture_output=True, text=True, timeout=60, env=ENV)
    assert got.returncode == 1
    assert got.stderr.strip().count("\n") == 0 and "No such file" in got.stderr
    assert "Traceback" not in got.stderr
