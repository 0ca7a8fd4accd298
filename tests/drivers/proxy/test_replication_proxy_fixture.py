"""The ``replication_proxy`` pytest fixture (binlogscope's pytest11 plugin) between
``mariadb-binlog --read-from-remote-server --raw`` and the mock master: the raw dump through it
equals the direct one, its decoded binlog events are the served file's, and an action given to
the fixture cuts the client's dump where it says."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.wire.binlog.stream import BinlogStreamDecoder

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"
MARIADB_BINLOG = shutil.which("mariadb-binlog")
pytestmark = pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog not installed")


def _dump(port: int, into: Path, name: str) -> tuple[int, str, bytes]:
    into.mkdir()
    res = subprocess.run(
        [MARIADB_BINLOG or "", "--read-from-remote-server", "--raw", "--host=127.0.0.1",
         f"--port={port}", "--user=repl", "--password=replpass", f"--result-file={into}/",
         name], capture_output=True, text=True, timeout=60)
    out = into / name
    return res.returncode, res.stderr, out.read_bytes() if out.exists() else b""


def test_replication_proxy_fixture(mock_master: Callable[..., Any],
                                   replication_proxy: Callable[..., Any],
                                   tmp_path: Path) -> None:
    import pymysql

    mm = mock_master(binlogs=[CAPTURE])
    with pymysql.connect(host=mm.host, port=mm.port, user="repl", password="replpass") as c, \
            c.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        name = str(cur.fetchall()[0][0])  # (the name the file's server gave it)
    rc, err, direct = _dump(mm.port, tmp_path / "direct", name)
    assert rc == 0, err
    rp = replication_proxy(f"{mm.host}:{mm.port}")
    rc, err, via = _dump(rp.port, tmp_path / "via", name)
    assert rc == 0 and via == direct, err
    rp.stop()
    assert rp.connections == 1
    dec = BinlogStreamDecoder(record=False)
    dec.receive_data(CAPTURE.read_bytes())
    served = [ev.type_name for ev in dec.events()]
    seen = [ev.type_name for ev in rp.binlog_events()]
    assert seen[0] == "ROTATE_EVENT" and seen[1:] == served  # (the fake ROTATE first)
    cut = replication_proxy((mm.host, mm.port), actions=["disconnect_after_event at=4"])
    rc, err, part = _dump(cut.port, tmp_path / "cut", name)
    cut.stop()
    assert rc != 0 and "Lost connection" in err
    assert any("disconnect_after_event at event 4" in n for n in cut.notes), cut.notes
    assert len(cut.binlog_events()) == 4 and direct.startswith(part) and len(part) < len(direct)
