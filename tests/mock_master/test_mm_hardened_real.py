"""The mock master's limits next to a real MariaDB's: the same bare-socket client against both,
the server's packets compared (max_allowed_packet before and after login, connect_timeout,
wait_timeout, a second dump with the same server_id, COM_REGISTER_SLAVE alone)."""

from __future__ import annotations

import shutil
import struct
import time
from collections.abc import Iterator

import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.ci_support import unavailable
from tests.mariadb_server import ServerStartError, start, stop
from tests.mock_master.test_mm_hardened import Raw

pytestmark = [pytest.mark.mysql, pytest.mark.network]

LIMITS = {"max_allowed_packet": 1 << 20, "connect_timeout": 2, "wait_timeout": 2}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    """(real, mock): a MariaDB started with small limits, and the mock serving copies of its
    binlog files with the same limits."""
    d = tmp_path_factory.mktemp("mm-limits")
    args = " ".join(f"--{k.replace('_', '-')}={v}" for k, v in LIMITS.items())
    try:
        server = start(d, extra_env={"MARIADB_EXTRA_ARGS": args})
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO t VALUES (1), (2)")
        conn.close()
        copy = tmp_path_factory.mktemp("mm-limits-binlogs")
        files = []
        for f in server.binlog_files():
            shutil.copy(f, copy / f.name)
            files.append(copy / f.name)
        mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(list(files))],
                                         variables=dict(LIMITS))).start()
        try:
            yield (server.host, server.port), (mm.host, mm.port)
        finally:
            mm.stop()
    finally:
        stop(d)


def _both(servers: tuple[tuple[str, int], tuple[str, int]]) -> list[tuple[str, int]]:
    return [servers[0], servers[1]]


def test_max_allowed_packet_as_the_server(servers: tuple[tuple[str, int], tuple[str, int]]
                                          ) -> None:
    seen = []
    for addr in _both(servers):
        c = Raw(addr)
        assert c.packet() is not None
        # the header alone: the server answers it at once (and leaves no unread bytes, whose
        # RST on close could overtake its answer)
        c.s.sendall((1 << 20).to_bytes(3, "little") + b"\x01")
        pre = c.packet()
        pre_closed = c.closed(5)
        c = Raw(addr)
        c.login()
        c.s.sendall((1 << 20).to_bytes(3, "little") + b"\x00")
        post = c.packet()
        seen.append((pre, pre_closed, post, c.closed(5)))
    assert seen[0] == seen[1]
    assert seen[0][0] is not None and seen[0][0][1][:3] == b"\xff\x81\x04"  # 1153


def test_timeouts_as_the_server(servers: tuple[tuple[str, int], tuple[str, int]]) -> None:
    seen = []
    for addr in _both(servers):
        login = Raw(addr)
        idle = Raw(addr)
        t0 = time.monotonic()
        assert login.packet() is not None
        idle.login()
        login.s.settimeout(4)  # the login never comes: closed without a packet
        got = login.packet()
        t_login = time.monotonic() - t0
        idle.s.settimeout(4)  # no command for wait_timeout: closed without a packet
        seen.append((got, 1.5 < t_login < 4, idle.packet(), 1.5 < time.monotonic() - t0 < 6))
    assert seen[0] == seen[1] == (None, True, None, True)


@pytest.mark.parametrize("gtid", [False, True], ids=["file_pos", "gtid"])
def test_same_server_id_as_the_server(servers: tuple[tuple[str, int], tuple[str, int]],
                                      gtid: bool) -> None:
    setup = (b"SET @slave_connect_state = '0-1-1'",) if gtid else ()
    seen = []
    for addr in _both(servers):
        old = Raw(addr)
        old.login()
        old.dump(77, setup=setup, name=b"" if gtid else b"mysql-bin.000001")
        n = len(old.until_quiet(0.5))
        reg = Raw(addr)
        reg.login()
        ok = reg.command(b"\x15" + struct.pack("<IBBBHII", 77, 0, 0, 0, 0, 0, 0))
        after_register = old.until_quiet(0.3)
        new = Raw(addr)
        new.login()
        new.dump(77, setup=setup, name=b"" if gtid else b"mysql-bin.000001")
        got = old.until_quiet(1.5)
        seen.append((ok is not None and ok[1][0], after_register,
                     [(seq - n, p) for seq, p in got], old.closed(3)))
        new.s.close()
    assert seen[0] == seen[1]
    assert seen[0][2][0][1][:3] == b"\xff\xd4\x0f"  # ERR 4052
