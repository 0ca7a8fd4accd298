"""The redacted bundle still breaks a real client the same way as the original:
python-mysql-replication reading the real MariaDB workload binlog through the mock master fails
with ``ValueError: year N is out of range`` (it mis-decodes a temporal column of this binlog);
reading the bundle, it reads the same events and fails at the same event with the same error
(another N: the bytes are scrubbed)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

pytestmark = [pytest.mark.network]

SRC = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def _read(path: Path) -> tuple[list[str], str | None]:
    """The event classes python-mysql-replication yields, and how it failed."""
    from pymysqlreplication import BinLogStreamReader

    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([path])])).start()
    names: list[str] = []
    failure = None
    try:
        s = BinLogStreamReader(
            connection_settings={"host": mm.host, "port": mm.port, "user": "repl",
                                 "password": "replpass"},
            server_id=4243, blocking=False, log_file="mysql-bin.000001", log_pos=4,
            resume_stream=True)
        try:
            for ev in s:
                names.append(type(ev).__name__)
                getattr(ev, "rows", None)  # what a consumer reads (decoded on first access)
        except Exception as exc:
            failure = f"{type(exc).__name__}: {re.sub(r'[0-9]+', 'N', str(exc))}"
        finally:
            s.close()
    finally:
        mm.stop()
    return names, failure


def test_the_bundle_breaks_the_client_the_same_way(tmp_path: Path) -> None:
    out: Any = io.StringIO()
    assert main(["redact", str(SRC), "--out", str(tmp_path / "b")], out=out,
                err=io.StringIO()) == 0
    bundle = tmp_path / "b" / "binlog" / SRC.name
    names_a, fail_a = _read(SRC)
    names_b, fail_b = _read(bundle)
    assert fail_a is not None, "the original no longer breaks this client"
    assert fail_a == "ValueError: year N is out of range"
    assert fail_b == fail_a
    assert names_b == names_a  # the same events up to the failure, the same one fails
