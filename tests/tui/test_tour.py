"""``demo --tour``: the guided walk (the cursor moves from the greeting through the login, the
dump request and the events; each step explained on the screen with its field selected), and the
teaching switch that recomputes the demo's login proof - only with the demo's own password."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main as cli_main
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.inspector.tour import STEPS, native_password_walkthrough
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.tour_bar import TourBar
from tests.tui.conftest import screen_lines, sync, wait_for

SEMISYNC = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
pytestmark = pytest.mark.timeout(120)


def _text(app: Any) -> str:
    return "\n".join(screen_lines(app))


@sync
async def test_the_tour_walks_the_session_step_by_step() -> None:
    app = BinlogScopeApp(PcapSource(SEMISYNC), tour=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        src = scr.source
        await wait_for(lambda: src.info().done)
        bar = scr.query_one(TourBar)
        await wait_for(lambda: bar.at == 0 and "Tour 1/" in _text(app))
        seen = []
        for k in range(len(STEPS)):
            step = STEPS[bar.at]
            row = bar.rows[-1]
            def shown(row: int = row) -> bool:
                return scr.detail_row == row

            await wait_for(shown)
            assert step.matches(src.row(row))
            assert f"{step.title}" in _text(app)
            if step.field:
                def selected(path: str = step.field) -> bool:
                    return (scr.field is not None and scr.detail is not None
                            and scr.field is scr.detail.node.find(path))

                await wait_for(selected)
            seen.append((step.title, src.row(row).event_type))
            await pilot.press("right_square_bracket")
            if bar.at == k:  # the end
                break
        await wait_for(lambda: "Tour: the end" in _text(app))
        titles = [t for t, _ in seen]
        assert titles[:6] == [s.title for s in STEPS[:6]]
        assert ("The replica's ACK", "SEMI_SYNC_ACK") in seen
        rows = [bar.rows[i] for i in range(len(bar.rows))]
        assert rows == sorted(rows)  # the cursor only moves forward through the session
        await pilot.press("left_square_bracket")  # back
        await wait_for(lambda: scr.events.current_row == bar.rows[-1]
                       and f"Tour {bar.at + 1}/" in _text(app))
        await pilot.press("T")
        await wait_for(lambda: "Tour" not in _text(app))
        # no teaching switch: the auth response stays masked on the screen
        assert "SHA1(password)" not in _text(app)


def test_native_password_walkthrough_is_the_real_algorithm() -> None:
    scramble = bytes(range(1, 21))
    pw = "replpass"
    s1 = hashlib.sha1(pw.encode()).digest()
    proof = bytes(a ^ b for a, b in zip(
        s1, hashlib.sha1(scramble + hashlib.sha1(s1).digest()).digest(), strict=True))
    text = native_password_walkthrough(scramble, pw, proof)
    assert f"proof = stage1 XOR that = {proof.hex()}\nequals the auth response" in text
    assert max(len(line) for line in text.splitlines()) <= 78  # a line each at 80 columns
    assert "DIFFERS FROM" in native_password_walkthrough(scramble, "other", proof)


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
@sync
async def test_teaching_switch_on_the_in_process_demo(size: tuple[int, int]) -> None:
    """The demo's own mock master and password: the login proof recomputed equals the bytes
    the replica sent (the walkthrough reads them, the tree still masks them)."""
    from binlogscope.inspector.sources.live import LiveSource
    from mock_master.cli import DEMO_PASSWORD
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster
    from tests.tui.test_live import CAPTURE, _settings

    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([CAPTURE])])).start()
    try:
        settings = _settings(mm)
        settings.conn.password = DEMO_PASSWORD
        app = BinlogScopeApp(LiveSource(settings), tour=True, teach=DEMO_PASSWORD)
        async with app.run_test(size=size) as pilot:
            await wait_for(lambda: isinstance(app.screen, MainScreen))
            scr = app.screen
            assert isinstance(scr, MainScreen)
            bar = scr.query_one(TourBar)
            await wait_for(lambda: bar.at == 0, 30)
            await pilot.press("right_square_bracket")
            # on the screen, all of it - also at 80x24, where the bar was cut after 9 lines
            await wait_for(lambda: bar.at == 1 and "equals the auth response" in _text(app), 30)
            assert "teaching switch" in _text(app) and "] next  [ back" in _text(app)
            await wait_for(lambda: scr.detail_row == bar.rows[1], 30)
            assert scr.detail is not None
            auth = scr.detail.node.find("handshake_response41.auth_response")
            assert auth is not None and auth.length == 20
            assert set(scr.detail.slice(auth)) == {ord("*")}  # the tree and hex stay masked
            assert scr.has_class("-teaching")  # the field help made room for it ...
            await pilot.press("right_square_bracket")
            await wait_for(lambda: bar.at == 2 and not scr.has_class("-teaching"), 30)
            await pilot.press("left_square_bracket")
            await wait_for(lambda: bar.at == 1 and scr.has_class("-teaching"), 30)
            await pilot.press("T")  # ... and gets it back when the tour ends there
            await wait_for(lambda: not bar.on and not scr.has_class("-teaching"), 30)
    finally:
        mm.stop()


def test_demo_tour_needs_the_tui() -> None:
    err = io.StringIO()
    assert cli_main(["demo", "--tour", "--plain"], out=io.StringIO(), err=err) == 2
    assert "--tour and --teach need the TUI" in err.getvalue()
    err = io.StringIO()
    assert cli_main(["demo", "--teach"], out=io.StringIO(), err=err) == 2


def test_no_command_into_a_pipe_prints_usage_not_the_demo() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli_main([], out=out, err=err) == 2
    assert out.getvalue() == ""
    assert "no command given" in err.getvalue() and "usage:" in err.getvalue()


@sync
async def test_a_step_whose_row_has_not_come_waits_and_bracket_skips_it() -> None:
    from tests.tui.conftest import CRC
    from tests.tui.test_rows_message import GatedFile

    src = GatedFile(CRC)  # still indexing (never done here): a step waits for its row
    app = BinlogScopeApp(src, tour=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        scr = app.screen
        assert isinstance(scr, MainScreen)
        bar = scr.query_one(TourBar)
        await wait_for(lambda: "waiting for 'The server speaks first'" in _text(app))
        await pilot.press("right_square_bracket")  # a binlog file has no greeting: skip it
        await wait_for(lambda: "waiting for 'The replica logs in'" in _text(app))
        assert bar.at == 0 and bar.waiting
        src.gate.set()
