"""export --pcap and export --live: packets, events and rows from captures and live sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
CAP = REPO / "captures" / "pcap-semisync.pcap"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogscope", *args], capture_output=True,
                          text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)


def _table(out: Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(out / name).to_pylist()  # type: ignore[no-any-return]


def test_export_pcap_matches_the_pcap_view(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    p = _cli("export", "--pcap", str(CAP), "--out", str(out))
    assert p.returncode == 0, p.stderr
    view = [json.loads(x) for x in _cli("pcap", "--json", str(CAP)).stdout.splitlines()]
    wire = [o for o in view if "direction" in o and "seq" in o]
    packets = _table(out, "packets")
    assert len(packets) == len(wire)
    assert Counter(r["direction"] for r in packets) == Counter(o["direction"] for o in wire)
    # semi-sync: the flags and the ACK packets are there
    assert sum(r["ack_request"] for r in packets) == sum(
        1 for o in wire if (o.get("semi_sync") or {}).get("ack_requested"))
    assert any(r["kind"] == "semi_sync_ack" for r in packets)
    # secrets never exported
    for r in packets:
        if r["kind"].startswith(("handshake", "auth")) or r["command"] == "COM_REGISTER_SLAVE":
            assert r["payload"] is None
    events = _table(out, "events")
    assert len(events) == sum(1 for o in wire if o.get("event_type"))
    rows = _table(out, "rows")
    assert len(rows) == sum(len(o.get("rows") or []) for o in wire)


def test_export_pcap_missing_file_is_one_line(tmp_path: Path) -> None:
    p = _cli("export", "--pcap", str(tmp_path / "nope.pcap"), "--out", str(tmp_path / "o"))
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


@pytest.mark.mysql
def test_export_live_equals_export_of_the_server_files(mariadb: Any, tmp_path: Path) -> None:
    c = mariadb.connect()
    with c.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS exp_live (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("REPLACE INTO exp_live VALUES (1,'a'),(2,'b'),(3,'c')")
        cur.execute("UPDATE exp_live SET v = 'z' WHERE id = 2")
        cur.execute("DELETE FROM exp_live WHERE id = 3")
        cur.execute("SHOW BINARY LOGS")
        files = [r[0] for r in cur.fetchall()]
    c.close()
    env = dict(os.environ, MYSQL_PWD=mariadb.repl_password, HOME=str(mariadb.dir))
    live_out = tmp_path / "live"
    p = _cli("export", "--live", "--host", mariadb.host, "--port", str(mariadb.port), "-u",
             mariadb.repl_user, "--ssl-mode", "DISABLED", "--start", f"{files[0]}:4",
             "--non-blocking", "--out", str(live_out), env=env)
    assert p.returncode == 0, p.stderr
    file_out = tmp_path / "file"
    p = _cli("export", *[str(mariadb.binlog_dir / f) for f in files], "--out", str(file_out))
    assert p.returncode == 0, p.stderr

    def ops(out: Path) -> Counter[tuple[str, str, str]]:
        return Counter((r["schema"], r["table"], r["operation"]) for r in _table(out, "rows"))

    assert ops(live_out) == ops(file_out)
    assert ops(live_out)[(mariadb.database, "exp_live", "UPDATE")] >= 1
    live_packets = _table(live_out, "packets")
    assert {r["source_kind"] for r in live_packets} == {"live"}
    assert not any(r["payload"] and mariadb.repl_password.encode() in r["payload"]
                   for r in live_packets)
