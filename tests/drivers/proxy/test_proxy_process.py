"""The proxy's relay process (drivers/proxy/process.py): a port that cannot be listened on is
one clear ProxyError; a relay process that dies is reported by ``batches()`` after the items of
what it relayed before - never a hang; ``stop()`` without a decoder ends the relay at once even
while a client is sending; a stop while decoding still decodes what was relayed; a caller's
script without a main guard is not run again by the relay process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ProxyError, ReplicationProxy


@pytest.fixture
def upstream() -> Iterator[tuple[str, int]]:
    """A TCP server that accepts and reads everything it is sent (stands in for nothing the
    decoder looks at: these tests are about the process around the relay)."""
    srv = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve(c: socket.socket) -> None:
        with c:
            c.sendall(b"hello from upstream")
            while c.recv(1 << 16):
                pass

    def accept() -> None:
        srv.settimeout(0.2)
        while not done.is_set():
            try:
                c, _ = srv.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[:2]
    done.set()
    t.join(5)
    srv.close()


def test_cannot_listen_is_one_line() -> None:
    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        proxy = ReplicationProxy(("127.0.0.1", port), ("127.0.0.1", 1))
        with pytest.raises(ProxyError) as exc:
            proxy.start()
        assert str(exc.value).startswith(f"cannot listen on 127.0.0.1:{port}: ")
        assert "\n" not in str(exc.value)
    finally:
        busy.close()


def test_a_dead_relay_is_reported_not_a_hang(upstream: tuple[str, int]) -> None:
    proxy = ReplicationProxy(("127.0.0.1", 0), upstream)
    port = proxy.start()
    items: list[SourceItem] = []
    error: list[str] = []

    def decode() -> None:
        try:
            for batch in proxy.batches():  # (no stop: only the relay's death ends it)
                items.extend(batch)
        except ProxyError as exc:
            error.append(str(exc))

    t = threading.Thread(target=decode, daemon=True)
    t.start()
    with socket.create_connection(("127.0.0.1", port)) as c:
        assert c.recv(100) == b"hello from upstream"
        deadline = time.monotonic() + 10
        while not items and time.monotonic() < deadline:
            time.sleep(0.05)
        relay = proxy._relay
        assert relay is not None and relay.proc is not None and relay.proc.pid is not None
        os.kill(relay.proc.pid, signal.SIGKILL)
        t.join(10)
    assert not t.is_alive()
    assert error and "relay process died (killed by SIGKILL)" in error[0], error
    assert "\n" not in error[0]
    assert [i.kind for i in items[:1]] == ["flow"]  # what came before its death was decoded
    proxy.stop()


def test_stop_without_a_decoder_is_prompt(upstream: tuple[str, int]) -> None:
    proxy = ReplicationProxy(("127.0.0.1", 0), upstream)
    port = proxy.start()
    c = socket.create_connection(("127.0.0.1", port))
    sent = 0
    chunk = b"x" * (1 << 20)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:  # MBs relayed and waiting for a decoder nobody runs
        c.sendall(chunk)
        sent += len(chunk)
    t0 = time.monotonic()
    proxy.stop()
    assert time.monotonic() - t0 < 5
    relay = proxy._relay
    assert relay is not None and relay.proc is not None and relay.proc.exitcode is not None
    c.settimeout(10)
    try:
        while c.recv(1 << 16):  # the relayed connection was closed
            pass
    except ConnectionResetError:
        pass
    c.close()
    assert sent > 0


def test_stop_while_decoding_decodes_what_was_relayed(upstream: tuple[str, int]) -> None:
    proxy = ReplicationProxy(("127.0.0.1", 0), upstream)
    port = proxy.start()
    with socket.create_connection(("127.0.0.1", port)) as c:
        assert c.recv(100) == b"hello from upstream"
        c.sendall(b"\x01\x00\x00\x00\x0e")  # one COM_PING-shaped client packet
    time.sleep(0.5)  # (relayed by now)
    stop = threading.Event()
    stop.set()  # stopped before the decoder even started: the relayed bytes still come
    items = [i for batch in proxy.batches(stop=stop.is_set) for i in batch]
    kinds = [i.kind for i in items]
    assert kinds[0] == "flow"
    assert any(i.kind == "note" and "closed the connection (FIN)" in (i.text or "")
               for i in items), kinds
    relay = proxy._relay
    assert relay is not None and relay.proc is not None and relay.proc.exitcode == 0


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """The relay process does not run its parent's main script again (multiprocessing's
    spawn/forkserver would, as ``__mp_main__``)."""
    script = tmp_path / "use_proxy.py"
    script.write_text(
        "from binlogscope.drivers.proxy.relay import ReplicationProxy\n"
        "print('started', flush=True)\n"
        "p = ReplicationProxy(('127.0.0.1', 0), ('127.0.0.1', 1))\n"
        "p.start()\n"
        "p.stop()\n"
        "print('done', flush=True)\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "started\ndone\n", (res.stdout, res.stderr)


def _descendants(pid: int) -> list[int]:
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            for child in f.read().split():
                out += [int(child), *_descendants(int(child))]
    return out


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's SCHED_IDLE only")
def test_the_decoder_yields_the_cpu_the_relay_does_not(upstream: tuple[str, int]) -> None:
    """``binlogscope proxy``: once its relay process runs, the decoding process is in the idle
    scheduling class (any ordinary task preempts it), the relay process is not."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[3] / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "proxy", "--listen",
                             "127.0.0.1:0", "--upstream", f"{upstream[0]}:{upstream[1]}",
                             "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "listening on" in line, line
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        children = _descendants(proc.pid)  # (the fork server and the relay it forked)
        assert len(children) >= 2, children
        assert [os.sched_getscheduler(p) for p in children] == [os.SCHED_OTHER] * len(children)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
