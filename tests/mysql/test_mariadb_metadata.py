"""MariaDB's extended and cached result-set metadata, decoded from a real conversation.

The `mariadb` command-line client (Connector/C) agrees MARIADB_CLIENT_EXTENDED_METADATA with a
MariaDB server; every ColumnDefinition41 then carries extended type information after
``org_name``. A small relay records both directions of that client's session with the test's
own mariadbd; an OBSERVER session decodes it and must read every column definition right
(name, collation, type, the ``json`` format name) - without the MariaDB capabilities it would
read the extended metadata as the fixed fields.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading

import pytest

from binlogscope.session import Role, Session
from binlogscope.session.events import Peer
from binlogscope.wire.results import ColumnDefinition41

pytestmark = pytest.mark.mysql


def _relay(upstream: tuple[str, int]) -> tuple[int, list[tuple[Peer, bytes]], threading.Thread]:
    """Listen on a free port; relay one connection to ``upstream``, recording every chunk."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    log: list[tuple[Peer, bytes]] = []
    lock = threading.Lock()

    def pump(src: socket.socket, dst: socket.socket, who: Peer) -> None:
        while True:
            data = src.recv(65536)
            with lock:
                log.append((who, data))
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            dst.sendall(data)

    def run() -> None:
        client, _ = lsock.accept()
        server = socket.create_connection(upstream)
        t = threading.Thread(target=pump, args=(server, client, Peer.SERVER), daemon=True)
        t.start()
        pump(client, server, Peer.CLIENT)
        t.join(10)
        client.close()
        server.close()
        lsock.close()

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return lsock.getsockname()[1], log, th


def test_extended_metadata_of_a_real_mariadb_client(mariadb) -> None:  # type: ignore[no-untyped-def]
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.fail("the mariadb client is installed with the server (scripts/install-deps.sh)")
    port, log, th = _relay((mariadb.host, mariadb.port))
    query = ("SELECT JSON_OBJECT('a', 1) AS j, CAST(7 AS UNSIGNED) AS u, "
             "_latin1'x' AS l, INET6_ATON('::1') AS b")
    res = subprocess.run(
        [client, "--protocol=TCP", "-h", "127.0.0.1", "-P", str(port), "-u", mariadb.user,
         f"-p{mariadb.password}", "--skip-ssl", "-N", "-B", "-e", query],
        capture_output=True, text=True, timeout=60)
    th.join(20)
    assert res.returncode == 0, res.stderr
    session = Session(Role.OBSERVER)
    columns: list[ColumnDefinition41] = []
    errors: list[str] = []
    for who, data in log:
        session.receive_data(data, who)
        for ev in session.events():
            value = getattr(ev, "value", None)
            if isinstance(value, ColumnDefinition41):
                columns.append(value)
            err = getattr(ev, "error", None)
            if err:
                errors.append(str(err))
    assert session.server_mariadb_capabilities & 0x08, "the server offers extended metadata"
    assert session.capabilities >> 32 & 0x08, "the client agreed it"
    assert not errors
    by_name = {c.name: c for c in columns}
    assert set(by_name) == {"j", "u", "l", "b"}
    assert (1, "json") in by_name["j"].extended
    assert by_name["u"].flags & 0x20  # UNSIGNED_FLAG
    assert by_name["u"].type in (3, 8)  # LONG or LONGLONG
    # text comes in the connection's character set (character_set_results), a real collation
    assert by_name["l"].character_set in (8, 33, 45, 46, 224) and by_name["l"].type == 253
    assert by_name["b"].character_set == 63  # binary
    for c in columns:
        assert c.catalog == "def"
