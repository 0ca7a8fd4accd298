"""``binlogscope proxy`` between real clients and the test's real MariaDB.

`mariadb-binlog --read-from-remote-server --raw` through the proxy writes byte-identical files
to the direct run; 20 concurrent pymysql sessions get their answers through it; the binlog
events the proxy decoded are the ones ``binlogscope file --json`` reads at the same
(binlog_file, offset) of the server's files, and its ``--record`` capture decodes with
``binlogscope pcap`` to the same events.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.watch_support import CLI, ENV, binlog_events, server_events, start_proxy

pytestmark = pytest.mark.mysql



def _raw_dump(mariadb, port: int, first: str, into: Path) -> None:  # type: ignore[no-untyped-def]
    into.mkdir()
    res = subprocess.run(
        [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
         "--raw", "--to-last-log", f"--host={mariadb.host}", f"--port={port}",
         f"--user={mariadb.user}", f"--password={mariadb.password}",
         f"--result-file={into}/", first], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_proxy_relays_real_clients_unchanged(mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("REPLACE INTO proxy_t VALUES (1, 'one'), (2, 'two')")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("UPDATE proxy_t SET v = 'uno' WHERE id = 1")
        cur.execute("SHOW BINARY LOGS")
        logs = [r[0] for r in cur.fetchall()]
    # MariaDB writes a BINLOG_CHECKPOINT naming the new file into it once the previous file's
    # transactions are durable - a background thread, about a second after the FLUSH: the two
    # dumps below must not straddle it (a CI run's direct dump had it, the proxied one not)
    last = mariadb.binlog_dir / logs[-1]
    deadline = time.monotonic() + 20
    while logs[-1].encode() not in last.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    rec = tmp_path / "proxy.pcapng"
    proxy = subprocess.Popen(
        [*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream",
         f"{mariadb.host}:{mariadb.port}", "--json", "--record", str(rec)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proxy.stderr is not None
        first = proxy.stderr.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", first)
        assert m, first
        port = int(m.group(1))
        _raw_dump(mariadb, port, logs[0], tmp_path / "via")
        _raw_dump(mariadb, mariadb.port, logs[0], tmp_path / "direct")
        via = sorted(p.name for p in (tmp_path / "via").iterdir())
        assert via == sorted(p.name for p in (tmp_path / "direct").iterdir()) and via
        for name in via:
            assert (tmp_path / "via" / name).read_bytes() == \
                (tmp_path / "direct" / name).read_bytes(), name

        def query(i: int) -> int:
            import pymysql

            c = pymysql.connect(host="127.0.0.1", port=port, user=mariadb.user,
                                password=mariadb.password, database=mariadb.database)
            with c, c.cursor() as cur:
                cur.execute("SELECT %s + 1", (i,))
                return int(cur.fetchone()[0])

        with ThreadPoolExecutor(20) as pool:
            assert list(pool.map(query, range(20))) == [i + 1 for i in range(20)]
    finally:
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=60)
    assert "Traceback" not in err and "21 connection(s) relayed" in err, err
    assert not mariadb.password or mariadb.password not in out + err
    seen = binlog_events(out.splitlines())
    expected = server_events(mariadb.binlog_dir, logs)
    assert len(seen) > 10 and {f for f, *_ in seen} == set(logs)
    assert sum(1 for line in out.splitlines() if '"kind":"flow"' in line) == 21
    for f, off, log_pos, etype in seen:
        assert expected.get((f, off)) == (log_pos, etype), (f, off)
    res = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(rec)],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert binlog_events(res.stdout.splitlines()) == seen
    tshark = shutil.which("tshark")
    if tshark:  # Wireshark opens the recording and finds the MySQL packets
        res = subprocess.run([tshark, "-r", str(rec), "-d", f"tcp.port=={mariadb.port},mysql",
                              "-Y", "mysql", "-T", "fields", "-e", "frame.number"],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and len(res.stdout.split()) > 10  # (frames hold many)


def test_proxy_refused_upstream_and_bad_arguments(tmp_path: Path) -> None:
    res = subprocess.run([*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream", "nope"],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert res.returncode == 2 and "expected [HOST:]PORT" in res.stderr
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    busy = s.getsockname()[1]
    s.listen(1)
    res = subprocess.run([*CLI, "proxy", "--listen", f"127.0.0.1:{busy}", "--upstream",
                          "127.0.0.1:1"], capture_output=True, text=True, env=ENV, timeout=60)
    s.close()
    assert res.returncode == 1 and "cannot listen" in res.stderr
    assert "Traceback" not in res.stderr


def test_proxy_survives_a_client_killed_mid_dump(mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A replica killed while the server still sends (here: a blocking mariadb-binlog dump and
    a commit after the kill) costs that connection only: the proxy keeps serving."""
    proxy = subprocess.Popen(
        [*CLI, "proxy", "--listen", "127.0.0.1:0", "--upstream",
         f"{mariadb.host}:{mariadb.port}", "--summary"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proxy.stderr is not None
        m = re.search(r"listening on [\d.]+:(\d+)", proxy.stderr.readline())
        assert m
        port = int(m.group(1))
        with mariadb.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS proxy_kill (id BIGINT PRIMARY KEY)")
            cur.execute("SHOW MASTER STATUS")
            name = cur.fetchone()[0]
        dump = subprocess.Popen(
            [shutil.which("mariadb-binlog") or "mariadb-binlog", "--read-from-remote-server",
             "--stop-never", f"--host={mariadb.host}", f"--port={port}",
             f"--user={mariadb.user}", f"--password={mariadb.password}", name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time

        time.sleep(1.5)
        dump.kill()
        dump.wait()
        with mariadb.connect() as conn, conn.cursor() as cur:
            for i in range(3):  # events the server sends to the dead client through the proxy
                cur.execute(f"INSERT INTO proxy_kill VALUES ({time.time_ns() + i})")
                conn.commit()
        time.sleep(1)
        assert proxy.poll() is None, "the proxy died with its client"
        import pymysql

        c = pymysql.connect(host="127.0.0.1", port=port, user=mariadb.user,
                            password=mariadb.password)
        with c, c.cursor() as cur:
            cur.execute("SELECT 41 + 1")
            assert cur.fetchone()[0] == 42
    finally:
        proxy.send_signal(signal.SIGINT)
        _, err = proxy.communicate(timeout=60)
    assert proxy.returncode == 0 and "Traceback" not in err, err


@pytest.mark.parametrize("output", ["--json", "--plain"])
def test_proxy_output_to_a_file_follows_the_session(mariadb, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                    output: str) -> None:
    """Redirected to a file (or a pipe), what the proxy decoded is written out within a
    fraction of a second - a reader tailing it watches the session as it runs, not when the
    proxy exits or a buffer fills."""
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        proc, port = start_proxy((mariadb.host, mariadb.port), output, stdout=sink)
    try:
        conn = mariadb.connect(port=port)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 'follow-me-6148'")
                assert cur.fetchall()[0][0] == "follow-me-6148"
                t0 = time.monotonic()
                while "follow-me-6148" not in out.read_text() and time.monotonic() - t0 < 5:
                    time.sleep(0.02)
                took = time.monotonic() - t0
                assert "follow-me-6148" in out.read_text(), out.read_text()[-2000:]
                assert took < 3, took  # (the session is still open; 0.1 s is usual)
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
