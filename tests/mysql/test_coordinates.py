"""Coordinates against the real MariaDB: ``(binlog_file, offset, log_pos, gtid)`` of every event
of ``live --json``, of ``pcap --json`` over the recording of that live session, and of
``export`` of that recording, equal ``file --json`` of the server's own binlog files; the JSON
keys are the same on every source; a refused dump is in the capture's summary with its ERR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.watch_support import run_sql

pytestmark = pytest.mark.mysql

#: the keys every binlog event has, whatever the source (docs/coordinates.md)
EVENT_KEYS = {"binlog_file", "offset", "log_pos", "gtid", "event_type", "type_code",
              "timestamp", "server_id", "event_size", "flags", "checksum_ok", "schema", "table",
              "rows", "query"}
WIRE_KEYS = {"direction", "seq", "payload_length", "semi_sync", "kind", "packet_offset",
             "wire_time", "error"}




def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", *args], capture_output=True,
                          text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)


def _live(db: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["MYSQL_PWD"] = db.repl_password
    env["HOME"] = str(db.dir)
    return _cli("live", "--host", db.host, "--port", str(db.port), "-u", db.repl_user, *args,
                env=env)


def _lines(p: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.splitlines()]


Coord = tuple[str, int, int, str | None, str]


def _coords(objs: list[dict[str, Any]]) -> list[Coord]:
    return [(o["binlog_file"], o["offset"], o["log_pos"], o["gtid"], o["event_type"])
            for o in objs if o.get("kind", "binlog_event") == "binlog_event"
            and o["offset"] is not None]


def test_live_pcap_and_export_coordinates_equal_the_binlog_files(
        mariadb: Any, tmp_path: Path) -> None:
    run_sql(mariadb, "FLUSH BINARY LOGS",
         "CREATE TABLE IF NOT EXISTS coords (id INT PRIMARY KEY, v VARCHAR(20))",
         "REPLACE INTO coords VALUES (1, 'a'), (2, 'b')")
    first = mariadb.binlog_files()[-1].name
    run_sql(mariadb, "BEGIN", "INSERT INTO coords VALUES (3, 'c')",
         "UPDATE coords SET v = 'z' WHERE id = 1", "COMMIT",
         "FLUSH BINARY LOGS",  # a real ROTATE inside the dump
         "DELETE FROM coords WHERE id = 2", "ALTER TABLE coords ADD COLUMN w INT")
    rec = tmp_path / "live.pcapng"
    live = _lines(_live(mariadb, "--json", "--non-blocking", "--start", f"{first}:4",
                        "--record", str(rec)))
    files = [p for p in mariadb.binlog_files() if p.name >= first]
    assert len(files) >= 2
    want: list[Coord] = []
    for f in files:
        objs = _lines(_cli("file", "--json", str(f)))
        assert all(set(o) >= EVENT_KEYS for o in objs)
        want += _coords(objs)
    # the events a non-blocking dump streams: every one of each file, up to the file's end
    events = [o for o in live if o.get("kind") == "binlog_event"]
    assert all(set(o) >= EVENT_KEYS | WIRE_KEYS for o in events)
    assert all(isinstance(o["wire_time"], float) for o in events)
    got = _coords(live)
    assert len(got) > 20
    assert got == [w for w in want if w[4] != "ANNOTATE_ROWS_EVENT" or w in got]
    assert {g[0] for g in got} == {f.name for f in files}
    # a transaction's GTID on each of its events
    gtids = [g for g in got if g[4] == "UPDATE_ROWS_EVENT_V1"]
    assert gtids and gtids[0][3] is not None
    rotates = [o for o in events if o["event_type"] == "ROTATE_EVENT" and o["offset"]]
    assert rotates and rotates[0]["next_file"] == files[1].name
    assert rotates[0]["next_position"] == 4

    # the recording of that live session, read as a capture: the same coordinates
    port = str(mariadb.port)
    cap = _lines(_cli("pcap", "--json", "--port", port, str(rec)))
    cap_events = [o for o in cap if o.get("kind") == "binlog_event"]
    assert all(EVENT_KEYS | WIRE_KEYS | {"flow", "frame"} <= set(o) for o in cap_events)
    assert _coords(cap) == got
    # timestamp is the header's on both; wire_time the arrival/capture time (µs)
    assert [o["timestamp"] for o in cap_events] == [o["timestamp"] for o in events]
    assert all(abs(c["wire_time"] - e["wire_time"]) < 1 for c, e in zip(cap_events, events,
                                                                         strict=True))

    # the export of the capture stores the same file offsets as the export of the files
    from binlogscope.export.arrow import read_table

    assert _cli("export", "--pcap", str(rec), "--port", port, "--out",
                str(tmp_path / "xp")).returncode == 0
    assert _cli("export", *map(str, files), "--out", str(tmp_path / "xf")).returncode == 0

    def keys(d: Path) -> set[tuple[str, int, int, str | None]]:
        t = read_table(d, "events")
        return {(f, o, lp, g) for f, o, lp, g in zip(
            t["binlog_file"].to_pylist(), t["offset"].to_pylist(), t["log_pos"].to_pylist(),
            t["gtid"].to_pylist(), strict=True) if o is not None}

    from_pcap, from_files = keys(tmp_path / "xp"), keys(tmp_path / "xf")
    assert from_pcap and from_pcap <= from_files
    assert {k[:3] for k in from_pcap} == {g[:3] for g in got}
    # and so does export --live of the same files
    env = dict(os.environ, MYSQL_PWD=mariadb.repl_password, HOME=str(mariadb.dir))
    p = _cli("export", "--live", "--host", mariadb.host, "--port", port, "-u",
             mariadb.repl_user, "--ssl-mode", "DISABLED", "--start", f"{first}:4",
             "--non-blocking", "--out", str(tmp_path / "xl"), env=env)
    assert p.returncode == 0, p.stderr
    from_live = keys(tmp_path / "xl")
    assert {k[:3] for k in from_live} == {g[:3] for g in got} and from_live <= from_files


def test_summary_of_a_refused_dump_shows_the_err(mariadb: Any, tmp_path: Path) -> None:
    rec = tmp_path / "refused.pcapng"
    p = _live(mariadb, "--non-blocking", "--no-reconnect", "--start", "no-such-file.000001:4",
              "--record", str(rec))
    assert p.returncode != 0 and "1236" in p.stderr
    s = _cli("pcap", "--summary", "--port", str(mariadb.port), str(rec))
    assert s.returncode == 0, s.stderr
    assert "no-such-file.000001:4" in s.stdout
    err_line = next(x for x in s.stdout.splitlines() if x.strip().startswith("server "))
    assert "1 ERR packet(s)" in err_line and "ERR 1236" in err_line
    ended = next(x for x in s.stdout.splitlines() if x.strip().startswith("ended "))
    assert "ERR 1236" in ended and "closed the connection" in ended
    j = [json.loads(x) for x in _cli("pcap", "--summary", "--json", "--port",
                                     str(mariadb.port), str(rec)).stdout.splitlines()]
    flow = next(o for o in j if o.get("dump"))
    assert flow["dump"]["command"] == "COM_BINLOG_DUMP"
    assert flow["dump"]["file"] == "no-such-file.000001" and flow["dump"]["position"] == 4
    assert flow["server_errors"] == 1 and flow["first_server_error"]["code"] == 1236
    assert flow["dump_end"]["how"] == "err" and flow["dump_end"]["code"] == 1236
    assert flow["closed"]["by"] in ("client", "server")
