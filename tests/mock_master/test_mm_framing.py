"""The serving hot path (``wire.binlog.dump_frames``, and ``mock_master.history.framing``'s numpy
copies):
the event index and the dump framing against their definitions, and a big binlog file served
straight from its bytes."""

from __future__ import annotations

import datetime as dt
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from binlogscope.wire.binlog import dump_frames
from binlogscope.wire.binlog.header import HEADER
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet
from mock_master.history import framing
from mock_master.history.builder import EventBuilder
from mock_master.history.loaders import load_binlog_files
from mock_master.scenario.scenarios import BinlogSource, Scenario
from tests.mock_master.test_mm_server import _raw_dump


def _binlog(sizes: list[int], *, sid: int = 1, other_sid_every: int = 0,
            zero_log_pos_every: int = 0, fake_header_in: int | None = None,
            tail: bytes = b"") -> bytes:
    """Binlog bytes with events of the given sizes (random bodies), log_pos = end offset unless
    told otherwise; ``fake_header_in``: event index whose body holds a header-like pattern that
    passes the candidate test (server id, event_size, log_pos - event_size == its offset)."""
    rnd = random.Random(len(sizes))
    out = bytearray(b"\xfebin")
    for i, size in enumerate(sizes):
        pos = len(out)
        s = sid + 1 if other_sid_every and i % other_sid_every == other_sid_every - 1 else sid
        lp = 0 if zero_log_pos_every and i % zero_log_pos_every == 1 else pos + size
        body = bytearray(rnd.randbytes(size - 19))
        if i == fake_header_in and size >= 19 + 40:
            q = pos + 19 + 7  # where the fake header starts (absolute)
            fake_size = 25
            HEADER.pack_into(body, 7, 0, 2, sid, fake_size, q + fake_size, 0)
        out += HEADER.pack(1700000000, 2 if i else 15, s, size, lp, 0) + body
    return bytes(out + tail)


def _walk(data: bytes) -> tuple[list[int], int]:
    """The event starts by reading one header after the other (the definition)."""
    out: list[int] = []
    pos = 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        if size < 19 or pos + size > len(data):
            break
        out.append(pos)
        pos += size
    return out, pos


def _sizes(n: int, seed: int = 1) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.choice([31, 42, 153, 200, 300, 700, 1500, 5000, 20000]) + rnd.randrange(8)
            for _ in range(n)]


@pytest.mark.parametrize("kw", [
    {},
    {"other_sid_every": 7},
    {"zero_log_pos_every": 5},
    {"fake_header_in": 3},
    {"tail": b"\x01\x02\x03"},  # a torn last header
    {"tail": HEADER.pack(0, 2, 1, 500, 0, 0) + b"x" * 100},  # event past the end
])
def test_index_is_the_chain_of_event_sizes(kw: dict[str, Any]) -> None:
    sizes = _sizes(2000)
    if "fake_header_in" in kw:
        sizes[3] = 400
    data = _binlog(sizes, **kw)
    starts, end = dump_frames.index_events(data)
    assert (list(starts), end) == _walk(data)
    assert len(starts) == len(sizes)


def test_index_of_a_real_binlog() -> None:
    data = (Path(__file__).resolve().parents[2] / "captures"
            / "mariadb-10.11-workload.000001").read_bytes()
    starts, end = dump_frames.index_events(data)
    assert (list(starts), end) == _walk(data)
    assert end == len(data)
    assert dump_frames.event_types(data, starts) == bytes(data[p + 4] for p in starts)
    assert dump_frames.max_event_size(starts, end) == max(
        b - a for a, b in zip(starts, [*starts[1:], end], strict=True))


@pytest.mark.parametrize("seq", [0, 1, 200])
def test_framing_is_one_packet_per_event(seq: int) -> None:
    data = _binlog(_sizes(3000, seed=seq), tail=b"\0" * 3)
    starts, end = dump_frames.index_events(data)
    bounds = [*starts[1:], end]
    for lo, hi in [(0, len(starts)), (0, 1), (5, 1200), (len(starts) - 3, len(starts))]:
        got, s1 = dump_frames.frame_events(data, starts, lo, hi, end, seq)
        want = b"".join(encode_packet(b"\x00" + data[starts[k]:bounds[k]], (seq + k - lo) & 0xFF)
                        for k in range(lo, hi))
        assert got == want and s1 == (seq + hi - lo) & 0xFF
        evs = [data[starts[k]:bounds[k]] for k in range(lo, hi)]
        assert dump_frames.frame_event_list(evs, seq) == (want, hi - lo, s1)


@pytest.mark.skipif(not framing.have_numpy(), reason="numpy paths only")
@pytest.mark.parametrize("seq", [0, 1, 200])
def test_numpy_framing_equals_the_definition(seq: int) -> None:
    data = _binlog(_sizes(3000, seed=seq), tail=b"\0" * 3)
    starts, end = dump_frames.index_events(data)
    assert framing._ordered_assignment()
    for lo, hi in [(0, len(starts)), (0, 1), (5, 1200), (len(starts) - 3, len(starts))]:
        got, s1 = framing.frame_events(data, starts, lo, hi, end, seq)
        want, s2 = dump_frames.frame_events(data, starts, lo, hi, end, seq)
        assert bytes(got) == want and s1 == s2 == (seq + hi - lo) & 0xFF


def test_an_event_of_16_mib_is_split() -> None:
    ev = HEADER.pack(0, 29, 1, MAX_PAYLOAD + 10, 0, 0) + bytes(MAX_PAYLOAD + 10 - 19)
    data = b"\xfebin" + ev
    starts, end = dump_frames.index_events(data)
    got, seq = dump_frames.frame_events(data, starts, 0, 1, end, 7)
    assert got == encode_packet(b"\x00" + ev, 7) and seq == 9


def _big_stream_file(tmp: Path) -> Path:
    b = EventBuilder("mariadb")
    t = b.table("shop", "orders", [("id", "INT"), ("note", "TEXT"), ("at", "DATETIME(3)")])
    for i in range(1500):
        b.transaction(t, [(i, "n" * ((i * 97) % 9000), dt.datetime(2024, 1, 1, 0, 0, i % 60))])
    f = b.build().files[0]
    path = tmp / f.name
    path.write_bytes(f.file_bytes())
    return path


def test_a_big_binlog_file_is_served_straight_from_its_bytes(serve_scenario: Any,
                                                              tmp_path: Path) -> None:
    path = _big_stream_file(tmp_path)
    data = path.read_bytes()
    assert len(data) > 1 << 20
    mm = serve_scenario(Scenario(sources=[BinlogSource([path])]))
    f = mm.master.stream.files[0]
    assert f.data is not None  # framed from the file's bytes, no event list
    first = _raw_dump(mm.host, mm.port)  # frames and caches the wire image
    assert first == data[4:]
    assert _raw_dump(mm.host, mm.port) == first  # from the cached image
    assert f.data is not None
    assert not mm.log.violations
    assert [c.events_sent for c in mm.log.clients if c.dump] == [f.count + 1] * 2


def test_file_backed_stream_builds_its_indexes_lazily(tmp_path: Path) -> None:
    st = load_binlog_files([_big_stream_file(tmp_path)])
    f = st.files[0]
    assert f.data is not None and st._gtids is None
    assert len(st.gtids) == 1500 and st.gtids[-1].gtid == "0-1-1500"
    assert len(st.txn_ends) == 1500
    assert f.data is not None  # still not split into an event list
    evs = f.events  # now it is, and the list is the file
    assert f.data is None and b"".join(evs) == f.file_bytes()[4:]
