"""Shared test helpers and the session-wide throw-away MariaDB.

Markers are declared in pyproject.toml. The ``mariadb`` fixture starts a server with
scripts/mariadb.sh in a temporary directory (once per test session) and stops it at the end. When
``CI`` is set, a server that cannot start FAILS the tests that need it; elsewhere they are skipped
with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

#: Every Spark driver JVM the tests start (the session fixture's, and ``binlogscope analyze`` /
#: ``export --spark`` / ``spark-submit`` run as subprocesses: Spark's launcher adds
#: ``SPARK_SUBMIT_OPTS`` to the driver's java command in local mode) compiles with C1 only and
#: one GC thread: the tests' JVMs live seconds on tiny data, where C2's compile work never pays
#: back (measured on this 2-core machine: JVM start plus the analyze reports 84 s -> 45 s). Only
#: the JIT and the GC change, never what Spark computes. A value set by the user is kept.
SPARK_TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("SPARK_SUBMIT_OPTS", SPARK_TEST_JVM_OPTS)
from binlogscope.wire.node import Node, check_tiling  # noqa: E402
from tests import suite_guards  # noqa: E402
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


def pytest_configure(config: pytest.Config) -> None:
    """The whole run's deadline (``BINLOGSCOPE_TEST_DEADLINE``, tests/suite_guards.py), in
    pytest's main process (not in an xdist worker, whose config has ``workerinput``)."""
    if hasattr(config, "workerinput"):
        return
    try:
        seconds = suite_guards.deadline()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if seconds is not None:
        suite_guards.arm(seconds)


def pytest_unconfigure(config: pytest.Config) -> None:
    suite_guards.disarm()


@pytest.fixture(autouse=True)
def _sigpipe_kept() -> Iterator[None]:
    """Fails a test that leaves SIGPIPE other than it found it (and puts it back): see
    tests/suite_guards.py."""
    try:
        with suite_guards.sigpipe_kept():
            yield
    except suite_guards.SigpipeChangedError as exc:
        pytest.fail(f"the test changed SIGPIPE: {exc}", False)


def _slow_cases() -> set[str]:
    """The node ids listed in tests/slow_cases.txt (comments and blank lines skipped)."""
    try:
        text = (Path(__file__).parent / "slow_cases.txt").read_text(encoding="utf-8")
    except OSError:
        return set()
    return {line for line in text.splitlines() if line and not line.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before xdist's hook (it reads the groups) and -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With pytest-xdist (scripts/test.sh runs ``-n 2 --dist loadgroup``): one group per test
    file, so a module-scoped fixture (a MariaDB, a replica, a capture) is set up once, on one
    worker; every file with a ``spark`` test joins the one ``spark`` group, so one worker runs
    them all on its one Spark session (a JVM per worker would cost seconds and memory twice).
    The files with a ``slow`` test are handed out first (longest first keeps both workers busy
    to the end); a file's tests keep their order. Without xdist nothing changes.

    First, the fast loop's marks: every ``spark`` test, and every test of
    ``tests/slow_cases.txt`` (the tests a measured whole run found slow:
    scripts/slow_cases.py), is marked ``slow``, so ``-m 'not slow'`` leaves them out."""
    slow_cases = _slow_cases()
    for item in items:
        if item.nodeid in slow_cases or item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.slow)
    if not getattr(config.option, "loadgroup", False):  # set on an xdist worker by --dist loadgroup
        return
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def having(marker: str) -> set[str]:
        return {f for f, its in by_file.items() if any(i.get_closest_marker(marker) for i in its)}

    spark_files, slow_files = having("spark"), having("slow")
    for name, its in by_file.items():
        group = "spark" if name in spark_files else name
        for item in its:
            item.add_marker(pytest.mark.xdist_group(group))
    order = sorted(by_file, key=lambda f: (f not in spark_files, f not in slow_files))
    items[:] = [item for name in order for item in by_file[name]]
