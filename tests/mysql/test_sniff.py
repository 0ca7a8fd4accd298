"""``binlogscope sniff -i lo`` while a real client reads the real server's binlog.

`mariadb-binlog --read-from-remote-server` dumps the test MariaDB's binlogs over loopback while
``sniff`` captures that port; every binlog event sniff decoded must be the event
``binlogscope file --json`` reads at the same (binlog_file, offset) of the server's own files,
and the ``--write`` pcapng must decode to the same events with ``binlogscope pcap``. Without the
capability to capture, one line says what is needed. (CI runs the suite as root.)
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from watch_support import CLI, ENV, binlog_events, server_events

pytestmark = pytest.mark.mysql


def _can_capture() -> bool:
    import socket

    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except (PermissionError, AttributeError):
        return False
    return True



def test_sniff_sees_a_real_dump(mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not _can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    client = shutil.which("mariadb-binlog")
    assert client is not None
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("REPLACE INTO sniff_t VALUES (1, 'one'), (2, 'two')")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("UPDATE sniff_t SET v = 'uno' WHERE id = 1")
        cur.execute("SHOW BINARY LOGS")
        logs = [r[0] for r in cur.fetchall()]
    pcapng = tmp_path / "seen.pcapng"
    sniff = subprocess.Popen(
        [*CLI, "sniff", "-i", "lo", "--json", "--bpf", f"port {mariadb.port}",
         "--port", str(mariadb.port), "--write", str(pcapng), "--duration", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(2.0)  # the socket is open once the interpreter has started
    dump = subprocess.run(
        [client, "--read-from-remote-server", f"--host={mariadb.host}",
         f"--port={mariadb.port}", f"--user={mariadb.user}", f"--password={mariadb.password}",
         "--to-last-log", "--result-file=/dev/null", logs[-2]],
        capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    time.sleep(1.0)
    sniff.send_signal(signal.SIGINT)
    out, err = sniff.communicate(timeout=30)
    assert "Traceback" not in err
    assert "frames captured on lo" in err
    seen = binlog_events(out.splitlines())
    assert {f for f, *_ in seen} == set(logs[-2:])
    # the events are the server's: same type and end position at the same file offset
    expected = server_events(mariadb.binlog_dir, logs[-2:])
    assert len(seen) > 10
    for f, off, log_pos, etype in seen:
        assert expected.get((f, off)) == (log_pos, etype), (f, off)
    # the written capture decodes to the same events
    res = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(pcapng)],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert binlog_events(res.stdout.splitlines()) == seen


def test_sniff_without_the_capability_says_what_is_needed() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or not _can_capture():
        pytest.fail("setpriv (util-linux) and root are on every CI machine")
    res = subprocess.run([setpriv, "--bounding-set", "-net_raw", "--inh-caps", "-net_raw",
                          *CLI, "sniff", "-i", "lo", "--json", "--duration", "1"],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        "binlogscope: sniff: capturing on lo needs root or the CAP_NET_RAW capability "
        "(e.g. sudo setcap cap_net_raw+ep on the python binary)"]


def test_sniff_bad_interface_and_filter_are_one_line() -> None:
    for args, text in ((["-i", "nosuch0"], "nosuch0"), (["-i", "lo", "--bpf", "port foo bar"],
                                                        "filter")):
        res = subprocess.run([*CLI, "sniff", *args, "--json", "--duration", "1"],
                             capture_output=True, text=True, env=ENV, timeout=60)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and text in res.stderr
