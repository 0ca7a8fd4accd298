"""The live TUI over a semi-sync dump from the real MariaDB, quit with ``q``: the source's
dump thread is KILLed (the fetcher's last work), so the source stops counting a semi-sync
replica and its next commit does not wait rpl_semi_sync_master_timeout."""

from __future__ import annotations

import time
from typing import Any

import pytest

from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveSettings
from binlogscope.inspector.sources.live import LiveSource
from binlogscope.tui.app import BinlogScopeApp
from tests.tui.conftest import sync, wait_for
from tests.watch_support import global_status_int, run_sql

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(120)]


@sync
async def test_quitting_the_live_tui_kills_the_semi_sync_dump_thread(mariadb: Any) -> None:
    table = "tui_semi_quit"
    run_sql(mariadb, f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT PRIMARY KEY)")
    clients = global_status_int(mariadb, "Rpl_semi_sync_master_clients")
    (old_timeout,) = run_sql(mariadb, "SELECT @@GLOBAL.rpl_semi_sync_master_timeout")[0]
    run_sql(mariadb, "SET GLOBAL rpl_semi_sync_master_timeout = 4000")
    try:
        conn = ConnectionOptions(host=mariadb.host, port=mariadb.port, user=mariadb.repl_user,
                                 password=mariadb.repl_password, ssl_mode="DISABLED")
        src = LiveSource(LiveSettings(conn=conn, semi_sync=True, heartbeat=0,
                                      reconnect=False))
        app = BinlogScopeApp(src)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(lambda: global_status_int(
                mariadb, "Rpl_semi_sync_master_clients") > clients, 20)
            await pilot.press("q")
        src.stop()
        src.replica.join(10)
        assert not getattr(src.replica, "warnings", [])
        deadline = time.time() + 5
        while global_status_int(mariadb, "Rpl_semi_sync_master_clients") > clients \
                and time.time() < deadline:
            time.sleep(0.05)
        assert global_status_int(mariadb, "Rpl_semi_sync_master_clients") == clients
        t0 = time.perf_counter()
        run_sql(mariadb, f"INSERT INTO {table} VALUES ({time.time_ns()})")
        assert time.perf_counter() - t0 < 2.0
    finally:
        run_sql(mariadb, f"SET GLOBAL rpl_semi_sync_master_timeout = {old_timeout}")
