"""A packet whose sequence id breaks the count is an item and a non-zero exit: the client
libraries stop there (MariaDB's net_serv.cc "Packets out of order",
ER_NET_PACKETS_OUT_OF_ORDER 1156). ``live`` shows one ``sequence_mismatch`` item per wrong id
(the packet after it may go on from either count) and exits 1; an untouched stream exits 0.
The mock master's ``mangle_packet`` fault changes one event packet's sequence id."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from mock_master.scenario.faults import Action

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"

pytestmark = pytest.mark.network


def _run(mm: Any, tmp: Path, monkeypatch: pytest.MonkeyPatch,
         *extra: str) -> tuple[int, list[dict[str, Any]], str]:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp))
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--no-reconnect", "--start", "mysql-bin.000001:4",
               "--non-blocking", *extra], out=out, err=err)
    return rc, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


@pytest.mark.parametrize("delta", [1, -3, 100])
def test_live_flags_a_wrong_sequence_id(mock_master: Callable[..., Any], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, delta: int) -> None:
    mm = mock_master(binlogs=[CAPTURE],
                     actions=[Action("mangle_packet", at=10,
                                     args={"field": "seq", "delta": delta})])
    rc, items, err = _run(mm, tmp_path, monkeypatch)
    bad = [i for i in items if i.get("kind") == "sequence_mismatch"]
    assert len(bad) == 1, bad
    assert bad[0]["direction"] == "server"
    assert (bad[0]["got"] - bad[0]["expected"]) % 256 == delta % 256
    assert rc == 1, err
    assert "packets out of order" in err and "Traceback" not in err
    # the stream went on after it: every event of the file was shown
    clean = mock_master(binlogs=[CAPTURE])
    rc0, items0, err0 = _run(clean, tmp_path, monkeypatch)
    assert rc0 == 0, err0
    assert not any(i.get("kind") == "sequence_mismatch" for i in items0)
    assert (sum(1 for i in items if i.get("event_type"))
            == sum(1 for i in items0 if i.get("event_type")))


def test_semi_sync_and_compression_keep_their_own_counts(
        mock_master: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Semi-sync (MariaDB restarts the ids after an ACK) and the compressed protocol (the
    frames have their own count) raise no false item."""
    mm = mock_master(binlogs=[CAPTURE], semi_sync=True)
    rc, items, err = _run(mm, tmp_path, monkeypatch, "--semi-sync",
                          "--compression-algorithms", "zlib")
    assert rc == 0, err
    assert not any(i.get("kind") == "sequence_mismatch" for i in items)
    assert sum(1 for i in items if i.get("event_type")) > 100
