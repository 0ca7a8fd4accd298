"""``binlogscope sniff -i lo`` while a real client reads the real server's binlog.

`mariadb-binlog --read-from-remote-server` dumps the test MariaDB's binlogs over loopback while
``sniff`` captures that port (through its ring and capture process); the binlog events sniff
decoded must be exactly the events ``binlogscope file --json`` reads in the server's own files
(same (binlog_file, offset), end position and type; none missing), and the ``--write`` pcapng
must decode to the same events with ``binlogscope pcap``. With a decode buffer too small for
any ring block, every frame is dropped and the drops are reported (stderr, ``--summary``, exit
status), adding up to what the kernel saw. Without the capability to capture, one line says
what is needed. (CI runs the suite as root.)
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import can_capture
from tests.watch_support import (
    CLI,
    ENV,
    binlog_events,
    event_objects,
    master_status,
    remote_dump_command,
    server_events,
    start_proxy,
    start_sniff,
)

pytestmark = pytest.mark.mysql


def _sniffed_dump(mariadb: Any, *args: str) -> tuple[list[str], str, str, int]:
    """``sniff -i lo ARGS`` while mariadb-binlog dumps the newest two binlogs: (the logs,
    sniff's stdout, its stderr, its exit status)."""
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    client = shutil.which("mariadb-binlog")
    assert client is not None
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("REPLACE INTO sniff_t VALUES (1, 'one'), (2, 'two')")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("UPDATE sniff_t SET v = 'uno' WHERE id = 1")
        # an event bigger than loopback's 64 KiB segments
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_big (id INT PRIMARY KEY, b LONGBLOB)")
        cur.execute("REPLACE INTO sniff_big VALUES (1, REPEAT('x', 300000))")
        cur.execute("SHOW BINARY LOGS")
        logs = [r[0] for r in cur.fetchall()]
    sniff = start_sniff("--bpf", f"port {mariadb.port}", "--port", str(mariadb.port),
                        "--duration", "60", *args)
    dump = subprocess.run(
        [client, "--read-from-remote-server", f"--host={mariadb.host}",
         f"--port={mariadb.port}", f"--user={mariadb.user}", f"--password={mariadb.password}",
         "--to-last-log", "--result-file=/dev/null", logs[-2]],
        capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    time.sleep(1.0)
    sniff.send_signal(signal.SIGINT)
    out, err = sniff.communicate(timeout=60)
    assert "Traceback" not in err
    return logs, out, err, sniff.returncode


def test_sniff_sees_a_real_dump(mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pcapng = tmp_path / "seen.pcapng"
    logs, out, err, rc = _sniffed_dump(mariadb, "--json", "--write", str(pcapng))
    assert rc == 0, err
    assert "none lost before decoding (0 kernel drops, 0 decode-buffer drops)" in err
    seen = binlog_events(out.splitlines())
    assert {f for f, *_ in seen} == set(logs[-2:])
    # the events are the server's: same type and end position at the same file offset
    expected = server_events(mariadb.binlog_dir, logs[-2:])
    assert len(seen) > 10
    for f, off, log_pos, etype in seen:
        assert expected.get((f, off)) == (log_pos, etype), (f, off)
    # and none is missing: every event of the closed binlog, and of the last one up to the
    # dump's end (the shared server may have written more since)
    last = max(off for f, off, *_ in seen if f == logs[-1])
    assert {(f, off) for f, off, *_ in seen} == {
        (f, off) for f, off in expected if f == logs[-2] or off <= last}
    # the written capture decodes to the same events
    res = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(pcapng)],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert binlog_events(res.stdout.splitlines()) == seen


def test_sniff_reports_decode_buffer_drops(mariadb) -> None:  # type: ignore[no-untyped-def]
    # a decode buffer smaller than any ring block (104 bytes: a block's header and one frame's
    # are more): every block the capture process takes is dropped, and counted; the counts
    # add up to the frames the kernel passed the filter
    _logs, out, err, rc = _sniffed_dump(mariadb, "--summary", "--json", "--buffer", "0.0001")
    assert rc == 1, err
    objs = [json.loads(line) for line in out.splitlines()]
    loss = objs[-1]["capture"]
    assert loss["buffer_dropped"] > 10 and loss["frames_decoded"] == 0
    assert loss["frames_lost"] == loss["kernel_dropped"] + loss["buffer_dropped"]
    assert loss["kernel_frames"] == loss["frames_decoded"] + loss["frames_lost"]
    assert loss["buffer_bytes"] == int(0.0001 * (1 << 20))
    assert {"tcp_gaps", "tcp_lost_bytes", "resync_skipped_bytes"} <= loss.keys()
    assert (f"0 frames decoded from lo, {loss['frames_lost']:,} LOST before decoding: "
            f"{loss['kernel_dropped']:,} dropped by the kernel (capture ring full), "
            f"{loss['buffer_dropped']:,} dropped from the decode buffer") in err


def test_sniff_keeps_whole_64k_frames() -> None:
    # a bulk TCP transfer on lo: its 64 KiB segments (65,535-byte IP packets, 65,549-byte
    # frames) come through whole - the filter's snap length once cut their last 14 bytes
    import socket
    import threading

    from binlogscope.drivers.capture.sniff import open_capture

    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    cap = open_capture("lo", f"port {port}")
    sent = 16 << 20
    got = 0

    def receive(conn: socket.socket) -> None:
        nonlocal got
        while chunk := conn.recv(1 << 20):
            got += len(chunk)

    try:
        cli = socket.create_connection(("127.0.0.1", port))
        conn, _ = srv.accept()
        t = threading.Thread(target=receive, args=(conn,))
        t.start()
        cli.sendall(b"x" * sent)
        cli.close()
        t.join(30)
        conn.close()
        time.sleep(0.2)
        cap.stop()
        frames: list[bytes] = []
        while (batch := cap.read_batch(5)) is not None:
            frames += [data for data, _ts in batch]
        st = cap.stats()
    finally:
        cap.close()
        srv.close()
    assert got == sent and st.lost == 0
    isn = None
    spans = []  # the client's data as stream offsets (retransmissions on lo overlap them)
    big = 0
    for data in frames:
        total = int.from_bytes(data[16:18], "big")
        assert len(data) == 14 + total  # whole: Ethernet header + the IP packet
        big += total == 65535
        ihl = (data[14] & 15) * 4
        tcp = 14 + ihl
        if int.from_bytes(data[tcp : tcp + 2], "big") == port:
            continue  # server -> client
        seq = int.from_bytes(data[tcp + 4 : tcp + 8], "big")
        if data[tcp + 13] & 0x02:  # SYN
            isn = seq + 1
        length = total - ihl - (data[tcp + 12] >> 4) * 4
        if length:
            assert isn is not None
            start = (seq - isn) % (1 << 32)
            spans.append((start, start + length))
    covered = 0
    for start, end in sorted(spans):  # every byte sent, once
        assert start <= covered, f"bytes {covered}..{start} not captured"
        covered = max(covered, end)
    assert big > 0 and covered == sent


def test_sniff_without_the_capability_says_what_is_needed() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or not can_capture():
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


def test_sniff_sees_both_legs_of_a_proxied_session(mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``sniff -i lo`` on the proxy's port and the server's while a client dumps through the
    proxy: both legs are flows of their own, and each leg's binlog events are the proxy's
    decoded events (binlog file, offset, type, rows and every shared field), in order."""
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_proxy (id BIGINT PRIMARY KEY, v TEXT)")
    name, pos = master_status(mariadb)
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO sniff_proxy VALUES (%s, 'a'), (%s, REPEAT('b', 300))",
                    (time.time_ns(), time.time_ns() + 1))
        cur.execute("UPDATE sniff_proxy SET v = 'c' WHERE v = 'a'")
        cur.execute("DELETE FROM sniff_proxy WHERE v = 'c'")
    proxy, port = start_proxy((mariadb.host, mariadb.port), "--json")
    try:
        sniff = start_sniff("--json", "--bpf", f"port {port} or port {mariadb.port}",
                            "--port", str(port), "--port", str(mariadb.port), "--duration", "60")
    except BaseException:
        proxy.kill()
        raise
    try:
        dump = subprocess.run(remote_dump_command(mariadb, port, name, pos),
                              capture_output=True, text=True, timeout=60)
        assert dump.returncode == 0, dump.stderr
        time.sleep(0.5)
    finally:
        sniff.send_signal(signal.SIGINT)
        s_out, s_err = sniff.communicate(timeout=30)
        proxy.send_signal(signal.SIGINT)
        p_out, p_err = proxy.communicate(timeout=30)
    assert sniff.returncode == 0 and "Traceback" not in s_err, s_err
    assert proxy.returncode == 0 and "1 connection(s) relayed" in p_err, p_err
    relayed = event_objects(p_out.splitlines())
    assert len(relayed) >= 10 and {o["binlog_file"] for o in relayed} == {name}
    assert any(o["rows"] for o in relayed)
    # sniff's flows with a dump request: the client's leg (to the proxy's port) and the
    # proxy's leg (to the server's port); (an earlier test's dump thread may still send on a
    # connection sniff joins mid-way: no dump request seen there)
    legs: dict[str, list[str]] = {}
    dumped: set[str] = set()
    for line in s_out.splitlines():
        o = json.loads(line)
        if o.get("kind") == "com_binlog_dump":
            dumped.add(o["flow"])
        if o.get("kind") == "binlog_event":
            legs.setdefault(o["flow"], []).append(line)
    legs = {f: v for f, v in legs.items() if f in dumped}
    assert sorted(f.rsplit(":", 1)[1] for f in legs) == sorted([str(port), str(mariadb.port)])
    for flow, lines in legs.items():
        assert event_objects(lines) == relayed, flow
