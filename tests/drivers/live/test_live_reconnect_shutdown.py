"""A reconnect that meets a server shutting down (ERR 1053 ER_SERVER_SHUTDOWN in the greeting
or as the answer to the login) is retried with the reconnect backoff instead of ending the
run; the same ERR on the first connect stays one fatal line.

A small gate in front of the mock master decides per connection: relay, or answer ERR 1053.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from mock_master.scenario.faults import Action
from mock_master.scenario.scenarios import BinlogSource, Scenario

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"
SHUTDOWN = "Server shutdown in progress"

pytestmark = pytest.mark.network


def _err(seq: int, code: int = 1053, msg: str = SHUTDOWN) -> bytes:
    payload = b"\xff" + struct.pack("<H", code) + b"#08S01" + msg.encode()
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def _read_packet(s: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    n = int.from_bytes(head[:3], "little")
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            raise ConnectionError("closed")
        body += chunk
    return head + body


class Gate:
    """Connection i (from 1) is handled by plan[i] ('relay', 'greeting', 'auth'), else relayed."""

    def __init__(self, upstream: tuple[str, int], plan: dict[int, str]) -> None:
        self.upstream, self.plan = upstream, plan
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.lsock.getsockname()[1])
        self.count = 0
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            self.count += 1
            how = self.plan.get(self.count, "relay")
            threading.Thread(target=self._handle, args=(c, how), daemon=True).start()

    def _handle(self, c: socket.socket, how: str) -> None:
        try:
            if how == "greeting":
                c.sendall(_err(0))
                return
            up = socket.create_connection(self.upstream)
            if how == "auth":
                c.sendall(_read_packet(up))  # the server's greeting
                _read_packet(c)  # the client's handshake response
                c.sendall(_err(2))
                up.close()
                return

            def pump(a: socket.socket, b: socket.socket) -> None:
                try:
                    while data := a.recv(65536):
                        b.sendall(data)
                except OSError:
                    pass
                finally:
                    for s in (a, b):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass

            t = threading.Thread(target=pump, args=(up, c), daemon=True)
            t.start()
            pump(c, up)
            t.join(5)
            up.close()
        except OSError:
            pass
        finally:
            c.close()

    def close(self) -> None:
        self._stop = True
        self.lsock.close()


@pytest.fixture
def gate_factory(mock_master: Callable[..., Any], tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[int, str]], Gate]]:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    gates: list[Gate] = []

    def make(plan: dict[int, str]) -> Gate:
        mm = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
            Action("disconnect_after_event", at=25)]))
        g = Gate((mm.host, mm.port), plan)
        gates.append(g)
        return g

    yield make
    for g in gates:
        g.close()


def _file_positions() -> list[int]:
    buf = io.StringIO()
    main(["file", "--json", str(CAPTURE)], out=buf, err=io.StringIO())
    return [int(o["log_pos"]) for o in map(json.loads, buf.getvalue().splitlines())
            if int(o.get("offset", 0)) >= 4]


def _live(port: int, *args: str) -> tuple[int, list[int], str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", "--host", "127.0.0.1", "--port", str(port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--start", "mysql-bin.000001:4", "--non-blocking",
               *args], out=out, err=err)
    pos = [int(o["log_pos"]) for o in map(json.loads, out.getvalue().splitlines())
           if o.get("kind") == "binlog_event" and o.get("direction") == "server"
           and o.get("log_pos") and not int(o.get("flags") or 0) & 0x20]
    return rc, pos, err.getvalue()


@pytest.mark.parametrize("where", ["greeting", "auth"])
def test_reconnect_retries_a_server_shutting_down(
        gate_factory: Callable[[dict[int, str]], Gate], where: str) -> None:
    # connection 1 streams until the source drops it; 2 and 3 meet the shutdown; 4 goes on
    g = gate_factory({2: where, 3: where})
    rc, pos, err = _live(g.port)
    assert rc == 0, err
    assert g.count == 4, err
    assert err.count("1053") == 2 and SHUTDOWN in err, err  # each retry noted
    assert "reconnect 3/" in err, err
    assert pos == _file_positions()  # every event once, in order


def test_shutdown_on_the_first_connect_is_one_fatal_line(
        gate_factory: Callable[[dict[int, str]], Gate]) -> None:
    g = gate_factory({1: "auth"})
    rc, _, err = _live(g.port)
    assert rc == 1 and err.count("\n") == 1, err
    assert "ERR 1053" in err and SHUTDOWN in err and g.count == 1


def test_no_reconnect_keeps_it_fatal(gate_factory: Callable[[dict[int, str]], Gate]) -> None:
    g = gate_factory({2: "greeting"})
    rc, _, err = _live(g.port, "--no-reconnect")
    assert rc == 1 and g.count == 1, err  # the dropped dump itself ends a --no-reconnect run


def test_reconnect_retries_connections_refused_during_a_restart(
        mock_master: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    # the source closes every connection before event 25 and refuses new ones for 1.2 s
    mm = mock_master(Scenario(sources=[BinlogSource([CAPTURE])], actions=[
        Action("restart", at=25, args={"seconds": 1.2})]))
    rc, pos, err = _live(mm.port)
    assert rc == 0, err
    assert "refused" in err and "reconnect 2/" in err, err
    assert pos == _file_positions()
