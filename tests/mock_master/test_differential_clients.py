"""Real clients against a real MariaDB and against the mock master serving copies of its binlog
files, compared packet by packet with the differential harness (docs/differential.md).

Each scenario is defined in diff_scenarios.py (also runnable on its own, to read the reports).
The scenarios that append to the real server's binlog come last."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ci_support import unavailable
from tests.mariadb_server import ServerStartError, stop
from tests.mock_master.diff_scenarios import SCENARIOS, Context, make_context

pytestmark = [pytest.mark.mysql, pytest.mark.network]

#: every scenario, in the order they run (the live ones last: they append to the real binlog)
PASSING: tuple[str, ...] = (
    "pmr_file_pos",
    "pmr_file_pos_mid_file",
    "pmr_gtid_inside",
    "pmr_gtid_unknown_domain",
    "pmr_annotate_on",
    "pmr_annotate_off",
    "pmr_blocking_heartbeats",
    "raw_dump_no_capability",
    "raw_dump_capability_2",
    "mariadb_binlog_raw",
    "mariadb_binlog_text",
    "mariadb_binlog_start_position",
    "mariadb_binlog_gtid_start",
    "connector_information_schema",
    "connector_compressed",
    "connector_schema_queries",
    "replica_file_pos",
    "replica_gtid",
    "replica_gtid_compressed",
    "replica_resume_mid_file",
    "replica_until_gtid",
    "mariadb_binlog_stop_never",
    "replica_semi_sync_live",
)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    work = tmp_path_factory.mktemp("differential")
    try:
        c = make_context(work)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        yield c
    finally:
        c.close()
        stop(c.source.server.dir)


@pytest.mark.parametrize("name", PASSING)
def test_the_mock_answers_the_client_as_mariadb_does(ctx: Context, name: str) -> None:
    report = SCENARIOS[name](ctx)
    assert report.ok, report.text()
    assert report.packets_compared >= 40


def test_every_scenario_is_in_the_suite() -> None:
    assert sorted(PASSING) == sorted(SCENARIOS)


def test_mock_master_diff_command_against_mariadb(ctx: Context, tmp_path: Path) -> None:
    """The documented tool, end to end: ``mock-master diff --real ... --binlog-dir ...`` with
    mariadb-binlog as the client says SAME and exits 0."""
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        unavailable("mariadb-binlog is not installed")
    server = ctx.source.server
    first = server.binlog_files()[0].name
    proc = subprocess.run(
        [sys.executable, "-m", "mock_master", "diff", "--real", f"{server.host}:{server.port}",
         "--binlog-dir", str(server.binlog_dir), "--", exe, "--read-from-remote-server",
         "--host={host}", "--port={port}", "--user=repl", "--password=replpass",
         "--to-last-log", first],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("SAME: 1 connection(s) to the real server, 1 to the mock")


def test_mock_master_diff_starts_its_own_mariadb(tmp_path: Path) -> None:
    """``--start-mariadb DIR --sql FILE``: the harness starts the real server itself, fills its
    binlog, compares, and stops it."""
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if exe is None:
        unavailable("mariadb-binlog is not installed")
    sql = tmp_path / "workload.sql"
    sql.write_text("CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, v VARCHAR(10));\n"
                   "INSERT INTO t VALUES (1, 'a'), (2, 'b');\n"
                   "FLUSH BINARY LOGS;\n"
                   "UPDATE t SET v = 'c' WHERE id = 1;\n")
    server_dir = tmp_path / "server"
    proc = subprocess.run(
        [sys.executable, "-m", "mock_master", "diff", "--start-mariadb", str(server_dir),
         "--sql", str(sql), "--", exe, "--read-from-remote-server", "--host={host}",
         "--port={port}", "--user=repl", "--password=replpass", "--to-last-log",
         "mysql-bin.000001"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith("SAME: 1 connection(s) to the real server")
        assert not (server_dir / "mariadbd.pid").exists()  # stopped again
    finally:
        stop(server_dir)
