"""A row event whose TABLE_MAP came before the stream began (a capture, a connection or a
--start position inside the transaction) is "unknown context", not damage: no DecodeError. The
same event inside a transaction that began in the stream stays an error (its TABLE_MAP is
missing from the stream itself). Events of the real MariaDB workload binlog."""

from __future__ import annotations

from pathlib import Path

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.session import Role, Session
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.rows import UNKNOWN_CONTEXT

BINLOG = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def _transaction() -> tuple[bytes, bytes, bytes]:
    """(FORMAT_DESCRIPTION, GTID, WRITE_ROWS) bytes of the first row transaction."""
    fde = gtid = b""
    for ev in read_binlog_file(BINLOG, record=False):
        assert ev.header is not None and ev.raw is not None
        name = ev.type_name
        if name == "FORMAT_DESCRIPTION_EVENT":
            fde = ev.raw
        elif name == "GTID_EVENT":
            gtid = ev.raw
        elif name.startswith("WRITE_ROWS"):
            return fde, gtid, ev.raw
    raise AssertionError("no row event")


def _decode(raw: bytes, ctx: DecodeContext) -> DecodedEvent:
    return decode_event(raw, ctx, record=False)


def test_a_stream_that_begins_inside_the_transaction() -> None:
    fde, _gtid, rows = _transaction()
    ctx = DecodeContext()
    s = Session(Role.OBSERVER)
    s.coords.stamp(_decode(fde, ctx))
    ev = _decode(rows, ctx)  # no TABLE_MAP in this stream
    assert ev.error is not None and "no TABLE_MAP" in ev.error
    s.coords.stamp(ev)
    assert s.packets.context(ev)  # an item, no DecodeError
    assert ev.error is not None and ev.error.startswith(UNKNOWN_CONTEXT)


def test_a_transaction_begun_in_the_stream_without_its_table_map_is_damage() -> None:
    fde, gtid, rows = _transaction()
    ctx = DecodeContext()
    s = Session(Role.OBSERVER)
    s.coords.stamp(_decode(fde, ctx))
    s.coords.stamp(_decode(gtid, ctx))
    ev = _decode(rows, ctx)
    s.coords.stamp(ev)
    assert not s.packets.context(ev)  # damage: a DecodeError
    assert ev.error is not None and "no TABLE_MAP" in ev.error
    assert not ev.error.startswith(UNKNOWN_CONTEXT)
