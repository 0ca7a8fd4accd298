"""``live --lag-every``: the server's head (SHOW MASTER STATUS on a control connection) against
what the consumer consumed, on a real MariaDB (issue 29 item 1). A reader paused while the
server writes shows a growing lag, then 0 once it caught up; the heads equal the server's own
SHOW MASTER STATUS at the same moment."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.items import LiveSettings
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import run_live
from tests.mariadb_server import sql

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def _status(db: Any) -> tuple[str, int]:
    row = sql(db, "SHOW MASTER STATUS")[0]
    return str(row[0]), int(row[1])


def test_a_paused_reader_falls_behind_and_catches_up(mariadb: Any) -> None:
    db = mariadb
    c = db.connect()
    c.cursor().execute("CREATE TABLE IF NOT EXISTS lag_t (id INT AUTO_INCREMENT PRIMARY KEY, "
                       "v VARCHAR(2000))")
    settings = LiveSettings(conn=ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                                   password=db.repl_password,
                                                   ssl_mode="DISABLED"),
                            heartbeat=1, lag_every=0.2, store_size=16, reconnect=False,
                            stream_tree=False)
    health: list[dict[str, Any]] = []
    written = threading.Event()
    paused_once: list[bool] = []
    settled: list[tuple[str, int]] = []
    t0 = time.monotonic()

    def writer() -> None:
        w = db.connect()
        cur = w.cursor()
        for i in range(300):
            cur.execute("INSERT INTO lag_t (v) VALUES (%s)", ("x" * 1500 + str(i),))
            time.sleep(0.003)
        w.close()
        written.set()

    def consume(item: SourceItem) -> None:
        if item.kind == "health":
            assert item.health is not None
            if "state" not in item.health:  # (the lag samples; not the state changes)
                health.append(item.health)
            return
        ev = item.event
        bev = getattr(ev, "binlog_event", None)
        if bev is not None and bev.type_name.startswith("WRITE_ROWS") and not paused_once:
            paused_once.append(True)  # the reader stops here while the server writes on
            assert written.wait(60)
            time.sleep(1.5)  # several polls while nothing is consumed

    def done() -> bool:
        if time.monotonic() - t0 > 90:
            return True
        polled = [h for h in health if h["source"] == "status"]
        if not written.is_set() or not polled:
            return False
        last = polled[-1]  # (a heartbeat's sample comes after the polls it brought out)
        if last["bytes_behind"] == 0:
            now = _status(db)
            if last["head"] == f"{now[0]}:{now[1]}":  # the server's own answer, this moment
                settled.append(now)
                return True
        return False

    threading.Thread(target=writer, daemon=True).start()
    rep = run_live(settings, consume, should_stop=done)
    assert rep.error is None, rep.error
    assert paused_once and settled, health[-5:]
    polled = [h for h in health if h["source"] == "status"]
    behind = [h["bytes_behind"] or 0 for h in polled]
    # while paused the head ran away from what was consumed: growing, hundreds of KB
    peak = behind.index(max(behind))
    assert max(behind) > 300 * 1500 // 2, behind
    rising = behind[:peak + 1]
    assert len([b for b in rising if b > 0]) >= 3, behind
    assert all(a <= b for a, b in zip(rising[-4:], rising[-3:], strict=False)), behind
    assert behind[-1] == 0  # caught up
    consumed = {h["consumed"] for h in polled[:peak + 1] if h["bytes_behind"]}
    assert len(consumed) <= 2, consumed  # the paused reader's position stood still


def test_live_json_health_items_of_an_idle_server(mariadb: Any) -> None:
    """An idle session: the health items ``live --json --lag-every`` writes (the one JSON
    shape, render.shapes.live_item_json) say caught up, with the head SHOW MASTER STATUS gives;
    the dump's start (its fake ROTATE) is what was consumed."""
    from binlogscope.render.shapes import live_item_json

    db = mariadb
    before = _status(db)
    settings = LiveSettings(conn=ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                                   password=db.repl_password,
                                                   ssl_mode="DISABLED"),
                            heartbeat=0.5, lag_every=0.2, reconnect=False, stream_tree=False)
    items: list[dict[str, Any]] = []

    def consume(item: SourceItem) -> None:
        obj = live_item_json(item)
        if obj is not None:
            items.append(obj)

    t0 = time.monotonic()
    rep = run_live(settings, consume, should_stop=lambda: time.monotonic() - t0 > 2.5)
    assert rep.error is None, rep.error
    assert _status(db) == before  # nothing was written meanwhile
    # (the lag samples; the connection's state changes are health items with a "state")
    health = [o for o in items if o.get("kind") == "health" and "state" not in o]
    assert len([h for h in health if h["source"] == "status"]) >= 3, health
    assert any(h["source"] == "heartbeat" for h in health), health
    for h in health:
        assert h["head"] == h["consumed"] == f"{before[0]}:{before[1]}", h
        assert (h["files_behind"], h["bytes_behind"]) == (0, 0), h


def test_the_tuis_live_rows_and_conversations_view_show_the_lag(mariadb: Any) -> None:
    """The TUI's live source: ``--lag-every`` answers are HEALTH rows, and the conversations
    view (``S``) gives the lag at the end with the head SHOW MASTER STATUS gives."""
    from binlogscope.inspector.conversations import conversations
    from binlogscope.inspector.sources.live import LiveSource

    db = mariadb
    before = _status(db)
    settings = LiveSettings(conn=ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                                   password=db.repl_password,
                                                   ssl_mode="DISABLED"),
                            heartbeat=0.3, lag_every=0.1, reconnect=False)
    src = LiveSource(settings)
    t0 = time.monotonic()
    src.run(lambda: time.monotonic() - t0 > 2.5)
    rows = [src.row(i) for i in range(len(src))]
    health = [r for r in rows if r.kind == "health"]
    assert health and all(r.event_type == "HEALTH" for r in health)
    assert any("(status)" in r.summary for r in health)
    assert _status(db) == before
    dumps = [c for c in conversations(src) if c.dump]
    assert len(dumps) == 1
    text = "\n".join(dumps[0].lines())
    assert f"lag       at the end caught up: server head {before[0]}:{before[1]}" in text, text


def test_export_live_writes_the_health_timeline(mariadb: Any, tmp_path: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``export --live --semi-sync --lag-every``: the ``health`` table holds the dump, each
    ACK with its latency (equal to the packets table's event -> ACK arrival times), the
    heartbeats and the polled lag, whose last head is SHOW MASTER STATUS's."""
    import io
    import os
    import signal

    import pyarrow.parquet as pq

    from binlogscope.cli.main import main

    db = mariadb
    monkeypatch.setenv("MYSQL_PWD", db.repl_password)
    monkeypatch.setenv("HOME", str(tmp_path))
    c = db.connect()
    c.cursor().execute("CREATE TABLE IF NOT EXISTS lag_e (id INT PRIMARY KEY, v INT)")

    def writer() -> None:
        time.sleep(1.0)
        w = db.connect()
        for i in range(5):
            w.cursor().execute("REPLACE INTO lag_e VALUES (%s, %s)", (i, i))
        w.close()

    threading.Thread(target=writer, daemon=True).start()
    timer = threading.Timer(3.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    ds = tmp_path / "ds"
    err = io.StringIO()
    try:
        rc = main(["export", "--live", "--host", db.host, "--port", str(db.port), "-u",
                   db.repl_user, "--ssl-mode", "DISABLED", "--semi-sync", "--heartbeat", "0.3",
                   "--lag-every", "0.2", "--out", str(ds)], out=io.StringIO(), err=err)
    finally:
        timer.cancel()
    assert rc == 130, err.getvalue()
    rows = sorted(pq.read_table(ds / "health").to_pylist(), key=lambda r: r["time"])
    kinds = [r["kind"] for r in rows]
    assert kinds[0] == "dump" and "heartbeat" in kinds, kinds
    acks = [r for r in rows if r["kind"] == "ack"]
    assert len(acks) >= 5 and all(r["seconds"] is not None and r["gtid"] for r in acks), acks
    pk = pq.read_table(ds / "packets").to_pylist()
    asked = {r["log_pos"]: r["time"] for r in pk if r["ack_request"]}
    for a in acks:  # the latency is the packets' own arrival times, event -> ACK
        sent = next(r["time"] for r in pk if r["kind"] == "semi_sync_ack"
                    and r["log_pos"] == a["log_pos"])
        assert abs((sent - asked[a["log_pos"]]).total_seconds() - a["seconds"]) < 2e-6
    polled = [r for r in rows if r["kind"] == "lag" and "(status)" in r["text"]]
    assert len(polled) >= 5, rows
    now = _status(db)
    assert (polled[-1]["head_file"], polled[-1]["head_pos"]) == now
    assert polled[-1]["bytes_behind"] == 0


def test_a_capture_takes_the_head_from_show_master_status_on_another_connection(
        mariadb: Any, tmp_path: Any) -> None:
    """A capture (dumpcap) of a replica session and of the connection that asked SHOW MASTER
    STATUS beside it (``live --lag-every``'s): ``pcap --summary`` and the export's health
    table take each answer as the server's head for the dump on the same server - the same
    heads, at the same times, as the live health items; caught up at the end."""
    import io
    import json

    import pyarrow.parquet as pq

    from binlogscope.cli.main import main
    from tests.watch_support import LoopbackCapture

    db = mariadb
    cap = LoopbackCapture(tmp_path / "wire.pcapng", [db.port])
    time.sleep(1.0)  # (dumpcap says it captures a moment before its first frames are in)
    settings = LiveSettings(conn=ConnectionOptions(host=db.host, port=db.port, user=db.repl_user,
                                                   password=db.repl_password,
                                                   ssl_mode="DISABLED"),
                            heartbeat=1, lag_every=0.25, reconnect=False, stream_tree=False)
    health: list[dict[str, Any]] = []
    t0 = time.monotonic()

    def consume(item: SourceItem) -> None:
        if item.kind == "health" and item.health is not None and "state" not in item.health:
            health.append(item.health)

    def writer() -> None:
        time.sleep(0.8)
        w = db.connect()
        w.cursor().execute("CREATE TABLE IF NOT EXISTS lag_c (id INT PRIMARY KEY, v TEXT)")
        for i in range(20):
            w.cursor().execute("REPLACE INTO lag_c VALUES (%s, %s)", (i, "y" * 3000))
        w.close()

    try:
        threading.Thread(target=writer, daemon=True).start()
        rep = run_live(settings, consume, should_stop=lambda: time.monotonic() - t0 > 3.5)
        assert rep.error is None, rep.error
    finally:
        cap.stop()
    polled = [(h["head"], h["time"]) for h in health if h["source"] == "status"]
    assert len(polled) >= 5, health
    out = io.StringIO()
    main(["pcap", "--summary", "--json", "--port", str(db.port), str(cap.path)], out=out,
         err=io.StringIO())
    # (the dump request is in the capture; an earlier test's replica may still be closing)
    dumps = [f for f in map(json.loads, out.getvalue().splitlines()) if f.get("dump")]
    assert len(dumps) == 1, out.getvalue()
    lag = dumps[0]["health"]["lag"]
    assert lag is not None and lag["samples"] >= len(polled) - 1
    assert lag["last"]["bytes_behind"] == 0 and lag["last"]["head"] == f"{_status(db)[0]}:" \
        f"{_status(db)[1]}"
    text = io.StringIO()
    main(["pcap", "--summary", "--port", str(db.port), str(cap.path)], out=text,
         err=io.StringIO())
    block = next(b for b in text.getvalue().split("\n\n")
                 if b.startswith(f"flow {dumps[0]['flow_id']}:"))
    line = next(x for x in block.splitlines() if x.startswith("  lag "))
    # the TUI's conversations view (S) of the same capture says the same
    from binlogscope.inspector.conversations import conversations
    from binlogscope.inspector.sources.pcap import PcapSource

    src = PcapSource(cap.path, ports={db.port})
    src.run(lambda: False)
    views = ["\n".join(c.lines()) for c in conversations(src)
             if c.key == f"flow {dumps[0]['flow_id']}"]
    assert len(views) == 1 and line in views[0], (line, views)
    ds = tmp_path / "ds"
    main(["export", "--pcap", "--port", str(db.port), str(cap.path), "--out", str(ds)],
         out=io.StringIO(), err=io.StringIO())
    rows = pq.read_table(ds / "health").to_pylist()
    wire = [(f"{r['head_file']}:{r['head_pos']}", r["time"].timestamp()) for r in rows
            if r["kind"] == "lag" and "(status)" in r["text"]]
    # each answer the live session got is on the wire, a moment earlier (the capture sees the
    # bytes before the poller's socket returns them)
    for head, t in polled[:-1]:
        assert any(h == head and -0.002 <= t - w < 0.2 for h, w in wire), (head, t, wire[:5])
