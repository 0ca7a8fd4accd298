"""Helpers for the TUI tests: the app over a real fixture binlog, and waiting for workers."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from textual.widgets.tree import TreeNode

from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.wire.node import Node
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


def screen_lines(app: Any) -> list[str]:
    """The text of every line of the screen as a person sees it (what the compositor paints,
    overlays and toasts included)."""
    strips = app.screen._compositor.render_strips()
    return ["".join(seg.text for seg in strip) for strip in strips]


@pytest.fixture(autouse=True)
def _own_config(tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI reads saved columns from $XDG_CONFIG_HOME: never the user's own in a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


def tree_labels(tnode: TreeNode[Node]) -> list[str]:
    """Every label of a field tree, depth first, as the tree shows them."""
    out = [str(tnode.label)]
    for c in tnode.children:
        out += tree_labels(c)
    return out


def hex_text(pane: HexPane) -> str:
    """Every line of the hex pane as it renders them."""
    top = round(pane.scroll_y)
    lines = (len(pane.data) + pane.per_line - 1) // pane.per_line
    return "\n".join(pane.render_line(y - top).text for y in range(lines))
