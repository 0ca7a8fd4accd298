"""No secret on any TUI surface: the server scramble, the client's auth response and the auth
switch / full-auth data never show in the tree, the hex pane, the field help, the screen, nor in
what ``x``/``X`` write (JSON lines, a tree, a Parquet dataset).

Two sessions: a real capture (MariaDB, mysql_native_password) and a live session against the mock
master with a ``caching_sha2_password`` user, switched and sent through full authentication (the
RSA-encrypted password). The secrets are taken from the sources' own unmasked packets, so the
needles are the exact bytes that were on the wire.
"""

from __future__ import annotations

import base64
import html
import re
from functools import partial
from pathlib import Path

import pytest
from textual.pilot import Pilot

from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings
from binlogscope.inspector.sources.live import LiveSource
from binlogscope.inspector.sources.packets import PacketStreamSource
from binlogscope.inspector.sources.pcap import PcapSource
from binlogscope.session.events import PacketDecoded
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_help import FieldHelp
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.wire.fields import is_sensitive
from mock_master.scenario.scenarios import BinlogSource, Scenario, User
from mock_master.serve.server import ThreadedMockMaster
from tests.tui.conftest import hex_text, sync, tree_labels, wait_for

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "captures" / "pcap-mariadb-binlog.pcap"
BINLOG = ROOT / "captures" / "mariadb-10.11-workload.000001"
PASSWORD = "Sup3r-s3cret-pw"
AUTH_KINDS = ("HANDSHAKE", "AUTH")


def _secrets(src: PacketStreamSource) -> tuple[list[int], list[bytes]]:
    """(rows holding a secret, the secret byte strings) from the source's unmasked packets."""
    rows: list[int] = []
    found: list[bytes] = []
    for i in range(len(src)):
        ev = src.packet(i) if src.row(i).kind == "handshake" else None
        if not isinstance(ev, PacketDecoded) or ev.node is None:
            continue
        wire = len(ev.payload).to_bytes(3, "little") + bytes([ev.seq & 0xFF]) + ev.payload
        secrets = [wire[n.offset - ev.offset : n.end - ev.offset]
                   for _, n in ev.node.walk() if is_sensitive(n) and not n.children]
        secrets = [s.rstrip(b"\0") for s in secrets if len(s.rstrip(b"\0")) >= 4]
        if secrets:
            rows.append(i)
            found.extend(secrets)
    return rows, found


def _needles(secrets: list[bytes]) -> list[str]:
    """Text a leaked secret would show as: hex (plain, spaced, any 4-byte window), base64, and
    its printable runs of 6+ characters."""
    out: list[str] = []
    for s in secrets:
        out += [s.hex(), base64.b64encode(s).decode()]
        for k in range(len(s) - 3):
            out.append(s[k : k + 4].hex(" "))
        out += re.findall(r"[\x21-\x7e]{6,}", s.decode("latin-1"))
    return out


def _leaks(text: str, needles: list[str]) -> list[str]:
    low = text.lower()
    return [n for n in needles if n.lower() in low]


def _screenshot_text(app: BinlogScopeApp) -> str:
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def _walk_secret_rows(app: BinlogScopeApp, pilot: Pilot[None], scr: MainScreen,
                            rows: list[int],
                            needles: list[str], tmp: Path) -> list[Path]:
    """Select every row with a secret, every field of its tree; check each surface; ``X`` it."""
    tree, pane, help_ = scr.query_one(FieldTree), scr.query_one(HexPane), scr.query_one(FieldHelp)
    written: list[Path] = []
    for row in rows:
        scr.events.cursor = scr.view.view_index(row) or 0
        await wait_for(partial(lambda r: scr.detail_row == r and scr.field is not None, row))
        det = scr.detail
        assert det is not None and det.masked, f"row {row}: nothing masked"
        assert "**" in hex_text(pane)
        for _, node in det.node.walk():
            if node.wire == "bit":
                continue
            tree.select_field(node)
            await wait_for(partial(lambda n: scr.field is n, node))
            surfaces = {"tree": "\n".join(tree_labels(tree.root)), "hex": hex_text(pane),
                        "help": str(help_.render()), "screen": _screenshot_text(app)}
            for where, text in surfaces.items():
                assert not _leaks(text, needles), (row, node.name, where, _leaks(text, needles))
            if is_sensitive(node) and not node.children:
                assert det.hex_text(node).replace(" ", "") == "**" * node.length
                for what in ("hex", "value"):  # c / v: the clipboard and the toast
                    scr.action_copy(what)
                    assert not _leaks(app.clipboard, needles), (row, node.name, what)
                    assert "**" in app.clipboard or "<redacted>" in app.clipboard
        out = tmp / f"row{row}.json"
        scr.events.focus()
        await pilot.press("X")
        scr.query_one("#prompt-input").value = str(out)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(partial(lambda o: o.exists() and o.read_text().endswith("\n"), out))
        written.append(out)
    return written


def _cell_text(v: object) -> str:
    if isinstance(v, bytes):  # a binary cell: its bytes as hex and as text
        return f"{v.hex()} {v.decode('latin-1')}"
    if isinstance(v, dict):
        return " ".join(_cell_text(x) for x in v.values())
    if isinstance(v, list):
        return " ".join(_cell_text(x) for x in v)
    return str(v)


def _exported_text(path: Path) -> str:
    """Every byte of an exported file; for a Parquet dataset (compressed) every decoded cell."""
    if path.is_dir():
        import pyarrow.parquet as pq

        parts = []
        for f in sorted(path.rglob("*.parquet")):
            for row in pq.read_table(f).to_pylist():
                parts.append(" ".join(_cell_text(v) for v in row.values()))
        parts += [p.read_bytes().decode("latin-1") for p in sorted(path.rglob("*"))
                  if p.is_file() and p.suffix != ".parquet"]
        return "\n".join(parts)
    return path.read_bytes().decode("latin-1")


async def _check_app(src: PacketStreamSource, tmp: Path, extra: list[str]) -> None:
    app = BinlogScopeApp(src)
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
        scr = app.screen
        assert isinstance(scr, MainScreen)
        await wait_for(lambda: src.info().done and scr.events.row_count == len(src), 60)
        rows, secrets = _secrets(src)
        assert rows and secrets, "the session has no handshake with a scramble"
        needles = _needles(secrets) + extra
        written = await _walk_secret_rows(app, pilot, scr, rows, needles, tmp)
        # x: the whole view as JSON lines, and as a Parquet dataset
        view_file, view_dir = tmp / "view.jsonl", tmp / "view.parquet"
        everything = [scr.view.row_index(i) for i in range(len(scr.view))]
        scr._export(str(view_file), everything, False)
        scr._export(str(view_dir), everything, False)
        await wait_for(lambda: view_file.exists()
                       and len(view_file.read_text().splitlines()) == len(everything), 60)
        await app.workers.wait_for_complete()
        assert view_dir.is_dir()
        written += [view_file, view_dir]
        await pilot.press("q")
    for path in written:
        text = _exported_text(path)
        assert text.strip()
        if path.is_dir():  # the dataset has the packets (and their payloads), secrets left out
            assert "handshake_v10" in text and "handshake_response41" in text
        assert not _leaks(text, needles), (path.name, _leaks(text, needles))
    assert "<redacted>" in (tmp / f"row{rows[0]}.json").read_text()


@sync
async def test_capture_handshake_secrets_never_show(tmp_path: Path) -> None:
    await _check_app(PcapSource(CAPTURE), tmp_path, [])


@sync
async def test_live_caching_sha2_full_auth_secrets_never_show(tmp_path: Path) -> None:
    sc = Scenario(sources=[BinlogSource([BINLOG])],
                  users=[User("sha", PASSWORD, "caching_sha2_password")])
    mm = ThreadedMockMaster(sc).start()
    try:
        conn = ConnectionOptions(host="127.0.0.1", port=mm.port, user="sha", password=PASSWORD,
                                 ssl_mode="DISABLED", get_server_public_key=True)
        first = mm.master.stream.files[0].name
        settings = LiveSettings(conn=conn, start=f"{first}:4", non_blocking=True,
                                reconnect=False, server_id=4243)
        src = LiveSource(settings)
        pw = PASSWORD.encode()
        await _check_app(src, tmp_path, [PASSWORD, pw.hex(), base64.b64encode(pw).decode()])
    finally:
        mm.stop()
