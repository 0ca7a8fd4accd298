"""``live``'s connection states as items (issue 29 item 4), on a real MariaDB of the module's own
(it is paused with SIGSTOP: other tests' servers are not disturbed): an idle server with
``--heartbeat 1`` gives ``idle`` (heartbeats arriving, no events), a write ``streaming``, the
server paused ``stalled`` (no byte for over two heartbeat periods: stalled or half-open) and,
once it runs again, ``recovered`` with the silence's length; the dump connection killed on the
server gives a ``reconnect`` item. Each is one ``--json`` shape and one ``--brief`` line (the
one renderer), stamped with arrival times."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.items import LiveSettings
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import run_live
from binlogscope.render.shapes import live_item_json
from binlogscope.render.text import live_item_text
from tests.mariadb_server import MariaDB, sql
from tests.mock_master.conftest import private_mariadb

pytestmark = [pytest.mark.mysql, pytest.mark.network]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    with private_mariadb(tmp_path_factory, "live_states") as db:
        yield db


def _wait(cond: Any, limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_idle_stalled_recovered_and_reconnect_are_items(server: MariaDB) -> None:
    db = server
    c = db.connect()
    c.cursor().execute("CREATE TABLE IF NOT EXISTS st (id INT PRIMARY KEY)")
    settings = LiveSettings(conn=ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                                   password=db.repl_password,
                                                   ssl_mode="DISABLED"),
                            heartbeat=1, stream_tree=False)
    items: list[SourceItem] = []
    states: list[dict[str, Any]] = []
    marks: dict[str, float] = {}
    finished = threading.Event()
    failure: list[str] = []

    def consume(item: SourceItem) -> None:
        items.append(item)
        if item.kind == "health" and item.health and "state" in item.health:
            states.append(item.health)

    def seen(state: str, after: int = 0) -> bool:
        return any(s["state"] == state for s in states[after:])

    def control() -> None:
        try:
            if not _wait(lambda: seen("idle"), 20):
                failure.append("no idle")
                return
            n = len(states)
            marks["insert"] = time.time()
            c.cursor().execute("INSERT INTO st VALUES (1)")
            if not _wait(lambda: seen("streaming", n) and seen("idle", n + 1), 20):
                failure.append("no streaming then idle after a write")
                return
            n = len(states)
            marks["stop"] = time.time()
            os.kill(db.pid, signal.SIGSTOP)
            try:
                ok = _wait(lambda: seen("stalled", n), 15)
                time.sleep(0.3)
            finally:
                marks["cont"] = time.time()
                os.kill(db.pid, signal.SIGCONT)
            if not ok or not _wait(lambda: seen("recovered", n), 15):
                failure.append("no stalled then recovered")
                return
            n = len(states)
            dumps = [r[0] for r in sql(db, "SHOW PROCESSLIST") if r[4] == "Binlog Dump"]
            assert dumps
            marks["kill"] = time.time()
            c.cursor().execute(f"KILL {int(dumps[0])}")
            if not _wait(lambda: seen("reconnect", n) and seen("idle", n + 1), 30):
                failure.append("no reconnect then idle")
        except Exception as exc:  # (the run is stopped; the test fails with it)
            failure.append(repr(exc))
        finally:
            finished.set()

    threading.Thread(target=control, daemon=True).start()
    rep = run_live(settings, consume, should_stop=finished.is_set)
    c.close()
    assert not failure, (failure, [s["state"] for s in states])
    assert rep.error is None and rep.reconnects == 1, rep.error
    order = [s["state"] for s in states]
    first = {st: order.index(st) for st in ("idle", "stalled", "recovered", "reconnect")}
    assert first["idle"] < first["stalled"] < first["recovered"] < first["reconnect"], order
    # each change once: never the same state twice in a row
    assert all(a != b for a, b in pairwise(order)), order
    by = {s["state"]: s for s in states}
    stalled, recovered = next(s for s in states if s["state"] == "stalled"), by["recovered"]
    # the silence began before the pause (the last heartbeat's bytes) and was told once it had
    # lasted over two periods; the recovery is the first arrival after SIGCONT
    assert marks["stop"] - 1.5 < stalled["since"] <= marks["stop"] + 0.05, (stalled, marks)
    assert stalled["seconds"] > 2 and stalled["time"] >= stalled["since"] + 2
    assert stalled["time"] < marks["cont"]
    assert recovered["since"] == stalled["since"] and recovered["time"] >= marks["cont"] - 0.05
    assert recovered["seconds"] >= marks["cont"] - marks["stop"] - 0.05
    streaming = next(s for s in states if s["state"] == "streaming" and s["time"] > marks["insert"])
    assert streaming["time"] - marks["insert"] < 5
    assert by["reconnect"]["time"] >= marks["kill"] and by["reconnect"]["attempt"] == 1
    # one shape, one renderer: the JSON line and the --brief line of every state item
    for item in items:
        if item.kind == "health" and item.health and "state" in item.health:
            h = item.health
            assert live_item_json(item) == {"kind": "health", **h}
            assert live_item_text(item, True) == [f"-- health: {h['text']}"]
            assert h["text"].startswith(h["state"]) or h["state"] == "reconnect"
    assert "stalled or half-open" in stalled["text"]


def test_live_json_and_brief_tell_an_idle_server(server: MariaDB, tmp_path: Any) -> None:
    """What a person sees: ``binlogscope live --heartbeat 1`` against the idle server, ended
    with SIGINT: ``--json`` has the ``idle`` item (after ``streaming``: the dump's start),
    ``--brief`` its line."""
    import json
    import subprocess
    import sys

    db = server
    env = {**os.environ, "MYSQL_PWD": db.repl_password, "HOME": str(tmp_path)}
    base = [sys.executable, "-m", "binlogscope", "live", "--host", db.host, "--port",
            str(db.port), "-u", db.repl_user, "--ssl-mode", "DISABLED", "--heartbeat", "1"]
    files = {mode: tmp_path / f"{mode}.out" for mode in ("json", "brief")}
    procs = {mode: subprocess.Popen([*base, f"--{mode}"], stdout=f.open("w"),
                                    stderr=subprocess.PIPE, text=True, env=env)
             for mode, f in files.items()}
    # (each line is written out within 0.1 s: wait for the idle one, however loaded the box)
    marks = {"json": '"state":"idle"', "brief": "-- health: idle"}
    _wait(lambda: all(marks[m] in f.read_text() for m, f in files.items()), 60)
    outs = {}
    for mode, p in procs.items():
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        assert p.returncode == 128 + signal.SIGINT, err
        outs[mode] = files[mode].read_text()
    states = [o for o in map(json.loads, outs["json"].splitlines())
              if o.get("kind") == "health" and "state" in o]
    assert [s["state"] for s in states][:2] == ["streaming", "idle"], states
    assert states[1]["heartbeat_period_s"] == 1 and states[1]["time"] > states[0]["time"]
    lines = [ln for ln in outs["brief"].splitlines() if ln.startswith("-- health: ")]
    assert lines[:2] == ["-- health: streaming: events arriving",
                         "-- health: idle: heartbeats arriving (every 1 s asked), no events"]
