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
