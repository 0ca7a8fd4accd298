"""The inspector's one re-decoding service (binlogscope.inspector.redecode): a packet decoded
again from its payload, in the context the ContextLog learnt while indexing, has the tree the
session built while reading; a binlog event re-decoded from its raw bytes likewise."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.inspector.redecode import (
    ContextLog,
    PacketContext,
    redecode_event,
    redecode_packet,
    wire_packet,
)
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.fields import redact
from binlogscope.wire.framing import encode_packet

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
PCAPS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))


def _packets(path: Path, record: bool) -> list[tuple[int, PacketDecoded]]:
    return [(it.flow.id, it.event) for it in read_capture(str(path), record=record)
            if isinstance(it.event, PacketDecoded)]


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_redecoded_packets_equal_the_sessions_trees(path: Path) -> None:
    fast, trees = _packets(path, False), _packets(path, True)
    assert len(fast) == len(trees) > 10
    log = ContextLog()
    for (conn, ev), (_, full) in zip(fast, trees, strict=True):
        assert ev.node is None and full.node is not None
        pc = log.context(log.observe(ev, conn))
        again = redecode_packet(ev.payload, ev.kind, pc, direction=ev.direction,
                                offset=ev.offset, seq=ev.seq)
        assert again.node is not None
        assert again.node.to_dict() == full.node.to_dict(), (path.name, ev.offset)
        assert (again.kind, again.error, again.wire_length) == (full.kind, full.error,
                                                                 full.wire_length)


def test_the_pcap_source_redecodes_every_row_it_shows() -> None:
    src = PcapSource(CAPTURES / "pcap-semisync.pcap")
    src.run(lambda: False)
    trees = iter(ev for _, ev in _packets(CAPTURES / "pcap-semisync.pcap", True))
    shown = 0
    for i in range(len(src)):
        if src._ctx[i] < 0:
            continue  # a note, not a packet
        d = src.detail(i)
        full = next(trees)
        # (what the inspector shows is masked: scrambles and auth data redacted)
        assert full.node is not None and d.node.to_dict() == redact(full.node).to_dict()
        assert d.base == full.offset and len(d.raw) == full.wire_length
        shown += 1
    assert shown > 100


def test_wire_packet_rebuilds_the_framing_of_big_payloads() -> None:
    payload = bytes(range(256)) * (0x10000)  # 16 MiB: two fragments and a trailer
    pkt = wire_packet(payload, offset=100, seq=7)
    assert pkt is not None and pkt.payload == payload
    assert [f.sequence_id for f in pkt.fragments] == [7, 8]
    assert pkt.wire_length == len(encode_packet(payload, 7))


def test_default_context_decodes_a_plain_packet() -> None:
    ok = b"\x00\x00\x00\x02\x00\x00\x00"
    ev = redecode_packet(ok, "ok", PacketContext(), direction=Peer.SERVER, offset=0, seq=2)
    assert ev.kind == "ok" and ev.node is not None and ev.error is None


def test_redecode_event_leaves_the_context_alone() -> None:
    path = CAPTURES / "mariadb-10.11-workload.000001"
    data = path.read_bytes()
    ctx = DecodeContext()
    seen = 0
    for ev in read_binlog_file(path, record=False, ctx=ctx):
        tables = dict(ctx.tables)
        again = redecode_event(data[ev.offset : ev.offset + ev.size], ctx, base=ev.offset)
        assert ctx.tables == tables
        assert again.node is not None and again.type_name == ev.type_name
        assert (again.node.offset, again.node.length) == (ev.offset, ev.size)
        seen += 1
    assert seen > 100


def test_the_context_log_takes_the_sessions_state_and_decodes_nothing_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The capabilities and FORMAT_DESCRIPTION context of each packet come from the session
    (``PacketDecoded.env``), not from decoding the greeting, the login or the FDE again."""
    import binlogscope.inspector.redecode as rd

    def no_decode(*a: object, **k: object) -> None:
        raise AssertionError("the ContextLog decoded an event again")

    packets = _packets(CAPTURES / "pcap-semisync.pcap", False)
    monkeypatch.setattr(rd, "decode_event", no_decode)
    log = ContextLog()
    fdes = 0
    for conn, ev in packets:
        assert ev.env is not None
        pc = log.context(log.observe(ev, conn))
        assert pc.caps == ev.env.caps
        if ev.binlog_event is not None:
            assert pc.binlog is not None and ev.env.binlog is not None
            assert pc.binlog.checksum_alg == ev.env.binlog.checksum_alg
            fdes += ev.binlog_event.type_name == "FORMAT_DESCRIPTION_EVENT"
    assert fdes >= 1 and log.server_version.startswith("10.11")
