"""pcap mode keeps a packet's place, not its payload: a row's bytes are read again from the
capture file (the frame its first byte arrived in, the TCP direction reassembled from there, the
payload's CRC-32 checked) when the row is opened, exported or decoded. Every surface must show
what it showed when every payload was kept: the detail tree, the hex pane, the screen, the JSON
export - over every real capture in captures/ (the compressed ones and the one with loss and
reordering included)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from tests.tui.conftest import hex_text, screen_lines, sync, tree_labels, wait_for

pytestmark = pytest.mark.timeout(300)

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
PCAPS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
LOSS = CAPTURES / "pcap-loss-reorder.pcap"
COMPRESSED = CAPTURES / "pcap-compressed-zlib.pcap"


def _sources(path: Path) -> tuple[PcapSource, PcapSource]:
    """(the source as the TUI opens it, the same with every payload kept)."""
    placed, kept = PcapSource(path), PcapSource(path)
    kept.places = None
    placed.run(lambda: False)
    kept.run(lambda: False)
    assert placed.fatal is None and kept.fatal is None
    return placed, kept


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_placed_rows_show_the_kept_bytes(path: Path) -> None:
    src, kept = _sources(path)
    assert len(src) == len(kept)
    placed = [i for i in range(len(src)) if src._placed[i]]
    assert placed, "no payload left in the capture"
    for i in placed:
        assert src._payload[i] is None and kept._payload[i] is not None
        # found by its place, not by decoding the capture again
        assert src.places is not None
        got = src.places.packet(src._frame[i], src._len[i], src._seq[i], src._crc[i])
        assert got == kept._payload[i], i
    for i in range(len(src)):
        a, b = src.detail(i), kept.detail(i)
        assert (a.raw, a.base, a.error, a.masked) == (b.raw, b.base, b.error, b.masked), i
        assert a.node.to_dict() == b.node.to_dict(), i
        assert src.row_json(i) == kept.row_json(i), i
        assert src.row_json(i, tree=True) == kept.row_json(i, tree=True), i


def test_a_place_that_does_not_match_reads_the_capture_again() -> None:
    src, kept = _sources(LOSS)
    rows = [i for i in range(len(src)) if src._placed[i]]
    for i in rows[:: max(1, len(rows) // 8)]:
        src._crc[i] ^= 1  # the bytes at its place are not its bytes any more
        assert src.payload(i) == kept._payload[i]
        assert src.detail(i).node.to_dict() == kept.detail(i).node.to_dict()


def test_a_pipe_keeps_every_payload() -> None:
    src = PcapSource("-")
    assert src.places is None


def _shown(scr: MainScreen, tree: FieldTree, row: int) -> bool:
    return (scr.detail_row == row and scr.detail is not None
            and tree.root.data is scr.detail.node)


async def _settled_screen(app: BinlogScopeApp, pilot: Any) -> list[str]:
    """The screen's lines once two frames in a row are the same (a loaded machine may still be
    scrolling the list to the new cursor, or drawing its scrollbar, at the first frame)."""
    await pilot.pause()
    last = screen_lines(app)
    for _ in range(50):
        await pilot.pause(0.05)
        now = screen_lines(app)
        if now == last:
            return now
        last = now
    return last


async def _surfaces(src: PcapSource, rows: list[int], out: Path) -> list[object]:
    """What the TUI shows for each row (tree, hex, screen) and its JSON-lines export."""
    app = BinlogScopeApp(src)
    seen: list[object] = []
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src), 60)
        tree, pane = scr.query_one(FieldTree), scr.query_one(HexPane)
        for row in rows:
            scr.events.cursor = scr.view.view_index(row) or 0
            await wait_for(partial(_shown, scr, tree, row), 30)
            seen.append((row, tree_labels(tree.root), hex_text(pane),
                         await _settled_screen(app, pilot)))
        everything = [scr.view.row_index(i) for i in range(len(scr.view))]
        scr._export(str(out), everything, True)
        await wait_for(lambda: out.exists()
                       and len(out.read_text().splitlines()) == len(everything), 60)
        await app.workers.wait_for_complete()
        await pilot.press("q")
    seen.append(out.read_text())
    return seen


@pytest.mark.parametrize("path", [LOSS, COMPRESSED], ids=lambda p: p.name)
@sync
async def test_the_tui_shows_placed_rows_as_kept_ones(path: Path, tmp_path: Path) -> None:
    src, _ = _sources(path)
    placed = [i for i in range(len(src)) if src._placed[i]]
    rows = sorted({placed[0], placed[len(placed) // 2], placed[-1]})
    fresh, kept = PcapSource(path), PcapSource(path)
    kept.places = None
    a = await _surfaces(fresh, rows, tmp_path / "placed.jsonl")
    b = await _surfaces(kept, rows, tmp_path / "kept.jsonl")
    assert a == b
    assert all(fresh._payload[i] is None for i in rows)


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_rows_published_together_are_the_rows_published_one_by_one(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture file's rows are gathered and stored a few hundred at a time once the first
    rows are out (one store per column): every column of every row is what the one-by-one
    path stores."""
    from binlogscope.inspector.sources import pcap

    monkeypatch.setattr(pcap, "FIRST_ROWS", 10)  # (these captures are small)
    monkeypatch.setattr(pcap, "PUBLISH_EVERY", 7)
    together, single = PcapSource(path), PcapSource(path)
    single._gather = False
    together.run(lambda: False)
    single.run(lambda: False)
    assert single.publish_every == 1 and together.publish_every == 7
    assert len(together) == len(single) > 0
    for i in range(len(single)):
        assert together.row(i) == single.row(i), i
        assert together.search_text(i) == single.search_text(i)
        assert together.position(i) == single.position(i)
        assert together.phase_at(i) == single.phase_at(i)
    assert together.info() == single.info()


def test_text_column_extend_is_append() -> None:
    from binlogscope.inspector.text_column import TextColumn

    texts = ["COMMIT xid=7", "", "3 rows", "caf\u00e9 \u20ac", "x" * 300, "\udcff bad byte"]
    a, b = TextColumn(), TextColumn()
    for t in texts:
        a.append(t)
    b.extend(texts[:3])
    b.extend(texts[3:])
    assert [a[i] for i in range(len(a))] == [b[i] for i in range(len(b))] == texts


@sync
async def test_a_status_update_lays_nothing_out() -> None:
    """While a big capture is indexed the status line changes at every tick: its new text is
    painted without a layout of the whole screen (one line of fixed height), and shown."""
    from binlogscope.inspector.source import SourceInfo
    from binlogscope.tui.widgets.status_bar import StatusBar

    app = BinlogScopeApp(PcapSource(LOSS))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
        src = app.screen.source  # type: ignore[attr-defined]
        await wait_for(lambda: src.info().done, 30)
        await pilot.pause()
        bar = app.screen.query_one(StatusBar)
        assert not bar._layout_required
        info = SourceInfo(label="x", events=123_456, rows=234_567)
        # (the screen's own status refresh shows the same: it must not paint over the test's)
        src.info = lambda: info
        bar.show(info, "", 0, "", 0)
        assert not bar._layout_required
        await pilot.pause()
        await wait_for(lambda: any("234,567 rows, 123,456 binlog events" in line
                                   for line in screen_lines(app)), 10)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "gzip"])
def test_each_file_format_finds_frames_by_number(fmt: str, tmp_path: Path) -> None:
    """A classic pcap file's frames are found through its record offsets, a pcapng file's
    through its packet blocks' offsets, a gzip'd capture's by reading it forward: each gives
    every placed payload back."""
    import gzip

    path = {"pcap": CAPTURES / "pcap-semisync.pcap",
            "pcapng": CAPTURES / "pcap-mariadb-replica.pcapng"}.get(fmt)
    if path is None:
        path = tmp_path / "semisync.pcap.gz"
        path.write_bytes(gzip.compress((CAPTURES / "pcap-semisync.pcap").read_bytes()))
    src, kept = _sources(path)
    placed = [i for i in range(len(src)) if src._placed[i]]
    assert len(placed) > 50
    for i in reversed(placed):  # (from the end: each read finds its frame anew)
        assert src.payload(i) == kept._payload[i], i
    places = src.places
    assert places is not None
    indexed = {"pcap": places._offsets is not None, "pcapng": places._ng is not None,
               "gzip": places._offsets is None and places._ng is None}
    assert indexed[fmt]
