"""The TUI's capture index with the server event packets' rows by the native kernel
(``inspector/sources/packet_index.py``, ``_native/_pktindex.c``) against the Python path
(``BINLOGSCOPE_PURE_PYTHON``: a ``PacketDecoded`` per packet -> ``_add_packet``): every row,
its search text, position, phase, payload and re-decoded tree, and ``info()``, equal over
every capture in ``captures/``, the shared fixtures' pcaps and damaged copies (flipped bytes,
cut, dropped, swapped and duplicated frames; a capture cut short). Each test checks the kernel
took rows where it should (the MariaDB stream captures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from binlogscope import _native
from binlogscope.inspector.sources import packets
from binlogscope.inspector.sources.binlog_file import row_summary
from binlogscope.inspector.sources.packet_index import C_CODE, C_FPOS, C_LOG_POS, C_SEMI, C_SEQ
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.render.line_layout import LineContext
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.types import EventType
from tests.drivers.capture.test_pcap_lines import _damaged
from tests.helpers import CAPTURES, FIXTURES, binlog_fixtures, read_all
from tests.native_switch import NativeSwitch

OURS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
STREAMS = [p for p in OURS if "compressed" not in p.name]
SHARED = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".pcap", ".pcapng")
                and p.stat().st_size < (3 << 20))


GTID_CODES = (int(EventType.GTID_EVENT),)


def _native_kernel() -> Any:
    assert _native.kernel is not None
    return _native.kernel


@pytest.fixture(autouse=True)
def _need_kernel(native: NativeSwitch) -> None:
    native.require()


def _index(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """What the index shows of ``path``, and how many rows the kernel wrote."""
    taken = [0]
    add = packets.PacketStreamSource._add_written

    def counting(self: packets.PacketStreamSource, item: Any, run: Any) -> None:
        taken[0] += run[0]
        add(self, item, run)

    with monkeypatch.context() as m:
        m.setattr(packets.PacketStreamSource, "_add_written", counting)
        src = PcapSource(path)
        src.run(lambda: False)
    out: list[Any] = [src.info(), src.fatal, src.server_version, src.checksum, len(src.steps)]
    for i in range(len(src)):
        d = src.detail(i)
        out.append((src.row(i), src.search_text(i), src.position(i), src.phase_at(i),
                    src.payload(i), d.raw, d.error, d.node.to_dict()))
    return out, taken[0]


def _both(path: Path, native: NativeSwitch, monkeypatch: pytest.MonkeyPatch) -> int:
    got, taken = _index(path, monkeypatch)
    with native.off():
        want, none = _index(path, monkeypatch)
    assert none == 0
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"{path.name}: entry {k}"
    return taken


@pytest.mark.parametrize("path", OURS + SHARED,
                         ids=lambda p: str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES)
                         else p.name)
def test_kernel_index_equals_pure(path: Path, native: NativeSwitch,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _both(path, native, monkeypatch)
    if path in STREAMS and "pymysqlrepl" not in path.name:
        assert taken > 0, "the kernel wrote no row of a MariaDB stream"


@pytest.mark.parametrize("src", [p for p in STREAMS if p.suffix == ".pcap"], ids=lambda p: p.name)
def test_kernel_index_equals_pure_on_damaged_captures(tmp_path: Path, native: NativeSwitch,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      src: Path) -> None:
    taken = [_both(_damaged(tmp_path, src, seed), native, monkeypatch) for seed in range(6)]
    assert sum(taken) > 20  # (the kernel wrote between the damage)


def test_kernel_index_equals_pure_on_cut_captures(tmp_path: Path, native: NativeSwitch,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    taken = 0
    for src in (p for p in STREAMS if p.suffix == ".pcap"):
        data = src.read_bytes()
        for frac in (0.37, 0.71, 0.93):
            p = tmp_path / f"cut-{frac}-{src.name}"
            p.write_bytes(data[: int(len(data) * frac)])
            taken += _both(p, native, monkeypatch)
    assert taken > 20  # (the kernel wrote before the cut)


BINLOGS = [*sorted(CAPTURES.glob("*.binlog")), CAPTURES / "mariadb-10.11-workload.000001",
           *binlog_fixtures()]


def _kernel_rows_of(path: Path) -> tuple[int, dict[int, int]]:
    """Each event of a binlog file offered to the index writer as a stream's packet (the OK
    byte, then the event), the context kept as the stream's decoder keeps it (the Python
    decode of every event, told to the writer); each row the writer took checked against the
    Python path's columns and summary (the indexer's: ``row_summary``'s part, cut). Returns
    the rows taken and how many of them per row count of a rows event."""
    data = read_all(path)
    ctx = DecodeContext()
    line = _native_kernel().IndexRows()
    context = LineContext(line)
    line.packet = 1
    taken = 0
    counts: dict[int, int] = {}
    pos = 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        if size < 19 or pos + size > len(data):
            break
        event = data[pos : pos + size]
        payload = b"\x00" + event
        context.sync(ctx)
        line.at = pos
        line.trx = 1
        got = line(len(payload).to_bytes(3, "little") + b"\x07" + payload, 0, 1000)
        ev = decode_event(event, ctx, base=pos, record=False)
        if got is not None:
            n, cols, text, _, gtids, _ = line.take()
            assert n == 1 and ev.error is None and ev.header is not None
            assert got[:2] == (ev.header.type_code, ev.header.log_pos)
            assert (cols[C_CODE][0], int.from_bytes(cols[C_LOG_POS], "little"),
                    int.from_bytes(cols[C_FPOS], "little"), cols[C_SEQ], cols[C_SEMI]) == \
                (ev.header.type_code, ev.header.log_pos, pos, b"\x07\x00", b"\x00")
            assert text.decode() == row_summary(ev), f"{path.name} at {pos}"
            if ev.header.type_code in GTID_CODES:
                assert gtids[-1] == ev.body.gtid  # type: ignore[union-attr]
            taken += 1
            if isinstance(ev.body, RowsEvent):
                counts[ev.body.row_count] = counts.get(ev.body.row_count, 0) + 1
        context.seen(ev, ctx)
        pos += size
    return taken, counts


def test_kernel_rows_summaries_equal_python_over_binlogs(native: NativeSwitch) -> None:
    """The writer's columns and summaries (rows counted by the kernel's walk, GTIDs,
    statements, XIDs, TABLE_MAPs) against the Python decode of every event of the real binlogs
    (captures/, shared fixtures): what the small captures alone leave out (multi-row events
    after the first of their table, statements cut at 100 characters)."""
    taken = 0
    counts: dict[int, int] = {}
    for path in BINLOGS:
        t, c = _kernel_rows_of(path)
        taken += t
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    assert taken > 500 and sum(v for k, v in counts.items() if k > 1) > 10, (taken, counts)
