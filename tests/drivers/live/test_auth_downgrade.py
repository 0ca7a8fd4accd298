"""Authentication downgrades: a server (or a man in the middle who hid the TLS flag) that offers
only the weak paths gets no password, in any form, unless the user opted in.

The server is :mod:`tests.drivers.live.weak_server` (the project's encoders, one scripted
connection). Each weak path: ``caching_sha2_password`` full authentication without TLS (the
client would ask for the RSA key), ``sha256_password``, the 3.23 scramble, ``mysql_clear_password``
and ``dialog``. Without the opt-in the client refuses with one line and sends nothing after its
HandshakeResponse (whose proof is a challenge-response on the server's nonce, as with every
MySQL client); with ``--get-server-public-key``, ``--server-public-key-path`` or
``--insecure-auth`` it proceeds and the server gets exactly the expected material.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.options import (
    DEFAULT_MAX_PACKET,
    ConnectionOptions,
    OptionFileError,
    parse_size,
    resolve_options,
)
from binlogscope.drivers.live.replica import LiveSettings, run_live
from binlogscope.wire import auth
from binlogscope.wire.handshake import (
    AuthMoreData,
    AuthSwitchRequest,
    AuthSwitchResponse,
    HandshakeResponse41,
    OkPacket,
)
from tests.drivers.live.weak_server import ClientClosedError, WeakConnection, WeakServer

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "Wk-" + os.urandom(6).hex()
PW = PASSWORD.encode()
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                    serialization.PublicFormat.SubjectPublicKeyInfo)


def _decrypt(blob: bytes, nonce: bytes) -> bytes:
    try:
        plain = KEY.decrypt(blob, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()),
                                               algorithm=hashes.SHA1(), label=None))
    except ValueError:
        return b""
    return bytes(c ^ nonce[i % len(nonce)] for i, c in enumerate(plain)).rstrip(b"\0")


def _needles(c: WeakConnection) -> list[bytes]:
    """The password in every form a weak path would carry it."""
    out = [PW, PW.hex().encode(), base64.b64encode(PW), auth.scramble_323(PW, c.nonce[:8])]
    out.append(auth.xor_password_with_nonce(PW, c.nonce))
    return out


def _assert_nothing_sent(c: WeakConnection, packets: int = 1) -> None:
    """The client sent only ``packets`` packets (its HandshakeResponse, and an answer to a
    greeting switch), none with the password in any form, nothing RSA-decryptable to it."""
    assert len(c.packets) == packets, [p.kind for p in c.packets]
    data = bytes(c.received)
    for needle in _needles(c):
        assert needle not in data
    for p in c.packets:
        if isinstance(p.value, AuthSwitchResponse):
            assert _decrypt(p.value.data, c.nonce) != PW


def _login(port: int, **opts: Any) -> tuple[str | None, list[SourceItem]]:
    conn = ConnectionOptions(host="127.0.0.1", port=port, user="u", password=PASSWORD, **opts)
    items: list[SourceItem] = []
    rep = run_live(LiveSettings(conn=conn, start="mysql-bin.000001:4", non_blocking=True,
                                reconnect=False, connect_timeout=10), items.append)
    return rep.error, items


def _proceed(c: WeakConnection, notes: dict[str, Any]) -> None:
    """Accept the login, see the client go on with its first setup query, hang up."""
    c.send(OkPacket())
    notes["next"] = c.recv_packet().kind
    raise ClientClosedError


def _sha2_full(notes: dict[str, Any]) -> Any:
    def script(c: WeakConnection) -> None:
        c.greet("caching_sha2_password")
        hello = c.recv_packet().value
        assert isinstance(hello, HandshakeResponse41)
        assert hello.auth_response == auth.scramble_caching_sha2(PW, c.nonce)
        c.send(AuthMoreData(b"\x04"))  # not cached: perform full authentication
        data = c.recv_packet().value.data
        if data == b"\x02":
            notes["asked_key"] = True
            c.send(AuthMoreData(PEM))
            data = c.recv_packet().value.data
        notes["password"] = _decrypt(data, c.nonce)
        _proceed(c, notes)
    return script


@pytest.mark.parametrize("ssl_mode", ["PREFERRED", "DISABLED"])
def test_sha2_full_auth_without_tls_is_refused(ssl_mode: str) -> None:
    """The default PREFERRED mode facing a server (or MITM) without the TLS flag."""
    notes: dict[str, Any] = {}
    with WeakServer(_sha2_full(notes)) as srv:
        error, _ = _login(srv.port, ssl_mode=ssl_mode)
    c = srv.join()
    assert error is not None and "--get-server-public-key" in error
    assert "--server-public-key-path" in error and "\n" not in error
    assert "asked_key" not in notes and "password" not in notes
    _assert_nothing_sent(c)


def test_sha2_full_auth_with_get_server_public_key_proceeds() -> None:
    notes: dict[str, Any] = {}
    with WeakServer(_sha2_full(notes)) as srv:
        _login(srv.port, get_server_public_key=True)
    srv.join()
    assert notes.get("asked_key") and notes["password"] == PW and notes["next"] == "com_query"


def test_sha2_full_auth_with_key_file_never_asks_the_server(tmp_path: Path) -> None:
    key = tmp_path / "server-public.pem"
    key.write_bytes(PEM)
    notes: dict[str, Any] = {}
    with WeakServer(_sha2_full(notes)) as srv:
        _login(srv.port, server_public_key_path=str(key))
    srv.join()
    assert "asked_key" not in notes
    assert notes["password"] == PW and notes["next"] == "com_query"


def test_unrequested_public_key_is_not_used() -> None:
    """A server that pushes its key without being asked (the client asked for none)."""
    def script(c: WeakConnection) -> None:
        c.greet("caching_sha2_password")
        c.recv_packet()
        c.send(AuthMoreData(PEM))

    with WeakServer(script) as srv:
        error, _ = _login(srv.port, get_server_public_key=True)
    c = srv.join()
    assert error is not None and "not asked for" in error
    _assert_nothing_sent(c)


def _sha256(notes: dict[str, Any]) -> Any:
    def script(c: WeakConnection) -> None:
        c.greet("sha256_password")
        hello = c.recv_packet().value
        assert isinstance(hello, HandshakeResponse41)
        notes["plugin"] = hello.client_plugin_name
        data = hello.auth_response
        if hello.client_plugin_name != "sha256_password":
            c.send(AuthSwitchRequest("sha256_password", c.nonce + b"\0"))
            data = c.recv_packet().value.data
        if data == b"\x01":
            notes["asked_key"] = True
            c.send(AuthMoreData(PEM))
            data = c.recv_packet().value.data
        notes["password"] = _decrypt(data, c.nonce)
        _proceed(c, notes)
    return script


def test_sha256_password_without_tls_is_refused() -> None:
    notes: dict[str, Any] = {}
    with WeakServer(_sha256(notes)) as srv:
        error, _ = _login(srv.port)
    c = srv.join()
    # the greeting is answered with a native proof; the switch to sha256 is refused
    assert notes["plugin"] == "mysql_native_password"
    assert error is not None and "sha256_password" in error and "--get-server-public-key" in error
    _assert_nothing_sent(c, packets=1)


def test_sha256_password_with_opt_in_proceeds(tmp_path: Path) -> None:
    notes: dict[str, Any] = {}
    with WeakServer(_sha256(notes)) as srv:
        _login(srv.port, get_server_public_key=True)
    srv.join()
    assert notes["plugin"] == "sha256_password" and notes.get("asked_key")
    assert notes["password"] == PW and notes["next"] == "com_query"
    key = tmp_path / "k.pem"
    key.write_bytes(PEM)
    notes = {}
    with WeakServer(_sha256(notes)) as srv:
        _login(srv.port, server_public_key_path=str(key))
    srv.join()
    assert "asked_key" not in notes and notes["password"] == PW


def _switch(request: AuthSwitchRequest, notes: dict[str, Any]) -> Any:
    def script(c: WeakConnection) -> None:
        c.greet("mysql_native_password")
        hello = c.recv_packet().value
        assert isinstance(hello, HandshakeResponse41)
        assert hello.auth_response == auth.scramble_native(PW, c.nonce)
        if request.plugin_name == "mysql_old_password":
            request_ = AuthSwitchRequest("mysql_old_password", c.nonce[:8] + b"\0")
        else:
            request_ = request
        c.send(request_)
        notes["answer"] = c.recv_packet().value.data
        _proceed(c, notes)
    return script


WEAK = {
    "old-password-lone-fe": AuthSwitchRequest(None),
    "old-password-named": AuthSwitchRequest("mysql_old_password", b""),
    "clear-text": AuthSwitchRequest("mysql_clear_password", b""),
    "dialog-pam": AuthSwitchRequest("dialog", b"\x05Password: "),
}


@pytest.mark.parametrize("name", list(WEAK))
def test_weak_switch_is_refused(name: str) -> None:
    notes: dict[str, Any] = {}
    with WeakServer(_switch(WEAK[name], notes)) as srv:
        error, _ = _login(srv.port)
    c = srv.join()
    assert error is not None and "--insecure-auth" in error and "\n" not in error
    assert "answer" not in notes
    _assert_nothing_sent(c)


@pytest.mark.parametrize("name", list(WEAK))
def test_weak_switch_with_insecure_auth_proceeds(name: str) -> None:
    notes: dict[str, Any] = {}
    with WeakServer(_switch(WEAK[name], notes)) as srv:
        _login(srv.port, insecure_auth=True)
    c = srv.join()
    if name.startswith("old-password"):
        assert notes["answer"] == auth.scramble_323(PW, c.nonce[:8]) + b"\0"
    else:
        assert notes["answer"] == PW + b"\0"
    assert notes["next"] == "com_query"


def test_cli_refusal_is_one_line_and_the_password_is_never_on_the_command_line() -> None:
    """``binlogscope live`` with MYSQL_PWD: the refusal is one stderr line, exit 1; the
    process's command line (``ps``, /proc/PID/cmdline) never holds the password."""
    go = threading.Event()
    notes: dict[str, Any] = {}

    def script(c: WeakConnection) -> None:
        go.wait(20)  # the test reads the client's /proc/PID/cmdline meanwhile
        _sha2_full(notes)(c)

    env = {**os.environ, "MYSQL_PWD": PASSWORD,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    with WeakServer(script) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "binlogscope", "live", "--host", "127.0.0.1", "--port",
             str(srv.port), "--user", "u", "--json", "--non-blocking", "--no-reconnect",
             "--start", "mysql-bin.000001:4"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while srv.conn is None and time.monotonic() < deadline:
                time.sleep(0.05)
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            ps = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(proc.pid)],
                                capture_output=True, text=True).stdout
        finally:
            go.set()
        out, err = proc.communicate(timeout=60)
    c = srv.join()
    assert b"binlogscope" in cmdline and PW not in cmdline and PASSWORD not in ps
    assert proc.returncode == 1
    lines = err.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("binlogscope: error: ")
    assert "--get-server-public-key" in lines[0]
    assert PW not in out + err and PW.hex().encode() not in out + err
    _assert_nothing_sent(c)


# ---------------------------------------------------------------------------- packet size
def test_hostile_packet_size_is_one_error_not_unbounded_buffering() -> None:
    """After the login the server announces a 16 MiB packet and keeps sending: the client
    stops at --max-packet-size (1 MiB here) with one clear error."""
    notes: dict[str, Any] = {}

    def script(c: WeakConnection) -> None:
        c.greet("mysql_native_password")
        c.recv_packet()
        c.send(OkPacket())
        c.recv_packet()  # the first setup query; its "reply" never ends
        c.sock.sendall(b"\xff\xff\xff\x01")
        block = bytes(1 << 16)
        sent = 0
        try:
            while sent < 256 << 20:
                c.sock.sendall(block)
                sent += len(block)
        except OSError:
            pass
        notes["sent"] = sent
        raise ClientClosedError

    with WeakServer(script) as srv:
        t0 = time.monotonic()
        error, _ = _login(srv.port, max_packet_size=1 << 20)
        took = time.monotonic() - t0
    srv.join()
    assert error is not None and "--max-packet-size" in error and "1048576" in error
    assert notes["sent"] < 32 << 20 and took < 30


def test_packet_size_option_parsing(tmp_path: Path) -> None:
    assert DEFAULT_MAX_PACKET == 1 << 30 == ConnectionOptions().max_packet_size
    assert parse_size("64K") == 65536 and parse_size("16m") == 16 << 20
    assert parse_size("1G") == 1 << 30 and parse_size("1048576") == 1 << 20
    for bad in ("", "x", "12Q", "1K", "8G", "-1"):
        with pytest.raises(ValueError):
            parse_size(bad)
    f = tmp_path / "my.cnf"
    f.write_text("[client]\nmax_allowed_packet=64M\nget-server-public-key\n"
                 "[binlogscope]\ninsecure-auth=0\n")
    o = resolve_options(defaults_file=str(f), env={}, prompt=False)
    assert o.max_packet_size == 64 << 20 and o.get_server_public_key and not o.insecure_auth
    bad_key = tmp_path / "not-a-key.pem"
    bad_key.write_text("hello")
    with pytest.raises(OptionFileError, match="not a PEM public key"):
        resolve_options(env={}, cli={"server_public_key_path": str(bad_key)}, prompt=False)


def test_dialog_questions_after_the_first_come_without_a_prefix() -> None:
    """MariaDB's dialog plugin (PAM): the first question in the switch request, the next as a
    bare packet; password questions are answered (with --insecure-auth here, no TLS), any
    other question ends the login with one line."""
    notes: dict[str, Any] = {}

    def script(c: WeakConnection) -> None:
        c.greet("mysql_native_password")
        c.recv_packet()
        c.send(AuthSwitchRequest("dialog", b"\x04Password: "))
        notes["first"] = c.recv_packet().value.data
        c.sock.sendall(c.session.send_raw(b"\x05One more time: "))
        notes["second"] = c.recv_packet().value.data
        c.sock.sendall(c.session.send_raw(b"\x03Your pet's name? "))
        c.recv_packet()

    with WeakServer(script) as srv:
        error, _ = _login(srv.port, insecure_auth=True)
    srv.join()
    assert notes["first"] == notes["second"] == PW + b"\0"
    assert error is not None and "not the password" in error
