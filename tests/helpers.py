"""Shared test helpers (importable as ``tests.helpers``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson

from binlogscope.render.json_out import dumps
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.decoded import EventBody
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.node import check_tiling

B = TypeVar("B")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
CAPTURES = REPO / "captures"

#: fixtures the MANIFEST names as deliberately truncated or corrupt -> offsets of the damaged
#: events (every other event must decode cleanly)
DAMAGED_FIXTURES: dict[str, list[int]] = {
    "binlog_truncated_event.000001": [4],  # magic + 10 bytes of a header
    "binlog_truncated_prev_gtid_event.000001": [120],  # PREVIOUS_GTIDS cut short
    "corrupt-relay-bin.000624": [91204],  # mysql-server's corrupt relay log: a garbled QUERY
}


def hexbytes(text: str) -> bytes:
    """Bytes from commented hex: ``# comments`` and whitespace are ignored."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        out.append("".join(line.split()))
    return bytes.fromhex("".join(out))


def binlog_fixtures() -> list[Path]:
    """Every binlog file under shared/fixtures (by magic number), sorted."""
    found = []
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".gz":
            found.append(p)
            continue
        with p.open("rb") as f:
            if f.read(4) == b"\xfebin":
                found.append(p)
    return found


def read_all(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        import gzip

        data = gzip.decompress(data)
    return data


def decode_bytes(data: bytes, *, record: bool = True, chunk: int | None = None,
                 verify: bool = True) -> tuple[list[DecodedEvent], BinlogStreamDecoder]:
    """Every event of ``data`` through the stream decoder, fed ``chunk`` bytes at a time
    (``verify``: check the checksums)."""
    dec = BinlogStreamDecoder(DecodeContext(verify_checksums=verify), record=record)
    events: list[DecodedEvent] = []
    step = chunk or len(data) or 1
    for i in range(0, len(data), step):
        dec.receive_data(data[i : i + step])
        events.extend(dec.events())
    dec.receive_data(b"")
    events.extend(dec.events())
    return events, dec


def assert_tiles(ev: DecodedEvent) -> None:
    assert ev.node is not None
    problems = check_tiling(ev.node)
    assert not problems, problems
    assert ev.node.offset == ev.offset
    assert ev.node.length == ev.size, (ev.node.length, ev.size)


def iter_nodes(ev: DecodedEvent) -> Iterator[object]:
    assert ev.node is not None
    for _, n in ev.node.walk():
        yield n


def can_capture() -> bool:
    """Whether this process may open an AF_PACKET socket (root or CAP_NET_RAW: sniff's tests)."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except (PermissionError, AttributeError):
        return False
    return True


def body_of(ev: DecodedEvent, cls: type[B]) -> B:
    """``ev``'s body, checked to be a ``cls`` (a test that reads a QUERY's text asserts that
    the event decoded to a QueryEvent first)."""
    body = ev.body
    assert isinstance(body, cls), f"{ev.type_name} decoded to {type(body).__name__}, not {cls}"
    return body


def event_body(code: int, **fields: object) -> EventBody | None:
    """A real body object for a hand-built event (the typed reads of
    :mod:`binlogscope.wire.binlog.bodies` answer by the body's type): ``next_log_name``/
    ``position`` -> RotateEvent, ``gtid`` -> a MariaDB (code 162, ``flags2``) or MySQL GTID
    event, ``query`` -> QueryEvent; no fields: no body (None)."""
    from binlogscope.wire.binlog.control_events import RotateEvent
    from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
    from binlogscope.wire.binlog.query_event import QueryEvent

    if "next_log_name" in fields:
        return RotateEvent(int(fields.get("position", 4)),  # type: ignore[call-overload]
                           str(fields["next_log_name"]))
    if "gtid" in fields:
        g = str(fields["gtid"])
        if code == 162:
            d, s, n = (int(x) for x in g.split("-"))
            return MariadbGtidEvent(g, n, d, s, int(fields.get("flags2", 0)))  # type: ignore[call-overload]
        sid, _, gno = g.rpartition(":")
        return GtidEvent(g, 0, sid, int(gno) if gno.isdigit() else 0)
    if "query" in fields:
        return QueryEvent(0, 0, 0, 0, 0, {}, "", str(fields["query"]))
    if fields:
        raise TypeError(f"event_body builds no body from {sorted(fields)}")
    return None


def event_shape(ev: DecodedEvent, file: str | None = None) -> dict[str, Any]:
    """The ``--json`` shape of an event as a plain dict (through the one serializer): the
    kernel embeds a rows event's rows as an ``orjson.Fragment``, which compares by identity,
    so shapes are compared as what they print."""
    shape = binlog_event_json(ev) if file is None else binlog_event_json(ev, file)
    loaded: dict[str, Any] = orjson.loads(dumps(shape))
    return loaded
