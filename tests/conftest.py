"""Shared test helpers and the session-wide throw-away MariaDB.

Markers are declared in pyproject.toml. The ``mariadb`` fixture starts a server with
scripts/mariadb.sh in a temporary directory (once per test session) and stops it at the end. When
``CI`` is set, a server that cannot start FAILS the tests that need it; elsewhere they are skipped
with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
from binlogscope.wire.node import Node, check_tiling  # noqa: E402
from tests.ci_support import in_ci  # noqa: E402
from tests.mariadb_server import MariaDB, ServerStartError, start, stop  # noqa: E402
from tests.native_switch import NativeSwitch  # noqa: E402


def fixtures_dir() -> Path:
    """The shared real-binlog fixtures: ``<repo>/../shared/fixtures`` (read-only)."""
    return (REPO.parent / "shared" / "fixtures").resolve()


def capture(name: str) -> Path:
    """Path of a file in the repo's ``captures/`` directory (fails the test if it is missing)."""
    p = REPO / "captures" / name
    if not p.exists():
        pytest.fail(f"capture {name!r} not found in {p.parent}")
    return p


def hexbytes(text: str) -> bytes:
    """Bytes from commented hex: ``#`` starts a comment, whitespace is ignored."""
    cleaned = "".join(line.split("#", 1)[0] for line in text.splitlines())
    return bytes.fromhex(re.sub(r"\s+", "", cleaned))


def assert_node_covers(node: Node, raw: bytes, base: int = 0) -> None:
    """The tree covers ``raw`` exactly and its leaves tile it (no gaps, no overlaps)."""
    assert node.offset == base, f"root starts at {node.offset}, expected {base}"
    assert node.length == len(raw), f"root covers {node.length} bytes, input has {len(raw)}"
    problems = check_tiling(node)
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="session")
def native() -> NativeSwitch:
    """The native kernel's one switch: ``with native.off():`` runs the pure-Python paths;
    ``native.require()`` skips (fails in CI) without the kernel. See tests/native_switch.py."""
    return NativeSwitch()


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    """A running throw-away MariaDB (log_bin, ROW, CRC32, FULL row metadata, semi-sync on)."""
    directory = tmp_path_factory.mktemp("mariadb")
    try:
        server = start(directory)
    except ServerStartError as exc:
        try:
            stop(directory)
        except Exception:
            pass
        if in_ci():
            pytest.fail(f"MariaDB could not be started (CI=true, so this fails): {exc}")
        pytest.skip(f"MariaDB could not be started (run scripts/install-deps.sh): {exc}")
    try:
        yield server
    finally:
        stop(directory)
