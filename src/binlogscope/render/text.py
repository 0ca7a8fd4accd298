"""The one text renderer: every ``--plain``/``--brief``/``--summary`` line the commands print.

* :func:`render_node`: the annotated dump of a Node tree (offset | hex | field = value  -- what
  it means), the CLI's default output and teaching text; reads only the tree;
* :func:`event_line`: the one-line summary of a binlog event (``file --summary``, the head
  line of a streamed event); reads the event's names and row count, never its row values;
* :func:`session_event_text`: a session event (a packet with its dump, an error, a phase);
* :func:`live_item_text`, :func:`capture_item_text`: the items of ``live`` and ``pcap``.

The JSON shapes of the same items are in :mod:`binlogscope.render.shapes`.

Example::

    # at 4: FORMAT_DESCRIPTION_EVENT (15), 121 bytes
    #   FORMAT_DESCRIPTION: first event of every binlog; ...
           4  a8 e9 5b 65                 header.timestamp = 1700522408  -- seconds since ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    PacketDecoded,
    PhaseChanged,
    SequenceMismatch,
    SessionEvent,
    TlsStarted,
)
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, RotateEvent, RowsQueryEvent
from binlogscope.wire.binlog.decoded import EventBody
from binlogscope.wire.binlog.gtid_events import GtidEvent, MariadbGtidEvent
from binlogscope.wire.binlog.load_events import LoadEvent
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.fields import escaped, redact, redact_bytes
from binlogscope.wire.node import Node
from binlogscope.wire.packet import packet_title
from binlogscope.wire.prepared import StmtExecute, StmtPrepareOk
from binlogscope.wire.statements import BinaryRow, ComStmtClose, ComStmtPrepare

if TYPE_CHECKING:
    from binlogscope.drivers.items import SourceItem
    from binlogscope.wire.binlog.decode import DecodedEvent

HEX_PER_LINE = 16
MAX_HEX_LINES = 4


def _hex_lines(data: bytes) -> list[str]:
    lines = []
    for i in range(0, min(len(data), HEX_PER_LINE * MAX_HEX_LINES), HEX_PER_LINE):
        lines.append(data[i : i + HEX_PER_LINE].hex(" "))
    if len(data) > HEX_PER_LINE * MAX_HEX_LINES:
        lines.append(f"... ({len(data)} bytes in all)")
    return lines or [""]


def _value_text(node: Node, limit: int = 120) -> str:
    text = node.text
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def render_node(node: Node, source: bytes | None = None, *, base: int = 0,
                explain: bool = True) -> Iterator[str]:
    """Lines for one event/packet tree.

    ``source`` holds the bytes the node's offsets point into (``source[offset - base]``); leaf
    values of type bytes are used when it is None.
    """
    title = node.display or node.name
    yield f"# at {node.offset}: {title}, {node.length} bytes"
    if explain and node.doc:
        yield f"#   {node.doc}"
    if node.error:
        yield f"#   ERROR {node.error}"
    yield from _render_children(node, source, base, explain, prefix="")


def _notes(node: Node, explain: bool) -> str:
    """What follows a field's line: ``  -- what it means`` and ``  !! its error``."""
    text = f"  -- {node.doc}" if explain and node.doc else ""
    return text + f"  !! {node.error}" if node.error else text


def _render_children(node: Node, source: bytes | None, base: int, explain: bool,
                     prefix: str) -> Iterator[str]:
    for child in node.children:
        path = f"{prefix}{child.name}"
        if child.wire == "bit":  # one flag of its parent's bytes: no bytes of its own
            line = f"{'':>10}  {'':<47}  {path} = {_value_text(child)}"
            if explain and child.doc:
                line += f"  -- {child.doc}"
            yield line
            continue
        bits = bool(child.children) and all(c.wire == "bit" for c in child.children)
        if child.children and not bits:
            line = f"{'':>10}  {'':<47}  {path}"
            if child.display or (child.value is not None and not isinstance(child.value, bytes)):
                line += f" = {_value_text(child)}"
            yield line + _notes(child, explain)
            yield from _render_children(child, source, base, explain, prefix=path + ".")
            continue
        if source is not None:
            raw = source[child.offset - base : child.end - base]
        elif isinstance(child.value, bytes):
            raw = child.value
        else:
            raw = b""
        hexes = _hex_lines(bytes(raw))
        value = _value_text(child)
        line = f"{child.offset:>10}  {hexes[0]:<47}  {path}"
        if value != "" and not (isinstance(child.value, bytes) and not child.display):
            line += f" = {value}"
        yield line + _notes(child, explain)
        for more in hexes[1:]:
            yield f"{'':>10}  {more}"
        if bits:
            yield from _render_children(child, source, base, explain, prefix=path + ".")


# ---------------------------------------------------------------------------- one-line summary
#: type code -> event type name
_type_names: dict[int, str] = {}
#: a query is shown with its whitespace runs as one space, cut to this many characters
_QUERY_WIDTH = 80


def event_line(ev: DecodedEvent) -> str:
    """One line for lists: ``WRITE_ROWS_EVENT db.t 3 rows`` / ``ROTATE mysql-bin.000002:4``."""
    h = ev.header
    if h is None:
        name = ev.type_name
    else:
        name = _type_names.get(h.type_code)  # type: ignore[assignment]
        if name is None:
            name = _type_names[h.type_code] = h.type_name
    text = name + _tail(ev.body)
    return f"{text} ERROR {ev.error}" if ev.error else text


def _rows_tail(body: RowsEvent) -> str:
    n = body.row_count
    return _table_text(body.schema, body.table) + f" {n} row{'s' if n != 1 else ''}"


def _table_tail(body: TableMapEvent | LoadEvent) -> str:
    return _table_text(body.schema, body.table)


def _gtid_tail(body: GtidEvent | MariadbGtidEvent) -> str:
    return " " + body.gtid


def _query_tail(body: QueryEvent | RowsQueryEvent | AnnotateRowsEvent) -> str:
    return " " + _query_text(body.query)


def _rotate_tail(body: RotateEvent) -> str:
    return f" {body.next_log_name}:{body.position}"


def _no_tail(body: object) -> str:
    return ""


def _tail_reader(body: EventBody | None) -> Callable[[Any], str]:
    """Which of the readers above gives a body's line text (by its class)."""
    match body:
        case RowsEvent():
            return _rows_tail
        case TableMapEvent() | LoadEvent():
            return _table_tail
        case GtidEvent() | MariadbGtidEvent():
            return _gtid_tail
        case QueryEvent() | RowsQueryEvent() | AnnotateRowsEvent():
            return _query_tail
        case RotateEvent():
            return _rotate_tail
    return _no_tail


#: body class -> its line text's reader (:func:`_tail_reader`, looked up once per class)
_TAIL_OF: dict[type, Callable[[Any], str]] = {}


def _tail(body: EventBody | None) -> str:
    """The line's text after the event type: the table and row count of a rows event (never
    its row values), a TABLE_MAP's table, a GTID, a statement, a ROTATE's target."""
    reader = _TAIL_OF.get(type(body))
    if reader is None:
        reader = _TAIL_OF[type(body)] = _tail_reader(body)
    return reader(body)


def _query_text(query: str) -> str:
    """The query on one line: whitespace runs as one space, at most _QUERY_WIDTH characters."""
    if len(query) > _QUERY_WIDTH:
        # a long query whose first characters have no whitespace to squeeze (no tab or line
        # break - isprintable() - no leading, trailing or double space) is simply cut
        head = query[:_QUERY_WIDTH + 1]
        if head.isprintable() and head[0] != " " and head[-1] != " " and "  " not in head:
            return query[:_QUERY_WIDTH - 3] + "..."
    # only a prefix is normalised when that is enough: its first characters are the whole
    # query's, and the whole query is at least as long
    q = " ".join(query[:4 * _QUERY_WIDTH].split())
    if len(q) <= _QUERY_WIDTH and len(query) > 4 * _QUERY_WIDTH:
        q = " ".join(query.split())
    return q if len(q) <= _QUERY_WIDTH else q[:_QUERY_WIDTH - 3] + "..."


def _table_text(schema: str, table: str) -> str:
    return f" {schema}.{table}" if table else ""


# ---------------------------------------------------------------------------- packets, items
def wire_bytes(ev: PacketDecoded) -> bytes | None:
    """The packet as it was on the wire (header + payload), secrets masked with ``*``.

    None for a packet that came in several fragments (their headers are not kept).
    """
    if ev.node is None or ev.wire_length != len(ev.payload) + 4 or not ev.payload:
        return None
    raw = len(ev.payload).to_bytes(3, "little") + bytes([ev.seq & 0xFF]) + ev.payload
    return redact_bytes(ev.node, raw)


def value_text(v: Any) -> str:
    """A prepared statement's parameter or a binary row's value as a person reads it (text
    as a quoted string, control characters escaped)."""
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return repr(escaped(v.decode("utf-8", "replace")))
    return str(v)


def statement_text(value: Any) -> str | None:
    """The one line a prepared-statement packet says (the text prepared, the id with its
    parameter and column counts, the parameters an EXECUTE binds, a binary row's values);
    None for any other packet."""
    t = type(value)
    if t is ComStmtPrepare:
        return escaped(" ".join(value.query.split()))
    if t is StmtPrepareOk:
        return (f"statement {value.statement_id}: {value.num_params} parameter(s), "
                f"{value.num_columns} column(s)")
    if t is StmtExecute:
        params = ", ".join(value_text(x) for x in value.params)
        return f"statement {value.statement_id}" + (f" ({params})" if params else "")
    if t is ComStmtClose:
        return f"statement {value.statement_id}"
    if t is BinaryRow:
        return " | ".join(value_text(x) for x in value.values)
    return None


def session_event_text(ev: SessionEvent | None, brief: bool, prefix: str = "",
                       titles: bool = False) -> list[str]:
    """The text lines of one session event (the head line, then the field dump).

    ``titles``: a packet decoded without a tree still gets its tree's title (``live --brief``
    decodes its stream without trees and shows what it showed with them)."""
    if isinstance(ev, PacketDecoded):
        arrow = "->" if ev.direction.value == "client" else "<-"
        if ev.node is not None:
            title = ev.node.display
        elif titles:
            title = packet_title(ev.kind, ev.value, ev.seq, ev.payload_length)
        else:
            title = ev.kind
        semi = ""
        if ev.semi_sync is not None:
            semi = " [semi-sync" + (" ACK requested]" if ev.semi_sync.flag & 1 else "]")
        head = f"{prefix}{arrow} {ev.direction.value} {title}{semi}"
        bev = ev.binlog_event
        if bev is not None:
            if bev.file_pos is not None:  # its coordinates (docs/coordinates.md)
                head += f"  @{bev.binlog_file or '?'}:{bev.file_pos}"
            head += f"  {event_line(bev)}"
        elif brief or ev.node is None:
            said = statement_text(ev.value)
            if said is not None:
                head += f"  {said}"
        if ev.error:
            head += f"  !! {ev.error}"
        if brief or ev.node is None:
            return [head]
        lines = [head]
        lines.extend(list(render_node(redact(ev.node), wire_bytes(ev), base=ev.offset,
                                      explain=True))[1:])
        return lines
    if isinstance(ev, PhaseChanged):
        return [f"{prefix}-- phase {ev.old.value} -> {ev.new.value}: {ev.reason}"]
    if isinstance(ev, DecodeError):
        return [f"{prefix}!! {ev.direction.value} at {ev.offset}: {ev.message}"]
    if isinstance(ev, SequenceMismatch):
        return [f"{prefix}!! {ev.direction.value} at {ev.offset}: sequence id {ev.got}, "
                f"expected {ev.expected}"]
    if isinstance(ev, CompressedFrame):
        f = ev.frame
        arrow = "->" if ev.direction.value == "client" else "<-"
        how = (f"{f.algorithm}, {f.compressed_length} -> {f.uncompressed_length} bytes"
               if f.uncompressed_length else f"stored, {f.compressed_length} bytes")
        head = (f"{prefix}{arrow} {ev.direction.value} compressed frame #{f.sequence_id} "
                f"({how}; plain stream {f.plain_offset}..{f.plain_offset + len(f.plain)})")
        if brief or ev.node is None:
            return [head]
        header = (f.compressed_length.to_bytes(3, "little") + bytes((f.sequence_id,))
                  + f.uncompressed_length.to_bytes(3, "little"))
        return [head, *list(render_node(ev.node, header, base=ev.offset, explain=True))[2:]]
    if isinstance(ev, TlsStarted):
        return [f"{prefix}-- TLS: " + ("terminated by the proxy, the decrypted bytes follow"
                                       if ev.terminated else
                                       "the rest of this connection is encrypted")]
    return []


def live_item_text(item: SourceItem, brief: bool) -> list[str]:
    """The text lines of an item of the live replica."""
    if item.kind == "step" and item.step is not None:
        s = item.step
        return [f"== [{s.phase}] {s.what}", f"   why: {s.why}"]
    if item.kind in ("note", "health"):
        return [f"-- {item.text}"]
    if item.kind == "error":
        return [f"!! {item.text}"]
    return session_event_text(item.event, brief, titles=True)


def capture_item_text(item: SourceItem, brief: bool) -> list[str]:
    """The text lines of an item of a capture (prefixed with its flow and frame)."""
    where = f"[{item.flow.id}] #{item.frame} "
    if item.kind == "flow":
        return [f"== flow {item.flow.id}: {item.flow.name} (frame {item.frame}): {item.text}"]
    if item.kind == "note":
        return [f"{where}-- {item.text}"]
    if item.kind == "error":
        return [f"{where}!! {item.text}"]
    return session_event_text(item.event, brief, prefix=where)


__all__ = ["capture_item_text", "event_line", "live_item_text", "render_node",
           "session_event_text", "wire_bytes"]
