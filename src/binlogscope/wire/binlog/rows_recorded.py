"""Row images with a tree: the recording path of a rows event.

Each image of a rows event is read with the column readers of its :class:`ImagePlan` (the same
functions the no-tree path and the native kernel's plans stand for) and recorded as Nodes: the
NULL bitmap, one leaf per value, PARTIAL_UPDATE_ROWS' value options, partial-JSON bitmap and
JSON diffs. ``rows.py`` calls :func:`rows_recorded` for a rows event decoded with a tree (and
for PARTIAL_UPDATE_ROWS, and to find the exact offset of damage, without one).
"""

from __future__ import annotations

import functools
from typing import Any

from binlogscope.wire.binlog._rowcode import DELETE, INSERT, UPDATE, ImagePlan, no_progress
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.json_binary import (
    DIFF_OPERATIONS,
    json_binary_to_text,
    render_json_diff,
)
from binlogscope.wire.binlog.values import Reader, column_doc, display_value, type_name
from binlogscope.wire.reader import ByteReader, ShortRead

#: value_options bit of PARTIAL_UPDATE_ROWS
PARTIAL_JSON_UPDATES = 0x1


@functools.lru_cache(maxsize=4096)
def bits_text(bits: int, n: int) -> str:
    """``bits`` as n characters 0/1, bit 0 first."""
    return format(bits & ((1 << n) - 1), f"0{n}b")[::-1] if n else ""


#: per kind: (before image name, its doc, after image name, its doc)
_IMAGE_NAMES = {
    INSERT: ("", "", "after_image", "the inserted row"),
    UPDATE: ("before_image", "the row as it was (identifies the row to change)",
             "after_image", "the row as it is now"),
    DELETE: ("before_image", "the deleted row", "", ""),
}


def _recorded(plan: ImagePlan) -> list[tuple[ColumnInfo, str, Reader, str, str]]:
    """Per column (column, label, reader, wire type, doc) for the recording path."""
    if plan.recorded is None:
        plan.recorded = [(c, label, rd, type_name(c), column_doc(c)) for c, label, rd
                         in zip(plan.columns, plan.labels, plan.readers, strict=True)]
    return plan.recorded


def rows_recorded(sub: ByteReader, kind: str, partial: bool, rows: list[dict[str, Any]],
                  plan_b: ImagePlan, plan_a: ImagePlan | None) -> None:
    """Every row of ``sub`` (the images of a rows event of ``kind``; ``partial``: a
    PARTIAL_UPDATE_ROWS) appended to ``rows``, a Node per field."""
    i = 0
    while not sub.at_end():
        start = sub.pos
        sub.begin(f"row[{i}]", doc=f"row {i + 1} of the event")
        if kind == UPDATE:
            assert plan_a is not None
            before = _image_recorded(sub, plan_b, *_IMAGE_NAMES[UPDATE][:2])
            partial_cols: set[int] = set()
            if partial:
                partial_cols = _partial_header(sub, plan_a)
            after = _image_recorded(sub, plan_a, *_IMAGE_NAMES[UPDATE][2:], partial_cols)
            rows.append({"before": before, "after": after})
        elif kind == INSERT:
            after = _image_recorded(sub, plan_b, *_IMAGE_NAMES[INSERT][2:])
            rows.append({"before": None, "after": after})
        else:
            before = _image_recorded(sub, plan_b, *_IMAGE_NAMES[DELETE][:2])
            rows.append({"before": before, "after": None})
        sub.end_group()
        if sub.pos == start:
            no_progress(sub.base + start)
        i += 1


def _partial_header(sub: ByteReader, plan_a: ImagePlan) -> set[int]:
    opts = sub.packed_int("value_options",
                          doc="binlog_row_value_options bits: 1 = PARTIAL_JSON (some JSON "
                          "columns of the after image hold diffs)")
    if not opts & PARTIAL_JSON_UPDATES:
        return set()
    jpos = plan_a.json_positions
    nb = (len(jpos) + 7) // 8
    p = sub.pos
    bits = int.from_bytes(sub.take(nb, "partial_bits"), "little")
    sub.leaf("partial_bits", p, bits, wire=f"bitmap<{nb}>",
             display=", ".join(f"{plan_a.labels[j]}={'diff' if bits >> k & 1 else 'full'}"
                               for k, j in enumerate(jpos)),
             doc="one bit per JSON column of the after image: set = the value is a JSON diff")
    return {j for k, j in enumerate(jpos) if bits >> k & 1}


_NULL_BITMAP_DOC = "one bit per column present in this image: set = NULL (no bytes follow)"


def _image_recorded(sub: ByteReader, plan: ImagePlan, name: str, doc: str,
                    partial_cols: set[int] | None = None) -> dict[str, Any]:
    sub.begin(name, doc=doc)
    nb = plan.nbytes
    p = sub.pos
    nulls = int.from_bytes(sub.take(nb, "null_bitmap"), "little")
    sub.leaf("null_bitmap", p, nulls, wire=f"bitmap<{nb}>",
             display=bits_text(nulls, len(plan.columns)) + " (first present column first)",
             doc=_NULL_BITMAP_DOC)
    row: dict[str, Any] = {}
    buf = sub.buf
    leaf = sub.leaf
    for i, (col, label, rd, wire, cdoc) in enumerate(_recorded(plan)):
        start = sub.pos
        if nulls >> i & 1:
            row[label] = None
            leaf(label, start, None, wire=wire, display="NULL",
                 doc=f"{cdoc}; NULL (bit set in null_bitmap, no bytes)")
            continue
        if partial_cols and i in partial_cols:
            row[label] = _json_diff(sub, col)
            continue
        value, end = rd(buf, start)  # type: ignore[arg-type]
        if end > sub.end:
            raise ShortRead(sub.base + start, end - start, sub.end - start, label)
        sub.pos = end
        row[label] = value
        leaf(label, start, value, wire=wire, display=display_value(value, col), doc=cdoc)
    sub.end_group()
    return row


def _json_diff(sub: ByteReader, col: ColumnInfo) -> str:
    """A JSON column of a PARTIAL_UPDATE_ROWS after image holding a diff vector."""
    label = col.label
    sub.begin(label, doc=f"{label}: JSON diff (partial update): length, then per diff "
              "operation, path, value")
    size = sub.uint("length", col.meta or 4, doc="bytes of the diff vector")
    diffs: list[tuple[int, str, str | None]] = []
    with sub.bounded(size, "json_diff"):
        k = 0
        while sub.remaining:
            sub.begin(f"diff[{k}]")
            op = sub.u8("operation", display=DIFF_OPERATIONS.get(sub.buf[sub.pos], "?"),
                        doc="0 REPLACE, 1 INSERT, 2 REMOVE")
            if op not in DIFF_OPERATIONS:
                raise ValueError(f"unknown JSON diff operation {op}")
            n = sub.packed_int("path_length")
            path = sub.fixed_str("path", n, doc="JSON path the operation applies to")
            value: str | None = None
            if op != 2:
                m = sub.packed_int("value_length")
                p = sub.pos
                doc_bytes = sub.take(m, "value")
                value = json_binary_to_text(doc_bytes)
                sub.leaf("value", p, value, wire="json_binary", display=value,
                         doc="the new value as binary JSON")
            diffs.append((op, path, value))
            sub.end_group()
            k += 1
    text = render_json_diff(label, diffs)
    sub.end_group(value=text, display=text)
    return text
