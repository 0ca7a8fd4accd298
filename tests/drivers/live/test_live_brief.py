"""``live --brief`` decodes its stream without trees (the fast path: several times faster than
with them) and still shows each packet's title as its tree has it,
``binlog_event XID_EVENT (seq 7, 32 bytes)`` (``wire.packet.packet_title``, the one
definition of both)."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.render.text import session_event_text
from binlogscope.session.events import PacketDecoded

REPO = Path(__file__).resolve().parents[3]
CAPTURES = sorted(p for p in (REPO / "captures").iterdir() if p.suffix in (".pcap", ".pcapng"))
BINLOG = REPO / "captures" / "mariadb-10.11-workload.000001"


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name for p in CAPTURES])
def test_a_packet_without_its_tree_has_the_trees_title(capture: Path) -> None:
    # every packet of the real captures (handshakes, queries, result sets, errors, dumps,
    # semi-sync, compressed), decoded with trees: its brief line without the tree is the same
    packets = [it.event for it in read_capture(str(capture), record=True)
               if isinstance(it.event, PacketDecoded) and it.event.node is not None]
    assert len(packets) > 10
    for ev in packets:
        bare = dataclasses.replace(ev, node=None)
        assert session_event_text(bare, True, titles=True) == session_event_text(ev, True)
    assert any(ev.binlog_event is not None for ev in packets)


@pytest.mark.network
def test_live_brief_without_trees_shows_what_it_showed_with_them(
        mock_master: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    mm = mock_master(binlogs=[BINLOG])

    def brief(*extra: str) -> list[str]:
        out, err = io.StringIO(), io.StringIO()
        rc = main(["live", "--brief", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
                   "--ssl-mode", "DISABLED", "--no-reconnect", "--non-blocking", "--server-id",
                   "77", "--start", "mysql-bin.000001:4", *extra], out=out, err=err)
        assert rc == 0, err.getvalue()
        return [ln for ln in out.getvalue().splitlines() if ln.startswith(("<-", "->"))]

    fast = brief()  # the stream decoded without trees
    treed = brief("--record", str(tmp_path / "r.pcapng"))  # a recording keeps the trees
    assert len(fast) > 250
    assert fast == treed
    assert sum("binlog_event XID_EVENT (seq " in ln for ln in fast) > 20
