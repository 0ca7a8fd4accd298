"""Records -> rows of the ``events``, ``rows`` and ``packets`` tables: the transaction
(Canal entry) mapper.

:class:`TableMapper` holds the rows and events of a transaction until it commits (XID, COMMIT,
or the single statement after a GTID) so that every one of them carries the transaction's GTID,
XID and commit timestamp, as Canal entries do; a transaction that grows beyond the in-memory
limits is written as it goes (NULL XID and commit time). Row images stay ``(image, columns)``
pairs for :mod:`binlogscope.export.images` to turn into columns. Pure: no files; the exporter
hands the rows to a writer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from binlogscope.export.arrow import SCHEMA_VERSION, data_schema, partition_date
from binlogscope.export.columns import EventsSlot as Ev
from binlogscope.export.columns import RowsSlot as Rw
from binlogscope.export.images import (
    ImageColumns,
    columns_of,
    image_map,
    image_pair,
    image_refs,
    json_text,
    pk_pairs,
    refs_at,
)
from binlogscope.export.packets import packet_row
from binlogscope.export.records import EventRecord, PacketRecord, WrittenRun
from binlogscope.export.valid_text import statement_bytes
from binlogscope.pipeline.filter import event_table
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog._rowcode import _KIND_CODE
from binlogscope.wire.binlog.context import DecodeContext, TableMap
from binlogscope.wire.binlog.control_events import XidEvent
from binlogscope.wire.binlog.coords import statement_kind
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.decoded import TransactionPayloadEvent
from binlogscope.wire.binlog.gtid_events import FL_STANDALONE, MariadbGtidEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.types import event_type_name

_GTID_TYPES = frozenset({E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT,
                         E.GTID_EVENT})
_INSIDE_TYPES = frozenset({E.TABLE_MAP_EVENT, E.ANNOTATE_ROWS_EVENT, E.ROWS_QUERY_LOG_EVENT,
                           E.INTVAR_EVENT, E.USER_VAR_EVENT, E.RAND_EVENT,
                           E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT})
# plain ints for the per-event checks (an IntEnum member lookup costs more than the check)
_QUERY_TYPES = frozenset({int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)})
_XID = int(E.XID_EVENT)
_XA_PREPARE = int(E.XA_PREPARE_LOG_EVENT)
_MARIADB_GTID = int(E.GTID_EVENT)
_TABLE_MAP = int(E.TABLE_MAP_EVENT)
#: the rows events the kernel reads (line_layout.BODY_LAYOUTS) and their operation
_OPERATIONS: dict[int, str] = {
    int(E.WRITE_ROWS_EVENT_V1): "INSERT", int(E.UPDATE_ROWS_EVENT_V1): "UPDATE",
    int(E.DELETE_ROWS_EVENT_V1): "DELETE", int(E.WRITE_ROWS_EVENT): "INSERT",
    int(E.UPDATE_ROWS_EVENT): "UPDATE", int(E.DELETE_ROWS_EVENT): "DELETE"}
_ROWS_CODES = frozenset(_OPERATIONS)
_UPDATE_CODES = frozenset(c for c, op in _OPERATIONS.items() if op == "UPDATE")
_TYPE_NAMES: dict[int, str] = {}


def _type_name(code: int) -> str:
    name = _TYPE_NAMES.get(code)
    if name is None:
        name = _TYPE_NAMES[code] = event_type_name(code)
    return name

#: the names of every type code a header's byte holds, by code
_TYPE_NAME_OF = tuple(_type_name(code) for code in range(256))

_MAX_INT64 = (1 << 63) - 1
def _i64(v: Any) -> int | None:
    return v if isinstance(v, int) and -_MAX_INT64 - 1 <= v <= _MAX_INT64 else None



@dataclass(slots=True)
class _Trx:
    offset: int | None  # in binlog_file (None: the transaction's first event is in no file)
    binlog_file: str
    gtid: str | None
    open: bool  # BEGIN seen (or a MariaDB GTID that opens a group): statements stay inside
    #: its ``events`` and ``rows`` rows not yet handed to the writer (their xid and commit
    #: time are set when it ends; they wait in the mapper's per-part lists)
    events: list[list[Any]] = field(default_factory=list)
    changes: list[list[Any]] = field(default_factory=list)
    rows: int = 0
    bytes: int = 0  # estimated size of the held rows (their events' bytes)


Emit = Callable[[str, tuple[str, ...], dict[str, Any]], None]
#: ``emit_values(table, partition, values, weight)``: ``values`` in :data:`COLUMNS` order,
#: ``weight`` the memory they hold, estimated (the writer bounds its buffers by it)
EmitValues = Callable[[str, tuple[str, ...], list[Any], int], None]
#: estimated memory of an events/packets row and of a rows row without its images, and what
#: one value of a row image costs as a Python object (beyond its bytes in the event)
EVENT_WEIGHT = 400
ROW_WEIGHT = 300
VALUE_WEIGHT = 100
#: the rows waiting for one part of the writer: (rows as lists of values, their weights)
Held = tuple[list[list[Any]], list[int]]
#: the rows (and their estimated bytes) that wait in the mapper before they go to the writer
#: part by part: transactions are small, the writer's per-call work is not
OUT_ROWS = 8192
OUT_BYTES = 16 << 20
#: ``emit_rows(table, partition, rows, weights)``: ``emit_values`` of each row in order
#: (the writer's ``add_rows``: one call per part a transaction touched)
EmitRows = Callable[[str, tuple[str, ...], list[list[Any]], list[int]], None]

#: the data columns of each table, in the order rows are built (the writer's schema order)
COLUMNS: dict[str, tuple[str, ...]] = {
    t: tuple(data_schema(t).names) for t in ("packets", "events", "rows")}


class TableMapper:
    """Records -> rows of ``packets``/``events``/``rows``.

    Rows go as lists of values in :data:`COLUMNS` order to ``emit_values(table, partition,
    values, weight)`` (the exporter's path: the writer builds columns straight from the lists;
    each row image stays an ``(image, columns)`` pair in its ``before``/``after`` slot for the
    writer's column builders), or as dicts with the images made eagerly to
    ``emit(table, partition, row_dict)``.

    ``tables``: the tables wanted (None: all three). The others' rows are not built at all - a
    one-table task (the Spark source's ``rows`` read) maps no ``events`` row - while the
    transaction bookkeeping (its GTID, XID, commit time and the limits on what it holds) stays
    that of the full mapping, so a table's rows are the same whichever others are wanted.
    """

    def __init__(self, emit: Emit | None = None, *, no_raw: bool = False,
                 max_pending_rows: int = 200_000, max_pending_bytes: int = 128 << 20,
                 emit_values: EmitValues | None = None,
                 emit_rows: EmitRows | None = None,
                 tables: Collection[str] | None = None) -> None:
        if emit_values is None:
            if emit is None:
                raise TypeError("TableMapper needs emit or emit_values")
            emit_values = _as_dicts(emit)
        self.emit = emit_values
        #: a transaction's held rows go out in one call per part when this is given (the
        #: writer's ``add_rows``: same rows, in the same order, as one ``emit_values`` each)
        self.emit_rows = emit_rows
        self.no_raw = no_raw
        self.max_pending_rows = max_pending_rows
        #: a transaction holding more (estimated bytes of its events) goes out as it is
        self.max_pending_bytes = max_pending_bytes
        self.want_packets = tables is None or "packets" in tables
        self.want_events = tables is None or "events" in tables
        self.want_rows = tables is None or "rows" in tables
        self.trx: _Trx | None = None
        #: the rows not yet handed to the writer, per part of ``events`` and of ``rows``
        self._out_events: dict[tuple[str, ...], Held] = {}
        self._out_changes: dict[tuple[str, ...], Held] = {}
        self._out_rows = 0
        self._out_bytes = 0
        self._columns: dict[int, tuple[TableMap, ImageColumns]] = {}
        #: date -> schema -> the partition tuple (written)
        self._parts: dict[str, dict[str, tuple[str, str]]] = {}
        self.events = 0
        self.rows = 0
        self.packets = 0

    @property
    def at_boundary(self) -> bool:
        """No transaction is open: everything seen so far can be handed to the writer
        (:meth:`flush`)."""
        return self.trx is None

    @staticmethod
    def run_boundary(values: list[tuple[Any, ...]]) -> int:
        """How many of a run's events (:meth:`written`'s values) lead up to the first that
        ends a transaction, that one included (an XID; all of them when none does)."""
        return next((i + 1 for i, v in enumerate(values) if v[0] == _XID), len(values))

    # ---- packets
    def packet(self, rec: PacketRecord) -> None:
        self.packets += 1
        if not self.want_packets:
            return
        part, row = packet_row(rec, self.no_raw)
        self.emit("packets", part, row, EVENT_WEIGHT + rec.payload_length)

    # ---- events
    def event(self, rec: EventRecord) -> None:
        self._event(rec, rec.event, None)
        payload = rec.event.body
        if isinstance(payload, TransactionPayloadEvent):
            for i, iev in enumerate(payload.events):
                self._event(rec, iev, i)

    def written(self, rec: WrittenRun) -> None:
        """:meth:`event` of each event of a run the kernel read by its declared layouts (a
        MariaDB GTID, an XID, a statement text, a TABLE_MAP the decoder holds, a rows event of
        one: the ``_line.c`` event_values tuples): the same bookkeeping and the same rows,
        from their values instead of decoded events, in one loop over the run."""
        file = rec.binlog_file
        want_events = self.want_events
        version, kind, source, session = SCHEMA_VERSION, rec.source_kind, rec.source, \
            rec.session_id
        parts_of = self._parts
        last_day = -1
        parts: dict[str, tuple[str, str]] = {}
        date = ""
        type_name = _TYPE_NAME_OF  # (a header's type code is a byte)
        max_rows, max_bytes = self.max_pending_rows, self.max_pending_bytes
        hold = self._hold_event
        self.events += len(rec.values)
        for (code, log_pos, gtid, flags2, _, pos, ts, server_id, size, flags, a, b) in rec.values:
            trx = self.trx
            ends = False
            rows = code in _ROWS_CODES
            if code == _MARIADB_GTID:
                if trx is not None:
                    self._finish(None, None)
                trx = self.trx = _Trx(pos, file, gtid, not flags2 & FL_STANDALONE)
            elif code == _XID:
                if trx is None:
                    trx = self.trx = _Trx(pos, file, None, True)
                ends = True
            elif trx is not None and not trx.open:  # (every other kind is inside a group)
                trx.open = True
            if rows and trx is None:
                trx = self.trx = _Trx(pos, file, None, True)
            query = a if type(a) is str else None
            tm = a if code == _TABLE_MAP or rows else None
            n_rows: int | None = None
            if rows:
                n_rows = len(b[1]) // (2 if code in _UPDATE_CODES else 1)
            # (one partition tuple per date and schema: the writer finds a run of rows bound
            # for one part by the tuple's identity)
            schema = tm.schema or "" if tm is not None else ""
            if ts // 86400 != last_day:
                last_day = ts // 86400
                date = partition_date(ts)
                parts = parts_of.get(date) or parts_of.setdefault(date, {})
            part = parts.get(schema)
            if part is None:
                part = parts[schema] = (date, schema)
            if want_events:
                row = [
                    version, kind, source, session, file, pos, log_pos, size, None,
                    ts * 1_000_000, server_id, type_name[code], code, flags, True, None,
                    trx.gtid if trx else None, None, trx.offset if trx else None,
                    tm.table if tm is not None else None, query,
                    None, n_rows, None,  # query_raw (valid text only), rows, capture_time
                ]
                hold(trx, part, row, query)
            elif trx is not None:
                trx.bytes += EVENT_WEIGHT + (len(query) if query is not None and not rows
                                             else 0)
            if n_rows:
                assert trx is not None and tm is not None
                cols = self._columns_of(tm)
                op = _OPERATIONS[code]
                self._rows(rec, op, cols, size, n_rows, part, trx, (
                    file, pos, log_pos, None, type_name[code], tm.table, ts * 1_000_000,
                    server_id, None), refs_at(b[0], b[1], _KIND_CODE[op], b[2], b[3], cols),
                    None)
            if ends:
                self._finish(_i64(a), ts)
            elif trx is not None and (trx.rows > max_rows or trx.bytes > max_bytes):
                self._flush_pending()

    def _event(self, rec: EventRecord, ev: DecodedEvent, inner_index: int | None) -> None:
        h = ev.header
        body = ev.body
        code = h.type_code if h is not None else -1
        trx = self.trx
        # coordinates: the file the event is in and its offset there (None: in no file)
        outer = rec.event
        file = outer.binlog_file if outer.binlog_file is not None else rec.binlog_file
        pos = outer.file_pos
        ends = False
        xid: int | None = None
        is_rows = isinstance(body, RowsEvent)

        if code in _GTID_TYPES:
            if trx is not None:
                self._finish(None, None)
            gtid = bodies.gtid(ev)
            gtid = gtid if gtid is not None and gtid.upper() != "ANONYMOUS" else None
            # MariaDB's FL_STANDALONE: a single statement, no BEGIN/COMMIT
            opens = code == _MARIADB_GTID and not (isinstance(body, MariadbGtidEvent)
                                                   and body.standalone)
            trx = self.trx = _Trx(pos, file, gtid, opens)
        elif code in _QUERY_TYPES:
            q = statement_kind(bodies.statement(ev))
            if q == "BEGIN":
                if trx is None:
                    trx = self.trx = _Trx(pos, file, None, True)
                trx.open = True
            elif q == "END":
                if trx is None:
                    trx = self.trx = _Trx(pos, file, None, True)
                ends = True
            elif trx is None:  # an autocommitted statement (DDL): its own transaction
                trx = self.trx = _Trx(pos, file, None, False)
                ends = True
            elif not trx.open:  # the single statement after a GTID
                ends = True
        elif code == _XID:
            if trx is None:
                trx = self.trx = _Trx(pos, file, None, True)
            xid = _i64(body.xid) if isinstance(body, XidEvent) else None
            ends = True
        elif code == _XA_PREPARE:
            if trx is not None:
                ends = True
        elif trx is not None and not trx.open and (code in _INSIDE_TYPES or is_rows):
            trx.open = True  # MariaDB: a GTID without BEGIN opens a group of row events

        if is_rows and trx is None:
            # rows outside any transaction (damaged or partial input): a transaction of its own
            trx = self.trx = _Trx(pos, file, None, True)
        if self.want_events:
            self._add_event(rec, ev, inner_index, trx, file, pos)
        else:
            self._add_rows_only(rec, ev, inner_index, trx, file, pos)
        if ends:
            ts = h.timestamp if h is not None else None
            self._finish(xid, ts)
        elif trx is not None and (trx.rows > self.max_pending_rows
                                  or trx.bytes > self.max_pending_bytes):
            self._flush_pending()

    def input_done(self) -> None:
        """An input ended: a transaction still open will never commit here; emit it as is,
        and every waiting row."""
        if self.trx is not None:
            self._finish(None, None)
        self._emit_waiting()

    # ---- internals
    def _add_event(self, rec: EventRecord, ev: DecodedEvent, inner_index: int | None,
                   trx: _Trx | None, file: str, pos: int | None) -> None:
        outer = rec.event
        h = ev.header
        oh = outer.header
        body = ev.body
        schema, table = event_table(ev)
        schema = schema or None
        query = bodies.query_text(ev)
        n_rows = body.row_count if isinstance(body, RowsEvent) else None
        ts = h.timestamp if h is not None else 0
        date = partition_date(ts)
        cap = rec.capture_time
        # the row as a list in EventsSlot order (columns.py): a literal, not ``events_row``'s
        # 24 keywords (1.1 us an event against 0.1); test_mapper_tables.py checks it by name
        row = [
            SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id,  # .. session_id
            file, pos, oh.log_pos if oh else None,  # binlog_file, offset, log_pos
            h.event_size if h else ev.size, inner_index,  # event_size, inner_index
            ts * 1_000_000 if h else None, h.server_id if h else None,  # timestamp, server_id
            _type_name(h.type_code) if h else ev.type_name,  # event_type
            h.type_code if h else None, h.flags if h else None,  # type_code, flags
            ev.checksum_ok, ev.error, trx.gtid if trx else None,  # checksum_ok, error, gtid
            None, trx.offset if trx else None, table, query,  # xid, trx_offset, table, query
            statement_bytes(ev, query) if query is not None else None,  # query_raw
            n_rows,  # rows (the images are not read here: see _add_rows)
            None if cap is None else round(cap * 1_000_000),  # capture_time
        ]
        self.events += 1
        part = (date, schema or "")
        self._hold_event(trx, part, row, query)
        if isinstance(body, RowsEvent) and n_rows:
            assert trx is not None
            self._add_rows(rec, ev, body, n_rows, part, trx, (
                file, pos, row[Ev.log_pos], inner_index, row[Ev.event_type], table,
                row[Ev.timestamp], row[Ev.server_id], row[Ev.capture_time]))

    def _hold_event(self, trx: _Trx | None, part: tuple[str, str], row: list[Any],
                    query: str | None) -> None:
        """An ``events`` row to its part's waiting rows (with its transaction's, when in
        one); the memory it holds: its values and the statement text (can be huge)."""
        weight = EVENT_WEIGHT + (len(query) if query is not None else 0)
        held = self._out_events.get(part)
        if held is None:
            held = self._out_events[part] = ([], [])
        held[0].append(row)
        held[1].append(weight)
        if trx is None:
            self._waiting(1, weight)
        else:
            trx.events.append(row)
            trx.bytes += weight

    def _add_rows_only(self, rec: EventRecord, ev: DecodedEvent, inner_index: int | None,
                       trx: _Trx | None, file: str, pos: int | None) -> None:
        """:meth:`_add_event` without the ``events`` row (not wanted): the same accounting of
        what the transaction holds (so it is flushed at the same events), and the event's row
        changes from the same values."""
        self.events += 1
        body = ev.body
        if not isinstance(body, RowsEvent):
            if trx is not None:
                query = bodies.query_text(ev)
                trx.bytes += EVENT_WEIGHT + (len(query) if query is not None else 0)
            return
        assert trx is not None  # (a rows event always has one: _event opens it)
        trx.bytes += EVENT_WEIGHT
        n_rows = body.row_count
        if not n_rows:
            return
        h = ev.header
        oh = rec.event.header
        cap = rec.capture_time
        head: tuple[Any, ...]
        if h is not None:
            ts = h.timestamp
            head = (file, pos, oh.log_pos if oh else None, inner_index, _type_name(h.type_code),
                    body.table, ts * 1_000_000, h.server_id,
                    None if cap is None else round(cap * 1_000_000))
        else:
            ts = 0
            head = (file, pos, oh.log_pos if oh else None, inner_index, ev.type_name,
                    body.table, None, None, None if cap is None else round(cap * 1_000_000))
        self._add_rows(rec, ev, body, n_rows, (partition_date(ts), body.schema or ""), trx,
                       head)

    def _add_rows(self, rec: EventRecord, ev: DecodedEvent, body: RowsEvent, n_rows: int,
                  part: tuple[str, str], trx: _Trx, head: tuple[Any, ...]) -> None:
        """The ``n_rows`` rows of one rows event. ``head``: the event's values a row repeats
        (binlog_file, offset, log_pos, inner_index, event_type, table, timestamp, server_id,
        capture_time)."""
        cols = self._columns_for(rec.ctx, body.table_id)
        size = ev.header.event_size if ev.header is not None else ev.size
        self._rows(rec, body.kind, cols, size, n_rows, part, trx, head,
                   image_refs(body, cols) if self.want_rows else None, body)

    def _rows(self, rec: EventRecord | WrittenRun, op: str, cols: ImageColumns | None,
              size: int, n_rows: int, part: tuple[str, str], trx: _Trx, head: tuple[Any, ...],
              refs: tuple[list[Any], list[Any]] | None, body: RowsEvent | None) -> None:
        """The rows of a rows event of ``size`` bytes: from its image ``refs`` (left in the
        event's bytes), else from the decoded ``body``'s rows."""
        # each row change holds its images: its share of the event's bytes, and an object
        # per value (one image, two for an UPDATE)
        values = (len(cols.by_label) if cols is not None else 8) * (2 if op == "UPDATE" else 1)
        weight = ROW_WEIGHT + VALUE_WEIGHT * values + size // n_rows
        trx.bytes += weight * n_rows
        trx.rows += n_rows
        self.rows += n_rows
        if not self.want_rows:
            return
        file, pos, log_pos, inner_index, event_type, table, ts, server_id, cap = head
        # row_index and the images are set per row (the images' JSON and pk are built from
        # them by the writer's column builders)
        # (the row as a list in RowsSlot order: a literal, not ``rows_row``'s 25 keywords;
        # test_mapper_tables.py checks it by name)
        base = [
            SCHEMA_VERSION, rec.source_kind, rec.source, rec.session_id,  # .. session_id
            file, pos, log_pos, inner_index, None,  # binlog_file .. row_index
            event_type, table, op, ts, None, server_id,  # event_type .. server_id
            trx.gtid, None, trx.offset,  # gtid, xid, trx_offset
            None, None, None, None,  # before, after, before_json, after_json
            cols.pk if cols else None, None, cap,  # pk_columns, pk, capture_time
        ]
        held = self._out_changes.get(part)
        if held is None:
            held = self._out_changes[part] = ([], [])
        rows, weights = held
        first = len(rows)
        if refs is not None:  # the images stay in the event's bytes (images.image_refs)
            before_refs, after_refs = refs
            for i in range(n_rows):
                row = base.copy()
                row[Rw.row_index] = i
                row[Rw.before] = before_refs[i]
                row[Rw.after] = after_refs[i]
                rows.append(row)
            weights += [weight] * n_rows
            trx.changes += rows[first:]
            return
        assert body is not None
        for i, change in enumerate(body.rows):
            if isinstance(change, dict):
                before = change.get("before")
                after = change.get("after")
            else:
                before = after = None
            row = base.copy()
            row[Rw.row_index] = i
            if before is not None:
                row[Rw.before] = (before, cols)  # before_json is built from it too
            if after is not None:
                row[Rw.after] = (after, cols)  # and after_json, and pk
            rows.append(row)
            weights.append(weight)
        trx.changes += rows[first:]

    def _columns_for(self, ctx: DecodeContext, table_id: int) -> ImageColumns | None:
        """The columns of the table a rows event refers to (its TABLE_MAP in the context)."""
        tm = ctx.tables.get(table_id)
        return None if tm is None else self._columns_of(tm)

    def _columns_of(self, tm: TableMap) -> ImageColumns:
        cached = self._columns.get(id(tm))
        if cached is not None and cached[0] is tm:
            return cached[1]
        cols = columns_of(tm)
        if len(self._columns) > 4096:
            self._columns.clear()
        self._columns[id(tm)] = (tm, cols)
        return cols

    def _finish(self, xid: int | None, commit_ts: int | None) -> None:
        trx = self.trx
        self.trx = None
        if trx is None:
            return
        cts = None if commit_ts is None else commit_ts * 1_000_000
        slot = Ev.xid
        for row in trx.events:
            row[slot] = xid
        slot, cts_slot = Rw.xid, Rw.commit_timestamp
        for row in trx.changes:
            row[slot] = xid
            row[cts_slot] = cts
        self._waiting(len(trx.events) + len(trx.changes), trx.bytes)

    def _waiting(self, rows: int, weight: int) -> None:
        """``rows`` more rows (their weights ``weight``) of ended transactions wait: handed
        to the writer when enough wait."""
        self._out_rows += rows
        self._out_bytes += weight
        if self._out_rows >= OUT_ROWS or self._out_bytes >= OUT_BYTES:
            self._emit_waiting()

    def flush(self) -> None:
        """Hand every waiting row to the writer (before a checkpoint: at a transaction
        boundary nothing waits for its transaction's end)."""
        self._emit_waiting()

    def _emit_waiting(self) -> None:
        """Hand the waiting rows to the writer, part by part (each part's rows in order), and
        forget them (an open transaction's rows too: they go without its XID)."""
        emit_rows = self.emit_rows
        for table, out in (("events", self._out_events), ("rows", self._out_changes)):
            for part, (rows, weights) in out.items():
                if emit_rows is not None:
                    emit_rows(table, part, rows, weights)
                else:
                    emit = self.emit
                    for row, weight in zip(rows, weights, strict=True):
                        emit(table, part, row, weight)
            out.clear()
        self._out_rows = self._out_bytes = 0
        trx = self.trx
        if trx is not None:
            trx.events.clear()
            trx.changes.clear()

    def _flush_pending(self) -> None:
        """A huge transaction: emit what is held (without XID/commit time) to keep memory flat."""
        trx = self.trx
        assert trx is not None
        self._emit_waiting()
        trx.rows = trx.bytes = 0


def _as_dicts(emit: Emit) -> EmitValues:
    """Adapt a dict-taking ``emit`` to the mapper's lists of values: the row images, which the
    mapper leaves as ``(image, columns)`` pairs for the writer's column builders, become the
    text maps, typed JSON and ``pk`` the builders make (:func:`image_map`, :func:`json_text`,
    :func:`pk_pairs`, row by row)."""
    before, after = Rw.before, Rw.after
    before_json, after_json, pk = Rw.before_json, Rw.after_json, Rw.pk

    def emit_values(table: str, part: tuple[str, ...], values: list[Any], weight: int) -> None:
        if table == "rows":
            values = values.copy()
            b, a = image_pair(values[before]), image_pair(values[after])
            values[pk] = pk_pairs(b, a)
            for slot, json_slot, ref in ((before, before_json, b), (after, after_json, a)):
                if ref is not None:
                    values[slot] = image_map(*ref)
                    values[json_slot] = json_text(ref[0])
        emit(table, part, dict(zip(COLUMNS[table], values, strict=True)))

    return emit_values
