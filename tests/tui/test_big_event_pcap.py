"""pcap mode, an event over 16 MiB (several MySQL packets, ~300 TCP segments): its tree and bytes
are decoded on demand, also when its payload was dropped to bound memory - then it is read again
from its place in the capture. The capture: pcap-semisync.pcap with one 17 MiB ANNOTATE_ROWS
event spliced into the replication flow (later TCP sequence/ack numbers shifted)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.wire.binlog.encode_events import encode_event
from binlogscope.wire.framing import encode_packet
from tests.tui.conftest import sync, wait_for

pytestmark = pytest.mark.timeout(180)

SEMISYNC = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
BIG = 17 << 20
ANNOTATE_ROWS = 160


def _build(out: Path) -> bytes:
    """Write the capture; return the event's bytes."""
    from scapy.all import IP, TCP, Raw, rdpcap, wrpcap  # type: ignore[attr-defined]

    pkts = list(rdpcap(str(SEMISYNC)))
    syn = next(p for p in pkts if TCP in p and p[TCP].flags & 0x02)
    cport, sport = syn[TCP].sport, syn[TCP].dport

    def server(p: object) -> bool:
        return TCP in p and p[TCP].sport == sport and p[TCP].dport == cport  # type: ignore[operator,index]

    data = [i for i, p in enumerate(pkts) if server(p) and len(bytes(p[TCP].payload))
            and not p[TCP].flags & 0x01]
    at = data[-3]  # after the last transaction, before the two last heartbeats
    tmpl = pkts[at]
    seq_next = tmpl[TCP].seq + len(bytes(tmpl[TCP].payload))
    body = b"big " + b"x" * BIG
    event = encode_event(ANNOTATE_ROWS, body, timestamp=1795306886, server_id=1,
                         log_pos=3942 + 19 + len(body) + 4)
    wire = encode_packet(b"\x00\xef\x00" + event, (bytes(tmpl[TCP].payload)[3] + 1) & 0xFF)
    new = []
    for k in range(0, len(wire), 60000):
        p = copy.deepcopy(tmpl)
        p[TCP].remove_payload()
        p[TCP].seq = seq_next + k
        p[TCP].flags = "PA"
        p = p / Raw(wire[k:k + 60000])
        del p[IP].len, p[IP].chksum, p[TCP].chksum
        p = p.__class__(bytes(p))
        p.time = float(tmpl.time) + 0.0005
        new.append(p)
    rest = pkts[at + 1:]
    for p in rest:
        if server(p):
            p[TCP].seq += len(wire)
        elif TCP in p and p[TCP].sport == cport and p[TCP].dport == sport:
            p[TCP].ack += len(wire)
        else:
            continue
        del p[TCP].chksum
    wrpcap(str(out), pkts[: at + 1] + new + rest)
    return event


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    path = tmp_path_factory.mktemp("big") / "big-event.pcap"
    return path, _build(path)


def _big_row(src: PcapSource) -> int:
    return next(i for i in range(len(src)) if src.row(i).length > 1 << 24)


@pytest.mark.parametrize("cap", [None, 1 << 16])  # bytes kept / dropped to bound memory
def test_big_event_decodes_on_demand(capture: tuple[Path, bytes], cap: int | None) -> None:
    path, event = capture
    src = PcapSource(path, max_raw_bytes=cap) if cap else PcapSource(path)
    src.run(lambda: False)
    assert src.fatal is None
    i = _big_row(src)
    row = src.row(i)
    assert row.event_type == "ANNOTATE_ROWS_EVENT" and row.length == len(event) + 3
    assert (row.file_pos, row.log_pos) == (3942, 3942 + len(event))
    assert (src._payload[i] is None) == (cap is not None)
    d = src.detail(i)
    assert d.error is None
    assert len(d.raw) == len(encode_packet(b"\x00\xef\x00" + event, row.seq or 0))
    ev = d.node.find("binlog_event.event")
    assert ev is not None and ev.text.startswith("ANNOTATE_ROWS_EVENT")
    # the event spans two MySQL packets: its node holds the second one's 4-byte header too
    assert ev.length == len(event) + 4
    assert d.node.find("binlog_event.event.header.event_size").value == len(event)
    checksum = d.node.find("binlog_event.event.checksum")
    assert checksum is not None and d.slice(checksum) == event[-4:]
    assert "ok" in checksum.text
    # every other packet row of the capture still decodes (their bytes read again too)
    for k in range(len(src)):
        if src._ctx[k] >= 0:
            assert src.detail(k).node.children, k


@sync
async def test_big_event_in_the_tui(capture: tuple[Path, bytes]) -> None:
    path, _ = capture
    app = BinlogScopeApp(PcapSource(path, max_raw_bytes=1 << 16))
    async with app.run_test(size=(160, 40)):
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        src = scr.source
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src), 60)
        i = _big_row(src)  # type: ignore[arg-type]
        scr.events.cursor = i
        await wait_for(lambda: scr.detail_row == i, 60)
        assert scr.detail is not None and scr.detail.error is None
        tree = scr.query_one(FieldTree)
        assert tree.root.data is scr.detail.node
        assert any(c.data is not None and c.data.name == "binlog_event"
                   for c in tree.root.children)
        hexp = scr.query_one(HexPane)
        assert hexp.data is scr.detail.raw and len(hexp.data) > BIG
        assert "2,000" not in str(scr.detail.node.error or "")
