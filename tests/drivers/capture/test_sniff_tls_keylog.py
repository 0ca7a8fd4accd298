"""``sniff -i lo --tls-keylog FILE``: TLS replication sessions to a real MariaDB, decrypted as
they pass with the NSS key log a client writes while sniff runs.

- ``live --ssl-mode REQUIRED --tls-keylog K`` dumps the server's binlog (2.5 MB of rows: a
  burst of 64 KiB loopback segments) over TLS 1.3 while
  ``sniff --tls-keylog K`` captures the server's port; ``K`` does not exist when sniff starts
  (live creates it and appends the session's secrets during its handshake, so the keys are
  read after the capture began): sniff shows the same binlog events (type, position, rows) as
  live's own output.
- A pymysql session pinned to TLS 1.2 (Python's ``ssl`` appending to the same key log, an
  ``SSLKEYLOGFILE`` client) is decrypted by the same sniff: its query and result row are
  there.
- The frames sniff wrote (``--write``, as captured) give the same events through
  ``pcap --tls-keylog``: one decryption path.
- Without a key log, sniff says the connection is encrypted (one item) and shows no event;
  with a key log lacking the session's secrets, it says the TLS data could not be decrypted,
  shows no event and exits 1.
"""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.drivers.capture.test_pcap_tls_keylog import _events, tls_server  # noqa: F401
from tests.helpers import can_capture
from tests.mariadb_server import MariaDB
from tests.watch_support import CLI, ENV, start_sniff

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]


def _sniff(server: MariaDB, *args: str) -> subprocess.Popen[str]:
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    return start_sniff("--bpf", f"port {server.port}", "--port", str(server.port),
                       "--duration", "120", *args)


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str, int]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return out, err, proc.returncode


def _live(server: MariaDB, keys: Path) -> subprocess.CompletedProcess[str]:
    first = server.binlog_files()[0].name
    return subprocess.run([*CLI, "live", "--host", server.host, "--port", str(server.port),
                           "-u", server.repl_user, "--ssl-mode", "REQUIRED",
                           "--tls-keylog", str(keys), "--start", f"{first}:4",
                           "--non-blocking", "--json"], capture_output=True, text=True,
                          timeout=120, env={**ENV, "MYSQL_PWD": server.repl_password})


def test_sniff_decrypts_live_and_pymysql_sessions_with_keys_written_meanwhile(
        tls_server: tuple[MariaDB, Path], tmp_path: Path) -> None:  # noqa: F811
    import pymysql

    server, ca = tls_server
    with server.connect() as conn, conn.cursor() as cur:
        # a dump burst: loopback segments of 64 KiB, each ending several 16 KiB TLS records
        # (their plaintext is more than one IP packet holds)
        cur.execute("CREATE TABLE IF NOT EXISTS keylog_big (id INT PRIMARY KEY, b TEXT)")
        for i in range(0, 400, 50):
            cur.execute("INSERT INTO keylog_big VALUES " + ", ".join(
                f"({j}, REPEAT(MD5({j}), 200))" for j in range(i, i + 50)))
        conn.commit()
    keys = tmp_path / "keys.log"
    written = tmp_path / "seen.pcapng"
    sniff = _sniff(server, "--tls-keylog", str(keys), "--json", "--write", str(written))
    try:
        assert sniff.stderr is not None
        assert "does not exist yet" in sniff.stderr.readline()
        live = _live(server, keys)
        ctx = ssl.create_default_context(cafile=str(ca))
        ctx.check_hostname = False
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.keylog_filename = str(keys)
        conn = pymysql.connect(host=server.host, port=server.port, user=server.repl_user,
                               password=server.repl_password, ssl=ctx)
        with conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Ssl_version'")
            negotiated = cur.fetchone()[1]
            cur.execute("SELECT 'sniffed-through-tls' AS marker")
        conn.close()
    finally:
        out, err, rc = _stop(sniff)
    assert live.returncode == 0, live.stderr
    assert negotiated == "TLSv1.2"
    text = keys.read_text()
    assert "CLIENT_TRAFFIC_SECRET_0" in text and "CLIENT_RANDOM" in text  # 1.3 and 1.2
    want = _events(live.stdout.splitlines())
    assert any(t.startswith("WRITE_ROWS_EVENT") for t, _, _ in want), want
    assert rc == 0, err
    assert _events(out.splitlines()) == want
    assert "TLS decrypted with the key log" in out
    assert "SELECT 'sniffed-through-tls' AS marker" in out
    rows = [json.loads(x)["fields"]["values"] for x in out.splitlines()
            if '"kind":"text_row"' in x]
    assert [b"sniffed-through-tls".hex()] in rows
    # one decryption path: the frames sniff wrote (as captured, encrypted), read by
    # pcap --tls-keylog, give the same events
    again = subprocess.run([*CLI, "pcap", str(written), "--tls-keylog", str(keys), "--json",
                            "--port", str(server.port)], capture_output=True, text=True,
                           timeout=240, env=ENV)
    assert again.returncode == 0, again.stderr
    assert _events(again.stdout.splitlines()) == want
    assert "SELECT 'sniffed-through-tls' AS marker" in again.stdout


def test_sniff_without_the_keys_says_encrypted(tls_server: tuple[MariaDB, Path],  # noqa: F811
                                               tmp_path: Path) -> None:
    server, _ = tls_server
    other = tmp_path / "other.log"
    other.write_text("CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48 + "\n")
    plain = _sniff(server, "--brief")
    wrong = _sniff(server, "--tls-keylog", str(other), "--json")
    try:
        live = _live(server, tmp_path / "keys.log")
    finally:
        p_out, p_err, p_rc = _stop(plain)
        w_out, w_err, w_rc = _stop(wrong)
    assert live.returncode == 0, live.stderr
    assert _events(live.stdout.splitlines())
    # no key log: the session is encrypted, said once, and nothing else is decoded
    assert p_out.count("the rest of this connection is encrypted") == 1, p_out
    assert "WRITE_ROWS" not in p_out and p_rc == 0, p_err
    # the wrong key log: not decrypted, said so, exit 1
    assert _events(w_out.splitlines()) == []
    assert "could not be decrypted" in w_err and str(other) in w_err
    assert w_rc == 1


def test_the_tui_status_bar_says_what_was_not_decrypted(tmp_path: Path) -> None:
    """The TUI's sniff source (``sniff --tls-keylog`` on a terminal) puts the frames left
    encrypted in its status bar, as the command prints them on stderr."""
    from binlogscope.drivers.capture.sniff import open_capture
    from binlogscope.drivers.capture.tls_keylog import LiveDecryption
    from binlogscope.inspector.sources.sniff import SniffSource

    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    keys = tmp_path / "keys.log"
    capture = open_capture("lo", "port 9")
    decryption = LiveDecryption(str(keys), capture.linktype)
    src = SniffSource(capture, ports=[9], decryption=decryption)
    try:
        assert "TLS" not in src.info().extra
        decryption.undecrypted, decryption.first_undecrypted = 4, 17
        assert src.info().extra["TLS"] == (f"4 frames not decrypted (first: frame 17; no keys "
                                           f"in {keys})")
    finally:
        capture.close()
        decryption.close()
