"""``explain`` gives the same event from every source: a real replica's capture (its
coordinates from the stream's ROTATE and log_pos) and the binlog file the server wrote; an end
position finds the event that ends there, a start position the one that starts there; a
position that is no boundary is said to be inside its event."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.drivers.binlog_file import read_binlog_file

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
PAIRS = [("pcap-semisync.pcap", "pcap-semisync.binlog"),
         ("pcap-mariadb-replica.pcapng", "pcap-mariadb-replica.binlog")]


def _explain(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    rc = main(["explain", *argv, "--json"], out=out, err=io.StringIO())
    return rc, json.loads(out.getvalue())


@pytest.mark.parametrize(("capture", "binlog"), PAIRS)
def test_capture_and_file_agree(capture: str, binlog: str) -> None:
    rows = [ev for ev in read_binlog_file(CAPTURES / binlog, record=False)
            if ev.type_name.startswith(("WRITE_ROWS", "UPDATE_ROWS", "DELETE_ROWS"))]
    assert rows
    ev = rows[len(rows) // 2]
    assert ev.header is not None
    end = ev.header.log_pos
    rc_c, cap = _explain(f"end_log_pos {end}", "--source", str(CAPTURES / capture))
    assert rc_c == 0, cap
    name = cap["found"]["binlog_file"]
    rc_f, fil = _explain(f"end:{name}:{end}", "--source", str(CAPTURES / binlog),
                         "--file", name)
    assert rc_f == 0, fil
    for key in ("offset", "log_pos", "event_type", "table", "rows", "gtid"):
        assert cap["found"][key] == fil["found"][key], key
    assert cap["found"]["offset"] == ev.file_pos
    # the stream's transaction is the file's, less what the source does not send this client
    # (a MariaDB replica does not ask for ANNOTATE_ROWS)
    on_wire = [s["offset"] for s in cap["transaction"]]
    in_file = [s["offset"] for s in fil["transaction"]
               if s["event_type"] != "ANNOTATE_ROWS_EVENT" or s["offset"] in on_wire]
    assert on_wire == in_file
    assert cap["table_map"]["columns"] == fil["table_map"]["columns"]
    # the same event by its start position
    rc_s, start = _explain(f"start:{name}:{ev.file_pos}", "--source", str(CAPTURES / capture))
    assert rc_s == 0 and start["found"]["log_pos"] == end
    # inside it: no event, the answer names it
    rc_i, inside = _explain(f"start:{name}:{(ev.file_pos or 0) + 5}", "--source",
                            str(CAPTURES / capture))
    assert rc_i == 0 and inside["found"] is None
    assert f"inside {ev.type_name} at {ev.file_pos}..{end}" in inside["answer"][0]


def test_a_relay_log_is_searched_by_its_source_positions() -> None:
    """A real relay log (MySQL 5.0's, from mysql-server's test data): a replica's line quotes
    the source's file and end_log_pos; the relay log's events carry them in their headers."""
    relay = (CAPTURES.parent.parent / "shared" / "fixtures" / "blackbeam__rust_mysql_common" /
             "test-data" / "binlogs" / "bug33029-slave-relay-bin.000001")
    if not relay.exists():
        pytest.skip("the shared fixtures are not here")
    evs = list(read_binlog_file(relay, record=False))
    target = next(e for e in evs if e.type_name == "QUERY_EVENT")
    assert target.header is not None
    line = (f"Could not execute Query event; the event's master log master-bin.000001, "
            f"end_log_pos {target.header.log_pos}")
    rc, doc = _explain(line, "--source", str(relay))
    assert rc == 0
    assert doc["found"]["offset"] == target.file_pos
    assert doc["found"]["log_pos"] == target.header.log_pos
    assert "a relay log of master-bin.000001" in doc["answer"][0]
