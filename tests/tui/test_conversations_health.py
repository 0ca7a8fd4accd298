"""The TUI's conversations view (``S``) shows each dump's health (issue 29 item 4) as
``pcap --summary`` does: the same last event, GTID and ACK, heartbeat period and cadence and
longest server silence, computed from the rows the view shows, on real captures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.inspector.conversations import conversations
from binlogscope.inspector.sources.pcap import PcapSource

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


@pytest.mark.parametrize("name", ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng"])
def test_the_view_says_what_the_summary_says(name: str) -> None:
    out = io.StringIO()
    main(["pcap", "--summary", "--json", str(CAPTURES / name)], out=out, err=io.StringIO())
    flows = {f["flow_id"]: f for f in map(json.loads, out.getvalue().splitlines())}
    src = PcapSource(CAPTURES / name)
    src.run(lambda: False)
    checked = 0
    for conv in conversations(src):
        f = flows[int(conv.key.split()[1])]
        if f["dump"] is None:
            assert not any(line.startswith("  health") for line in conv.lines())
            continue
        h = f["health"]
        text = "\n".join(conv.lines())
        assert f"heartbeat asked every {h['heartbeat_period_s']:g} s" in text
        cad = h["heartbeat_cadence"]
        assert f"came every {cad['median_s']:.3f} s (median), longest {cad['max_s']:.3f} s" in text
        assert f"longest server silence {h['longest_server_silence_s']:.3f} s" in text
        last = h["last_event"]
        assert f"event {last['type']} ending at " in text and f":{last['log_pos']}" in text
        if h["last_gtid"]:
            assert f"GTID {h['last_gtid']['gtid']}" in text
        if h["last_ack"]:
            assert f"ACK {h['last_ack']['log_pos']}" in text
        assert ("  health    closed" in text) == bool(f["closed"])
        checked += 1
    assert checked


def test_a_dump_the_capture_joined_mid_stream_has_its_health_too(tmp_path: Path) -> None:
    """A cut of the real semi-sync capture that starts after the dump request (``editcap
    -r``): pcap --summary and the S view both give the dump's health - the same heartbeat
    line, lag line and last event - though no COM_BINLOG_DUMP is in it."""
    import shutil
    import subprocess

    editcap = shutil.which("editcap")
    assert editcap, "editcap (Wireshark) is installed with tshark"
    cut = tmp_path / "cut.pcap"
    subprocess.run([editcap, "-r", str(CAPTURES / "pcap-semisync.pcap"), str(cut), "40-172"],
                   check=True, capture_output=True, timeout=60)
    out = io.StringIO()
    main(["pcap", "--summary", "--port", "39041", str(cut)], out=out, err=io.StringIO())
    blocks = [b for b in out.getvalue().split("\n\n") if "  lag " in b]
    assert len(blocks) == 1 and "(joined mid-stream)" in blocks[0].splitlines()[0]
    fid = int(blocks[0].split(":", 1)[0].split()[1])
    want = [x for x in blocks[0].splitlines()
            if x.startswith(("  heartbeat ", "  lag ", "  last "))]
    assert len(want) == 3 and "caught up" in want[1]
    src = PcapSource(cut, ports={39041})
    src.run(lambda: False)
    view = next(c for c in conversations(src) if c.key == f"flow {fid}")
    lines = view.lines()
    assert "  dump      (joined mid-stream: the dump request is not in the capture)" in lines
    for w in want[:2]:
        assert w in lines, (w, lines)
    assert any(x.startswith("  last      event XID_EVENT ending at mysql-bin.000004:3942")
               for x in lines), lines
