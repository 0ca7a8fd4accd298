"""The mock master's compressed protocol with zstd: the MySQL flavour from 8.0.18 offers
CLIENT_ZSTD_COMPRESSION_ALGORITHM (bit 26, in the greeting's upper capability bytes) beside
CLIENT_COMPRESS, and a client that takes zstd gets zstd frames at the level its handshake
response names (MySQL 8.0.18's zstd support; ``negotiated``: zlib wins when both are set, as
the server's ``server_mpvio_update_thd``); older MySQL versions and MariaDB offer zlib only.
The client is binlogscope's own replica (``live --compression-algorithms``), whose decoding of
every frame is checked against the served files' events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_position")
FILES = [FIXTURES / "binlog.000001", FIXTURES / "binlog.000002"]


def _live(mm: ThreadedMockMaster, algorithms: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", mm.host,
                           "--port", str(mm.port), "-u", "repl", "--compression-algorithms",
                           algorithms, "--start", "binlog.000001:4", "--non-blocking",
                           "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MYSQL_PWD": "replpass"})


def _file_events() -> list[tuple[str, int]]:
    out = []
    for f in FILES:
        r = subprocess.run([sys.executable, "-m", "binlogscope", "file", "--json", str(f)],
                           capture_output=True, text=True, timeout=60)
        out += [(d["event_type"], d["log_pos"]) for d in map(json.loads, r.stdout.splitlines())]
    return out


def _mock(serve: Callable[[Scenario], ThreadedMockMaster], flavor: str,
          version: str) -> ThreadedMockMaster:
    if not all(f.exists() for f in FILES):
        pytest.fail(f"the MySQL 8.0.45 fixture binlogs are missing under {FIXTURES}")
    return serve(Scenario(flavor=flavor, server_version=version,
                          sources=[BinlogSource(list[str | Path](FILES))]))


def test_a_zstd_session(serve_scenario: Callable[[Scenario], ThreadedMockMaster]) -> None:
    mm = _mock(serve_scenario, "mysql", "8.0.45")
    r = _live(mm, "zstd")
    assert r.returncode == 0, r.stderr
    items = [json.loads(line) for line in r.stdout.splitlines()]
    frames = [d for d in items if d.get("kind") == "compressed_frame"]
    assert {d["direction"] for d in frames} == {"client", "server"}
    assert {d["algorithm"] for d in frames} == {"zstd", "stored"}  # small ones stored as is
    assert any(d["uncompressed_length"] for d in frames if d["direction"] == "server")
    got = [(d["event_type"], d["log_pos"]) for d in items
           if d.get("event_type") and d.get("log_pos")]
    assert [e for e in got if e[0] != "FORMAT_DESCRIPTION_EVENT"] == \
        [e for e in _file_events() if e[0] != "FORMAT_DESCRIPTION_EVENT"]
    assert mm.log.clients[-1].compression == "zstd"


@pytest.mark.parametrize(("flavor", "version"), [("mysql", "8.0.17"),
                                                 ("mariadb", "11.4.2-MariaDB-log")])
def test_zstd_is_not_offered_before_8018_nor_by_mariadb(
        serve_scenario: Callable[[Scenario], ThreadedMockMaster], flavor: str,
        version: str) -> None:
    mm = _mock(serve_scenario, flavor, version)
    r = _live(mm, "zstd")
    assert r.returncode != 0
    assert "offers none of the compression algorithms 'zstd'" in r.stderr
    r = _live(mm, "zstd,zlib")
    assert r.returncode == 0, r.stderr
    assert mm.log.clients[-1].compression == "zlib"
