"""The streams conformance cases serve: :class:`CaseBuilder`, the mock master's
:class:`~mock_master.history.builder.EventBuilder` with what cases need beyond it.

* tables of any column type (:mod:`mock_master.conformance.columns`), with FULL, MINIMAL or no
  optional row metadata in their TABLE_MAPs (``binlog_row_metadata``);
* MariaDB compressed row events (``compressed=True``);
* any event body under any type code (:meth:`CaseBuilder.raw`), e.g. an unknown type flagged
  LOG_EVENT_IGNORABLE_F;
* MySQL tagged GTIDs (:attr:`CaseBuilder.tag`);
* MySQL PARTIAL_UPDATE_ROWS with JSON diffs (:meth:`CaseBuilder.partial_update`).

Every byte is still written by binlogscope's wire encoders.
"""

from __future__ import annotations

import copy
from typing import Any

from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.encode_events import encode_gtid_tagged
from binlogscope.wire.binlog.encode_rows import (
    encode_rows_event,
    encode_table_map,
    rows_event,
    rows_event_type,
)
from binlogscope.wire.binlog.gtid_events import GtidEvent
from binlogscope.wire.binlog.rows import DELETE, INSERT, UPDATE, RowsEvent
from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.columns import columns
from mock_master.history.builder import EventBuilder

FULL, MINIMAL, NONE = "full", "minimal", "none"
_KINDS = {"insert": INSERT, "update": UPDATE, "delete": DELETE}
METADATA = (FULL, MINIMAL, NONE)


def minimal_table(t: TableMap) -> TableMap:
    """``t`` as binlog_row_metadata=MINIMAL writes it: signedness and charsets, no column
    names, no ENUM/SET member names, no primary key."""
    m = copy.copy(t)
    m.columns = []
    for c in t.columns:
        c2 = copy.copy(c)
        c2.name = None
        c2.enum_values = None
        c2.set_values = None
        m.columns.append(c2)
    m.primary_key = []
    return m


class CaseBuilder(EventBuilder):
    """An :class:`EventBuilder` for conformance cases (see the module docstring)."""

    def __init__(self, flavor: str = "mariadb", *, metadata: str = FULL, **kw: Any) -> None:
        if metadata not in METADATA:
            raise ValueError(f"metadata must be one of {METADATA}")
        self.metadata = metadata
        self._tag_seqs: dict[str, int] = {}
        super().__init__(flavor, **kw)

    #: MySQL: the tag of the transactions begun from now on ("": untagged). A tagged
    #: transaction's GTID is a GTID_TAGGED_LOG_EVENT (MySQL 8.3+, ``uuid:tag:gno``), numbered
    #: per tag, written by the wire encoder :func:`encode_gtid_tagged`
    tag: str = ""

    def gtid(self, *, standalone: bool = False) -> str:
        if self.flavor != "mysql" or not self.tag:
            return super().gtid(standalone=standalone)
        self._tag_seqs[self.tag] = gno = self._tag_seqs.get(self.tag, 0) + 1
        sid = str(self.server_uuid)
        g = GtidEvent(f"{sid}:{self.tag}:{gno}", 1, sid, gno, tag=self.tag,
                      last_committed=self.seq, sequence_number=self.seq + 1,
                      immediate_commit_timestamp=self.timestamp * 1_000_000,
                      immediate_server_version=90600)
        self._event(E.GTID_TAGGED_LOG_EVENT, encode_gtid_tagged(g))
        return g.gtid

    def table_of(self, schema: str, name: str, spec: list[tuple[str, str]], *,
                 hires: bool = False) -> TableMap:
        """Declare a table of any column types (see :mod:`mock_master.conformance.columns`)."""
        key = (schema, name)
        if key in self.tables:
            return self.tables[key]
        cols: list[ColumnInfo] = columns(spec, hires=hires)
        t = TableMap(self._table_ids, schema, name, cols, primary_key=[0])
        self._table_ids += 1
        self.tables[key] = t
        return t

    def raw(self, type_code: int, body: bytes, *, flags: int = 0) -> bytes:
        """One event of any type (header, ``body``, checksum) appended to the current file."""
        return self._event(type_code, body, flags=flags)

    def rows(self, kind: str, t: TableMap, rows: list[Any], *, compressed: bool = False,
             flags: int = 1, version: int | None = None) -> None:
        """TABLE_MAP (with the builder's metadata mode) + one rows event of ``kind``
        (insert, update or delete); ``version``: 1 or 2 (default the flavour's: MariaDB
        writes v1, MySQL v2; MySQL 5.7's log_bin_use_v1_row_events=ON writes v1)."""
        kind = _KINDS.get(kind, kind)
        if self.metadata == FULL:
            self._event(E.TABLE_MAP_EVENT, encode_table_map(t))
        elif self.metadata == MINIMAL:
            self._event(E.TABLE_MAP_EVENT, encode_table_map(minimal_table(t)))
        else:
            self._event(E.TABLE_MAP_EVENT, encode_table_map(t, optional_metadata=False))
        if version is None:
            version = 2 if self.flavor == "mysql" else 1
        if compressed and self.flavor != "mariadb":
            raise ValueError("compressed row events are MariaDB's")
        ev = rows_event(t, kind, rows, version=version, flags=flags, compressed=compressed)
        self._event(rows_event_type(kind, version, compressed),
                    encode_rows_event(ev, t, mariadb=self.flavor == "mariadb"))

    def partial_update(self, t: TableMap, rows: list[tuple[dict[str, Any], dict[str, Any]]]
                       ) -> None:
        """MySQL: TABLE_MAP + a PARTIAL_UPDATE_ROWS (binlog_row_value_options=PARTIAL_JSON)
        of (before, after) images holding only the columns given (binlog_row_image=MINIMAL);
        a JSON column updated in place is a :class:`~binlogscope.wire.binlog.encode_rows.
        JsonDiff` in the after image."""
        if self.flavor != "mysql":
            raise ValueError("PARTIAL_UPDATE_ROWS is MySQL's")
        self._event(E.TABLE_MAP_EVENT, encode_table_map(
            t if self.metadata == FULL else minimal_table(t),
            optional_metadata=self.metadata != NONE))
        before = {k for b, _ in rows for k in b}
        after = {k for _, a in rows for k in a}
        ev = RowsEvent(t.table_id, t.schema, t.table, UPDATE,
                       [{"before": b, "after": a} for b, a in rows], flags=1, version=2,
                       columns=[c.label for c in t.columns if c.label in before],
                       columns_after=[c.label for c in t.columns if c.label in after],
                       partial=True)
        self._event(rows_event_type(UPDATE, 2, partial=True), encode_rows_event(ev, t))

    def rows_images(self, kind: str, t: TableMap, rows: list[Any]) -> None:
        """TABLE_MAP + one rows event of ``kind`` whose images hold only some columns
        (binlog_row_image=MINIMAL/NOBLOB): a column that is :data:`~mock_master.conformance.
        setup.ABSENT` in the first row is left out of that image (its present-columns bit
        clear) in every row."""
        from mock_master.conformance.setup import ABSENT

        kind = _KINDS.get(kind, kind)
        labels = [c.label for c in t.columns]

        def image(r: Any) -> dict[str, Any]:
            return {k: v for k, v in zip(labels, r, strict=True) if v is not ABSENT}

        if kind == UPDATE:
            out: list[dict[str, Any]] = [{"before": image(b), "after": image(a)}
                                         for b, a in rows]
            first_b, first_a = rows[0]
        else:
            out = [{"before": image(r), "after": None} if kind == DELETE
                   else {"before": None, "after": image(r)} for r in rows]
            first_b = first_a = rows[0]
        present_b = [k for k, v in zip(labels, first_b, strict=True) if v is not ABSENT]
        present_a = [k for k, v in zip(labels, first_a, strict=True) if v is not ABSENT]
        version = 2 if self.flavor == "mysql" else 1
        ev = RowsEvent(t.table_id, t.schema, t.table, kind, out, flags=1, version=version,
                       columns=present_a if kind == INSERT else present_b,
                       columns_after=present_a if kind == UPDATE else None)
        self._event(E.TABLE_MAP_EVENT, encode_table_map(t))
        self._event(rows_event_type(kind, version),
                    encode_rows_event(ev, t, mariadb=self.flavor == "mariadb"))

    def insert(self, t: TableMap, rows: list[tuple[Any, ...]]) -> None:
        self.rows(INSERT, t, rows)

    def update(self, t: TableMap, pairs: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
        self.rows(UPDATE, t, pairs)

    def delete(self, t: TableMap, rows: list[tuple[Any, ...]]) -> None:
        self.rows(DELETE, t, rows)


def event_number(b: EventBuilder, type_code: int, occurrence: int = 1, *, file: int = 0) -> int:
    """The fault actions' ``at`` of the ``occurrence``-th event of ``type_code`` in file
    ``file`` of ``b`` for a client that starts that file at 4 (1 = the fake ROTATE the server
    sends first, 2 = the file's FORMAT_DESCRIPTION, ...)."""
    seen = 0
    for i, ev in enumerate(b.files[file].events):
        if ev[4] == type_code:
            seen += 1
            if seen == occurrence:
                return i + 2
    raise ValueError(f"no event {type_code} #{occurrence} in file {file}")


def file_offsets(b: EventBuilder, file: int = 0) -> list[int]:
    """Where each event of file ``file`` starts (4 for the first)."""
    out, pos = [], 4
    for ev in b.files[file].events:
        out.append(pos)
        pos += len(ev)
    return out
