"""How a dump ends, as the session and the summaries tell it: the EOF after a MariaDB
``START SLAVE UNTIL master_gtid_pos`` stop (the replica sets ``@slave_until_gtid`` on the
source, whose dump thread ends the dump with an EOF once the position is reached - checked here
against the real MariaDB), and a dump file name a client NUL-terminated inside the field, shown
escaped (never as a raw NUL) in ``--brief`` and in ``pcap``/``proxy --summary``."""

from __future__ import annotations

from typing import Any

import pytest

from binlogscope.cli.pcap_summary import FlowStats
from binlogscope.drivers.items import Flow, SourceItem
from binlogscope.drivers.live import dialog as live_dialog
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.drivers.live.replica import LiveReplica, LiveSettings
from binlogscope.inspector.packet_text import packet_summary
from binlogscope.session import Session
from binlogscope.session.events import PacketDecoded, Peer, Phase, PhaseChanged, Role
from binlogscope.session.readers import dump_eof_reason
from binlogscope.wire.commands import ComBinlogDump
from binlogscope.wire.framing import encode_packet
from tests.watch_support import run_sql


def _gtid_pos(db: Any) -> str:
    c = db.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SELECT @@gtid_binlog_pos")
            return str(cur.fetchone()[0])
    finally:
        c.close()




@pytest.mark.mysql
def test_the_eof_after_an_until_stop_is_labelled_as_the_until_position(
        mariadb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run_sql(mariadb, "CREATE TABLE IF NOT EXISTS until_t (id INT PRIMARY KEY)",
            "DELETE FROM until_t")
    start = _gtid_pos(mariadb)
    run_sql(mariadb, "INSERT INTO until_t VALUES (1)")
    until = _gtid_pos(mariadb)
    run_sql(mariadb, "INSERT INTO until_t VALUES (2)", "INSERT INTO until_t VALUES (3)")
    setup = live_dialog.run_setup

    def with_until(rd: Any, *args: Any) -> None:  # what a MariaDB replica's UNTIL does
        setup(rd, *args)
        live_dialog.query(rd, f"SET @slave_until_gtid='{until}'")

    monkeypatch.setattr(live_dialog, "run_setup", with_until)
    conn = ConnectionOptions(host=mariadb.host, port=mariadb.port, user=mariadb.repl_user,
                             password=mariadb.repl_password, ssl_mode="DISABLED")
    rep = LiveReplica(LiveSettings(conn=conn, gtid=start, reconnect=False, stream_tree=False))
    rep.start()
    items: list[SourceItem] = []
    for cursor, item in rep.items(timeout=0.1):
        items.append(item)
        rep.ack(cursor, item)
    rep.join(10)
    ends = [i.event for i in items if isinstance(i.event, PhaseChanged)
            and i.event.old is Phase.BINLOG_STREAM]
    assert [e.reason for e in ends] == [
        f"the source stopped the dump at the replica's UNTIL position "
        f"(@slave_until_gtid='{until}')"]
    gtids = {i.event.binlog_event.trx_gtid for i in items if isinstance(i.event, PacketDecoded)
             and i.event.binlog_event is not None} - {None}
    assert gtids == {until}  # the one transaction up to the UNTIL position, nothing after


def test_eof_reasons() -> None:
    assert dump_eof_reason(True, None) == "end of the binlog (non-blocking dump)"
    assert dump_eof_reason(False, None) == "the source ended the blocking dump with EOF"
    assert "UNTIL" in dump_eof_reason(None, None)
    assert "end of the binlog" in dump_eof_reason(True, "0-1-5")


def test_a_nul_terminated_dump_file_name_is_shown_escaped() -> None:
    name = "mysql-bin.000003\0"
    payload = b"\x12" + (4).to_bytes(4, "little") + b"\0\0" + (77).to_bytes(4, "little") \
        + name.encode()
    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    s.receive_data(encode_packet(payload, 0), Peer.CLIENT)
    ev = next(e for e in s.events() if isinstance(e, PacketDecoded))
    assert isinstance(ev.value, ComBinlogDump) and ev.value.binlog_filename == name  # exact
    brief = packet_summary(ev)
    assert "\0" not in brief and "mysql-bin.000003\\x00:4" in brief
    assert brief.endswith("MALFORMED: NUL in the file name (read as mysql-bin.000003)")
    assert ev.node is not None
    leaf = ev.node.find("com_binlog_dump.binlog_filename")
    assert leaf is not None and leaf.display == "mysql-bin.000003\\x00"
    assert "NUL-terminated" in leaf.doc
    flow = Flow(1, "127.0.0.1:50000", "127.0.0.1:3306", 1, 0.0)
    stats = FlowStats(flow)
    stats.add(SourceItem("packet", ev, time=1.0, frame=4, flow=flow))
    text = "\n".join(stats.text())
    assert "\0" not in text and "mysql-bin.000003\\x00:4" in text
