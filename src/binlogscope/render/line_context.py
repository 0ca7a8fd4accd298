"""What the native kernel's event reader (``_native/_line.c`` ``EventLines``) must know of
the decoder: the body layouts it reads (``BODY_*``, the same numbers as ``_kernel.h``) and
:class:`LineContext`, which keeps it in step with the decoder's context. The line templates
are :mod:`binlogscope.render.line_layout`'s; this module is what the export's reader of event
values (:func:`event_values`) needs too, without the renderers' shapes the templates are
probed from (it is imported by every export: 0.2 G instructions of start-up less).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlogscope import _native
from binlogscope.render.json_out import dumps
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.rows import UPDATE, RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent
from binlogscope.wire.binlog.types import ChecksumAlg, EventType

if TYPE_CHECKING:
    from binlogscope._native._kernel import EventLines
    from binlogscope.wire.binlog.context import DecodeContext, TableMap

_T = EventType
#: body layouts (``_line.c`` BODY_*, the same numbers): XID, its 8-byte xid
#: (``control_events.decode_xid``); a MariaDB GTID, seq_no, domain_id, flags2, the group
#: commit id when flagged, then zero padding (``gtid_events.decode_mariadb_gtid``; XA and
#: flags_extra decline); rows events v1 (WRITE/UPDATE/DELETE_ROWS_V1) and v2 (the same with
#: empty extra data), ``rows.decode_rows_event``: the 6-byte table id, flags, a column count
#: below 251, the columns-present bitmap(s), then the row images, written by the kernel's
#: rows JSON (``_rowjson.c``) with the readers of the plans :class:`LineContext` declares;
#: the statement text of ANNOTATE_ROWS (the rest of the body,
#: ``control_events.decode_annotate_rows``) and ROWS_QUERY (after a length byte,
#: ``decode_rows_query``), valid UTF-8 only (the decoder replaces what is not); a TABLE_MAP
#: whose body is byte for byte the one its table's map was decoded from (the decoder gives
#: the map it holds and changes nothing: ``table_map._cached``); any other is context, the
#: Python path's
BODY_XID = 1
BODY_MARIADB_GTID = 2
BODY_ROWS_V1 = 3
BODY_ROWS_V2 = 4
BODY_TEXT = 5
BODY_TEXT_AFTER_LENGTH = 6
BODY_TABLE_MAP = 7
#: type code -> its body layout; a type not here is declined
BODY_LAYOUTS: dict[int, int] = {
    int(_T.XID_EVENT): BODY_XID,
    int(_T.GTID_EVENT): BODY_MARIADB_GTID,
    **{int(t): BODY_ROWS_V1 for t in (_T.WRITE_ROWS_EVENT_V1, _T.UPDATE_ROWS_EVENT_V1,
                                      _T.DELETE_ROWS_EVENT_V1)},
    **{int(t): BODY_ROWS_V2 for t in (_T.WRITE_ROWS_EVENT, _T.UPDATE_ROWS_EVENT,
                                      _T.DELETE_ROWS_EVENT)},
    int(_T.ANNOTATE_ROWS_EVENT): BODY_TEXT,
    int(_T.ROWS_QUERY_LOG_EVENT): BODY_TEXT_AFTER_LENGTH,
    int(_T.TABLE_MAP_EVENT): BODY_TABLE_MAP,
}
_TABLE_MAP = int(_T.TABLE_MAP_EVENT)
_ROWS = frozenset(c for c, layout in BODY_LAYOUTS.items()
                  if layout in (BODY_ROWS_V1, BODY_ROWS_V2))
_CRC32 = int(ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32)


def event_values() -> EventLines | None:
    """The same kernel reading the same layouts, giving each event it takes back as its values
    (``_line.c`` event_values: the export's rows are made from them, ``export/mapper.py``
    ``TableMapper.written``) instead of writing its line; None without the kernel."""
    kernel = _native.kernel
    if kernel is None:
        return None
    names = tuple(b"" if c in BODY_LAYOUTS else None for c in range(256))
    values: EventLines = kernel.EventLines((), b"", names, bytes(256))
    values.values = 1
    return values


class LineContext:
    """What the kernel's line writer must know of the decoder's context, kept as the decoder
    keeps it: told every event the Python path decoded (:meth:`seen`; the kernel writes no
    event that changes the context), it gives the writer whether CRC32 is in force, each type
    code's body layout (rows events by the FORMAT_DESCRIPTION's post-header lengths) and, per
    table id, the entry its rows events are written with: the ``TableMap`` (the kernel takes
    a rows event or a TABLE_MAP only while the decoder's ``ctx.tables`` still holds that very
    map), the schema's and table's JSON text, the column count, the map's body bytes (a
    TABLE_MAP of the same bytes changes nothing) and the readers of each
    columns-present bitmap - the plans the decoder made, declared once the Python path has
    read a rows event with them (its first of each table and bitmap; a MariaDB table's
    hi-res temporal columns resolved), and only when the kernel's rows JSON is what that path
    writes (plans whose kernel walk is exact)."""

    def __init__(self, line: EventLines, *, summary: bool = False,
                 distinct_labels: bool = False) -> None:
        self.line = line
        #: the --summary line's entries: the table's text (`` schema.table``) for both names
        self.summary = summary
        #: declare only plans whose labels are distinct (the export's image refs: an image
        #: read into a dict keeps a repeated label once, ``export/images.py`` image_refs)
        self.distinct_labels = distinct_labels
        self.tables: dict[int, tuple[Any, ...]] = {}
        line.tables = self.tables
        self._phl: Any = None

    @staticmethod
    def text(value: Any) -> bytes:
        """A value as the one serializer writes it (a stream's ``texts``: frame, time, file)."""
        return dumps(value)

    def sync(self, ctx: DecodeContext) -> None:
        """Tell the writer the decoder's context as it is now (its checksum, the body
        layouts under its FORMAT_DESCRIPTION, its table maps)."""
        line = self.line
        line.crc = int(ctx.checksum_alg == _CRC32 and ctx.verify_checksums
                       and not ctx.type_map)
        if ctx.post_header_len is not self._phl or line.ctx_tables is not ctx.tables:
            self._context(ctx)

    def seen(self, ev: DecodedEvent, ctx: DecodeContext) -> None:
        self.sync(ctx)
        body = ev.body
        if body is None or ev.error is not None:
            return
        if type(body) is TableMapEvent:
            tm = body.table_map
            entry = self.tables.get(body.table_id)
            if tm is not None and (entry is None or entry[0] is not tm):
                if self.summary:
                    try:  # (render/text.py _table_text)
                        text = (f" {tm.schema}.{tm.table}" if tm.table else "").encode()
                    except UnicodeEncodeError:
                        self.tables.pop(body.table_id, None)
                        return
                    names = (text, b"")
                else:
                    names = (dumps(tm.schema), dumps(tm.table))
                self.tables[body.table_id] = (tm, *names, len(tm.columns), {}, tm.raw)
        elif type(body) is RowsEvent and ev.header is not None \
                and ev.header.type_code in _ROWS:
            self._plans(body, ctx)

    def _context(self, ctx: DecodeContext) -> None:
        """The body layouts under this FORMAT_DESCRIPTION: a rows event's only when its
        post-header is the 8 or 10 bytes of a 6-byte table id (or not listed) and rows are
        decoded."""
        self._phl = ctx.post_header_len
        layouts = bytearray(256)
        for code, layout in BODY_LAYOUTS.items():
            if code in _ROWS and not (
                    ctx.decode_rows and ctx.post_header(code) in (None, 8, 10)):
                continue
            if code == _TABLE_MAP and ctx.post_header_len[18:19] == (6,):
                continue  # (a 4-byte table id: _cached reads 6)
            layouts[code] = layout
        self.line.layouts(bytes(layouts))
        self.line.ctx_tables = ctx.tables
        self.tables.clear()

    def _plans(self, body: RowsEvent, ctx: DecodeContext) -> None:
        """Declare the readers of a rows event the Python path read (see the class)."""
        plans = body.unread_plans()
        entry = self.tables.get(body.table_id)
        if plans is None or entry is None or body.partial or body.compressed:
            return
        tm: TableMap = entry[0]
        if ctx.tables.get(body.table_id) is not tm or (
                ctx.is_mariadb and tm.hires_resolved is None):
            return
        plan_b, plan_a = plans
        if not plan_b.skips_exactly or plan_b.image is None or (plan_a is not None and (
                not plan_a.skips_exactly or plan_a.image is None)):
            return
        if self.distinct_labels and any(
                p is not None and len(set(p.labels)) != len(p.labels) for p in plans):
            return
        bitmap = {id(plan): present for present, plan in (tm.compiled or {}).items()}
        present = bitmap.get(id(plan_b))
        if present is None:
            return
        if body.kind == UPDATE:
            after = bitmap.get(id(plan_a))
            if after is None or plan_a is None:
                return
            entry[4][(present, after)] = (plan_b.image, plan_a.image)
        else:
            entry[4][present] = (plan_b.image, None)


__all__ = ["BODY_LAYOUTS", "LineContext", "event_values"]
