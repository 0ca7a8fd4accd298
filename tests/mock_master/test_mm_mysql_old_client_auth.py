"""A client without CLIENT_PLUGIN_AUTH (the Node ``mysql`` driver family) against the MySQL
flavour: a caching_sha2_password account gets ERR 1251 (08004), as MySQL answers.

MySQL's source (mysql/mysql-server ``sql/auth/sql_authentication.cc``, read at 003d990cdf66;
no MySQL server here): ``parse_client_handshake_packet`` takes a client without
CLIENT_PLUGIN_AUTH as speaking mysql_native_password ("An old client is connecting");
``find_mpvio_user``, which it calls first, refuses an account whose plugin is not
mysql_native_password to such a client: ``my_error(ER_NOT_SUPPORTED_AUTH_MODE)`` ("user account
requires non-default plugin and the client is too old") - 1251, SQL state 08004, "Client does not
support authentication protocol requested by server; consider upgrading MySQL client" - before
any password is read. An unknown user's decoy account has the default plugin
(caching_sha2_password in 8.0), so it gets the same answer. The old mock sent AuthMoreData
("perform full authentication"), which such clients cannot read.

The client is written here with raw sockets (the Node driver is not installed): greeting in,
a HandshakeResponse41 with CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION and no
CLIENT_PLUGIN_AUTH out, carrying the mysql_native_password scramble, one reply read.
"""

from __future__ import annotations

import hashlib
import socket
import struct
from collections.abc import Callable

import pytest

from mock_master.history.builder import EventBuilder
from mock_master.scenario.scenarios import Scenario, StreamSource, User
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network

CLIENT_LONG_PASSWORD, CLIENT_LONG_FLAG, CLIENT_PROTOCOL_41 = 0x1, 0x4, 0x200
CLIENT_TRANSACTIONS, CLIENT_SECURE_CONNECTION = 0x2000, 0x8000
CLIENT_PLUGIN_AUTH = 0x80000
OLD_CLIENT_CAPS = (CLIENT_LONG_PASSWORD | CLIENT_LONG_FLAG | CLIENT_PROTOCOL_41
                   | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION)


def _read_packet(s: socket.socket) -> tuple[int, bytes]:
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    head = exact(4)
    return head[3], exact(int.from_bytes(head[:3], "little"))


def _native_scramble(password: bytes, nonce: bytes) -> bytes:
    h1 = hashlib.sha1(password).digest()
    h2 = hashlib.sha1(h1).digest()
    mix = hashlib.sha1(nonce + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, mix, strict=True))


def _old_client_login(host: str, port: int, user: str, password: str) -> tuple[int, bytes]:
    """(sequence id, payload) of the server's answer to our HandshakeResponse41."""
    with socket.create_connection((host, port), timeout=10) as s:
        _, g = _read_packet(s)
        assert g[0] == 10
        p = g.index(b"\0", 1) + 1 + 4  # server version, connection id
        nonce = g[p:p + 8]
        p += 8 + 1  # filler
        p += 2 + 1 + 2 + 2  # capabilities (low), charset, status, capabilities (high)
        auth_len = g[p]
        p += 1 + 10
        nonce += g[p:p + max(13, auth_len - 8) - 1]
        scramble = _native_scramble(password.encode(), nonce)
        body = (struct.pack("<IIB23x", OLD_CLIENT_CAPS, 1 << 24, 33) + user.encode() + b"\0"
                + bytes([len(scramble)]) + scramble)
        s.sendall(len(body).to_bytes(3, "little") + b"\x01" + body)
        return _read_packet(s)


def _mock(serve: Callable[[Scenario], ThreadedMockMaster]) -> ThreadedMockMaster:
    stream = EventBuilder(flavor="mysql").build()
    return serve(Scenario(flavor="mysql", server_version="8.0.45",
                          sources=[StreamSource(stream)],
                          users=[User("sha", "s3cret", "caching_sha2_password"),
                                 User("native", "s3cret", "mysql_native_password")]))


def _err(payload: bytes) -> tuple[int, str, str]:
    assert payload[0] == 0xFF, payload
    return (int.from_bytes(payload[1:3], "little"), payload[4:9].decode(),
            payload[9:].decode())


TEXT = ("Client does not support authentication protocol requested by server; consider "
        "upgrading MySQL client")


def test_a_caching_sha2_account_refuses_a_plugin_less_client_with_1251(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario)
    seq, reply = _old_client_login(mm.host, mm.port, "sha", "s3cret")
    assert seq == 2
    assert _err(reply) == (1251, "08004", TEXT)
    assert any("1251" in e for c in mm.log.clients for e in c.errors)


def test_an_unknown_user_gets_the_default_plugins_answer(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario)
    assert _err(_old_client_login(mm.host, mm.port, "nobody", "x")[1])[0] == 1251


def test_a_native_account_logs_the_same_client_in(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    """The same raw client is well formed: a mysql_native_password account accepts it."""
    mm = _mock(serve_scenario)
    seq, reply = _old_client_login(mm.host, mm.port, "native", "s3cret")
    assert (seq, reply[0]) == (2, 0x00)
    seq, reply = _old_client_login(mm.host, mm.port, "native", "wrong")
    assert _err(reply)[:2] == (1045, "28000")
