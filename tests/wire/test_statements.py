"""Prepared statements decoded in wire/ and shown on every surface, on real captures
(colinnewell/pcap2mysql-log, MySQL 5.7.25, in ../shared/fixtures): COM_STMT_PREPARE's text,
COM_STMT_PREPARE_OK's id and counts, COM_STMT_EXECUTE's parameters (types bound by the
client, values in the binary protocol), the binary rows it returns, COM_STMT_CLOSE's id - in the
value (``--json``), the one line of ``--brief`` and the tree the TUI shows.

Layouts followed: the MySQL protocol documentation of COM_STMT_PREPARE / COM_STMT_PREPARE_OK
(0x00, statement_id<4>, num_columns<2>, num_params<2>, reserved<1>, warning_count<2>),
COM_STMT_EXECUTE (statement_id<4>, flags<1>, iteration_count<4>, NULL bitmap, new_params_bound
flag, type<2> per parameter, values) and the binary result-set row (0x00, NULL bitmap with a
2-bit offset, values)."""

from __future__ import annotations

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.drivers.items import SourceItem
from binlogscope.render.shapes import capture_item_json
from binlogscope.render.text import capture_item_text
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.prepared import StmtExecute, StmtPrepareOk
from binlogscope.wire.statements import BinaryRow, ComStmtClose, ComStmtPrepare
from tests.helpers import FIXTURES

CAPTURES = FIXTURES / "colinnewell__pcap2mysql-log/test/captures"


def _packets(name: str) -> list[tuple[SourceItem, PacketDecoded]]:
    path = CAPTURES / name
    if not path.exists():
        pytest.skip(f"fixture {path} not present")
    return [(i, i.event) for i in read_capture(str(path), record=True)
            if isinstance(i.event, PacketDecoded)]


def _of(pkts: list[tuple[SourceItem, PacketDecoded]], kind: str) -> list[PacketDecoded]:
    return [ev for _, ev in pkts if ev.kind == kind]


def test_prepare_execute_close_of_an_insert() -> None:
    pkts = _packets("execute.pcap")
    prep = _of(pkts, "com_stmt_prepare")
    assert [p.value for p in prep] == [
        ComStmtPrepare("INSERT INTO peeps (name, age) VALUES ( ?, ? )")]
    assert [p.value for p in _of(pkts, "stmt_prepare_ok")] == [StmtPrepareOk(1, 0, 2, 0)]
    assert len(_of(pkts, "param_definition")) == 2
    (ex,) = _of(pkts, "com_stmt_execute")
    assert isinstance(ex.value, StmtExecute)
    assert (ex.value.statement_id, ex.value.params) == (1, (b"person", 33))
    assert ex.value.types == ((254, False), (8, False))  # MYSQL_TYPE_STRING, LONGLONG
    assert [p.value for p in _of(pkts, "com_stmt_close")] == [ComStmtClose(0x19, 1)]
    # the tree (the TUI's): each parameter a leaf with its type
    assert ex.node is not None
    p0 = ex.node.find("com_stmt_execute.values.param[0]")
    assert p0.value == b"person" and p0.wire == "MYSQL_TYPE_STRING"
    t1 = ex.node.find("com_stmt_execute.parameter_types.type[1]")
    assert t1.display == "MYSQL_TYPE_LONGLONG"
    # --json and --brief
    item = next(i for i, ev in pkts if ev is ex)
    out = capture_item_json(item)
    assert out is not None and out["kind"] == "com_stmt_execute"
    assert out["fields"]["statement_id"] == 1 and out["fields"]["params"][1] == 33
    brief = {ev.kind: capture_item_text(i, True)[0] for i, ev in pkts}
    assert brief["com_stmt_prepare"].endswith(
        "bytes)  INSERT INTO peeps (name, age) VALUES ( ?, ? )")
    assert brief["stmt_prepare_ok"].endswith("bytes)  statement 1: 2 parameter(s), 0 column(s)")
    assert brief["com_stmt_execute"].endswith("bytes)  statement 1 ('person', 33)")
    assert brief["com_stmt_close"].endswith("bytes)  statement 1")


def test_binary_rows_of_an_execute_and_temporal_parameters() -> None:
    pkts = _packets("date-types.pcap")
    (ins, sel) = [p.value for p in _of(pkts, "com_stmt_prepare")]
    assert isinstance(ins, ComStmtPrepare) and "INSERT INTO demo.dates" in ins.query
    assert sel == ComStmtPrepare("SELECT * FROM demo.dates")
    oks = [p.value for p in _of(pkts, "stmt_prepare_ok")]
    assert oks == [StmtPrepareOk(1, 0, 4, 0), StmtPrepareOk(2, 6, 0, 0)]
    execs = [p.value for p in _of(pkts, "com_stmt_execute")]
    assert isinstance(execs[0], StmtExecute)
    assert execs[0].params == (b"2013-03-04", b"20:33", b"2021", b"97")
    rows = [p.value for p in _of(pkts, "binary_row")]
    assert rows == [BinaryRow((1, "2013-03-04", "2021-09-25 17:21:23", "20:33:00", 2021,
                               1997))]
    closes = [p.value for p in _of(pkts, "com_stmt_close")]
    assert sorted(closes, key=lambda c: c.statement_id) == [ComStmtClose(0x19, 1),
                                                           ComStmtClose(0x19, 2)]


@pytest.mark.parametrize("name", ["numeric-types.pcap", "big-data.pcap", "type-error.pcap"])
def test_every_statement_packet_of_the_captures_decodes(name: str) -> None:
    pkts = _packets(name)
    kinds = {ev.kind for _, ev in pkts}
    assert {"com_stmt_prepare", "stmt_prepare_ok", "com_stmt_execute"} <= kinds
    assert not [ev.error for _, ev in pkts if ev.error and ev.kind.startswith(("com_stmt",
                                                                               "stmt_", "binary"))]
    execs = _of(pkts, "com_stmt_execute")
    assert any(isinstance(ev.value, StmtExecute) and ev.value.params for ev in execs)
    for ev in execs:  # every one read with its PREPARE's parameter count, none left raw
        assert ev.node is not None
        names = [c.name for c in ev.node.find("com_stmt_execute").children]
        assert "parameters" not in names


def test_an_execute_whose_prepare_is_not_seen_is_shown_as_it_is() -> None:
    from binlogscope.session import Session
    from binlogscope.session.events import Peer, Phase, Role
    from binlogscope.wire.framing import encode_packet

    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND)
    payload = bytes.fromhex("17 07000000 00 01000000 00 01 fe00 0161".replace(" ", ""))
    s.receive_data(encode_packet(payload, 0), Peer.CLIENT)
    ev = next(e for e in s.events() if isinstance(e, PacketDecoded))
    assert ev.error is None and isinstance(ev.value, StmtExecute)
    assert (ev.value.statement_id, ev.value.params) == (7, ())
    assert ev.node is not None and ev.node.find("com_stmt_execute.parameters").length == 6
