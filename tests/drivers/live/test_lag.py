"""Position lag (issue 29 item 1): the server head against what was consumed, from heartbeats
of real captures, and the arithmetic of files and bytes behind."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.drivers.live.lag import LagTracker, file_number, lag_between
from binlogscope.inspector.conversations import conversations
from binlogscope.inspector.sources.pcap import PcapSource

CAPTURES = Path(__file__).resolve().parents[3] / "captures"


def test_files_and_bytes_behind() -> None:
    assert file_number("mysql-bin.000012") == ("mysql-bin", 12)
    assert file_number("weird") is None
    assert lag_between(("b.000003", 900), ("b.000003", 400)) == (0, 500)
    assert lag_between(("b.000005", 900), ("b.000003", 400)) == (2, None)
    assert lag_between(("b.000003", 100), ("b.000003", 400)) == (0, 0)  # an older head
    assert lag_between(("b.000002", 100), ("b.000003", 400)) == (0, 0)
    assert lag_between(("a.000005", 900), ("b.000003", 400)) == (None, None)


def test_tracker_follows_head_and_consumed() -> None:
    lag = LagTracker()
    lag.consumed_to("b.000001", 500)
    s = lag.head_at("b.000001", 1500, 10.0, "status")
    assert s is not None and (s.files_behind, s.bytes_behind) == (0, 1000)
    lag.consumed_to("b.000001", 1200)
    assert lag.head_at("b.000002", 300, 11.0, "status").files_behind == 1  # type: ignore[union-attr]
    lag.consumed_to("b.000002", 300)
    last = lag.head_at("b.000002", 300, 12.0, "heartbeat")
    assert last is not None and last.bytes_behind == 0 and "caught up" in last.text()
    j = lag.to_json()
    assert j is not None and j["max_bytes_behind"] == 1000 and j["max_files_behind"] == 1
    assert j["samples"] == 3 and j["last"]["head"] == "b.000002:300"
    assert "most 1 file(s) behind" in lag.lines()[0]


@pytest.mark.parametrize("name", ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng"])
def test_heartbeats_of_real_captures_give_the_head(name: str) -> None:
    """A real MariaDB dump thread sends a heartbeat only at the end of its binlog: each one's
    log_pos is the head, and a replica that read everything before it is caught up; the TUI's
    conversations view says what pcap --summary says."""
    out = io.StringIO()
    main(["pcap", "--summary", "--json", str(CAPTURES / name)], out=out, err=io.StringIO())
    dumps = [f for f in map(json.loads, out.getvalue().splitlines()) if f.get("dump")]
    assert dumps
    src = PcapSource(CAPTURES / name)
    src.run(lambda: False)
    views = {c.key: "\n".join(c.lines()) for c in conversations(src)}
    for f in dumps:
        lag = f["health"]["lag"]
        assert lag is not None and lag["samples"] == f["heartbeats"]
        last, ev = lag["last"], f["health"]["last_event"]
        assert last["source"] == "heartbeat"
        assert last["head"] == f"{ev['binlog_file']}:{ev['log_pos']}"  # the head = the end
        assert last["files_behind"] == 0 and last["bytes_behind"] == 0
        assert f"lag       at the end caught up: server head {last['head']}" in \
            views[f"flow {f['flow_id']}"]
