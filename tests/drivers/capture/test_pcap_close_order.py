"""Who closed each connection: the side whose FIN or RST came first, at that frame, as tshark
sees it, on the shipped captures and the public fixture captures; the summary's dump request,
end and gaps."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from tests.ci_support import unavailable

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
FIXTURES = Path(__file__).resolve().parents[4] / "shared" / "fixtures"
PORT = 39041
SHIPPED = sorted(p.name for p in CAPTURES.glob("pcap-*.pcap*"))
PUBLIC = ["colinnewell__pcap2mysql-log/test/captures/error.pcap",
          "colinnewell__pcap2mysql-log/test/captures/connect-fail.pcap",
          "spachev__mysqlpcap/tests/multi-con.pcap",
          "zeek__zeek/testing/btest/Traces/mysql/mysql8-navicat-login-failed.pcap",
          "zeek__zeek/testing/btest/Traces/mysql/change-user-error.pcap"]


def _tshark_first_close(path: Path) -> dict[frozenset[str], tuple[str, int, str]]:
    """Per connection (its two ends): the end that sent the first FIN or RST, the frame, the
    flag."""
    exe = shutil.which("tshark")
    if exe is None:
        unavailable("tshark is not installed")
    out = subprocess.run(
        [exe, "-r", str(path), "-Y", "tcp.flags.fin == 1 || tcp.flags.reset == 1", "-T",
         "fields", "-e", "frame.number", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport",
         "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "tcp.flags.reset"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    res: dict[frozenset[str], tuple[str, int, str]] = {}
    for line in out.splitlines():
        frame, s4, s6, sp, d4, d6, dp, rst = line.split("\t")
        src = f"{s4 or f'[{s6}]'}:{sp}"
        dst = f"{d4 or f'[{d6}]'}:{dp}"
        key = frozenset((src, dst))
        if key not in res:
            res[key] = (src, int(frame), "RST" if rst in ("1", "True") else "FIN")
    return res


def _ours(path: Path, ports: set[int] | None) -> dict[frozenset[str], tuple[str, int, str]]:
    flows = {}
    for item in read_capture(str(path), ports):
        flows[item.flow.id] = item.flow
    res = {}
    for f in flows.values():
        if f.closed_by is None:
            continue
        assert f.close_frame is not None and f.close_flag is not None
        res[frozenset((f.client, f.server))] = (f.client if f.closed_by == "client"
                                                else f.server, f.close_frame, f.close_flag)
    return res


@pytest.mark.parametrize("name", SHIPPED + PUBLIC)
def test_closed_by_the_first_fin_or_rst_as_tshark_sees_it(name: str) -> None:
    path = CAPTURES / name if name in SHIPPED else FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} is not here")
    ours = _ours(path, {PORT} if name in SHIPPED else None)
    theirs = _tshark_first_close(path)
    assert ours
    for key, got in ours.items():
        assert got == theirs[key], key


def test_close_note_at_the_frame_and_phase_names_the_first_closer() -> None:
    items = list(read_capture(str(CAPTURES / "pcap-semisync.pcap"), {PORT}))
    notes = [i for i in items if i.kind == "note" and "closed the connection" in i.text]
    assert notes and all(i.frame == i.flow.close_frame for i in notes)
    assert all(i.text == f"{i.flow.closed_by} closed the connection ({i.flow.close_flag})"
               for i in notes)
    phases = [i for i in items if getattr(i.event, "reason", "").endswith("closed the connection")]
    assert phases and all(getattr(i.event, "reason", "").startswith(i.flow.closed_by or "?")
                          for i in phases)


def _summary(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--summary", "--port",
                           str(PORT), *args, str(path)], capture_output=True, text=True,
                          timeout=120)


def test_summary_dump_request_end_and_gaps() -> None:
    p = _summary(CAPTURES / "pcap-mariadb-binlog.pcap", "--json")
    f = json.loads(p.stdout.splitlines()[0])
    assert f["dump"] == {"command": "COM_BINLOG_DUMP", "frame": f["dump"]["frame"],
                         "file": "mysql-bin.000010", "position": 4, "flags": 3, "server_id": 0}
    assert f["dump_end"]["how"] == "eof" and f["dump_end"]["frame"] > f["dump"]["frame"]
    assert f["server_errors"] == 0 and f["first_server_error"] is None
    text = _summary(CAPTURES / "pcap-mariadb-binlog.pcap").stdout
    assert "  dump      COM_BINLOG_DUMP mysql-bin.000010:4 (flags 3, server id 0)" in text
    assert "  ended     EOF (end of the binlog (non-blocking dump))" in text
    # a TCP gap: counted, and listed with its frame (as in --json/--plain, an error item)
    loss = CAPTURES / "pcap-loss-reorder.pcap"
    f = json.loads(_summary(loss, "--json").stdout.splitlines()[0])
    assert f["tcp"]["gaps"] == 1 and len(f["gaps"]) == 1
    gap = f["gaps"][0]
    assert gap["direction"] == "server" and "TCP gap" in gap["text"]
    items = [json.loads(x) for x in subprocess.run(
        [sys.executable, "-m", "binlogscope", "pcap", "--json", "--port", str(PORT), str(loss)],
        capture_output=True, text=True, timeout=120).stdout.splitlines()]
    errs = [o for o in items if o.get("kind") == "decode_error"]
    assert len(errs) == 1 and errs[0]["frame"] == gap["frame"] and "TCP gap" in errs[0]["error"]


def test_inspector_model_rows_carry_the_coordinates_and_the_gap() -> None:
    """The TUI's model (no Textual): a capture's event rows have the coordinates of the file's
    rows; a TCP gap is an error row with its node."""
    from binlogscope.inspector.sources.binlog_file import BinlogFileSource
    from binlogscope.inspector.sources.pcap import PcapSource

    f = BinlogFileSource(CAPTURES / "pcap-semisync.binlog")
    f.run(lambda: False)
    in_file = {(r.file_pos, r.log_pos) for r in (f.row(i) for i in range(len(f)))}
    assert {r.binlog_file for r in (f.row(i) for i in range(len(f)))} == {"pcap-semisync.binlog"}
    p = PcapSource(CAPTURES / "pcap-semisync.pcap", ports=[PORT])
    p.run(lambda: False)
    rows = [p.row(i) for i in range(len(p))]
    events = [r for r in rows if r.file_pos is not None]
    assert len(events) > 30 and {r.binlog_file for r in events} == {"mysql-bin.000004"}
    assert {(r.file_pos, r.log_pos) for r in events} <= in_file
    loss = PcapSource(CAPTURES / "pcap-loss-reorder.pcap", ports=[PORT])
    loss.run(lambda: False)
    gaps = [i for i in range(len(loss)) if loss.row(i).error
            and "TCP gap" in loss.row(i).summary]
    assert len(gaps) == 1
    assert loss.detail(gaps[0]).error is not None
