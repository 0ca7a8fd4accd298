"""Glue for the C fast path of whole events (``_crows.fast_event``).

``fast_event(buf, pos, base, ctx)`` decodes one complete event of the hot types without a tree
and returns exactly the :class:`DecodedEvent` that :func:`decode.decode_event_fast` returns, or
None for anything else (the caller then runs the Python path). The C code fills the slots of
the same dataclasses; this module tells it their slot offsets and defaults, read from
``dataclasses.fields``, so a field added to one of them is picked up (a field the C code does
not set gets its default; a new required field disables the C path at import).

``fast_event_c`` is None when the C module is not built or ``BINLOGSCOPE_PURE_PYTHON`` is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog._rowcode import c_module
from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, XidEvent
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.gtid_events import (
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    MariadbGtidEvent,
)
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.rows import DELETE, INSERT, UPDATE, RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent

_REQUIRED = object()
_LIST = object()

#: in the order of the C enum (L_DEC, L_HDR, L_XID, L_ANN, L_GTID, L_TMEV, L_ROWS), with the
#: number of leading fields the C code passes
_CLASSES: tuple[tuple[type, int], ...] = (
    (DecodedEvent, 9), (EventHeader, 6), (XidEvent, 1), (AnnotateRowsEvent, 1),
    (MariadbGtidEvent, 5), (TableMapEvent, 6), (RowsEvent, 9),
)

FastEvent = Callable[[bytes, int, int, Any], DecodedEvent | None]


def _layout(crows: Any, cls: type, given: int) -> tuple[type, tuple[int, ...], tuple[Any, ...]]:
    offsets: list[int] = []
    defaults: list[Any] = []
    for i, f in enumerate(dataclasses.fields(cls)):
        offsets.append(crows.slot_offset(cls.__dict__[f.name]))
        if f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif f.default_factory is list:
            defaults.append(_LIST)
        elif i < given:
            defaults.append(_REQUIRED)
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: no default the C fast path can give")
    return cls, tuple(offsets), tuple(defaults)


def _configure() -> FastEvent | None:
    crows = c_module()
    if crows is None:
        return None
    layouts = tuple(_layout(crows, cls, given) for cls, given in _CLASSES)
    crows.configure_events(layouts, _LIST, (INSERT, UPDATE, DELETE),
                           FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA, _REQUIRED)
    fn: FastEvent = crows.fast_event
    return fn


fast_event_c: FastEvent | None = _configure()
