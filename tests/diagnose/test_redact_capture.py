"""``binlogscope redact CAPTURE`` (issue 29 item 5, captures): the binlog events a captured dump
carried, scrubbed into the binlog file they came from - the same events (offsets, types, sizes,
log_pos) as the file the server wrote, no original value left - and a reproducer that breaks a
real client as the original does: python-mysql-replication fails on the real MariaDB workload
binlog served by the mock master, and on the bundle redacted from a capture (``live --record``)
of that same dump, at the same event with the same error."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.diagnose.redact import Redactor
from binlogscope.diagnose.redact_capture import redact_capture
from binlogscope.drivers.binlog_file import read_binlog_file
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.diagnose.test_redact import _events, _strings
from tests.diagnose.test_redact_client import SRC, _read

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
#: real captures of MariaDB replicas and the binlog file their server wrote
#: (a real MariaDB replica is not sent ANNOTATE_ROWS: its stream is not the whole file)
PAIRS = [("pcap-semisync.pcap", "pcap-semisync.binlog", 39041, False),
         ("pcap-mariadb-replica.pcapng", "pcap-mariadb-replica.binlog", 39041, True)]


def _shape(path: Path) -> list[tuple[int, int, int, int, bool]]:
    return [(e.offset, e.header.type_code, e.header.event_size, e.header.log_pos,
             e.error is None) for e in read_binlog_file(path, record=False)
            if e.header is not None]


@pytest.mark.parametrize(("cap", "binlog", "port", "partial"), PAIRS)
def test_the_dump_comes_back_as_its_file_scrubbed(cap: str, binlog: str, port: int,
                                                   partial: bool, tmp_path: Path) -> None:
    r = Redactor(key=b"binlogscope-test-key")
    bundle = redact_capture(CAPTURES / cap, tmp_path / "b", ports={port}, redactor=r)
    assert len(bundle.files) == 1 and bool(bundle.partial) == partial
    red = bundle.files[0]
    want = _shape(CAPTURES / binlog)
    got = _shape(red)
    assert all(ok for *_, ok in got)  # checksums recomputed
    if not partial:
        # every event the capture holds, where the server's file has it (the file may go on
        # after the capture ended: its last ROTATE)
        assert got and got == want[:len(got)] and len(got) >= len(want) - 1
    else:  # the events the stream carried: each one of the file's (type, size, log_pos)
        file_events = {(t, s, lp) for _, t, s, lp, _ in want}
        assert got and all((t, s, lp) in file_events for _, t, s, lp, _ in got)
        assert len(got) < len(want)
    assert (tmp_path / "b" / "scenario.toml").exists()
    data = red.read_bytes()
    for stand_in in sorted(r.names.values(), key=len, reverse=True):
        data = data.replace(stand_in.encode(), b"\0" * len(stand_in.encode()))
    secrets: set[bytes] = set()
    for _, (rows, _) in _events(CAPTURES / binlog):
        for img in rows or []:
            for part in (img.get("before"), img.get("after")):
                for v in (part or {}).values():
                    for s in ([v] if isinstance(v, str) else _strings(v)):
                        if len(s.strip()) >= 4 and set(s) != {"x"}:
                            secrets.add(s.encode())
    assert secrets
    assert not [s for s in secrets if s in data]


@pytest.mark.network
def test_the_capture_bundle_breaks_the_client_the_same_way(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # a capture of the dump of the workload binlog: binlogscope's own replica, recorded
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([SRC])])).start()
    rec = tmp_path / "dump.pcapng"
    err = io.StringIO()
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    try:
        rc = main(["live", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
                   "--ssl-mode", "DISABLED", "--non-blocking", "--start", "mysql-bin.000001:4",
                   "--json", "--record", str(rec)], out=io.StringIO(), err=err)
    finally:
        mm.stop()
    assert rc == 0 and rec.exists(), err.getvalue()
    out = io.StringIO()
    assert main(["redact", str(rec), "--port", str(mm.port), "--out",
                 str(tmp_path / "b")], out=out, err=io.StringIO()) == 0, out.getvalue()
    bundle = tmp_path / "b" / "binlog" / "mysql-bin.000001"  # (the name the mock serves)
    assert _shape(bundle) == _shape(SRC)  # the whole file, from the capture alone
    assert bundle.read_bytes() != SRC.read_bytes()
    names_a, fail_a = _read(SRC)
    names_b, fail_b = _read(bundle)
    assert fail_a == "ValueError: year N is out of range"
    assert fail_b == fail_a
    assert names_b == names_a
    assert os.environ["MYSQL_PWD"] == "replpass"


def test_until_cuts_the_slice_at_the_failing_event(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["redact", str(CAPTURES / "pcap-semisync.pcap"), "--port", "39041",
                 "--until", "mysql-bin.000004:1341", "--out", str(tmp_path / "b")],
                out=out, err=io.StringIO()) == 0, out.getvalue()
    got = _shape(tmp_path / "b" / "binlog" / "mysql-bin.000004")
    assert got[-1][3] == 1341 and got == _shape(CAPTURES / "pcap-semisync.binlog")[:len(got)]


def _wire_events(path: Path, port: int) -> list[tuple[str, int, int, bool | None, float]]:
    """(type, size, log_pos, ACK asked, time) of each binlog event packet of the first dump."""
    from binlogscope.drivers.capture.pcap import read_capture
    from binlogscope.session.events import PacketDecoded

    out = []
    flow = None
    for item in read_capture(str(path), {port}):
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            flow = flow or item.flow.id
            h = ev.binlog_event.header
            if item.flow.id == flow and h is not None:
                out.append((ev.binlog_event.type_name, h.event_size, h.log_pos,
                            None if ev.semi_sync is None else ev.semi_sync.ack_requested,
                            round(item.time or 0.0, 6)))
    return out


def test_the_scrubbed_capture_is_the_dump_packet_for_packet(tmp_path: Path) -> None:
    r = Redactor(key=b"binlogscope-test-key")
    src = CAPTURES / "pcap-semisync.pcap"
    bundle = redact_capture(src, tmp_path / "b", ports={39041}, redactor=r)
    assert bundle.capture is not None
    assert _wire_events(bundle.capture, 39041) == _wire_events(src, 39041)
    summary = io.StringIO()
    main(["pcap", "--summary", "--port", "39041", str(bundle.capture)], out=summary,
         err=io.StringIO())
    orig = io.StringIO()
    main(["pcap", "--summary", "--port", "39041", str(src)], out=orig, err=io.StringIO())
    lat = next(x for x in orig.getvalue().splitlines() if x.startswith("  semi-sync"))
    assert lat in summary.getvalue()  # the same ACKs, the same latencies
    data = bundle.capture.read_bytes()
    assert b"127.0.0.1" not in data and b"orders_semi" not in data
    binlog_data = bundle.files[0].read_bytes()
    for stand_in in sorted(r.names.values(), key=len, reverse=True):
        data = data.replace(stand_in.encode(), b"\0" * len(stand_in.encode()))
    secrets = {s.encode() for _, (rows, _) in _events(CAPTURES / "pcap-semisync.binlog")
               for img in rows or [] for part in (img.get("before"), img.get("after"))
               for v in (part or {}).values() for s in ([v] if isinstance(v, str) else [])
               if len(s.strip()) >= 4}
    assert secrets and not [s for s in secrets if s in data]
    assert binlog_data[:4] == b"\xfebin"
