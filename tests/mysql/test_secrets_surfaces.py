"""No secret on any surface, against the real MariaDB: a unique password, its hex and base64, and
each session's scramble (the server's nonce) and auth response never show in what binlogscope
writes or shows, nor on its command line.

A TCP proxy in the test sits between binlogscope and the server and keeps every byte, so the
needles are the exact secrets that crossed the wire (the greeting's nonce, the client's auth
response). Surfaces: ``live --json`` (blocking, with ``--record`` and ``--state``; its
``/proc/PID/cmdline`` and ``ps`` line read while it runs, the password coming from MYSQL_PWD),
``live --plain``, ``export --live`` (every file of the dataset, Parquet cells decoded),
``pcap`` (JSON and text) over a raw capture of a session and over the ``--record`` file, the
TUI (Pilot: tree, hex pane, help, screen, copy, ``X`` and ``x`` exports) over the raw capture
and over a live session,
and the mock master's run log of a login with the same password.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings, run_live
from binlogscope.drivers.pcapng import SessionRecorder
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Peer, Role
from binlogscope.wire.handshake import HandshakeResponse41, HandshakeV10
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.tui.conftest import sync
from tests.tui.test_secrets import _check_app, _exported_text

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "Sec-" + os.urandom(8).hex()
PW = PASSWORD.encode()
USER = "sec_surface"
Chunks = list[tuple[Peer, bytes]]


class Proxy:
    """127.0.0.1:port -> the server; every connection's bytes kept in arrival order."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sessions: list[Chunks] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            chunks: Chunks = []
            with self._lock:
                self.sessions.append(chunks)
            for src, dst, peer in ((client, server, Peer.CLIENT), (server, client, Peer.SERVER)):
                threading.Thread(target=self._pump, args=(src, dst, peer, chunks),
                                 daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, peer: Peer, chunks: Chunks) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    chunks.append((peer, data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def _packets(chunks: Chunks) -> list[PacketDecoded]:
    s = Session(Role.OBSERVER)
    out: list[PacketDecoded] = []
    for peer, data in chunks:
        s.receive_data(data, peer)
        out += [ev for ev in s.events() if isinstance(ev, PacketDecoded)]
    return out


def _session_secrets(chunks: Chunks) -> list[bytes]:
    """The scramble and the auth response that crossed the wire in one session."""
    found: list[bytes] = []
    for ev in _packets(chunks):
        if isinstance(ev.value, HandshakeV10):
            found.append(ev.value.auth_plugin_data.rstrip(b"\0"))
        elif isinstance(ev.value, HandshakeResponse41) and ev.value.auth_response:
            found.append(ev.value.auth_response)
    return found


def _raw_pcap(chunks: Chunks, path: Path, port: int) -> None:
    """A capture of the session as it was on the wire (nothing masked)."""
    rec = SessionRecorder(path, server_port=port, raw=True)
    s = Session(Role.OBSERVER)
    for peer, data in chunks:
        rec.data(peer, data)
        s.receive_data(data, peer)
        for ev in s.events():
            if isinstance(ev, PacketDecoded):
                rec.packet(ev)
    rec.close()


def _needles(secrets: list[bytes]) -> tuple[list[str], list[bytes]]:
    """Text needles (hex plain and spaced, base64, the password) and byte needles."""
    text = [PASSWORD, PW.hex(), base64.b64encode(PW).decode()]
    raw = [PW]
    for s in secrets:
        text += [s.hex(), s.hex(" "), base64.b64encode(s).decode()]
        raw.append(s)
    return text, raw


def _leaks(blob: bytes | str, text: list[str], raw: list[bytes]) -> list[str]:
    data = blob.encode("utf-8", "surrogateescape") if isinstance(blob, str) else blob
    low = data.decode("latin-1").lower()
    hits = [t for t in text if t.lower() in low]
    hits += [r.hex() for r in raw if r in data]
    return hits


def _env(db: Any) -> dict[str, str]:
    return {**os.environ, "MYSQL_PWD": PASSWORD, "HOME": str(db.dir),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def _cli(db: Any, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlogscope", *args], env=_env(db),
                          capture_output=True, timeout=180, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def account(mariadb: Any) -> Any:
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute(f"CREATE OR REPLACE USER {USER}@'%' IDENTIFIED BY '{PASSWORD}'")
        cur.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* "
                    f"TO {USER}@'%'")
        cur.execute("CREATE DATABASE IF NOT EXISTS sec_db")
        cur.execute("CREATE TABLE IF NOT EXISTS sec_db.t (id INT PRIMARY KEY, v TEXT)")
    c.close()
    yield mariadb
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute(f"DROP USER IF EXISTS {USER}@'%'")
    c.close()


def _write_rows(db: Any, start: int, n: int) -> None:
    c = db.connect()
    with c.cursor() as cur:
        for i in range(start, start + n):
            cur.execute("INSERT INTO sec_db.t VALUES (%s, %s)", (i, f"row {i}"))
    c.commit()
    c.close()


def test_no_secret_on_any_cli_surface(account: Any, tmp_path: Path) -> None:
    db = account
    proxy = Proxy(db.host, db.port)
    conn = ["--host", "127.0.0.1", "--port", str(proxy.port), "--user", USER,
            "--ssl-mode", "DISABLED"]
    surfaces: dict[str, bytes] = {}
    try:
        # ---- a blocking live run: --record, --state; its command line read while it runs
        rec, state = tmp_path / "live.pcapng", tmp_path / "state.json"
        proc = subprocess.Popen(
            [sys.executable, "-m", "binlogscope", "live", *conn, "--json", "--record",
             str(rec), "--state", str(state)],
            env=_env(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            n = 0
            while not state.exists() and time.monotonic() < deadline:
                _write_rows(db, 1000 + n, 3)
                n += 3
                time.sleep(0.3)
            assert state.exists(), "the live run never saved its state"
            surfaces["/proc/PID/cmdline"] = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            surfaces["ps"] = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(proc.pid)],
                                            capture_output=True).stdout
            assert b"binlogscope" in surfaces["/proc/PID/cmdline"]
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        surfaces["live --json stdout"], surfaces["live --json stderr"] = out, err
        assert b'"kind"' in out and b"com_binlog_dump" in out
        surfaces["--state"] = state.read_bytes()
        surfaces["--record"] = rec.read_bytes()
        # ---- text output, export --live
        p = _cli(db, "live", *conn, "--plain", "--non-blocking")
        assert p.returncode == 0, p.stderr
        surfaces["live --plain stdout"], surfaces["live --plain stderr"] = p.stdout, p.stderr
        exp = tmp_path / "exp"
        p = _cli(db, "export", "--live", *conn, "--non-blocking", "--out", str(exp))
        assert p.returncode == 0, p.stderr
        surfaces["export stdout"], surfaces["export stderr"] = p.stdout, p.stderr
        for f in sorted(exp.rglob("*")):
            if f.is_file():
                surfaces[f"export {f.relative_to(exp)}"] = f.read_bytes()
        surfaces["export (Parquet cells)"] = _exported_text(exp).encode("latin-1", "replace")
        # ---- a raw capture of the first session, read by `pcap`; and the recording
        raw = tmp_path / "wire.pcapng"
        _raw_pcap(proxy.sessions[0], raw, db.port)
        for f in (raw, rec):
            for mode in ("--json", "--plain"):
                p = _cli(db, "pcap", mode, str(f))
                assert p.returncode in (0, 1), p.stderr
                assert b"handshake" in p.stdout.lower(), p.stdout[:300]
                surfaces[f"pcap {mode} {f.name}"] = p.stdout + p.stderr
    finally:
        proxy.close()
    secrets: list[bytes] = []
    for chunks in proxy.sessions:
        got = _session_secrets(chunks)
        assert len(got) >= 2, "a session without a scramble and an auth response"
        secrets += got
    text, raw_needles = _needles(secrets)
    assert len(proxy.sessions) >= 3
    leaks = {where: _leaks(blob, text, raw_needles) for where, blob in surfaces.items()}
    assert not any(leaks.values()), {k: v for k, v in leaks.items() if v}
    # the needles are real: the raw capture holds them
    assert _leaks(raw.read_bytes(), text, raw_needles)


@sync
async def test_no_secret_in_the_tui_over_a_raw_capture(account: Any, tmp_path: Path) -> None:
    """The TUI (Pilot) over a capture of a real login: every surface and export masked."""
    db = account
    proxy = Proxy(db.host, db.port)
    try:
        conn = ConnectionOptions(host="127.0.0.1", port=proxy.port, user=USER,
                                 password=PASSWORD, ssl_mode="DISABLED")
        items: list[SourceItem] = []
        rep = run_live(LiveSettings(conn=conn, non_blocking=True, reconnect=False),
                       items.append)
        assert rep.error is None, rep.error
    finally:
        proxy.close()
    raw = tmp_path / "wire.pcapng"
    _raw_pcap(proxy.sessions[0], raw, db.port)
    pw = PASSWORD.encode()
    await _check_app(PcapSource(raw), tmp_path,
                     [PASSWORD, pw.hex(), base64.b64encode(pw).decode()])


@sync
async def test_no_secret_in_the_tui_of_a_live_session(account: Any, tmp_path: Path) -> None:
    """The TUI (Pilot) of a live session with the real server: every surface and export
    masked; the wire's own nonce and auth response (kept by the proxy) are needles too."""
    from binlogscope.inspector.sources.live import LiveSource

    db = account
    proxy = Proxy(db.host, db.port)
    try:
        conn = ConnectionOptions(host="127.0.0.1", port=proxy.port, user=USER,
                                 password=PASSWORD, ssl_mode="DISABLED")
        src = LiveSource(LiveSettings(conn=conn, non_blocking=True, reconnect=False))
        pw = PASSWORD.encode()
        await _check_app(src, tmp_path, [PASSWORD, pw.hex(), base64.b64encode(pw).decode()])
    finally:
        proxy.close()
    secrets: list[bytes] = []
    for chunks in proxy.sessions:
        secrets += _session_secrets(chunks)
    assert len(secrets) >= 2
    text, raw_needles = _needles(secrets)
    written = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert written
    for f in written:
        assert not _leaks(f.read_bytes(), text, raw_needles), f.name
    assert not _leaks(_exported_text(tmp_path / "view.parquet").encode("latin-1", "replace"),
                      text, raw_needles)


def test_no_secret_in_the_mock_master_run_log(tmp_path: Path) -> None:
    log = tmp_path / "run-log.json"
    binlog = ROOT / "captures" / "mariadb-10.11-workload.000001"
    sc = Scenario(sources=[BinlogSource([binlog])], users=[User("u", PASSWORD)], log=str(log))
    mm = ThreadedMockMaster(sc).start()
    try:
        conn = ConnectionOptions(host="127.0.0.1", port=mm.port, user="u", password=PASSWORD,
                                 ssl_mode="DISABLED")
        first = mm.master.stream.files[0].name
        rep = run_live(LiveSettings(conn=conn, start=f"{first}:4", non_blocking=True,
                                    reconnect=False, server_id=4244), lambda _: None)
        assert rep.error is None, rep.error
        wrong = ConnectionOptions(host="127.0.0.1", port=mm.port, user="u",
                                  password=PASSWORD + "x", ssl_mode="DISABLED")
        rep = run_live(LiveSettings(conn=wrong, non_blocking=True, reconnect=False),
                       lambda _: None)
        assert rep.error is not None
    finally:
        mm.stop()
    text = log.read_text()
    assert '"u"' in text or "'u'" in text
    pw = PASSWORD.encode()
    for needle in (PASSWORD, pw.hex(), base64.b64encode(pw).decode(), PASSWORD + "x"):
        assert needle not in text


def test_no_secret_from_the_mock_master_command(account: Any, tmp_path: Path) -> None:
    """``mock_master record`` from the real server and ``mock_master serve`` of the recording,
    both with the password in an environment variable: their output, the recording, the run
    log and their command lines hold no secret, nor does binlogscope's login to it."""
    db = account
    env = {**_env(db), "SECRET_PW": PASSWORD}
    recording = tmp_path / "rec.jsonl"
    # from the current position: the server's own binlog holds the account's CREATE USER
    # statement with its password (MariaDB logs it as given); a recording copies the binlog
    c = db.connect()
    with c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        here = cur.fetchone()
    c.close()
    p = subprocess.run(
        [sys.executable, "-m", "mock_master", "record", str(recording), "--host", db.host,
         "--port", str(db.port), "--user", USER, "--password-env", "SECRET_PW",
         "--start", f"{here[0]}:{here[1]}"],
        env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    surfaces = {"record stdout": p.stdout, "record stderr": p.stderr,
                "recording": recording.read_bytes()}
    log = tmp_path / "run.json"
    srv = subprocess.Popen(
        [sys.executable, "-m", "mock_master", "serve", "--recording", str(recording),
         "--port", "0", "--user", "u", "--password-env", "SECRET_PW", "--log", str(log)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert srv.stdout is not None
        lines = [srv.stdout.readline(), srv.stdout.readline()]  # the banner, the port
        port = int(next(x for x in lines if x.strip().isdigit()))
        surfaces["serve banner"] = b"".join(lines)
        surfaces["serve cmdline"] = Path(f"/proc/{srv.pid}/cmdline").read_bytes()
        for pw in (PASSWORD, PASSWORD + "x"):
            conn = ConnectionOptions(host="127.0.0.1", port=port, user="u", password=pw,
                                     ssl_mode="DISABLED")
            items: list[SourceItem] = []
            rep = run_live(LiveSettings(conn=conn, non_blocking=True, reconnect=False,
                                        server_id=4245), items.append)
            assert (rep.error is None) == (pw == PASSWORD), rep.error
            surfaces[f"live items ({len(pw)})"] = "\n".join(
                repr(i) for i in items).encode("utf-8", "replace")
    finally:
        srv.send_signal(signal.SIGTERM)
        out, err = srv.communicate(timeout=60)
    surfaces["serve stdout"], surfaces["serve stderr"] = out, err
    assert b"(wrong password)" in err and b"started COM_BINLOG_DUMP" in err, err
    surfaces["run log"] = log.read_bytes()
    assert b'"u"' in surfaces["run log"]
    text, raw = _needles([])
    text.append(PASSWORD + "x")
    leaks = {where: _leaks(blob, text, raw) for where, blob in surfaces.items()}
    assert not any(leaks.values()), {k: v for k, v in leaks.items() if v}
