"""``x NAME.pcapng`` / ``X NAME.pcapng`` / ``X NAME.bin``: the view's packets as pcapng that tshark
and ``binlogscope pcap`` read back, secrets masked; one row's raw bytes."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from binlogscope.cli.main import main as cli_main
from binlogscope.inspector.pcapng_export import export_row_bytes, export_rows_pcapng
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from tests.tui.conftest import CRC, sync, wait_for

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SEMISYNC = CAPTURES / "pcap-semisync.pcap"

pytestmark = pytest.mark.timeout(120)
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _tshark(path: Path, *fields: str, display: str = "mysql") -> list[list[str]]:
    out = subprocess.run(["tshark", "-r", str(path), "-Y", display, "-T", "fields",
                          *(a for f in fields for a in ("-e", f))],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines()]


@needs_tshark
def test_capture_rows_as_pcapng_read_by_tshark_and_binlogscope(tmp_path: Path) -> None:
    src = PcapSource(SEMISYNC)
    src.run(lambda: False)
    packets = [i for i in range(len(src))
               if src.row(i).direction is not None and src.detail(i).raw]
    out = tmp_path / "view.pcapng"
    msg = export_rows_pcapng(src, list(range(len(src))), out)
    assert msg.startswith(f"exported {len(packets)} packet(s)")
    assert f"{len(src) - len(packets)} row(s) without bytes left out" in msg
    # tshark: one MySQL PDU per packet, same directions and lengths, the login masked
    got = _tshark(out, "tcp.srcport", "tcp.len")
    assert len(got) == len(packets)
    assert [int(g[1]) for g in got] == [src.detail(i).raw.__len__() for i in packets]
    assert [g[0] == "3306" for g in got] == [src.row(i).direction == "<-" for i in packets]
    data = out.read_bytes()
    for i in packets:
        det = src.detail(i)
        assert det.raw in data
    login = next(i for i in packets if src.row(i).event_type.startswith("HANDSHAKE_RESP")
                 or "handshake_response" in src.row(i).event_type.lower())
    assert src.detail(login).masked and b"**" in src.detail(login).raw
    # binlogscope reads its own export back: the same binlog events in the same order
    again = PcapSource(out)
    again.run(lambda: False)
    want = [(src.row(i).event_type, src.row(i).length) for i in packets]
    assert [(again.row(i).event_type, again.row(i).length) for i in range(len(again))
            if again.row(i).direction is not None and again.detail(i).raw] == want


@needs_tshark
def test_binlog_events_as_a_replication_stream(tmp_path: Path) -> None:
    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    writes = [i for i in range(len(src)) if src.row(i).event_type == "WRITE_ROWS_EVENT"]
    out = tmp_path / "writes.pcap"  # .pcap: written as pcapng (Wireshark reads both)
    assert export_rows_pcapng(src, writes, out).startswith(f"exported {len(writes)} event(s)")
    assert out.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"  # a pcapng section header block
    got = _tshark(out, "tcp.len")
    assert [int(g[0]) for g in got] == [4 + 1 + src.row(i).length for i in writes]
    txt = io.StringIO()
    assert cli_main(["pcap", str(out), "--brief"], out=txt, err=io.StringIO()) in (0, 1)
    assert txt.getvalue().count("WRITE_ROWS_EVENT") == len(writes)


def test_one_rows_raw_bytes(tmp_path: Path) -> None:
    src = BinlogFileSource(CRC)
    src.run(lambda: False)
    out = tmp_path / "ev.bin"
    assert export_row_bytes(src, 5, out) == f"wrote 102 bytes of row 6 to {out}"
    with CRC.open("rb") as fh:
        fh.seek(384)
        assert out.read_bytes() == fh.read(102)
    with pytest.raises(FileExistsError):
        export_row_bytes(src, 5, out)  # never overwritten


@sync
async def test_x_to_a_pcapng_name_in_the_tui(tmp_path: Path) -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: scr.source.info().done and scr.events.row_count == len(scr.source))
        await pilot.press("f", *"semi:ack", "enter")
        await wait_for(lambda: scr.view.filter.semi == "ack" and len(scr.view) > 0)
        acks = len(scr.view)
        out = tmp_path / "acks.pcapng"
        await pilot.press("x", *str(out), "enter")
        await wait_for(lambda: out.exists()
                       and any("pcapng" in str(n.message) for n in app._notifications))
        assert any(f"exported {acks} packet(s)" in str(n.message) for n in app._notifications)
        one = tmp_path / "one.bin"
        await pilot.press("X", *str(one), "enter")
        await wait_for(lambda: one.exists())
        assert one.read_bytes() == scr.source.detail(scr.events.current_row or 0).raw
