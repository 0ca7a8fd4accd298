"""Ctrl-C (SIGINT) to ``binlogscope sniff -i lo`` in the middle of a real dump, stdout a pipe.

``mariadb-binlog --read-from-remote-server`` reads the test MariaDB's binlogs (tens of MB) over
loopback while ``sniff --json`` captures them; SIGINT arrives while the dump is still running.
What a user (or the script piping the output on) must get: the process ends within a few
seconds (the first Ctrl-C drains what was captured for at most 3 s), no traceback, stderr's
last line is the one summary line (frames decoded, what was lost before decoding), stdout is
whole JSON lines only (nothing cut, everything decoded before the stop flushed), and each
binlog event printed is the one the server's own files hold at that (binlog_file, offset) -
none missing between the first and the last printed. A first Ctrl-C is how a capture is ended
(as tcpdump's): exit 0 when nothing was lost, 1 when something was (the line says what). A
second Ctrl-C during the drain ends it at the next whole line: exit 130, still one line (the
frames it did not decode counted there).
"""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import subprocess
import time
from typing import Any

import pytest

from tests.helpers import can_capture
from tests.watch_support import server_events, start_sniff

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(300)]


def _big_binlog(mariadb: Any) -> list[str]:
    """Binlogs with enough in them that a dump takes a while over loopback; their names."""
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS sniff_int (id INT PRIMARY KEY, b LONGBLOB)")
        cur.execute("FLUSH BINARY LOGS")
        for i in range(60):
            cur.execute("REPLACE INTO sniff_int VALUES (%s, REPEAT(%s, 400000))",
                        (i, chr(97 + i % 26)))
        conn.commit()
        cur.execute("SHOW BINARY LOGS")
        return [r[0] for r in cur.fetchall()]


def _dump(mariadb: Any, first: str) -> subprocess.Popen[str]:
    client = shutil.which("mariadb-binlog")
    assert client is not None
    return subprocess.Popen(
        [client, "--read-from-remote-server", f"--host={mariadb.host}",
         f"--port={mariadb.port}", f"--user={mariadb.user}", f"--password={mariadb.password}",
         "--to-last-log", "--result-file=/dev/null", first],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_output(proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until sniff has printed something (the dump is under way and being decoded)."""
    import select

    assert proc.stdout is not None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([proc.stdout], [], [], 0.2)
        if r:
            return
    raise AssertionError("sniff printed nothing")


def _check_output(mariadb: Any, head: str, out: str) -> int:
    """Every line whole JSON; the events printed are the server's, consecutive: how many."""
    lines = (head + out).splitlines()
    assert (head + out).endswith("\n") or not (head + out)
    objs = [json.loads(line) for line in lines]  # (a cut line would not parse)
    events = [o for o in objs if o.get("kind") == "binlog_event" and o.get("offset") is not None]
    files = sorted({o["binlog_file"] for o in events})
    want = server_events(mariadb.binlog_dir, files) if files else {}
    for o in events:
        w = want.get((o["binlog_file"], o["offset"]))
        assert w is not None, (o["binlog_file"], o["offset"])
        assert (o["log_pos"], o["event_type"]) == w
    # consecutive: each event after the first starts where the one before it ended
    for a, b in itertools.pairwise(events):
        if a["binlog_file"] == b["binlog_file"] and b["event_type"] != "ROTATE_EVENT" \
                and a["log_pos"]:
            assert b["offset"] == a["log_pos"], (a, b)
    return len(events)


def test_ctrl_c_in_the_middle_of_a_dump(mariadb: Any) -> None:
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    logs = _big_binlog(mariadb)
    sniff = start_sniff("--bpf", f"port {mariadb.port}", "--port", str(mariadb.port), "--json")
    assert sniff.stdout is not None
    dump = _dump(mariadb, logs[-2])
    try:
        _wait_for_output(sniff)
        time.sleep(0.3)
        running = dump.poll() is None
        sniff.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = sniff.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        dump.kill()
        dump.wait()
    assert took < 20, took  # (a drain of at most 3 s, then the summary; a loaded box: margin)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    rest = [line for line in err.splitlines() if line.strip()]
    assert len(rest) == 1 and rest[0].startswith("binlogscope sniff: "), err
    assert "frames decoded from lo" in rest[0], rest[0]
    n = _check_output(mariadb, "", out)
    assert n > 5, out[-2000:]
    if sniff.returncode == 0:
        assert "none lost before decoding" in rest[0], rest[0]
    else:  # something was lost (a busy machine): said, and not a clean exit
        assert sniff.returncode == 1 and "LOST" in rest[0], (sniff.returncode, rest[0])
    assert running or n > 5  # (the signal came during the dump, or it was short)


def test_a_second_ctrl_c_ends_at_once(mariadb: Any) -> None:
    """Two SIGINTs in a row (the second during the first one's drain): exit 130 at once,
    one line, no traceback; what was printed is whole lines - before, the second signal
    raised inside the write of a long JSON line (a row event's hex) and left it cut."""
    if not can_capture():
        pytest.fail("the suite runs as root in CI (AF_PACKET capture)")
    logs = _big_binlog(mariadb)
    sniff = start_sniff("--bpf", f"port {mariadb.port}", "--port", str(mariadb.port), "--json",
                        "--buffer", "256")
    dump = _dump(mariadb, logs[0])
    try:
        _wait_for_output(sniff)
        sniff.send_signal(signal.SIGINT)
        time.sleep(0.05)
        sniff.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = sniff.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        dump.kill()
        dump.wait()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert took < 10, took
    assert sniff.returncode == 130, sniff.returncode
    rest = [line for line in err.splitlines() if line.strip()]
    assert len(rest) == 1 and rest[0].startswith("binlogscope sniff: "), err
    assert _check_output(mariadb, "", out) > 0



def test_the_drain_bound_holds_inside_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """sniff_batches after a stop: the 3 s drain is checked between the frames of a batch,
    not only between batches - a frame after a TCP gap can take seconds to decode (the resync
    scan; a hostile chain of 16 MiB fragments on lo made the first Ctrl-C end 43 s later), and
    a batch holds many. The frames left are counted as captured but not decoded."""
    from binlogscope.drivers.capture import sniff as sniff_mod
    from binlogscope.drivers.capture.flows import CaptureReader

    class Capture:
        linktype = 1

        def __init__(self) -> None:
            self.batches = [[(b"frame", float(i)) for i in range(40)]]
            self.stopped = False
            self.left = 0

        def read_batch(self, wait: float) -> list[tuple[bytes, float]] | None:
            if self.batches:
                return self.batches.pop()
            if self.stopped:
                return None
            time.sleep(wait)
            return []

        def stop(self) -> None:
            self.stopped = True

        def not_decoded(self, n: int) -> None:
            self.left += n

    def slow(self: Any, number: int, ts: float, linktype: int, data: bytes) -> list[Any]:
        time.sleep(0.25)  # (a frame whose decoding takes long)
        return []

    monkeypatch.setattr(CaptureReader, "record_frame", slow)
    cap = Capture()
    t0 = time.monotonic()
    for _ in sniff_mod.sniff_batches(cap, None, stop=lambda: True,  # type: ignore[arg-type]
                                     drain=1.0):
        pass
    took = time.monotonic() - t0
    assert took < 2.5, took  # (the 40 frames would take 10 s)
    assert 0 < cap.left < 40, cap.left
