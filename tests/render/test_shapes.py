"""The item shapes (render/shapes.py) and the summary line (render/text.py): keys in order,
every body class, and no row value decoded where none is shown."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.setup import SetupStep
from binlogscope.pipeline.filter import event_table
from binlogscope.render.shapes import (
    binlog_event_json,
    live_item_json,
    packet_fields,
    session_event_json,
)
from binlogscope.render.text import _query_text, event_line
from binlogscope.session.events import (
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    PhaseChanged,
    TlsStarted,
)
from binlogscope.wire.binlog.control_events import RotateEvent, RowsQueryEvent, XidEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.decoded import EventBody
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import LazyRows, RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.node import Node

#: a binlog event's keys on every source (docs/coordinates.md); a ROTATE adds next_file and
#: next_position
EVENT_KEYS = ["binlog_file", "offset", "log_pos", "gtid", "event_type", "type_code",
              "timestamp", "server_id", "event_size", "flags", "checksum_ok", "schema", "table",
              "rows", "query"]
H = EventHeader(1700000000, 30, 7, 90, 1234, 0)


class CountingRows(LazyRows):
    """Row images read on demand, counted (no kernel text: the JSON reads them)."""

    __slots__ = ("n", "reads")

    def __init__(self, n: int) -> None:
        self.n = n
        self.reads = 0

    def read(self) -> list[dict[str, Any]]:
        self.reads += 1
        return [{"before": None, "after": {"a": b"\x01"}}] * self.n

    def json(self) -> bytes | None:
        return None


def _query(text: str, schema: str = "") -> QueryEvent:
    return QueryEvent(1, 0, len(schema), 0, 0, {}, schema, text)


def test_binlog_event_keys_in_order() -> None:
    d = binlog_event_json(DecodedEvent(21, H, None, None, True), "f")
    assert list(d) == ["file", *EVENT_KEYS, "error"]
    assert d["event_type"] == "WRITE_ROWS_EVENT" and d["file"] == "f"
    d = binlog_event_json(DecodedEvent(21, None, None, None, None, error="x"))
    assert list(d) == ["file", *EVENT_KEYS, "error"]
    assert d["event_type"] == "UNKNOWN_EVENT" and d["type_code"] is None and d["error"] == "x"


def test_rows_are_read_once_for_json_and_never_for_the_line_or_filter() -> None:
    lazy = CountingRows(3)
    ev = DecodedEvent(21, H, RowsEvent(5, "s", "t", "INSERT", None, _lazy=lazy, _count=3), None,
                      True)
    assert event_line(ev) == "WRITE_ROWS_EVENT s.t 3 rows"
    assert event_table(ev) == ("s", "t")
    assert lazy.reads == 0
    d = binlog_event_json(ev)
    assert lazy.reads == 1 and len(d["rows"]) == 3


def test_each_body_class_gives_its_fields() -> None:
    rows = [{"before": None, "after": {"a": 1}}]
    cases: list[tuple[EventBody | None, tuple[Any, ...]]] = [
        (RowsEvent(5, "s", "t", "INSERT", rows), ("s", "t", rows, None, None)),
        (TableMapEvent(5, "s", "t", []), ("s", "t", None, None, None)),
        (_query("ALTER TABLE t ADD c INT", "db"), ("db", None, None, None,
                                                   "ALTER TABLE t ADD c INT")),
        (RowsQueryEvent("INSERT INTO t VALUES (1)"), (None, None, None, None,
                                                      "INSERT INTO t VALUES (1)")),
        (MariadbGtidEvent("0-1-2", 2, 0, 1, 0), (None, None, None, "0-1-2", None)),
        (RotateEvent(4, "b.2"), (None, None, None, None, None)),
        (XidEvent(7), (None, None, None, None, None)),
        (None, (None, None, None, None, None)),
    ]
    for body, want in cases:
        d = binlog_event_json(DecodedEvent(21, H, body, None, True))
        assert (d["schema"], d["table"], d["rows"], d["gtid"], d["query"]) == want, body
    rotate = binlog_event_json(DecodedEvent(21, EventHeader(1, 4, 7, 40, 0, 0x20),
                                            RotateEvent(4, "b.2"), None, True))
    assert (rotate["next_file"], rotate["next_position"]) == ("b.2", 4)
    line = event_line(DecodedEvent(21, H, RotateEvent(4, "b.2"), None, True))
    assert line == "WRITE_ROWS_EVENT b.2:4"
    long = "select   1,\n" + "x" * 500
    line = event_line(DecodedEvent(21, H, _query(long), None, True, error="bad"))
    assert line == "WRITE_ROWS_EVENT select 1, " + "x" * 67 + "... ERROR bad"
    spaced = "a" + " " * 1000 + "b"  # more than the normalised prefix
    assert event_line(DecodedEvent(21, H, _query(spaced), None, True)).endswith(" a b")


def _packet(bev: DecodedEvent | None, kind: str = "ok") -> PacketDecoded:
    return PacketDecoded(Peer.SERVER, 17, 3, 90, "binlog_event" if bev else kind, None, None,
                         Phase.BINLOG_STREAM, None, bev, None, 94, b"")


def test_session_event_shapes() -> None:
    d = session_event_json(_packet(DecodedEvent(21, H, None, None, True)))
    assert d is not None
    assert list(d) == ["kind", "direction", "seq", "payload_length", "semi_sync",
                       "packet_offset", "wire_time", "error", *EVENT_KEYS]
    assert d["kind"] == "binlog_event"
    d = session_event_json(_packet(None, "com_query"))
    assert d == {"kind": "com_query", "direction": "server", "seq": 3, "payload_length": 90,
                 "semi_sync": None, "packet_offset": 17, "wire_time": None, "error": None}
    assert session_event_json(DecodeError(Peer.CLIENT, 5, "bad")) == {
        "kind": "decode_error", "direction": "client", "packet_offset": 5, "error": "bad"}
    assert session_event_json(PhaseChanged(Phase.AUTH, Phase.COMMAND, "ok")) == {
        "kind": "phase", "from": "auth", "to": "command", "why": "ok"}
    tls = TlsStarted(Peer.CLIENT, 9, Node("encrypted", 9, 0))
    assert session_event_json(tls) == {"kind": "tls", "packet_offset": 9, "terminated": False}
    tls = TlsStarted(Peer.CLIENT, 9, Node("encrypted", 9, 0), terminated=True)
    assert session_event_json(tls) == {"kind": "tls", "packet_offset": 9, "terminated": True}
    assert session_event_json(None) is None


def test_live_item_shapes() -> None:
    step = SetupStep("setup", "SET @a", "why", "SET @a=1")
    assert live_item_json(SourceItem("step", step=step)) == {
        "kind": "step", "phase": "setup", "what": "SET @a", "why": "why", "sql": "SET @a=1"}
    assert live_item_json(SourceItem("note", text="n")) == {"kind": "note", "text": "n"}


@given(st.lists(st.sampled_from(["a", "b", " ", "\n", "\t", "\xa0", "é", "x" * 30, " " * 5]),
                max_size=40).map("".join))
def test_query_text_is_the_squeezed_cut_query(query: str) -> None:
    squeezed = " ".join(query.split())
    want = squeezed if len(squeezed) <= 80 else squeezed[:77] + "..."
    assert _query_text(query) == want


def test_command_packets_carry_their_fields_without_a_tree() -> None:
    import uuid

    from binlogscope.wire.commands import (
        ComBinlogDump,
        ComBinlogDumpGtid,
        ComQuery,
        ComRegisterSlave,
        GtidInterval,
        GtidSid,
        SimpleCommand,
    )
    from binlogscope.wire.constants import Command
    from binlogscope.wire.handshake import ErrPacket, HandshakeResponse41

    def pkt(value: Any, kind: str, d: Peer = Peer.CLIENT) -> PacketDecoded:
        return PacketDecoded(d, 0, 0, 9, kind, value, None, Phase.COMMAND)

    assert packet_fields(pkt(ComQuery("SELECT 1"), "com_query")) == {
        "query": "SELECT 1", "attributes": []}
    assert packet_fields(pkt(ComBinlogDump(4, 7, "b.000001", 2), "com_binlog_dump")) == {
        "binlog_pos": 4, "server_id": 7, "binlog_filename": "b.000001", "flags": 2}
    sid = uuid.UUID("3e11fa47-71ca-11e1-9e33-c80aa9429562")
    gtid = ComBinlogDumpGtid(7, "", 4, 4, (GtidSid(sid, (GtidInterval(1, 6),)),))
    fields = packet_fields(pkt(gtid, "com_binlog_dump_gtid"))
    assert fields is not None and fields["gtid_set"] == f"{sid}:1-5"
    reg = packet_fields(pkt(ComRegisterSlave(7, "h", "u", "secret", 3306), "com_register_slave"))
    assert reg is not None and reg["password"] == "<redacted>" and reg["hostname"] == "h"
    err = packet_fields(pkt(ErrPacket(1236, "no file", "HY000"), "err", Peer.SERVER))
    assert err is not None and (err["error_code"], err["sql_state"], err["error_message"]) == (
        1236, "HY000", "no file")
    quit_ = packet_fields(pkt(SimpleCommand(int(Command.COM_QUIT)), "command"))
    assert quit_ == {"command": "COM_QUIT", "arguments": ""}
    resp = HandshakeResponse41(0, "u", auth_response=b"\x01scramble")
    shown = packet_fields(pkt(resp, "handshake_response41"))
    assert shown is not None and shown["auth_response"] == "<redacted>"
    assert "scramble" not in repr(shown) and "7363" not in repr(shown)


def test_transaction_payload_lists_its_events_with_rows() -> None:
    """A MySQL TRANSACTION_PAYLOAD (real 8.0.32 binlog) lists the compressed transaction's
    events under ``events``, each with the keys of any binlog event (its rows decoded), so
    ``file --json`` and ``live --json`` show the rows of a compressed transaction."""
    from tests.helpers import FIXTURES, decode_bytes, read_all

    rel = "blackbeam__rust_mysql_common/test-data/binlogs/transaction_compression.000001"
    events, _ = decode_bytes(read_all(FIXTURES / rel), record=False)
    for e in events:
        e.binlog_file, e.file_pos = "transaction_compression.000001", e.offset
    ev = next(e for e in events if e.type_name == "TRANSACTION_PAYLOAD_EVENT")
    import orjson

    inner = orjson.loads(orjson.dumps(binlog_event_json(ev)))["events"]
    assert [i["event_type"] for i in inner] == [
        "QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert list(inner[2])[:len(EVENT_KEYS)] == EVENT_KEYS
    assert inner[2]["schema"] == "test" and inner[2]["table"] == "tb1"
    assert inner[2]["rows"] == [{"before": None, "after": {"@1": 1}}]
    assert inner[0]["query"] == "BEGIN"
    assert [i["payload_offset"] for i in inner] == [0, 71, 116, 152]
    assert all(i["offset"] == 274 and i["binlog_file"] == "transaction_compression.000001"
               and i["error"] is None for i in inner)
