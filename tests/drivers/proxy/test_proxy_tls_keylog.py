"""``proxy --tls-keylog``: a TLS-terminating proxy writes both legs' TLS secrets (the client's
session with the proxy, the proxy's session with the server) to an NSS key log, and a dumpcap
capture of both legs decrypts with ``pcap --tls-keylog`` to the client's query and its row on
each leg. Against the real MariaDB (with TLS, a throw-away CA)."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.drivers.capture.test_pcap_tls_keylog import _capture, tls_server  # noqa: F401
from tests.mariadb_server import MariaDB
from tests.watch_support import CLI, ENV, start_proxy

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]


def test_both_legs_decrypt(tls_server: tuple[MariaDB, Path],  # noqa: F811
                           tmp_path: Path) -> None:
    import pymysql

    server, _ = tls_server
    keys = tmp_path / "keys.log"
    proxy, port = start_proxy((server.host, server.port), "--tls-keylog", str(keys),
                              stdout=subprocess.DEVNULL)
    try:
        assert proxy.stderr is not None
        # after "listening on": the generated certificate's line, then the key log warning
        # (read here: communicate() would not see lines already in this reader's buffer)
        notes = proxy.stderr.readline() + proxy.stderr.readline()
        assert "--tls-keylog" in notes and "keep it private" in notes, notes
        cap = _capture(tmp_path / "legs.pcapng", server, port)
        try:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            conn = pymysql.connect(host="127.0.0.1", port=port, user=server.repl_user,
                                   password=server.repl_password, ssl=ctx)
            with conn.cursor() as cur:
                cur.execute("SELECT 'through-the-proxy' AS marker")
                assert cur.fetchone() == ("through-the-proxy",)
            conn.close()
        finally:
            cap.stop()
    finally:
        proxy.send_signal(signal.SIGINT)
        _, err = proxy.communicate(timeout=60)
    assert "Traceback" not in err, err
    text = keys.read_text()
    assert text.count("CLIENT_TRAFFIC_SECRET_0") >= 2  # one per leg (TLS 1.3)
    got = subprocess.run([*CLI, "pcap", str(tmp_path / "legs.pcapng"), "--tls-keylog",
                          str(keys), "--port", str(port), "--port", str(server.port), "--json"],
                         capture_output=True, text=True, timeout=240, env=ENV)
    assert got.returncode == 0, got.stderr
    legs = {}
    for line in got.stdout.splitlines():
        d = json.loads(line)
        if d.get("kind") == "text_row" and d["fields"]["values"] == [
                b"through-the-proxy".hex()]:
            legs[d["flow"].rsplit(":", 1)[1]] = True
    assert set(legs) == {str(port), str(server.port)}


def test_keylog_with_passthrough_is_refused(tls_server: tuple[MariaDB, Path],  # noqa: F811
                                            tmp_path: Path) -> None:
    server, _ = tls_server
    got = subprocess.run([*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream",
                          f"{server.host}:{server.port}", "--tls-passthrough", "--tls-keylog",
                          str(tmp_path / "k.log")], capture_output=True, text=True,
                         timeout=60, env=ENV)
    assert got.returncode == 2
    assert "--tls-keylog needs TLS termination" in got.stderr
