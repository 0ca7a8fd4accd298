"""The pcap fast paths give exactly what the general paths give.

- the pcap record reader (struct) == scapy's reader: frames, timestamps, link types, and the
  same error on truncated files, for both byte orders and nanosecond captures;
- ``CaptureReader.record_frame``'s in-order shortcut == the general segment path (reassembly,
  resync, flows), on every shipped capture and on damaged copies (dropped, reordered and
  duplicated frames);
- ``binlogscope pcap --json`` prints :func:`capture_item_json` of every item, in order, and the
  serializer writes its unusual values as :func:`json_value` says.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture import files as pcap_mod
from binlogscope.drivers.capture.pcap import (
    CaptureError,
    CaptureReader,
    iter_records,
    read_capture,
)
from binlogscope.drivers.capture.tcp_reassembly import StreamReassembler
from binlogscope.drivers.items import Flow, SourceItem
from binlogscope.render.json_out import dumps
from binlogscope.render.shapes import capture_item_json
from binlogscope.render.text import capture_item_text
from binlogscope.session.events import PacketDecoded, Peer, Phase
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.node import json_value

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
ALL = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
PCAPS = [p for p in ALL if p.suffix == ".pcap"]
PORTS = [39041]


def _records(data: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    out, pos = [], 24
    while pos < len(data):
        n = struct.unpack_from("<I", data, pos + 8)[0]
        out.append((data[pos : pos + 16], data[pos + 16 : pos + 16 + n]))
        pos += 16 + n
    return data[:24], out


def _scapy(path: str) -> list[tuple[int, float, int, bytes]] | str:
    try:
        return list(pcap_mod._iter_records_scapy(path))
    except CaptureError as exc:
        return str(exc)


def _fast(path: str) -> list[tuple[int, float, int, bytes]] | str:
    try:
        return list(pcap_mod._iter_records_pcap(path, *_fmt(path)))
    except CaptureError as exc:
        return str(exc)


def _fmt(path: str) -> tuple[str, bool, int]:
    head = Path(path).read_bytes()[:24]
    endian, nano = pcap_mod._PCAP_MAGIC[head[:4]]
    return endian, nano, struct.unpack_from(endian + "I", head, 20)[0]


def _variants(tmp_path: Path, src: Path) -> list[Path]:
    """The capture as written, big-endian, nanosecond, and cut in a few places."""
    head, recs = _records(src.read_bytes())
    out = []
    big = tmp_path / "big.pcap"
    with big.open("wb") as fh:
        fh.write(b"\xa1\xb2\xc3\xd4" + struct.pack(">HHIIII", *struct.unpack("<HHIIII",
                                                                                head[4:24])))
        for rh, f in recs:
            fh.write(struct.pack(">IIII", *struct.unpack("<IIII", rh)) + f)
    nano = tmp_path / "nano.pcap"
    with nano.open("wb") as fh:
        fh.write(b"\x4d\x3c\xb2\xa1" + head[4:24])
        for rh, f in recs:
            sec, usec, a, b = struct.unpack("<IIII", rh)
            fh.write(struct.pack("<IIII", sec, usec % 1_000_000 * 1000 + 7, a, b) + f)
    out += [big, nano]
    data = src.read_bytes()
    for i, cut in enumerate([25, 24 + 16 + 3, 24 + 10, len(data) - 1, len(data) - 20]):
        p = tmp_path / f"cut{i}.pcap"
        p.write_bytes(data[:cut])
        out.append(p)
    huge = bytearray(data)
    struct.pack_into("<I", huge, 24 + 8, 1 << 20)  # a corrupt caplen (> what scapy reads)
    p = tmp_path / "caplen.pcap"
    p.write_bytes(bytes(huge))
    out.append(p)
    return out


@pytest.mark.parametrize("src", PCAPS, ids=lambda p: p.name)
def test_record_reader_equals_scapy(tmp_path: Path, src: Path) -> None:
    for path in [src, *_variants(tmp_path, src)]:
        assert _fast(str(path)) == _scapy(str(path)), path.name
    assert list(iter_records(str(src))) == _scapy(str(src))


# ---------------------------------------------------------------------------- the driver
def _items(path: str, *, general: bool, record: bool = False,
           monkeypatch: pytest.MonkeyPatch | None = None) -> list[tuple[Any, ...]]:
    assert monkeypatch is not None
    with monkeypatch.context() as m:
        if general:
            m.setattr(CaptureReader, "_in_order", lambda *a: None)
        try:
            items = list(read_capture(path, PORTS, record=record))
            tail = ""
        except CaptureError as exc:
            items, tail = [], str(exc)
    # what is shown of each item (the event objects themselves may share caches between runs)
    return [(i.flow.id, i.flow.name, i.kind, i.frame, i.time, i.text, _reference(i),
             capture_item_text(i, False), getattr(i.event, "payload", None))
            for i in items] + [(tail,)]


def _damaged(tmp_path: Path, src: Path, seed: int) -> Path:
    """A copy with frames dropped, swapped and duplicated (a fixed random pattern)."""
    head, recs = _records(src.read_bytes())
    rnd = random.Random(seed)
    out: list[tuple[bytes, bytes]] = []
    i = 0
    while i < len(recs):
        r = rnd.random()
        if r < 0.04:
            i += 1  # dropped
            continue
        if r < 0.08 and i + 1 < len(recs):
            out += [recs[i + 1], recs[i]]  # swapped
            i += 2
            continue
        out.append(recs[i])
        if r < 0.11:
            out.append(recs[i])  # duplicated
        i += 1
    p = tmp_path / f"damaged-{seed}.pcap"
    p.write_bytes(head + b"".join(rh + f for rh, f in out))
    return p


@pytest.mark.parametrize("src", ALL, ids=lambda p: p.name)
def test_fast_paths_equal_general_paths(monkeypatch: pytest.MonkeyPatch, src: Path) -> None:
    for record in (False, True):
        fast = _items(str(src), general=False, record=record, monkeypatch=monkeypatch)
        assert fast == _items(str(src), general=True, record=record, monkeypatch=monkeypatch)


@pytest.mark.parametrize("seed", range(6))
def test_fast_paths_equal_general_paths_on_damaged_captures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    src = PCAPS[seed % len(PCAPS)]
    path = str(_damaged(tmp_path, src, seed))
    fast = _items(path, general=False, monkeypatch=monkeypatch)
    assert fast == _items(path, general=True, monkeypatch=monkeypatch)
    assert len(fast) > 10


def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"in_order": 0}
    real = CaptureReader._in_order

    def spy(self: CaptureReader, *a: Any) -> Any:
        res = real(self, *a)
        calls["in_order"] += res is not None
        return res

    monkeypatch.setattr(CaptureReader, "_in_order", spy)
    list(read_capture(str(CAPTURES / "pcap-semisync.pcap"), PORTS))
    assert calls["in_order"] > 50


def test_in_order_shortcut_of_the_reassembler() -> None:
    a, b = StreamReassembler(), StreamReassembler()
    for r in (a, b):
        r.syn(999)
    assert a.in_order(1000, b"abc") == 0 and a.in_order(1003, b"de") == 3
    assert [c.offset for c in b.segment(1000, b"abc", 1, 0.0)] == [0]
    b.segment(1003, b"de", 2, 0.0)
    assert (a.offset, a.next_seq, a.stats) == (b.offset, b.next_seq, b.stats)
    assert a.in_order(1010, b"x") == -1 and a.offset == 5  # a hole: nothing taken
    a.segment(1010, b"x", 3, 0.0)
    assert a.in_order(1005, b"12345") == -1  # something is held: the general path
    fresh = StreamReassembler()
    assert fresh.in_order(5, b"x") == -1  # no SYN, no data yet


# ---------------------------------------------------------------------------- JSON
def _reference(item: SourceItem) -> Any:
    """What ``--json`` shows of an item: its line, parsed."""
    obj = capture_item_json(item)
    return None if obj is None else json.loads(dumps(obj))


@pytest.mark.parametrize("src", ALL, ids=lambda p: p.name)
def test_cli_json_output_is_the_item_shapes(src: Path) -> None:
    """``binlogscope pcap --json`` prints the shape of every item, in order."""
    import io

    from binlogscope.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    rc = main(["pcap", str(src), "--json", "--port", str(PORTS[0])], out, err)
    assert rc in (0, 1), err.getvalue()  # (1: a damaged capture, reported after its items)
    want = [t for t in (_reference(i) for i in read_capture_tolerant(src)) if t is not None]
    assert [json.loads(line) for line in out.getvalue().splitlines()] == want
    assert len(want) > 10


def read_capture_tolerant(src: Path) -> list[SourceItem]:
    items: list[SourceItem] = []
    try:
        for item in read_capture(str(src), PORTS):
            items.append(item)
    except CaptureError:
        pass
    return items




def _item(bev: Any, **kw: Any) -> SourceItem:
    ev = PacketDecoded(kw.get("direction", Peer.SERVER), 17, kw.get("seq", 3), 90,
                       "binlog_event" if bev is not None else "ok", None, None,
                       Phase.BINLOG_STREAM, kw.get("semi"), bev, kw.get("error"), 94, b"")
    flow = kw.get("flow") or Flow(2, '10.0.0.1:5 -> "x"\\é', "y", 1, 0.0)
    return SourceItem("packet", ev, time=kw.get("ts", 1.25), frame=kw.get("frame", 5), flow=flow)


def _plain(v: Any) -> Any:
    """What the JSON of a shape holds: decoded values as json_value gives them (non-finite
    floats as null, keys as strings)."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return json_value(v) if not isinstance(v, bool | int | float | str | type(None)) else v


@pytest.mark.parametrize("case", range(9))
def test_json_unusual_values(case: int) -> None:
    from binlogscope.wire.replication import SemiSyncHeader

    h = EventHeader(1700000000, 30, 7, 90, 1234, 0)
    rows: list[dict[str, Any]] = [
            {"before": {"a": b"\x00\xff", "b": None, "c": 1.5, "d": float("nan"),
                        "e": [1, b"x", {"k": "v"}], "f": True, "g": -(2 ** 70),
                        "h": "é\"\\\n\u2028"},
             "after": None},
            {"before": None, "after": {1: "int key", "x": 2}},
            {"before": None, "after": {}}]
    cases: list[SourceItem] = [
        _item(DecodedEvent(21, h, RowsEvent(1, "s", "t", "DELETE", rows), None, True)),
        _item(DecodedEvent(21, None, None, None, None, error="bad \"header\""),
              error="bad \"header\"", semi=SemiSyncHeader(1)),
        _item(DecodedEvent(21, EventHeader(True, 2, 3, 4, 5, 6),
                           MariadbGtidEvent("0-1-2", 2, 0, 1, 0), None, False)),
        _item(DecodedEvent(21, h, QueryEvent(1, 0, 1, 0, 0, {}, "3", "select 'é'"), None, None),
              semi=SemiSyncHeader(0), direction=Peer.CLIENT),
        _item(None, ts=float("inf")),
        _item(None, ts=3, frame=True, seq=2 ** 65),
        _item(DecodedEvent(21, EventHeader(1, 999, 3, 4, 5, 6), RowsEvent(1, "", "", "INSERT", []),
                           None, 1)),  # type: ignore[arg-type]
        _item(DecodedEvent(21, h, RowsEvent(1, "", "t", "UPDATE", []), None, True),
              frame=1.5),
        _item(DecodedEvent(21, h, None, None, True)),
    ]
    obj = capture_item_json(cases[case])
    assert obj is not None
    assert json.loads(dumps(obj)) == _plain(obj)
