"""The TUI of ``binlogscope proxy`` (Pilot) over a real relayed session with the test MariaDB.

`mariadb-binlog --read-from-remote-server --stop-never` dumps through the proxy as the
replication account (a password, so a scramble and an auth response cross the proxy) while
pymysql commits rows through it on a second connection: the rows show up while both run, a flow
each (``flow:N`` shows one), the phase strip follows the selected row's connection, a rows
event's tree and hex are the server's event, and no password or scramble is on any surface.
``binlogscope proxy`` itself on a terminal (a pty) opens that TUI and ends with its summary
line on ``q`` and on Ctrl-C, its ``--record`` complete. ``sniff``'s TUI (the same live source)
on lo during a proxied dump shows both legs as flows, with the proxy's events.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.inspector.sources.sniff import ProxySource
from binlogscope.tui.app import BinlogScopeApp
from binlogscope.tui.screens.main import MainScreen
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.tui.widgets.phase_strip import PhaseStrip
from binlogscope.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import sync, wait_for
from tests.tui.test_exit_status import run_in_pty
from tests.tui.test_secrets import _exported_text, _leaks, _needles, _secrets, _walk_secret_rows
from tests.watch_support import (
    CLI,
    ENV,
    binlog_events,
    master_status,
    remote_dump_command,
    server_events,
)

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(180)]

COMMITS = 3


def _rows(src: ProxySource, event_type: str, flow: int | None = None) -> list[int]:
    """Rows whose type starts with ``event_type`` (WRITE_ROWS_EVENT: v1 or v2), of ``flow``."""
    return [i for i in range(len(src)) if src.row(i).event_type.startswith(event_type)
            and (flow is None or src.row(i).flow == flow)]


@pytest.mark.slow  # ~110 s on the loaded 2-core box
@sync
async def test_proxy_tui_shows_a_live_relayed_session(mariadb: Any, tmp_path: Path) -> None:
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_tui (id BIGINT PRIMARY KEY, "
                    "v VARCHAR(40))")
    name, pos = master_status(mariadb)
    proxy = ReplicationProxy(("127.0.0.1", 0), (mariadb.host, mariadb.port))
    port = proxy.start()
    src = ProxySource(proxy)
    app = BinlogScopeApp(src)
    dump: subprocess.Popen[bytes] | None = None
    values = [f"tui-{time.time_ns()}-{i}" for i in range(COMMITS)]
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
            scr = app.screen
            assert isinstance(scr, MainScreen) and scr.live and scr.follow
            assert "flow" in scr.events.render_line(0).text  # the capture columns
            dump = subprocess.Popen(remote_dump_command(mariadb, port, name, pos, replica=True),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            await wait_for(lambda: _rows(src, "COM_BINLOG_DUMP") != [], 30)
            dump_flow = src.row(_rows(src, "COM_BINLOG_DUMP")[0]).flow
            # commits through the proxy on a second connection, while the dump streams
            import pymysql

            c = pymysql.connect(host="127.0.0.1", port=port, user=mariadb.user,
                                password=mariadb.password, database=mariadb.database,
                                autocommit=True)
            with c, c.cursor() as cur:
                for i, v in enumerate(values):
                    cur.execute("INSERT INTO proxy_tui VALUES (%s, %s)", (time.time_ns() + i, v))
            await wait_for(lambda: len(_rows(src, "WRITE_ROWS_EVENT", dump_flow)) >= COMMITS, 30)
            assert dump.poll() is None, "the rows must show while the session runs"
            writes = _rows(src, "WRITE_ROWS_EVENT", dump_flow)
            assert len(writes) == COMMITS
            inserts = [i for i in _rows(src, "COM_QUERY") if "proxy_tui" in src.row(i).summary]
            assert len(inserts) == COMMITS
            commit_flow = src.row(inserts[0]).flow
            assert commit_flow != dump_flow
            assert {src.row(i).flow for i in range(len(src))} == {dump_flow, commit_flow}
            # the events are the server's (file, start offset, end position, type)
            expected = server_events(mariadb.binlog_dir, [name])
            for i in writes:
                r = src.row(i)
                assert r.binlog_file == name and r.file_pos is not None
                assert expected[(name, r.file_pos)] == (r.log_pos, r.event_type)
            await wait_for(lambda: scr.events.row_count == len(src))
            scr.follow = False

            # flow:N shows that connection's rows only, all of them
            await pilot.press("f")
            scr.query_one("#prompt-input").value = f"flow:{commit_flow}"  # type: ignore[attr-defined]
            await pilot.press("enter")
            await wait_for(lambda: scr.view.filter.flows == (commit_flow,))
            n = sum(src.row(i).flow == commit_flow for i in range(len(src)))
            await wait_for(lambda: len(scr.view) == n)
            assert all(src.row(scr.view.row_index(i)).flow == commit_flow
                       for i in range(len(scr.view)))
            status = str(scr.query_one(StatusBar).render())
            assert f"flow:{commit_flow}" in status and f"127.0.0.1:{port}" in status
            await pilot.press("f")
            scr.query_one("#prompt-input").value = ""  # type: ignore[attr-defined]
            await pilot.press("enter")
            await wait_for(lambda: not scr.view.filter.active and len(scr.view) == len(src))

            # the phase strip follows the selected row's connection
            strip = scr.query_one(PhaseStrip)
            scr.events.cursor = scr.view.view_index(inserts[-1]) or 0
            await wait_for(lambda: scr.detail_row == inserts[-1])
            await pilot.pause(0.2)
            assert src.phase_at(inserts[-1])[:2] == (2, 2)  # a plain client: its queries
            assert " setup " in str(strip.render()) and " stream " not in str(strip.render())
            w = writes[-1]
            scr.events.cursor = scr.view.view_index(w) or 0
            await wait_for(lambda: scr.detail_row == w and scr.field is not None)
            await pilot.pause(0.2)
            assert src.phase_at(w)[:2] == (5, 5)
            assert " stream " in str(strip.render())

            # the rows event's tree and hex: the packet as relayed, the row's value in the tree
            det = scr.detail
            assert det is not None
            row = src.row(w)
            hexp = scr.query_one(HexPane)
            assert hexp.base == row.offset and len(hexp.data) == row.length + 4
            assert hexp.data[:3] == row.length.to_bytes(3, "little") and hexp.data[4] == 0
            labels = [str(n.value) for _, n in det.node.walk()]
            assert values[-1] in labels
            tree = scr.query_one(FieldTree)
            et = next(n for _, n in det.node.walk() if n.name == "event_type")
            tree.select_field(et)
            await wait_for(lambda: scr.field is et)
            assert hexp.highlight == (et.offset, et.end)
            assert det.slice(et) == hexp.data[9:10] and det.slice(et)[0] in (0x17, 0x1E)

            # no password, scramble or auth response on any surface (tree, hex, help, screen,
            # copies, X exports)
            secret_rows, secrets = _secrets(src)
            assert len(secret_rows) >= 3  # the greetings' nonces, the dump login's auth response
            pw = mariadb.repl_password
            needles = [*_needles(secrets), pw, pw.encode().hex()]
            written = await _walk_secret_rows(app, pilot, scr, secret_rows, needles, tmp_path)
            await pilot.press("q")
        assert src.ended.wait(30)
        for path in written:
            assert not _leaks(_exported_text(path), needles), path.name
    finally:
        src.ended.wait(30)  # (the TUI's worker stops the relay)
        proxy.stop()
        if dump is not None:
            dump.kill()
            dump.wait()
    assert proxy.connections == 2


def test_proxy_command_opens_the_tui_and_ends_with_its_summary(mariadb: Any,
                                                                tmp_path: Path) -> None:
    """``binlogscope proxy`` on a terminal: the TUI (its status bar names the relay); a real
    client's session through it shows; ``q``, Ctrl-C and SIGTERM end it with the summary line
    (the terminal restored), and the ``--record`` capture holds the session."""
    import re

    name, pos = master_status(mariadb)
    with mariadb.connect() as conn, conn.cursor() as cur:  # events from pos on to dump
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_tui (id BIGINT PRIMARY KEY, "
                    "v VARCHAR(40))")
        cur.execute("INSERT INTO proxy_tui VALUES (%s, 'pty')", (time.time_ns(),))
    for key in (b"q", b"\x03", signal.SIGTERM):
        rec = tmp_path / f"tui-{key if isinstance(key, int) else key[0]}.pcapng"
        state: dict[str, Any] = {}

        def step(out: bytes, state: dict[str, Any] = state) -> bool:
            """Once the TUI is up: a dump through the proxy; ready to quit once it is shown."""
            m = re.search(rb"listening on 127\.0\.0\.1:(\d+)", out)
            if "dump" not in state and m and b"palette" in out:  # (the footer: the TUI is up)
                state["dump"] = subprocess.run(
                    remote_dump_command(mariadb, int(m.group(1)), name, pos),
                    capture_output=True, timeout=60)
                state["seen"] = len(out)
            # (the close's row - "client closed the ..." in the list, or the detail's "server
            # closed the connection": whichever FIN the relay passed first)
            return "dump" in state and b"closed the" in out[state["seen"]:]

        rc, out = run_in_pty(["proxy", "--listen", "127.0.0.1:0", "--upstream",
                              f"{mariadb.host}:{mariadb.port}", "--record", str(rec)],
                             step, key=key)
        assert state["dump"].returncode == 0, state["dump"].stderr
        assert rc == 0, out[-3000:]
        assert b"Traceback" not in out
        assert b"\x1b[?1049l" in out  # (the terminal's main screen back)
        assert b"binlogscope proxy: 1 connection(s) relayed; recorded to" in out, out[-2000:]
        res = subprocess.run([*CLI, "pcap", "--json", "--port", str(mariadb.port), str(rec)],
                             capture_output=True, text=True, env=ENV, timeout=60)
        seen = binlog_events(res.stdout.splitlines())
        assert seen and seen[-1][0] == name  # the whole dump, up to the end of the binlog
        expected = server_events(mariadb.binlog_dir, [name])
        assert [(f, o) for f, o, *_ in seen if f == name and o >= pos] == \
            sorted((f, o) for f, o in expected if o >= pos)


@sync
async def test_sniff_tui_shows_both_legs_of_a_proxied_dump(mariadb: Any) -> None:
    """``sniff``'s TUI (the same live source) on lo while mariadb-binlog dumps through the
    proxy: the client's leg and the proxy's leg are two flows in the flow column, with the same
    binlog events (file, start offset, type) as the proxy decoded on its one connection."""
    from binlogscope.drivers.capture.sniff import open_capture
    from binlogscope.inspector.sources.sniff import SniffSource

    name, pos = master_status(mariadb)
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS proxy_tui (id BIGINT PRIMARY KEY, "
                    "v VARCHAR(40))")
        cur.execute("INSERT INTO proxy_tui VALUES (%s, 'sniffed')", (time.time_ns(),))
    proxy = ReplicationProxy(("127.0.0.1", 0), (mariadb.host, mariadb.port))
    port = proxy.start()
    relayed = ProxySource(proxy)
    relayed_app = BinlogScopeApp(relayed)
    capture = open_capture("lo", f"port {port} or port {mariadb.port}")
    sniffed = SniffSource(capture, ports=[port, mariadb.port])
    app = BinlogScopeApp(sniffed)

    def events(src: Any) -> dict[int, list[tuple[str | None, int | None, str]]]:
        out: dict[int, list[tuple[str | None, int | None, str]]] = {}
        for i in range(len(src)):
            r = src.row(i)
            if r.file_pos is not None:
                out.setdefault(r.flow, []).append((r.binlog_file, r.file_pos, r.event_type))
        return out

    try:
        async with relayed_app.run_test(size=(160, 45)), app.run_test(size=(160, 45)) as pilot:
            await wait_for(lambda: isinstance(app.screen, MainScreen), 30)
            scr = app.screen
            assert isinstance(scr, MainScreen) and scr.live
            assert "flow" in scr.events.render_line(0).text
            dump = subprocess.run(remote_dump_command(mariadb, port, name, pos),
                                  capture_output=True, timeout=60)
            assert dump.returncode == 0, dump.stderr
            await wait_for(lambda: len(events(relayed).get(1, [])) >= 5, 30)
            want = events(relayed)[1]
            await wait_for(lambda: sorted(events(sniffed).values()) == [want, want], 30)
            flows = {sniffed.row(i).flow for i in range(len(sniffed))
                     if sniffed.row(i).event_type == "COM_BINLOG_DUMP"}
            assert len(flows) == 2
            await pilot.press("q")
        assert sniffed.ended.wait(30) and relayed.ended.wait(30)
    finally:
        proxy.stop()
