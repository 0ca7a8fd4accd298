"""Helpers for the TUI tests: the app over a real fixture binlog, and waiting for workers."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from tests.helpers import FIXTURES

CRC = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"
TRUNC = (FIXTURES
         / "blackbeam__rust_mysql_common/test-data/binlogs/binlog_truncated_prev_gtid_event.000001")


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``cond`` (the app runs its workers meanwhile); fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("timed out waiting for the TUI")
        await asyncio.sleep(0.02)


def sync(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async Pilot test with asyncio.run (no pytest-asyncio needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper
